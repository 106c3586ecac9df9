//! The telemetry faults that make a rented GPU bad, injected where the
//! readings come from (`--inject throttle|link|ecc|vanish`), each failing
//! `greta smoke` on lavapipe with exit 1 and a verdict that names it, while
//! the same gates without the fault pass. Lavapipe has no telemetry of its
//! own: the injected source stands in for the card's, and every verdict
//! downstream (the stress gate's, the node checks after the run, the
//! recount of the backend's devices) is the one a real card meets.

use crate::support::run::Run;
use greta_smoke::results::{GateStatus, Report, RunStatus};

/// The short stress gate (watched by the telemetry sampler), one interval.
const STRESS: [&str; 4] = ["--gate", "stress.gemm_f16.512", "--repeat", "1"];

fn smoke(args: &[&str]) -> (Run, Report) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = crate::support::greta();
    cmd.args([
        "smoke",
        "--device",
        "cpu",
        "--json",
        "--profile",
        "health",
        "--out",
    ])
    .arg(dir.path().join("out"))
    .args(args)
    .env("XDG_DATA_HOME", dir.path());
    let run = Run::of(cmd);
    let report: Report = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not a greta.smoke/v1 report: {e}"));
    (run, report)
}

fn failed_run(args: &[&str]) -> Report {
    let (run, r) = smoke(args);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(r.status, RunStatus::Fail);
    r
}

fn check<'a>(r: &'a Report, name: &str) -> &'a greta_smoke::telemetry::NodeCheck {
    r.devices[0]
        .checks
        .iter()
        .chain(r.checks.iter())
        .find(|c| c.check == name)
        .unwrap_or_else(|| panic!("no {name} check: {:?} {:?}", r.devices[0].checks, r.checks))
}

#[test]
fn clean_stress_passes_with_the_device_count_unchanged() {
    let (run, r) = smoke(&STRESS);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(r.status, RunStatus::Pass);
    let g = &r.devices[0].gates[0];
    assert_eq!(g.status, GateStatus::Pass, "{:?}", g.reason);
    assert!(g.in_run.telemetry.is_empty(), "lavapipe has no telemetry");
    assert!(r.devices[0].checks.is_empty());
    let c = check(&r, "gpu_count_stable");
    assert!(c.pass, "{}", c.detail);
}

#[test]
fn thermal_throttling_fails_the_stress_gate_and_names_it() {
    let r = failed_run(&[&STRESS[..], &["--inject", "throttle:0"]].concat());
    let g = &r.devices[0].gates[0];
    assert_eq!(g.status, GateStatus::Fail);
    let why = g.reason.as_deref().unwrap();
    assert!(
        why.starts_with("thermal throttling on inject:0 for 10% or more of the gate")
            && why.contains("inject:0: thermally limited 100% of the time"),
        "{why}"
    );
    let t = &g.in_run.telemetry[0];
    assert_eq!((t.device.as_str(), t.thermal), ("inject:0", 1.0));
    assert!(t.samples >= 1);
    // A power cap under load is attributed, and passes.
    let (run, r) = smoke(&[&STRESS[..], &["--inject", "throttle:0:power"]].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(r.devices[0].gates[0].in_run.telemetry[0].power_capped, 1.0);
}

#[test]
fn a_downtrained_link_fails_the_run_with_the_sentence() {
    let r = failed_run(&[&STRESS[..], &["--inject", "link:0:3x8"]].concat());
    assert_eq!(r.devices[0].gates[0].status, GateStatus::Pass);
    let c = check(&r, "pcie_link");
    assert!(!c.pass);
    assert_eq!(c.detail, "PCIe Gen5 x16 card trained at Gen3 x8 (inject:0)");

    // The one line a scheduler shows names the check, and the textfile
    // carries it as a failed check.
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("greta.prom");
    let mut cmd = crate::support::greta();
    cmd.args([
        "smoke",
        "--device",
        "cpu",
        "--profile",
        "health",
        "--oneline",
        "--no-save",
    ])
    .args(STRESS)
    .args(["--inject", "link:0:3x8", "--prom"])
    .arg(&prom)
    .env("XDG_DATA_HOME", dir.path());
    let run = Run::of(cmd);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let line = run.stdout.trim_end();
    assert!(
        line.starts_with("FAIL: health on 1 device: device 0 (llvmpipe")
            && line.contains(": pcie_link: PCIe Gen5 x16 card trained at Gen3 x8 (inject:0)"),
        "{line}"
    );
    assert!(
        run.stderr
            .contains("check pcie_link: FAIL: PCIe Gen5 x16 card trained at Gen3 x8 (inject:0)"),
        "the table names it: {}",
        run.stderr
    );
    let text = std::fs::read_to_string(&prom).unwrap();
    let failed = text
        .lines()
        .find(|l| l.starts_with("greta_smoke_check_pass{") && l.contains("check=\"pcie_link\""))
        .unwrap_or_else(|| panic!("no pcie_link check in\n{text}"));
    assert!(failed.ends_with("} 0"), "{failed}");
}

#[test]
fn a_rising_error_counter_fails_the_run_and_names_the_block() {
    let r = failed_run(&[&STRESS[..], &["--inject", "ecc:0:gfx"]].concat());
    assert_eq!(r.devices[0].gates[0].status, GateStatus::Pass);
    let c = check(&r, "error_counters");
    assert!(!c.pass);
    assert_eq!(
        c.detail,
        "gfx error counter rose on inject:0: gfx uncorrectable 0 -> 1"
    );
}

#[test]
fn a_gpu_that_vanishes_mid_run_fails_the_run_and_the_recount() {
    let args = [
        "--gate",
        "fill.16m",
        "--gate",
        "copy.16m",
        "--repeat",
        "1",
        "--inject",
        "vanish:0:copy.16m",
    ];
    let r = failed_run(&args);
    let d = &r.devices[0];
    assert_eq!(d.gates[0].status, GateStatus::Pass, "before it vanished");
    assert_eq!(d.gates[1].status, GateStatus::Fail);
    assert!(
        d.gates[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("device lost: the GPU is gone from the bus"),
        "{:?}",
        d.gates[1].reason
    );
    assert!(d
        .lost
        .as_deref()
        .unwrap()
        .starts_with("copy.16m: device lost"));
    let c = check(&r, "gpu_count_stable");
    assert!(!c.pass);
    assert!(
        c.detail.starts_with("GPU count fell during the run:") && c.detail.ends_with("1 vanished"),
        "{}",
        c.detail
    );
}

#[test]
fn the_memory_test_is_watched_and_fails_on_heat() {
    let mem = ["--gate", "memtest.16m", "--repeat", "1"];
    let (run, r) = smoke(&mem);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(r.devices[0].gates[0].in_run.telemetry.is_empty());
    let r = failed_run(&[&mem[..], &["--inject", "throttle:0"]].concat());
    let g = &r.devices[0].gates[0];
    assert_eq!(g.status, GateStatus::Fail);
    assert!(
        g.reason
            .as_deref()
            .unwrap()
            .starts_with("thermal throttling on inject:0"),
        "{:?}",
        g.reason
    );
    assert_eq!(g.in_run.telemetry[0].thermal, 1.0);
    // The readings over the gate are kept: a point per sample (a short
    // gate), in time order, each naming the injected limit.
    let t = &g.in_run.telemetry[0];
    assert_eq!(t.series.len(), t.samples, "{:?}", t.series);
    assert!(t.series.windows(2).all(|w| w[0].t_s <= w[1].t_s));
    assert!(t
        .series
        .iter()
        .all(|p| p.held == [greta_smoke::telemetry::Held::Thermal]));
    assert!(
        r.devices[0]
            .notes
            .iter()
            .any(|n| n.starts_with("inject:0 during memtest.16m: sustained ")
                && n.contains(" GB/s, thermally limited 100% of the time")),
        "{:?}",
        r.devices[0].notes
    );
}

/// The host-copy gate on lavapipe (validation layers on): 256 MiB of fresh
/// random bytes to the device and back through host-visible memory, each
/// way's rate reported; no link floor on a CPU device, and the table says
/// so. A flipped bit in what came back (`--inject corrupt:0`) fails it with
/// the round and byte.
#[test]
fn the_host_copy_gate_runs_on_lavapipe_and_catches_a_wrong_byte() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str], json: bool| {
        let mut cmd = crate::support::greta();
        cmd.args(["smoke", "--device", "cpu", "--profile", "acceptance"])
            .args(["--gate", "copy.host.256m", "--repeat", "2", "--out"])
            .arg(dir.path().join("out"))
            .args(extra)
            .env("GRETA_VK_VALIDATION", "1")
            .env("XDG_DATA_HOME", dir.path());
        if json {
            cmd.arg("--json");
        }
        Run::of(cmd)
    };
    let table = run(&[], false);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table.stdout.contains("host copy copy.host.256m: host to device ")
            && table.stdout.contains(", 2/2 rounds clean (vkCmdCopyBuffer of 268435456 bytes")
            && table.stdout.contains("; no floor: a CPU device's host copies are memcpy within host memory, over no link"),
        "{}",
        table.stdout
    );
    let clean = run(&[], true);
    let r: Report = serde_json::from_str(&clean.stdout).unwrap();
    let g = &r.devices[0].gates[0];
    assert_eq!(g.status, GateStatus::Pass, "{:?}", g.reason);
    assert!(r.devices[0].validation_messages.is_empty());
    let h = g.in_run.host_copy.as_ref().unwrap();
    assert_eq!((h.bytes, h.rounds, h.rounds_clean), (256 << 20, 2, 2));
    assert!(h.up_gbps.is_some_and(|v| v > 0.0) && h.down_gbps.is_some_and(|v| v > 0.0));
    assert!(g.floor.is_none() && g.spec.is_none());
    let bad = run(&["--inject", "corrupt:0"], true);
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    let r: Report = serde_json::from_str(&bad.stdout).unwrap();
    let why = r.devices[0].gates[0].reason.as_deref().unwrap();
    assert!(
        why.starts_with(
            "1 of 2 rounds came back wrong: first in round 0 at byte 134217731: sent 0x"
        ),
        "{why}"
    );
}
