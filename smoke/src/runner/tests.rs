//! Tests of the device runner.
use super::*;
use crate::check::POISON_U32;
use greta_runtime::{HostBuf, Job, Op, RunStats};

mod floors;
mod host_copy;

/// A CPU "device" that computes the reference in f32, with faults to
/// inject: it lets the runner's logic be tested without any GPU.
struct FakeDevice {
    info: greta_runtime::DeviceInfo,
    /// Skip writing this element of every u32 output.
    skip_element: Option<usize>,
    /// Time out on this op name.
    timeout_on: Option<&'static str>,
    lost: Option<String>,
    ns_per_dispatch: u64,
    calls: usize,
    /// Validation messages so far; `complain_on` adds one per run of that op.
    messages: Vec<String>,
    complain_on: Option<&'static str>,
    /// What `ceiling` answers for the ops that have one (all but noop):
    /// the rate is per unit (GB/s for data movement, TFLOP/s for GEMMs).
    ceiling: Option<Result<f64, greta_runtime::CeilingError>>,
    /// Adds 100 to the last element of every gemm_f16 output.
    corrupt_gemm_f16: bool,
    /// `Backend::keep_scratch`'s state, the scratch bytes kept, and how
    /// many bytes of scratch the fake can hold before runs fail to allocate.
    keep: bool,
    kept: u64,
    memory: u64,
}

pub(crate) fn fake_info(fp16: bool) -> greta_runtime::DeviceInfo {
    serde_json::from_value(serde_json::json!({
        "backend": "vulkan", "index": 0, "name": "Fake GPU", "vendor_id": 4098,
        "device_id": 5567, "device_type": "integrated_gpu", "driver_id": "MESA_RADV",
        "driver_name": "radv", "driver_info": "Mesa 24.2", "driver_version": 1,
        "driver_version_text": "24.2.0", "api_version": "1.3.289",
        "uuid": "00112233445566778899aabbccddeeff", "fp16": fp16, "int8": true,
        "subgroup_size": 64, "min_subgroup_size": 32, "max_subgroup_size": 64,
        "coop_matrix": [], "memory_heaps": [], "timestamps": true,
        "timestamp_period_ns": 1.0, "max_storage_buffer_range": 4294967295u64,
        "max_allocation_size": 4294967295u64, "max_workgroup_count": [65535, 65535, 65535],
        "max_workgroup_invocations": 1024, "max_shared_memory": 65536,
        "also_exposed_by": [], "notes": []
    }))
    .expect("fake DeviceInfo matches the runtime's schema")
}

/// What a correct device writes: the f64 reference of `op`, rounded to
/// each output's element type (the fakes here and in `node`).
pub(crate) fn write_reference(
    op: &Op,
    inputs: &[HostBuf],
    outputs: &mut [HostBuf],
) -> Result<(), RuntimeError> {
    let want = greta_kernels::reference(op, inputs, outputs)
        .map_err(|e| RuntimeError::BadInput(e.to_string()))?;
    for (o, w) in outputs.iter_mut().zip(want) {
        match o {
            HostBuf::F32(v) => v.iter_mut().zip(&w).for_each(|(x, y)| *x = *y as f32),
            HostBuf::U32(v) => v.iter_mut().zip(&w).for_each(|(x, y)| *x = *y as u32),
            HostBuf::F16(v) => v
                .iter_mut()
                .zip(&w)
                .for_each(|(x, y)| *x = half::f16::from_f64(*y)),
        }
    }
    Ok(())
}

/// A fake device's timing of `repeats` dispatches of `op`, each
/// `ns_per_dispatch` by its (fake) timestamps, over `wall`.
pub(crate) fn fake_stats(op: &Op, ns_per_dispatch: u64, repeats: u32, wall: Duration) -> RunStats {
    RunStats {
        device_ns: vec![ns_per_dispatch; repeats as usize],
        timing: TimingSource::DeviceTimestamps,
        wall,
        kernel: op.name().to_string(),
        tuning: Default::default(),
        dispatches_per_repeat: 1,
        step_ns: Vec::new(),
    }
}

impl FakeDevice {
    fn new(fp16: bool) -> Self {
        FakeDevice {
            info: fake_info(fp16),
            skip_element: None,
            timeout_on: None,
            lost: None,
            ns_per_dispatch: 1_000,
            calls: 0,
            messages: vec![],
            complain_on: None,
            ceiling: None,
            corrupt_gemm_f16: false,
            keep: false,
            kept: 0,
            memory: u64::MAX,
        }
    }
}

impl Backend for FakeDevice {
    fn info(&self) -> &greta_runtime::DeviceInfo {
        &self.info
    }
    fn supports(&self, op: &Op) -> Result<(), String> {
        match op {
            Op::Rope { .. } => Err("no rope kernel on the fake device".into()),
            _ => Ok(()),
        }
    }
    fn run(&mut self, job: Job<'_>) -> Result<RunStats, RuntimeError> {
        let (op, inputs, outputs, opts) = (job.op, job.inputs, job.outputs, job.opts);
        self.calls += 1;
        if self.complain_on == Some(op.name()) {
            self.messages
                .push(format!("VUID-fake: {} misused a buffer", op.name()));
        }
        if let Some(l) = &self.lost {
            return Err(RuntimeError::DeviceLost(l.clone()));
        }
        if self.timeout_on == Some(op.name()) {
            self.lost = Some("timed out".into());
            return Err(RuntimeError::Timeout {
                what: format!("{op}"),
                timeout: opts.timeout,
                waited: opts.timeout,
            });
        }
        let scratch: u64 = op
            .scratch()
            .iter()
            .map(|s| (s.len * s.dtype.size()) as u64)
            .sum();
        if self.kept + scratch > self.memory {
            return Err(RuntimeError::OutOfMemory(format!("{op}: fake memory full")));
        }
        if self.keep {
            self.kept += scratch;
        }
        write_reference(op, inputs, outputs)?;
        if let Some(i) = self.skip_element {
            for o in outputs.iter_mut() {
                if let HostBuf::U32(v) = o {
                    v[i] = POISON_U32;
                }
            }
        }
        if self.corrupt_gemm_f16 && matches!(op, Op::GemmF16 { .. }) {
            if let Some(HostBuf::F32(v)) = outputs.first_mut() {
                if let Some(x) = v.last_mut() {
                    *x += 100.0;
                }
            }
        }
        Ok(fake_stats(
            op,
            self.ns_per_dispatch,
            opts.repeats,
            Duration::from_micros(50),
        ))
    }
    fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }
    fn keep_scratch(&mut self, on: bool) -> Result<(), RuntimeError> {
        self.keep = on;
        Ok(())
    }
    fn release_kept(&mut self) -> u64 {
        std::mem::take(&mut self.kept)
    }
    fn validation_messages(&self) -> Vec<String> {
        self.messages.clone()
    }
    fn ceiling(
        &mut self,
        op: &Op,
        _timeout: Duration,
    ) -> Option<Result<greta_runtime::Ceiling, greta_runtime::CeilingError>> {
        if matches!(op, Op::Noop) {
            return None;
        }
        let gemm = matches!(op, Op::GemmF16 { .. } | Op::GemmF32 { .. });
        Some(self.ceiling.clone()?.map(|rate| {
            greta_runtime::Ceiling {
                rate,
                unit: if gemm {
                    greta_runtime::CeilingUnit::TFlops
                } else {
                    greta_runtime::CeilingUnit::GBps
                },
                source: if gemm {
                    "fakeGemm"
                } else {
                    "memcpy d2d (fake)"
                }
                .into(),
                library: "/fake/libfake.so".into(),
                version: "1.0".into(),
                found_by: "the fake's rule".into(),
            }
        }))
    }
}

fn tiny_gates() -> Vec<Gate> {
    crate::gates::test_gates(&[
        r#"{ op = "copy", n = 64 }"#,
        r#"{ op = "gemm_f32", m = 8, n = 8, k = 8 }"#,
        r#"{ op = "softmax", rows = 2, cols = 16 }"#,
        r#"{ op = "rope", tokens = 2, heads = 1, head_dim = 4, pos0 = 0, theta = 10000.0 }"#,
        r#"{ op = "gemm_f16", m = 8, n = 8, k = 8 }"#,
    ])
}

struct Fixture {
    gates: Vec<Gate>,
    classes: ClassFile,
    specs: SpecFile,
    deny: DenyList,
    faults: Faults,
    profile: Profile,
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            gates: tiny_gates(),
            classes: ClassFile::default(),
            specs: SpecFile::builtin(),
            deny: DenyList::default(),
            faults: Faults::default(),
            profile: Profile::Default,
        }
    }
    /// `dev` run through the fixture's gates, no baseline, quietly.
    fn run(&self, dev: &mut FakeDevice) -> DeviceRun {
        run_device(dev, 0.1, &self.ctx(None), &Quiet)
    }
    fn ctx<'a>(&'a self, baseline: Option<&'a Baseline>) -> DeviceContext<'a> {
        DeviceContext {
            profile: self.profile,
            gates: &self.gates,
            repeat: Some(3),
            timeout: Duration::from_secs(1),
            seed: 1,
            floor_fraction: 0.75,
            baseline,
            classes: &self.classes,
            specs: &self.specs,
            deny: &self.deny,
            faults: &self.faults,
            shared: None,
        }
    }
}

/// Why gate `i` of `run` failed or was skipped.
fn reason(run: &DeviceRun, i: usize) -> &str {
    run.gates[i]
        .reason
        .as_deref()
        .expect("the gate has a reason")
}

fn status(run: &DeviceRun) -> Vec<(&str, GateStatus)> {
    run.gates
        .iter()
        .map(|g| (g.id.as_str(), g.status))
        .collect()
}

#[test]
fn a_healthy_device_passes_and_reports_rates() {
    let f = Fixture::new();
    let mut dev = FakeDevice::new(true);
    let run = f.run(&mut dev);
    assert_eq!(
        status(&run),
        [
            ("copy.t", GateStatus::Pass),
            ("gemm_f32.t", GateStatus::Pass),
            ("softmax.t", GateStatus::Pass),
            ("rope.t", GateStatus::Skip),
            ("gemm_f16.t", GateStatus::Pass),
        ]
    );
    assert_eq!(run.status, crate::results::RunStatus::Pass);
    let m = run.gates[0].metrics.as_ref().unwrap();
    assert_eq!((m.repeats_clean, m.repeats_total), (3, 3));
    // copy of 64 u32 moves 512 bytes; 1000 ns per dispatch -> 0.512 GB/s.
    assert_eq!(m.rate, Some(0.512));
    assert_eq!(m.time_median_us, Some(1.0));
    assert!(reason(&run, 3).contains("no rope kernel"));
}

#[test]
fn perf_gates_carry_the_in_run_ceiling_and_their_ratio_to_it() {
    let mut f = Fixture::new();
    let mut dev = FakeDevice::new(true);
    dev.ceiling = Some(Ok(1.024));
    // Not in perf: no ceiling is measured at all.
    let run = f.run(&mut dev);
    assert!(run.gates.iter().all(|g| g.in_run == Default::default()));
    f.profile = Profile::Perf;
    let run = f.run(&mut dev);
    let copy = &run.gates[0];
    assert_eq!(copy.status, GateStatus::Pass);
    let c = copy.in_run.ceiling.as_ref().unwrap();
    assert_eq!((c.rate, c.unit), (1.024, crate::results::RateUnit::GBps));
    assert_eq!(c.source, "memcpy d2d (fake)");
    // Which file each ceiling came from and why, once per device.
    let said: Vec<&String> = run
        .notes
        .iter()
        .filter(|n| n.starts_with("in-run ceiling"))
        .collect();
    assert_eq!(
        said,
        [
            "in-run ceiling memcpy d2d (fake) from /fake/libfake.so (the fake's rule), version 1.0",
            "in-run ceiling fakeGemm from /fake/libfake.so (the fake's rule), version 1.0"
        ]
    );
    // copy.t runs at 0.512 GB/s (see above): half the ceiling.
    assert_eq!(copy.in_run.ratio, Some(0.5));
    let gemm = &run.gates[1];
    let m = gemm.metrics.as_ref().unwrap().rate.unwrap();
    assert_eq!(
        gemm.in_run.ceiling.as_ref().unwrap().unit,
        crate::results::RateUnit::TFlops
    );
    assert_eq!(gemm.in_run.ratio, Some(m / 1.024));
    // A skipped gate measured nothing, so it gets no ceiling either.
    assert_eq!(run.gates[3].status, GateStatus::Skip);
    assert_eq!(run.gates[3].in_run, Default::default());
}

#[test]
fn a_missing_vendor_library_is_said_and_fails_nothing() {
    let mut f = Fixture::new();
    f.profile = Profile::Perf;
    let mut dev = FakeDevice::new(true);
    dev.ceiling = Some(Err(greta_runtime::CeilingError::NotFound {
        what: "cuBLAS (libcublas)".into(),
        looked: vec!["/env/nvidia/cublas/lib/libcublas.so (the env): not there".into()],
    }));
    let run = f.run(&mut dev);
    assert_eq!(run.status, crate::results::RunStatus::Pass);
    let g = &run.gates[1];
    assert_eq!(g.status, GateStatus::Pass);
    assert!(g.in_run.ceiling.is_none() && g.in_run.ratio.is_none());
    let why = g.in_run.ceiling_unavailable.as_deref().unwrap();
    assert!(
        why.contains("no cuBLAS") && why.contains("/env/nvidia/cublas/lib/libcublas.so"),
        "{why}"
    );
    // A timeout while measuring loses the device like any other.
    dev.ceiling = Some(Err(greta_runtime::CeilingError::Timeout(
        "memcpy hung".into(),
    )));
    let run = run_device(
        &mut FakeDevice {
            ceiling: dev.ceiling.clone(),
            ..FakeDevice::new(true)
        },
        0.1,
        &f.ctx(None),
        &Quiet,
    );
    assert!(run.lost.as_deref().unwrap().contains("memcpy hung"));
    assert!(reason(&run, 1).contains("device lost earlier"));
}

fn stress_gates() -> Vec<Gate> {
    let text = "[[gate]]\nid = \"stress.t\"\nabout = \"\"\nop = { op = \"gemm_f16\", m = 40, n = 24, k = 16 }\nprofiles = [\"health\"]\nstress = { seconds = 0.02, interval_s = 0.01, tiles = 3, tile = 8 }\n";
    crate::gates::Catalog::parse("t.toml", text)
        .unwrap()
        .plan(Profile::Health, &[], false)
        .unwrap()
}

#[test]
fn the_stress_gate_runs_for_its_time_and_checks_sampled_tiles() {
    let mut f = Fixture::new();
    f.gates = stress_gates();
    f.profile = Profile::Health;
    let mut dev = FakeDevice::new(true);
    let run = f.run(&mut dev);
    let g = &run.gates[0];
    assert_eq!(g.status, GateStatus::Pass, "{:?}", g.reason);
    let s = g.in_run.stress.as_ref().unwrap();
    // The fake has no stress loop: greta's gemm_f16 ran through `run`, and it says so.
    assert_eq!(s.engine, "greta gemm_f16");
    assert!(
        s.note.as_deref().unwrap().contains("no vendor BLAS"),
        "{s:?}"
    );
    assert!(
        s.intervals >= 1 && s.tiles_checked == 3 * s.intervals,
        "{s:?}"
    );
    // 2*40*24*16 flops per 1000 ns dispatch.
    let want = 2.0 * 40.0 * 24.0 * 16.0 / 1000.0 / 1e3;
    assert!((s.tflops_sustained.unwrap() - want).abs() < 1e-12, "{s:?}");
    assert_eq!(g.metrics.as_ref().unwrap().rate, s.tflops_sustained);
    assert_eq!(s.tflops_min, s.tflops_max);
    // A device whose GEMM is wrong in one tile fails the gate, naming it.
    dev.corrupt_gemm_f16 = true;
    let run = f.run(&mut dev);
    let g = &run.gates[0];
    assert_eq!(g.status, GateStatus::Fail);
    let why = g.reason.as_deref().unwrap();
    assert!(
        why.contains("tile 8x8 at (32, 16)") && why.contains("relative error"),
        "{why}"
    );
}

#[test]
fn an_unwritten_element_fails_the_gate_and_blocks_f16() {
    let f = Fixture::new();
    let mut dev = FakeDevice::new(true);
    dev.skip_element = Some(5);
    let run = f.run(&mut dev);
    assert_eq!(run.gates[0].status, GateStatus::Fail);
    let why = reason(&run, 0).to_string();
    assert!(
        why.contains("0/3 clean repeats") && why.contains("never written"),
        "{why}"
    );
    assert_eq!(run.gates[4].status, GateStatus::Skip);
    assert!(reason(&run, 4).contains("copy.t"));
    assert_eq!(run.status, crate::results::RunStatus::Fail);
}

#[test]
fn f16_needs_the_features_and_no_deny_entry() {
    let mut f = Fixture::new();
    let run = run_device(&mut FakeDevice::new(false), 0.1, &f.ctx(None), &Quiet);
    assert_eq!(run.gates[4].status, GateStatus::Skip);
    assert!(reason(&run, 4).contains("shaderFloat16"));
    f.deny = DenyList::parse(
        "d.toml",
        "[[deny]]\nid = \"fake\"\nreason = \"known bad\"\nmatch = { driver_name = \"radv\" }\n",
    )
    .unwrap();
    let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(None), &Quiet);
    assert_eq!(run.gates[4].status, GateStatus::Skip);
    assert!(reason(&run, 4).contains("fake: known bad"));
    assert_eq!(run.status, crate::results::RunStatus::Pass);
}

#[test]
fn a_timeout_fails_the_gate_and_skips_the_rest_without_touching_the_device() {
    let f = Fixture::new();
    let mut dev = FakeDevice::new(true);
    dev.timeout_on = Some("gemm_f32");
    let run = f.run(&mut dev);
    assert_eq!(run.gates[0].status, GateStatus::Pass);
    assert_eq!(run.gates[1].status, GateStatus::Fail);
    assert!(reason(&run, 1).contains("timeout"));
    assert!(run.gates[2..].iter().all(|g| g.status == GateStatus::Skip));
    assert!(reason(&run, 2).contains("device lost"));
    assert!(run.lost.as_ref().unwrap().contains("gemm_f32.t"));
    // 3 copy repeats + the one gemm submission that timed out; nothing after.
    assert_eq!(dev.calls, 4);
}

#[test]
fn validation_messages_fail_the_gate_they_came_from_and_the_run() {
    let f = Fixture::new();
    let mut dev = FakeDevice::new(true);
    dev.complain_on = Some("softmax");
    let run = f.run(&mut dev);
    assert_eq!(run.gates[1].status, GateStatus::Pass);
    assert_eq!(run.gates[2].status, GateStatus::Fail);
    let why = reason(&run, 2);
    assert!(
        why.contains("3 validation-layer message(s): VUID-fake"),
        "{why}"
    );
    assert_eq!(run.validation_messages.len(), 3);
    assert_eq!(run.status, crate::results::RunStatus::Fail);

    // Raised while opening the device: no gate to blame, the run fails.
    let mut dev = FakeDevice::new(true);
    dev.messages.push("VUID-open".into());
    let run = f.run(&mut dev);
    assert!(run.gates.iter().all(|g| g.status != GateStatus::Fail));
    assert_eq!(run.validation_messages, ["VUID-open"]);
    assert_eq!(run.status, crate::results::RunStatus::Fail);
}

/// The whole-memory memtest: slices run until the fraction of the device's
/// memory is covered, each kept allocated while the next runs, all freed
/// after; an allocation failure past the first slice ends the sweep (the
/// coverage is noted), a memory error fails it naming the slice.
#[test]
fn a_whole_memory_memtest_sweeps_kept_slices_and_frees_them() {
    let mut f = Fixture::new();
    f.profile = Profile::Acceptance;
    f.gates = crate::gates::Catalog::parse(
        "t.toml",
        "[[gate]]\nid = \"memtest.t\"\nabout = \"\"\nop = { op = \"memtest\", words = 1024, patterns = 15, seed = 1, flip_word = 0, flip_mask = 0 }\nprofiles = [\"acceptance\"]\nwhole_memory = 0.5\n",
    )
    .unwrap()
    .plan(Profile::Acceptance, &[], false)
    .unwrap();
    let device = || {
        let mut d = FakeDevice::new(true);
        d.info.memory_heaps = vec![greta_runtime::MemoryHeap {
            size: 10 * 4096,
            device_local: true,
        }];
        d
    };
    let mut dev = device();
    let run = f.run(&mut dev);
    assert_eq!(run.gates[0].status, GateStatus::Pass, "{:?}", run.gates[0]);
    assert_eq!(dev.calls, 5);
    assert!(!dev.keep && dev.kept == 0, "kept slices freed");
    let m = run.gates[0].metrics.as_ref().unwrap();
    assert_eq!((m.repeats_clean, m.repeats_total), (5, 5));
    assert!(
        run.notes.iter().any(|n| n.starts_with(
            "memtest.t: 0.0 GiB tested in 5 slice(s) of 0.0 GiB (0.50 of 0.0 GiB device memory; 5 planned)"
        ) && n.contains("0.0 GiB freed after")),
        "{:?}",
        run.notes
    );

    // Memory in use elsewhere: the fourth slice cannot be allocated.
    let mut dev = device();
    dev.memory = 3 * 4096;
    let run = f.run(&mut dev);
    assert_eq!(run.gates[0].status, GateStatus::Pass);
    assert!(
        run.notes.iter().any(|n| n.contains("in 3 slice(s)")
            && n.contains("5 planned; slice 4 could not be allocated")),
        "{:?}",
        run.notes
    );
    // None at all: the gate fails.
    let mut dev = device();
    dev.memory = 0;
    let run = f.run(&mut dev);
    assert_eq!(run.gates[0].status, GateStatus::Fail);
    assert!(
        reason(&run, 0).starts_with("slice 1/5: "),
        "{}",
        reason(&run, 0)
    );

    // A memory error (a corrupted record) fails the gate at its slice.
    f.faults = Faults::parse(&["corrupt:0:memtest.t".into()], &f.gates).unwrap();
    let mut dev = device();
    let run = f.run(&mut dev);
    assert_eq!(run.gates[0].status, GateStatus::Fail);
    assert!(
        reason(&run, 0).starts_with("slice 1/5: "),
        "{}",
        reason(&run, 0)
    );
    assert_eq!((dev.calls, dev.kept), (1, 0));
}
