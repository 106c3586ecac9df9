//! `greta smoke --backend hip|auto` and doctor's live HIP check, through the
//! real `greta` binary and the real `greta-hip-worker` (built with feature
//! `hip` against this machine's ROCm by scripts/test.sh before the tests:
//! `cargo build -p greta-smoke --features hip --bin greta-hip-worker`).
//! Where there is no AMD GPU (CI, this machine) HIP must say so and why.

use greta_smoke::results::Report;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn greta_at(exe: &Path, args: &[&str], envs: &[(&str, &str)], unset: &[&str]) -> Run {
    let mut cmd = Command::new(exe);
    cmd.args(args).env_remove("GRETA_SMOKE_TEST_GATES");
    for k in unset {
        cmd.env_remove(k);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("greta runs");
    let run = Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    };
    eprintln!(
        "greta {} -> {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        run.code,
        run.stdout,
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "greta panicked");
    run
}

fn greta(args: &[&str], envs: &[(&str, &str)]) -> Run {
    greta_at(Path::new(env!("CARGO_BIN_EXE_greta")), args, envs, &[])
}

/// The worker scripts/test.sh builds, beside the `greta` under test.
fn real_worker() -> PathBuf {
    let w = Path::new(env!("CARGO_BIN_EXE_greta"))
        .parent()
        .unwrap()
        .join("greta-hip-worker");
    assert!(
        w.is_file(),
        "{} is missing: these tests need the real HIP worker; build it first with\n  \
         cargo build -p greta-smoke --features hip --bin greta-hip-worker\n(scripts/test.sh does)",
        w.display()
    );
    w
}

fn has_amd_gpu() -> bool {
    Path::new("/dev/kfd").exists()
}

fn result_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn hip_without_an_amd_gpu_exits_2_and_says_why() {
    let worker = real_worker();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let w = worker.to_str().unwrap();
    let run = greta(
        &[
            "smoke",
            "--backend",
            "hip",
            "--profile",
            "ultrasafe",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("GRETA_HIP_WORKER", w)],
    );
    assert!(run.stderr.contains(w), "says which worker: {}", run.stderr);
    if has_amd_gpu() {
        // On an AMD machine the same command runs the gates on HIP.
        assert!(matches!(run.code, 0 | 1), "{}", run.stderr);
        let r: Report = serde_json::from_str(&run.stdout).expect("a greta.smoke/v1 report");
        assert!(r.devices.iter().all(|d| d.backend == "hip"));
        assert_eq!(result_files(&out).len(), 2);
        return;
    }
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("no HIP device found") && run.stderr.contains("/dev/kfd"),
        "{}",
        run.stderr
    );
    // Said once, by greta, not twice (greta's line and the relayed worker's).
    assert_eq!(run.stderr.matches("no HIP device found").count(), 1);
    assert!(run.stdout.is_empty(), "no report when nothing ran");
    assert!(result_files(&out).is_empty(), "nothing written");
}

#[test]
fn a_missing_worker_or_toolchain_is_exit_2_with_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let smoke = ["smoke", "--backend", "hip", "--profile", "ultrasafe"];
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();

    let run = greta(
        &smoke,
        &[
            ("GRETA_HIP_WORKER", "/nonexistent/greta-hip-worker"),
            ("XDG_DATA_HOME", data_s),
        ],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("$GRETA_HIP_WORKER=/nonexistent/greta-hip-worker (not an executable file)"),
        "{}",
        run.stderr
    );

    // A greta with no worker anywhere near it and a source tree to build
    // from, but no cargo: it says so instead of trying. (A copy of greta,
    // so the worker beside the real one is not found.)
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let greta_copy = bin.join("greta");
    std::fs::copy(env!("CARGO_BIN_EXE_greta"), &greta_copy).unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("smoke/src/bin")).unwrap();
    std::fs::write(tree.join("Cargo.toml"), "[workspace]\n").unwrap();
    std::fs::write(tree.join("smoke/src/bin/greta-hip-worker.rs"), "").unwrap();
    let empty = dir.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let unset = [
        "GRETA_HIP_WORKER",
        "CARGO_TARGET_DIR",
        "HIP_PATH",
        "ROCM_PATH",
    ];
    let tree_s = tree.to_str().unwrap();
    let run = greta_at(
        &greta_copy,
        &smoke,
        &[
            ("GRETA_SOURCE_DIR", tree_s),
            ("PATH", empty.to_str().unwrap()),
            ("XDG_DATA_HOME", data_s),
        ],
        &unset,
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("could not run the HIP backend")
            && run.stderr.contains("cargo is not on PATH"),
        "{}",
        run.stderr
    );

    // cargo there (never run), HIP_PATH wrong: named before any build.
    let tools = dir.path().join("tools");
    script(
        &tools.join("cargo"),
        "echo cargo must not run >&2; exit 99\n",
    );
    let wrong = dir.path().join("no-rocm-here");
    let run = greta_at(
        &greta_copy,
        &smoke,
        &[
            ("GRETA_SOURCE_DIR", tree_s),
            ("PATH", tools.to_str().unwrap()),
            ("HIP_PATH", wrong.to_str().unwrap()),
            ("XDG_DATA_HOME", data_s),
        ],
        &unset,
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains(&format!("HIP_PATH={} is wrong", wrong.display()))
            && !run.stderr.contains("cargo must not run"),
        "{}",
        run.stderr
    );
    assert!(result_files(&data.join("greta/smoke")).is_empty());
}

/// A real lavapipe report, relayed by a stand-in worker: greta passes the
/// flags on, prints the table or JSON, writes the files and keeps the
/// worker's exit code; output that is no report is exit 2.
#[test]
fn the_workers_report_is_printed_written_and_its_exit_code_kept() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let lavapipe = greta(
        &[
            "smoke",
            "--backend",
            "vulkan",
            "--device",
            "cpu",
            "--profile",
            "ultrasafe",
            "--json",
            "--out",
            first.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(lavapipe.code, 0, "{}", lavapipe.stderr);
    let report: Report = serde_json::from_str(&lavapipe.stdout).unwrap();
    let report_file = dir.path().join("report.json");
    std::fs::write(&report_file, &lavapipe.stdout).unwrap();

    let args_file = dir.path().join("args");
    let worker = dir.path().join("worker");
    let fake = |code: i32| {
        script(
            &worker,
            &format!(
                "echo \"$@\" > '{}'\ncat '{}'\necho 'greta-hip-worker: note from the worker' >&2\nexit {code}\n",
                args_file.display(),
                report_file.display()
            ),
        )
    };
    fake(0);
    let out = dir.path().join("out");
    let w = worker.to_str().unwrap().to_string();
    let common = [
        "smoke",
        "--backend",
        "hip",
        "--profile",
        "ultrasafe",
        "--device",
        "1",
        "--timeout",
        "7.5",
        "--gate",
        "fill.tiny",
        "--seed",
        "42",
        "--out",
        out.to_str().unwrap(),
    ];
    let mut with_json = common.to_vec();
    with_json.push("--json");
    let run = greta(&with_json, &[("GRETA_HIP_WORKER", &w)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let back: Report = serde_json::from_str(&run.stdout).expect("the report on stdout");
    assert_eq!(back, report);
    assert!(run.stderr.contains("note from the worker"), "relayed");
    assert!(run.stderr.contains("fill.tiny"), "the table on stderr");
    assert_eq!(
        std::fs::read_to_string(&args_file).unwrap().trim(),
        "smoke --profile ultrasafe --device 1 --timeout 7.5 --floor-fraction 0.75 --gate fill.tiny --seed 42"
    );
    let files = result_files(&out);
    assert_eq!(files.len(), 2, "{files:?}");
    let json = files
        .iter()
        .find(|p| p.extension().unwrap() == "json")
        .unwrap();
    let written: Report = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(written, report);

    // A failing run keeps its exit code 1 and prints the table on stdout.
    fake(1);
    let run = greta(&common, &[("GRETA_HIP_WORKER", &w)]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("fill.tiny"), "{}", run.stdout);

    // A worker that dies without a report: undecided, with what it said.
    script(
        &worker,
        "echo 'error while loading shared libraries: libamdhip64.so.5' >&2\nexit 127\n",
    );
    let run = greta(&common, &[("GRETA_HIP_WORKER", &w)]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("libamdhip64.so.5") && run.stderr.contains("without a report"),
        "{}",
        run.stderr
    );
}

#[test]
fn auto_picks_vulkan_here_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let run = greta(
        &[
            "smoke",
            "--profile",
            "ultrasafe",
            "--json",
            "--out",
            dir.path().to_str().unwrap(),
        ],
        &[("GRETA_HIP_WORKER", real_worker().to_str().unwrap())],
    );
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("greta smoke: backend "))
        .expect("one line saying which backend and why");
    if has_amd_gpu() {
        return; // the choice there depends on the GPU; the unit tests cover it
    }
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        line.starts_with("greta smoke: backend vulkan:") && line.contains("no AMD GPU"),
        "{line}"
    );
    let r: Report = serde_json::from_str(&run.stdout).unwrap();
    assert!(r.devices.iter().all(|d| d.backend == "vulkan"));
}

#[test]
fn doctor_asks_hip_through_the_worker() {
    let w = real_worker();
    let run = greta(
        &["doctor", "--json", "--check", "hip-runtime"],
        &[("GRETA_HIP_WORKER", w.to_str().unwrap())],
    );
    let j: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let checks = j["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0]["title"], "HIP runtime (greta-hip-worker)");
    let summary = checks[0]["summary"].as_str().unwrap();
    if has_amd_gpu() {
        assert!(summary.contains("HIP device(s)"), "{summary}");
        return;
    }
    assert!(summary.starts_with("no HIP device found"), "{summary}");
    assert!(j["facts"]["signals"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["id"] == "hip-no-device"));
    // No AMD GPU here: HIP finding nothing is no finding.
    assert_eq!(run.code, 0);
    assert_eq!(checks[0]["status"], "pass");

    let run = greta(
        &["doctor", "--json", "--check", "hip-runtime"],
        &[("GRETA_HIP_WORKER", "/nonexistent/w")],
    );
    let j: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let summary = j["checks"][0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("HIP not asked: greta-hip-worker not found"),
        "{summary}"
    );
}
