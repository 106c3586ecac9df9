//! A judged run as a `greta.smoke/v1` report: one "device" per framework
//! (its backend is the framework, its device what the framework ran on),
//! one gate per check: `M.import`, `M.device`, then the compute gates with
//! their errors, rates and first-call / steady-state times.

use super::judge::Judgement;
use super::judge::ModuleJudged;
use super::{DeviceKind, ModuleRun, Run};
use greta_smoke::results::{
    self, DeviceInfo, DeviceRun, GateResult, GateStatus, Metrics, RateUnit, Report, RunStatus,
    Settings,
};
use greta_smoke::Tolerance;

/// What the run was, for `settings` and the header.
pub struct RunMeta {
    pub started_at: String,
    pub wall_s: f64,
    pub seed: u64,
    pub timeout_s: f64,
    pub repeats: u32,
}

fn op_of(id: &str) -> String {
    let tail = id.split_once('.').map_or(id, |(_, t)| t);
    tail.split('_').next().unwrap_or(tail).to_string()
}

fn device_info(m: &ModuleRun) -> DeviceInfo {
    let seen = m.info.device.as_ref();
    let gpu = seen.is_some_and(|d| d.kind == DeviceKind::Gpu);
    let (driver, api, vendor) = match (&m.info.hip, &m.info.cuda) {
        (Some(h), _) if gpu => ("hip", h.clone(), 0x1002),
        (_, Some(c)) if gpu => ("cuda", c.clone(), 0x10de),
        _ if gpu => (
            seen.and_then(|d| d.platform.as_deref()).unwrap_or("gpu"),
            String::new(),
            0,
        ),
        _ => ("cpu", String::new(), 0),
    };
    let api = if api.is_empty() {
        m.info
            .jaxlib
            .clone()
            .map(|v| format!("jaxlib {v}"))
            .unwrap_or_default()
    } else {
        api
    };
    DeviceInfo {
        name: seen
            .map(|d| d.name.clone())
            .unwrap_or_else(|| "(not reached)".into()),
        vendor_id: vendor,
        device_id: 0,
        device_type: if gpu {
            greta_vocab::DeviceType::Other
        } else {
            greta_vocab::DeviceType::Cpu
        },
        driver_name: driver.into(),
        driver_info: format!(
            "{} {}",
            m.module,
            m.version.as_deref().unwrap_or("(version unknown)")
        ),
        driver_version: m.version.clone().unwrap_or_default(),
        api_version: api,
        // torch prints the UUID bare or nvidia-smi's way ("GPU-..."); a
        // text that is neither names no device.
        uuid: seen
            .and_then(|d| d.uuid.as_deref())
            .and_then(|u| u.trim_start_matches("GPU-").parse().ok()),
        // torch's PCI domain, bus and device, where it printed them.
        pci_bus_id: seen.and_then(|d| d.pci_address()),
        fp16: false,
    }
}

fn gate_result(j: &super::judge::Judged, seed: u64) -> GateResult {
    let status = j.verdict;
    let metrics = j.record.as_ref().map(|r| {
        let (unit, amount) = if r.flops > 0 {
            (RateUnit::TFlops, r.flops as f64 / 1e12)
        } else {
            (RateUnit::GBps, r.bytes as f64 / 1e9)
        };
        Metrics {
            rate: r.median_us.filter(|t| *t > 0.0).map(|t| amount / (t / 1e6)),
            unit,
            rel_err: r.rel_err,
            max_abs_err: r.max_abs_err,
            repeats_clean: if j.verdict == GateStatus::Pass {
                r.repeats
            } else {
                0
            },
            repeats_total: r.repeats,
            time_median_us: r.median_us,
            time_min_us: r.min_us,
            wall_median_us: r.median_us,
            bytes: r.bytes,
            flops: r.flops,
            timing: Some("wall_clock".into()),
            first_call_us: r.first_call_us,
        }
    });
    GateResult {
        id: j.id.clone(),
        op: op_of(&j.id),
        shape: j
            .record
            .as_ref()
            .map(|r| r.shape.clone())
            .unwrap_or_default(),
        status,
        reason: j.reason.clone(),
        tolerance: match j.tolerance {
            Some(t) => Tolerance::RelNorm(t),
            None => Tolerance::Exact,
        },
        seed,
        metrics,
        floor: None,
        peer: None,
        spec: None,
        spec_fraction: None,
        in_run: Default::default(),
        wall_s: j
            .record
            .as_ref()
            .and_then(|r| r.first_call_us)
            .map_or(0.0, |u| u / 1e6),
        kernel: j.record.as_ref().and_then(|r| r.device.clone()),
    }
}

fn device_run(
    index: usize,
    m: Option<&ModuleRun>,
    mj: &ModuleJudged,
    run: &Run,
    seed: u64,
) -> DeviceRun {
    let gates: Vec<GateResult> = mj.gates.iter().map(|j| gate_result(j, seed)).collect();
    let mut notes = vec![format!(
        "python {} ({}{})",
        run.python.executable,
        run.python.version,
        if run.python.isolated { ", -I" } else { "" }
    )];
    if let Some(m) = m {
        if let Some(f) = &m.file {
            notes.push(format!("{} from {f}", m.module));
        }
        if let Some(s) = m.import_s {
            notes.push(format!("import took {s:.2} s"));
        }
        if let Some(a) = m.info.device.as_ref().and_then(|d| d.pci_address()) {
            notes.push(format!("device at PCI {a}"));
        }
        // ROCm's gfx target (NVIDIA builds of torch fill the field with the name).
        if let Some(arch) = m
            .info
            .device
            .as_ref()
            .and_then(|d| d.gcn_arch_name.clone())
            .filter(|a| a.starts_with("gfx"))
        {
            notes.push(format!("gfx target {arch}"));
        }
        if let Some(t) = &m.info.target {
            notes.push(format!("triton target {t}"));
        }
        if !m.info.devices.is_empty() {
            let d: Vec<String> = m
                .info
                .devices
                .iter()
                .map(|d| format!("{}:{}", d.platform, d.id.unwrap_or(0)))
                .collect();
            notes.push(format!("jax.devices() = [{}]", d.join(", ")));
        }
    }
    for (k, v) in &run.env {
        notes.push(format!("{k}={v:?}"));
    }
    let status = if gates.iter().any(|g| g.status == GateStatus::Fail) || mj.lost.is_some() {
        RunStatus::Fail
    } else if gates.iter().any(|g| g.status == GateStatus::Pass) {
        RunStatus::Pass
    } else {
        RunStatus::Undecided
    };
    DeviceRun {
        index,
        backend: mj.module.clone(),
        device: device_info_or_default(m),
        status,
        lost: mj.lost.clone(),
        open_s: m.and_then(|m| m.import_s).unwrap_or(0.0),
        gates,
        validation_messages: vec![],
        notes,
        checks: vec![],
    }
}

fn device_info_or_default(m: Option<&ModuleRun>) -> DeviceInfo {
    match m {
        Some(m) => device_info(m),
        None => DeviceInfo::unknown("(not run)".into()),
    }
}

/// The `greta.smoke/v1` report of a judged run.
pub fn to_report(run: &Run, judged: &Judgement, meta: &RunMeta) -> Report {
    let devices: Vec<DeviceRun> = judged
        .modules
        .iter()
        .enumerate()
        .map(|(i, mj)| {
            let m = run.frameworks.iter().find(|m| m.module == mj.module);
            device_run(i, m, mj, run, meta.seed)
        })
        .collect();
    let mut status = Report::summarize(&devices);
    if judged
        .findings
        .iter()
        .any(|f| f.severity == greta_vocab::Severity::Fail)
    {
        status = RunStatus::Fail;
    }
    Report {
        schema: results::SCHEMA.into(),
        greta_version: env!("CARGO_PKG_VERSION").into(),
        started_at: meta.started_at.clone(),
        finished_at: results::now_rfc3339(),
        wall_s: meta.wall_s,
        host: results::host_info(),
        profile: "frameworks".into(),
        backend_requested: "frameworks".into(),
        settings: Settings {
            repeat: Some(meta.repeats),
            timeout_s: meta.timeout_s,
            floor_fraction: 1.0,
            baseline: None,
            gates: vec![],
            seed: meta.seed,
            include_test_gates: false,
            peer_fraction: None,
            inject: vec![],
        },
        status,
        devices,
        findings: judged.findings.clone(),
        checks: vec![],
    }
}
