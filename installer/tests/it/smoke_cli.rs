//! `greta smoke` end to end on Mesa lavapipe (the CPU Vulkan device), with
//! the validation layers on: any validation message fails a gate and so the
//! test. Runs the real binary; checks exit codes, the result files and the
//! JSON on stdout.

use crate::support::run::Run;
use greta_smoke::results::{GateStatus, Report, RunStatus, CSV_COLUMNS};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn greta(args: &[&str], envs: &[(&str, &str)], data_home: &Path) -> Run {
    let mut cmd = crate::support::greta();
    cmd.arg("smoke")
        .args(args)
        .env("GRETA_VK_VALIDATION", "1")
        .env("XDG_DATA_HOME", data_home);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    Run::of(cmd)
}

/// Run on lavapipe with --json; parse stdout.
fn json_run(args: &[&str], envs: &[(&str, &str)], dir: &Path) -> (Run, Report) {
    let mut all = vec!["--device", "cpu", "--json", "--out"];
    let out = dir.join("out");
    let out_s = out.to_str().unwrap().to_string();
    all.push(&out_s);
    all.extend_from_slice(args);
    let run = greta(&all, envs, dir);
    let report: Report = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not a greta.smoke/v1 report: {e}"));
    (run, report)
}

fn assert_no_validation_messages(r: &Report) {
    for d in &r.devices {
        assert!(
            d.validation_messages.is_empty(),
            "validation layer: {:?}",
            d.validation_messages
        );
    }
}

fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn assert_all_pass(r: &Report, run: &Run, expect: &[&str]) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(r.status, RunStatus::Pass);
    assert_no_validation_messages(r);
    let d = &r.devices[0];
    assert_eq!(d.backend, "vulkan");
    assert_eq!(
        d.device.device_type,
        greta_vocab::DeviceType::Cpu,
        "tests run on lavapipe"
    );
    let ids: Vec<&str> = d.gates.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(ids, expect);
    for g in &d.gates {
        assert_eq!(g.status, GateStatus::Pass, "{}: {:?}", g.id, g.reason);
        let m = g.metrics.as_ref().unwrap();
        assert_eq!(m.repeats_clean, m.repeats_total);
        assert!(m.rate.unwrap() > 0.0, "{} has no rate", g.id);
        assert!(m.rel_err.is_some() && m.max_abs_err.is_some());
    }
}

#[test]
fn ultrasafe_passes_on_lavapipe_and_writes_json_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (run, r) = json_run(&["--profile", "ultrasafe"], &[], dir.path());
    assert_all_pass(&r, &run, &["fill.tiny", "copy.tiny"]);
    assert_eq!(r.schema, "greta.smoke/v1");
    assert_eq!(r.profile, "ultrasafe");
    assert_eq!(r.settings.timeout_s, 10.0, "the profile's default timeout");
    for g in &r.devices[0].gates {
        assert_eq!(g.metrics.as_ref().unwrap().repeats_total, 2);
    }
    // The dated files in --out: the JSON is what stdout printed.
    let files = result_files(&dir.path().join("out"));
    assert_eq!(files.len(), 2, "{files:?}");
    let json = files
        .iter()
        .find(|p| p.extension().unwrap() == "json")
        .unwrap();
    let name = json.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("smoke-") && name.ends_with("-ultrasafe.json"),
        "{name}"
    );
    let on_disk: Report = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(on_disk, r);
    let csv = std::fs::read_to_string(json.with_extension("csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), CSV_COLUMNS.join(","));
    assert_eq!(lines.count(), 2);
    assert!(
        run.stderr.contains("smoke ultrasafe: PASS"),
        "table on stderr with --json"
    );
    // The run ends with how to draw its page; the command works as printed.
    let last = run.stderr.lines().last().unwrap_or_default();
    let cmd = last
        .strip_prefix("page: greta report")
        .unwrap_or_else(|| panic!("last line: {last:?}"));
    let args: Vec<String> = cmd
        .split(" (writes")
        .next()
        .unwrap()
        .split_whitespace()
        .map(|w| w.trim_matches('\'').to_string())
        .collect();
    let cwd = tempfile::tempdir().unwrap();
    let o = crate::support::greta()
        .arg("report")
        .args(&args)
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let page = std::fs::read_to_string(cwd.path().join("greta-report.html")).unwrap();
    assert!(page.contains("fill.tiny"), "the run is drawn");
}

#[test]
fn default_profile_passes_on_lavapipe() {
    let dir = tempfile::tempdir().unwrap();
    let (run, r) = json_run(&["--profile", "default", "--no-progress"], &[], dir.path());
    assert_all_pass(
        &r,
        &run,
        &[
            "noop.dispatch",
            "fill.16m",
            "copy.16m",
            "vec_add.1m",
            "gemm_f32.256",
            "rmsnorm.256x1024",
            "layernorm.256x1024",
            "softmax.256x1024",
            "rope.64x8x128",
            "kv_update.2x256x8x128",
            "memtest.4m",
            "rope_kv_f16.100x4x64",
            "attn_decode_f16.4x64.L300",
            "attn_prefill_f16.4x64.S100P13",
            "gemm_f16.256",
            "gemv_f16.256x1024",
            "linear_f16.64x256x512",
            "rmsnorm_f16.64x1024",
            "add_rmsnorm_f16.64x1024",
            "swiglu_f16.64x1024",
            "gemv_f16.100x1001",
            "linear_f16.67x45x33",
            "rmsnorm_f16.7x1001",
            "add_rmsnorm_f16.7x1001",
            "swiglu_f16.7x1001",
            "gemv_add_f16.256x1024",
            "rms_gemv_swiglu_f16.688x256",
            "rms_gemv_rope_kv_f16.4x64.L128",
            "gemv_add_f16.100x1001",
            "rms_gemv_swiglu_f16.100x1001",
            "rms_gemv_rope_kv_f16.3x10.L12",
            "block_decode.small",
            "block_prefill.small",
        ],
    );
    for g in &r.devices[0].gates {
        assert_eq!(g.metrics.as_ref().unwrap().repeats_total, 10, "{}", g.id);
    }
}

#[test]
fn default_profile_without_json_prints_the_table_and_writes_under_xdg_data_home() {
    let dir = tempfile::tempdir().unwrap();
    let run = greta(
        &["--device", "cpu", "--profile", "ultrasafe", "--repeat", "1"],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("fill.tiny") && run.stdout.contains("PASS"));
    let files = result_files(&dir.path().join("greta/smoke"));
    assert_eq!(files.len(), 2, "{files:?}");
}

#[test]
fn device_all_runs_every_listed_device() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = greta(
        &[
            "--device",
            "all",
            "--profile",
            "ultrasafe",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
        dir.path(),
    );
    let r: Report = serde_json::from_str(&run.stdout).unwrap();
    assert!(!r.devices.is_empty());
    // Each device once; lavapipe only when there is no GPU (the CI case,
    // where it must pass).
    let mut indices: Vec<usize> = r.devices.iter().map(|d| d.index).collect();
    indices.dedup();
    assert_eq!(indices.len(), r.devices.len());
    let cpu: Vec<_> = r
        .devices
        .iter()
        .filter(|d| d.device.device_type == greta_vocab::DeviceType::Cpu)
        .collect();
    if cpu.len() == r.devices.len() {
        assert!(cpu.iter().all(|d| d.status == RunStatus::Pass));
    } else {
        assert!(cpu.is_empty(), "CPU devices run beside a GPU");
    }
    assert_eq!(run.code, r.status.exit_code() as i32);
}

#[test]
fn broken_kernel_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let (run, r) = json_run(
        &[
            "--gate",
            "test.broken_copy",
            "--gate",
            "copy.tiny",
            "--repeat",
            "3",
        ],
        &[("GRETA_SMOKE_TEST_GATES", "1")],
        dir.path(),
    );
    assert_eq!(run.code, 1, "a failed gate is exit 1");
    assert_eq!(r.status, RunStatus::Fail);
    assert_no_validation_messages(&r);
    let gates = &r.devices[0].gates;
    let ok = gates.iter().find(|g| g.id == "copy.tiny").unwrap();
    assert_eq!(
        ok.status,
        GateStatus::Pass,
        "the correct copy passes beside it"
    );
    let bad = gates.iter().find(|g| g.id == "test.broken_copy").unwrap();
    assert_eq!(bad.status, GateStatus::Fail);
    let why = bad.reason.as_deref().unwrap();
    assert!(why.contains("0/3 clean repeats"), "{why}");
    // Element n/2 is skipped by the broken kernel: named by index.
    assert!(why.contains("[2048]"), "{why}");
    assert_eq!(bad.metrics.as_ref().unwrap().repeats_clean, 0);
}

/// `--inject prologue:0`: the decode layer runs its fused QKV step's
/// diagnostic variant (an RMSNorm prologue that leaves one lane out of the
/// sum of squares) on the device; the gate fails every repeat against the
/// f64 layer (exit 1) and the report names the fault, while the same gate
/// on the same seed passes without it. A gate that is no decode layer is
/// refused (exit 2).
#[test]
fn a_wrong_fused_prologue_fails_the_decode_gate() {
    let dir = tempfile::tempdir().unwrap();
    let gate = [
        "--gate",
        "block_decode.small",
        "--repeat",
        "2",
        "--seed",
        "7",
    ];
    let (run, r) = json_run(&gate, &[], dir.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(r.devices[0].gates[0].status, GateStatus::Pass);
    let faulty = [&gate[..], &["--inject", "prologue:0"]].concat();
    let (run, r) = json_run(&faulty, &[], dir.path());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(r.settings.inject, ["prologue:0"]);
    assert_no_validation_messages(&r);
    let g = &r.devices[0].gates[0];
    assert_eq!(g.status, GateStatus::Fail);
    let why = g.reason.as_deref().unwrap();
    assert!(
        why.contains("0/2 clean repeats") && why.contains("outside the fp16 error model"),
        "{why}"
    );
    let run = greta(
        &[
            "--device",
            "cpu",
            "--gate",
            "copy.tiny",
            "--inject",
            "prologue:0:copy.tiny",
        ],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no decode layer"), "{}", run.stderr);
}

#[test]
fn test_gates_are_hidden_without_the_test_switch() {
    let dir = tempfile::tempdir().unwrap();
    let run = greta(
        &["--device", "cpu", "--gate", "test.broken_copy"],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("unknown gate \"test.broken_copy\""),
        "{}",
        run.stderr
    );
    let run = greta(&["--list-gates"], &[], dir.path());
    assert!(!run.stdout.contains("test.slow"));
    let run = greta(&["--list-gates", "--include-test-gates"], &[], dir.path());
    assert!(run.stdout.contains("test.slow") && run.stdout.contains("TEST-ONLY"));
}

#[test]
fn slow_kernel_times_out_promptly_and_the_device_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (run, r) = json_run(
        &[
            "--gate",
            "copy.tiny",
            "--gate",
            "test.slow",
            "--gate",
            "gemm_f16.256",
            "--timeout",
            "0.3",
        ],
        &[("GRETA_SMOKE_TEST_GATES", "1")],
        dir.path(),
    );
    assert_eq!(run.code, 1);
    // The kernel alone runs for seconds on lavapipe; greta must not wait
    // for it (nor hang tearing the device down).
    assert!(
        run.elapsed < Duration::from_secs(20),
        "took {:?}",
        run.elapsed
    );
    let d = &r.devices[0];
    let by_id = |id: &str| d.gates.iter().find(|g| g.id == id).unwrap();
    assert_eq!(by_id("copy.tiny").status, GateStatus::Pass);
    let slow = by_id("test.slow");
    assert_eq!(slow.status, GateStatus::Fail);
    let why = slow.reason.as_deref().unwrap();
    assert!(
        why.contains("timeout") && why.contains("did not complete within"),
        "{why}"
    );
    let after = by_id("gemm_f16.256");
    assert_eq!(after.status, GateStatus::Skip);
    assert!(after.reason.as_deref().unwrap().contains("device lost"));
    assert!(d.lost.as_deref().unwrap().contains("test.slow"));
    assert_eq!(r.settings.timeout_s, 0.3);
}

/// A real run's JSON with every rate replaced: a baseline to compare against.
fn baseline_with_rate(dir: &Path, rate: f64) -> PathBuf {
    let (run, mut r) = json_run(&["--profile", "ultrasafe"], &[], dir);
    assert_eq!(run.code, 0);
    for g in &mut r.devices[0].gates {
        g.metrics.as_mut().unwrap().rate = Some(rate);
    }
    let p = dir.join(format!("baseline-{rate:e}.json"));
    std::fs::write(&p, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    p
}

#[test]
fn baseline_floors_pass_and_fail() {
    let dir = tempfile::tempdir().unwrap();
    // A baseline far below anything measurable: the floors hold.
    let low = baseline_with_rate(dir.path(), 1e-9);
    let (run, r) = json_run(
        &[
            "--profile",
            "ultrasafe",
            "--baseline",
            low.to_str().unwrap(),
        ],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    for g in &r.devices[0].gates {
        let f = g.floor.as_ref().expect("baseline floor applied");
        assert!(f.passed);
        assert_eq!(f.fraction, 0.8);
        assert!((f.limit - 0.8e-9).abs() < 1e-18);
        assert!(f.source.contains("baseline-1e-9.json"));
    }
    assert_eq!(r.settings.baseline.as_deref(), Some(low.to_str().unwrap()));

    // An impossible baseline (1e12 GB/s): every gate falls under its floor.
    let high = baseline_with_rate(dir.path(), 1e12);
    let (run, r) = json_run(
        &[
            "--profile",
            "ultrasafe",
            "--baseline",
            high.to_str().unwrap(),
            "--floor-fraction",
            "0.5",
        ],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 1);
    for g in &r.devices[0].gates {
        assert_eq!(g.status, GateStatus::Fail);
        let f = g.floor.as_ref().unwrap();
        assert!(!f.passed);
        assert_eq!(f.limit, 0.5e12);
        assert!(
            g.reason.as_deref().unwrap().contains("under the floor"),
            "{:?}",
            g.reason
        );
    }
}

#[test]
fn bad_baseline_files_exit_2_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(
        &broken,
        "{\n  \"schema\": \"greta.smoke/v1\",\n  \"devices\": [,]\n}\n",
    )
    .unwrap();
    let run = greta(
        &["--device", "cpu", "--baseline", broken.to_str().unwrap()],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 2);
    let want = format!("{}:3:", broken.display());
    assert!(run.stderr.contains(&want), "wants {want}: {}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(30));

    let other = dir.path().join("doctor.json");
    std::fs::write(&other, r#"{"schema": "greta.doctor/v1", "findings": []}"#).unwrap();
    let run = greta(&["--baseline", other.to_str().unwrap()], &[], dir.path());
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("greta.doctor/v1"), "{}", run.stderr);

    let missing = dir.path().join("missing.json");
    let run = greta(&["--baseline", missing.to_str().unwrap()], &[], dir.path());
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("missing.json"), "{}", run.stderr);
}

#[test]
fn bad_flags_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["--profile", "fast"][..], "ultrasafe"),
        (&["--timeout", "0"][..], "more than 0"),
        (&["--timeout", "soon"][..], "seconds"),
        (&["--repeat", "0"][..], "repeat"),
        (&["--backend", "rocm"][..], "auto, vulkan, hip, cuda"),
        (&["--device", ""][..], "device"),
        (&["--floor-fraction", "1.5"][..], "floor-fraction"),
        (&["--gate", "gemm_f32.31337"][..], "unknown gate"),
        (&["--bogus"][..], "--bogus"),
    ] {
        let run = greta(args, &[], dir.path());
        assert_eq!(run.code, 2, "{args:?}");
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
    }
    // An unwritable --out is found before any gate runs.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = file.join("results");
    let run = greta(
        &["--device", "cpu", "--out", out.to_str().unwrap()],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not writable"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "no gate ran");
}

#[test]
fn no_such_device_and_unbuilt_hip_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let run = greta(
        &["--device", "99", "--profile", "ultrasafe"],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no usable device"), "{}", run.stderr);
    // No HIP device here: exit 2 saying why.
    let run = greta(
        &["--backend", "hip", "--profile", "ultrasafe"],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.to_lowercase().contains("hip"), "{}", run.stderr);
    // Nothing was written for runs that decided nothing.
    assert!(result_files(&dir.path().join("greta/smoke")).is_empty());
}

#[test]
fn list_gates_shows_every_gate_and_profile() {
    let dir = tempfile::tempdir().unwrap();
    let run = greta(&["--list-gates"], &[], dir.path());
    assert_eq!(run.code, 0);
    for id in [
        "fill.tiny",
        "copy.tiny",
        "noop.dispatch",
        "gemm_f32.256",
        "gemm_f16.256",
        "softmax.256x1024",
        "copy.1g",
        "gemm_f32.4096",
    ] {
        assert!(run.stdout.contains(id), "{id} missing");
    }
    for p in ["ultrasafe", "fill", "default", "standard", "perf"] {
        assert!(run.stdout.contains(p));
    }
    assert!(run.stdout.contains("rel_err <= 1e-5") && run.stdout.contains("rel_err <= 1e-2"));
    let run = greta(&["--list-gates", "--json"], &[], dir.path());
    assert_eq!(run.code, 0);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["schema"], "greta.smoke-gates/v1");
    assert!(v["gates"].as_array().unwrap().len() > 30);
}

/// `DIR/deny.toml` (the format of smoke/data/deny.toml) with one entry,
/// `id` for `reason`, that matches lavapipe (driver llvmpipe).
fn deny_lavapipe(dir: &Path, id: &str, reason: &str) -> PathBuf {
    let deny = dir.join("deny.toml");
    std::fs::write(
        &deny,
        format!("[[deny]]\nid = \"{id}\"\nreason = \"{reason}\"\nmatch = {{ driver_name = \"llvmpipe\" }}\n"),
    )
    .unwrap();
    deny
}

#[test]
fn deny_list_skips_f16_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let deny = deny_lavapipe(dir.path(), "ci-lavapipe", "test entry");
    let (run, r) = json_run(
        &[
            "--gate",
            "gemm_f16.256",
            "--gate",
            "fill.tiny",
            "--repeat",
            "1",
            "--deny-list",
            deny.to_str().unwrap(),
        ],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 0, "a skipped gate is not a failure");
    let f16 = r.devices[0]
        .gates
        .iter()
        .find(|g| g.id == "gemm_f16.256")
        .unwrap();
    assert_eq!(f16.status, GateStatus::Skip);
    assert!(f16
        .reason
        .as_deref()
        .unwrap()
        .contains("ci-lavapipe: test entry"));
    // A bad deny file is a bad input: exit 2 with file:line.
    std::fs::write(
        &deny,
        "[[deny]]\nid = \"x\"\nreason = \"r\"\nmatch = { colour = 1 }\n",
    )
    .unwrap();
    let run = greta(&["--deny-list", deny.to_str().unwrap()], &[], dir.path());
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains(&format!("{}:4:", deny.display())),
        "{}",
        run.stderr
    );
}

#[test]
fn only_skipped_gates_decide_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let deny = deny_lavapipe(dir.path(), "all-llvmpipe", "test");
    let (run, r) = json_run(
        &[
            "--gate",
            "gemm_f16.256",
            "--deny-list",
            deny.to_str().unwrap(),
        ],
        &[],
        dir.path(),
    );
    assert_eq!(run.code, 2);
    assert_eq!(r.status, RunStatus::Undecided);
}

/// A FIFO where the pipeline cache lives hung `greta smoke`, and
/// warnings carried ANSI colour codes into a captured stderr. The cache is
/// now ignored with a plain-text warning and the gates run.
#[test]
fn a_fifo_pipeline_cache_is_ignored_with_a_plain_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let envs = [("XDG_CACHE_HOME", cache.to_str().unwrap())];
    let (run, _) = json_run(&["--profile", "ultrasafe"], &envs, tmp.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = cache.join("greta/vk-pipelines");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!files.is_empty(), "no pipeline cache written");
    for f in &files {
        std::fs::remove_file(f).unwrap();
        let c = std::ffi::CString::new(f.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }
    // stderr is a pipe here, not a terminal.
    let (run, _) = json_run(&["--profile", "ultrasafe"], &envs, tmp.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("ignoring pipeline cache") && run.stderr.contains("FIFO"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains('\x1b'), "ANSI codes: {:?}", run.stderr);
}

/// A spec row for lavapipe whose figures put every spec floor at 1/8 of the
/// rates `clean` measured (the streaming floor is 0.5 of the bandwidth,
/// norms 0.45, f32 GEMM 0.35, f16 GEMM 0.15: docs/smoke.md).
fn lavapipe_specs(dir: &Path, clean: &Report) -> PathBuf {
    let rate = |id: &str| {
        clean.devices[0]
            .gates
            .iter()
            .find(|g| g.id == id)
            .and_then(|g| g.metrics.as_ref()?.rate)
            .unwrap_or_else(|| panic!("{id} measured"))
    };
    let bw = (rate("copy.16m") / 8.0 / 0.5).min(rate("softmax.256x1024") / 8.0 / 0.45);
    let text = format!(
        "schema_version = 1\n[[device]]\nmodel = \"lavapipe test row\"\nvendor = \"mesa\"\narch = \"llvmpipe\"\n\
         match = [\"llvmpipe\"]\nmem_bw_gbs = {bw:e}\nfp32_tflops = {:e}\nfp16_dense_tflops = {:e}\nbf16_dense_tflops = 1.0\n\
         confidence = \"test\"\nsource = [\"https://docs.mesa3d.org/drivers/llvmpipe.html\"]\n\
         figures_from = \"this test's clean run\"\nnotes = \"test only\"\n",
        rate("gemm_f32.256") / 8.0 / 0.35,
        rate("gemm_f16.256") / 8.0 / 0.15,
    );
    let p = dir.join("specs.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// A device seen for the first time (no `--baseline`, no
/// measured class) gets floors from its spec sheet in `perf`. Lavapipe is
/// unknown to the built-in specs (the run says so and holds no spec floor);
/// given a row through GRETA_SPECS it is held to the spec floors and passes
/// them, and the injected slow fault fails them on this single device
/// (before this change the same slow run passed: nothing held it).
#[test]
fn spec_floors_hold_a_device_seen_for_the_first_time() {
    let dir = tempfile::tempdir().unwrap();
    let gates = [
        "--profile",
        "perf",
        "--gate",
        "copy.16m",
        "--gate",
        "softmax.256x1024",
        "--gate",
        "gemm_f32.256",
        "--gate",
        "gemm_f16.256",
        "--repeat",
        "2",
    ];
    let (run, clean) = json_run(&gates, &[("GRETA_SPECS", "")], dir.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let d = &clean.devices[0];
    assert!(d
        .gates
        .iter()
        .all(|g| g.floor.is_none() && g.spec.is_none()));
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("no spec figures for this device")
                && n.contains("smoke/data/specs.toml")
                && n.contains("no spec floors")),
        "{:?}",
        d.notes
    );
    assert!(!run.stderr.contains("of_spec"), "{}", run.stderr);

    let specs = lavapipe_specs(dir.path(), &clean);
    let env = [("GRETA_SPECS", specs.to_str().unwrap())];
    let (run, r) = json_run(&gates, &env, dir.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    for g in &r.devices[0].gates {
        let f = g.floor.as_ref().expect("a spec floor");
        assert!(f.passed, "{}", g.id);
        assert!(
            f.source.starts_with("spec lavapipe test row "),
            "{}",
            f.source
        );
        let s = g.spec.as_ref().unwrap();
        let rate = g.metrics.as_ref().unwrap().rate.unwrap();
        let frac = g.spec_fraction.unwrap();
        assert!((frac / (rate / s.figure) - 1.0).abs() < 1e-12, "{frac}");
        // Every floor sits at 1/8 of the clean run's rate or below.
        assert!(frac >= f.fraction, "{} at {frac} of spec", g.id);
    }
    let fractions: Vec<f64> = r.devices[0]
        .gates
        .iter()
        .map(|g| g.floor.as_ref().unwrap().fraction)
        .collect();
    assert_eq!(fractions, [0.5, 0.35, 0.45, 0.15]); // copy, gemm_f32, softmax, gemm_f16
    assert!(r.devices[0]
        .notes
        .iter()
        .any(|n| n.contains("spec figures: lavapipe test row")
            && n.contains("matched by name \"llvmpipe\"")));
    assert!(run.stderr.contains("of_spec"), "{}", run.stderr);

    // The injected slow fault: every time F x, F four times what the
    // gate furthest above its floor needs (copy's floor sits lowest: one
    // bandwidth figure serves copy and softmax, and lavapipe's softmax is
    // far slower). Each f32 gate falls under its spec floor; the f16 gate
    // then does not run (f32 gates failed), so it is held alone.
    let factor = r.devices[0]
        .gates
        .iter()
        .map(|g| g.metrics.as_ref().unwrap().rate.unwrap() / g.floor.as_ref().unwrap().limit)
        .fold(0.0f64, f64::max)
        * 4.0;
    assert!(factor < 1e6, "{factor}");
    let inject = format!("slow:0:{factor:.0}");
    let slow = [&gates[..], &["--inject", &inject]].concat();
    let (run, r) = json_run(&slow, &env, dir.path());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(r.status, RunStatus::Fail);
    for g in &r.devices[0].gates[..3] {
        assert_eq!(g.status, GateStatus::Fail, "{}", g.id);
        let why = g.reason.as_deref().unwrap();
        assert!(
            why.contains("under the floor") && why.contains("from spec lavapipe test row"),
            "{why}"
        );
    }
    assert_eq!(r.devices[0].gates[3].status, GateStatus::Skip);
    let f16 = [
        "--profile",
        "perf",
        "--gate",
        "gemm_f16.256",
        "--repeat",
        "2",
        "--inject",
        "slow:0:100",
    ];
    let (run, r) = json_run(&f16, &env, dir.path());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let why = r.devices[0].gates[0].reason.as_deref().unwrap();
    assert!(why.contains("fp16_dense_tflops (f16 GEMM class"), "{why}");

    // Outside perf: fractions of spec, no floors.
    let (run, r) = json_run(
        &[
            "--profile",
            "default",
            "--gate",
            "copy.16m",
            "--repeat",
            "2",
            "--inject",
            "slow:0:100",
        ],
        &env,
        dir.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let g = &r.devices[0].gates[0];
    assert!(g.floor.is_none() && g.spec_fraction.is_some());

    // A bad specs file decides nothing: exit 2 naming file:line.
    std::fs::write(&specs, "schema_version = 1\n[[device]]\nmodel = 3\n").unwrap();
    let run = greta(
        &["--device", "cpu", "--profile", "ultrasafe"],
        &env,
        dir.path(),
    );
    assert_eq!(run.code, 2);
    let want = format!("{}:3:", specs.display());
    assert!(run.stderr.contains(&want), "wants {want}: {}", run.stderr);
}
