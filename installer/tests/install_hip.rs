//! The HIP step of `greta install` for rocm profiles: the worker goes into
//! the staged env, is recorded in greta-env.json, builds the kernels for
//! the probe's gfx target, and the smoke step runs through it; a failing
//! kernel build is a clear exit 1 that leaves the previous env as it was.
//!
//! The probe reads `probe/tests/sysroots/mi300x-vf` (an MI300X VF, gfx942)
//! so the gfx target is known without an AMD GPU.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{stderr, text, Harness};

fn mi300x_sysroot() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe/tests/sysroots/mi300x-vf")
}

/// The real worker, built beside greta by scripts/test.sh.
fn real_worker() -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_greta"))
        .parent()
        .unwrap()
        .join("greta-hip-worker");
    assert!(
        p.is_file(),
        "{} is missing: build it first (scripts/test.sh does: cargo build -p greta-smoke --features hip --bin greta-hip-worker)",
        p.display()
    );
    p
}

/// A harness whose `rocm6.4` profile pins a ROCm 6.4 torch (version.hip set).
fn rocm_harness() -> Harness {
    support::require_uv();
    let h = Harness::new(20_000);
    let torch = support::wheel::torch("2.5.1+rocm6.4", Some("6.4.43484"), None, 20_000);
    h.server
        .add_wheel("torch", &torch.filename, torch.bytes.clone());
    h.add_rocm_profile(&[&torch, h.wheel("triton")]);
    h
}

/// A stand-in worker that logs its calls and answers like the real one.
fn stand_in(h: &Harness) -> (PathBuf, PathBuf, PathBuf) {
    let log = h.dir.path().join("worker-calls.log");
    let fail = h.dir.path().join("fail-build-kernels");
    let p = h.dir.path().join("stand-in-worker");
    std::fs::write(
        &p,
        format!(
            r#"#!/bin/sh
echo "$@" >> '{log}'
case "$1" in
build-kernels)
  if [ -e '{fail}' ]; then
    echo "greta-hip-worker: gfx target gfx942 is not supported by this hipcc (stand-in)" >&2
    echo '{{"schema":"greta.hip-kernels/v1","built":[],"error":"gfx target gfx942 is not supported by this hipcc (stand-in)","unsupported_target":true}}'
    exit 2
  fi
  echo '{{"schema":"greta.hip-kernels/v1","built":[{{"gfx":"gfx942","path":"/x.co","cached":false}}],"hipcc":{{"path":"/opt/rocm/bin/hipcc","version":"6.4.43484-stand-in"}},"sources_hash":"00","error":null}}'
  ;;
smoke|devices)
  echo "no HIP device found (stand-in worker)" >&2
  echo '{{"schema":"greta.hip-worker/v1","error":{{"kind":"no_device","message":"no HIP device found (stand-in worker)"}}}}'
  exit 2
  ;;
*) exit 2 ;;
esac
"#,
            log = log.display(),
            fail = fail.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    (p, log, fail)
}

fn rocm_install(h: &Harness, worker: &Path, sysroot: Option<&Path>, extra: &[&str]) -> Output {
    let py = support::python();
    let mut args = vec![
        "install",
        "--reinstall",
        "--profile",
        "rocm6.4",
        "--name",
        "rocm",
        "--python",
        py.to_str().unwrap(),
    ];
    if let Some(s) = sysroot {
        args.extend(["--sysroot", s.to_str().unwrap()]);
    }
    args.extend_from_slice(extra);
    h.cmd(&args)
        .env("GRETA_HIP_WORKER", worker)
        .output()
        .unwrap()
}

#[test]
fn rocm_install_puts_the_worker_in_the_env_builds_kernels_and_smokes_through_it() {
    let h = rocm_harness();
    let (worker, log, fail) = stand_in(&h);
    let sysroot = mi300x_sysroot();

    // --dry-run lists the step and writes nothing.
    let o = rocm_install(&h, &worker, Some(&sysroot), &["--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stderr(&o).contains("HIP step: greta-hip-worker")
            && stderr(&o).contains("build-kernels --gfx gfx942"),
        "{}",
        text(&o)
    );
    assert!(!log.exists());

    let o = rocm_install(&h, &worker, Some(&sysroot), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let env = h.env_dir("rocm");
    let installed = env.join("bin").join("greta-hip-worker");
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(&worker).unwrap()
    );
    let r = h.receipt("rocm");
    let hw = &r["hip_worker"];
    assert_eq!(hw["path"], installed.display().to_string(), "{r}");
    assert_eq!(hw["gfx"], serde_json::json!(["gfx942"]));
    assert_eq!(hw["hipcc"], "6.4.43484-stand-in");
    assert!(hw["source"].as_str().unwrap().contains("GRETA_HIP_WORKER"));
    let calls = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines[0], "build-kernels --gfx gfx942", "{calls}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("smoke") && l.contains("--profile ultrasafe")),
        "the smoke step did not run through the worker: {calls}"
    );
    assert!(
        stderr(&o).contains("smoke: undecided") && stderr(&o).contains("no HIP device found"),
        "{}",
        text(&o)
    );

    // greta smoke finds the worker the install recorded.
    std::fs::remove_file(&log).unwrap();
    let o = h
        .cmd(&["smoke", "--backend", "hip", "--profile", "ultrasafe"])
        .env_remove("GRETA_HIP_WORKER")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!(
            "HIP through {} (recorded by the last `greta install`)",
            installed.display()
        )),
        "{}",
        text(&o)
    );
    assert!(std::fs::read_to_string(&log).unwrap().starts_with("smoke"));

    // A failing kernel build: exit 1 with the message and the fix; the
    // previous env is byte-for-byte what it was, nothing half-built left.
    let before = std::fs::read(env.join("greta-env.json")).unwrap();
    let entries = h.envs_entries();
    std::fs::write(&fail, "").unwrap();
    let o = rocm_install(&h, &worker, Some(&sysroot), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    assert!(err.contains("[hip.kernels-build-failed]"), "{err}");
    assert!(
        err.contains("gfx target gfx942 is not supported by this hipcc (stand-in)"),
        "{err}"
    );
    assert!(
        err.contains("install a ROCm whose hipcc supports this gfx"),
        "{err}"
    );
    assert_eq!(std::fs::read(env.join("greta-env.json")).unwrap(), before);
    assert_eq!(h.envs_entries(), entries);
    assert!(installed.is_file());
    let o = std::process::Command::new(env.join("bin/python"))
        .args(["-I", "-c", "import torch; print(torch.version.hip)"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "6.4.43484");

    // --json says the same.
    let o = rocm_install(&h, &worker, Some(&sysroot), &["--json", "--no-smoke"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["result"], "failed");
    assert_eq!(j["report"]["findings"][0]["id"], "hip.kernels-build-failed");
}

#[test]
fn cpu_profile_has_no_hip_step() {
    let h = rocm_harness();
    let (worker, log, _) = stand_in(&h);
    let o = h
        .cmd(&[
            "install",
            "--profile",
            "cpu",
            "--python",
            support::python().to_str().unwrap(),
            "--no-smoke",
        ])
        .env("GRETA_HIP_WORKER", &worker)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(h.receipt("cpu").get("hip_worker").is_none());
    assert!(!h.env_dir("cpu").join("bin/greta-hip-worker").exists());
    assert!(!log.exists());
}

/// The real worker on this GPU-less machine: no gfx detected live, so the
/// worker is installed and recorded, no kernels are built, and the smoke
/// step's "no HIP device" is undecided (the install goes on). With the
/// MI300X sysroot the real `build-kernels --gfx gfx942` runs against this
/// machine's hipcc: where that hipcc cannot target gfx942 (Debian 12's
/// ROCm 5.2), the install fails with its message and the env stays.
#[test]
fn real_worker_without_a_gpu() {
    let h = rocm_harness();
    let worker = real_worker();
    let o = rocm_install(&h, &worker, None, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let r = h.receipt("rocm");
    let installed = h.env_dir("rocm").join("bin/greta-hip-worker");
    assert_eq!(r["hip_worker"]["path"], installed.display().to_string());
    assert_eq!(r["hip_worker"]["gfx"], serde_json::json!([]));
    let err = stderr(&o);
    assert!(err.contains("no AMD GPU gfx target detected"), "{err}");
    assert!(err.contains("smoke: undecided"), "{err}");
    assert!(err.contains("no HIP device"), "{err}");
    let d = std::process::Command::new(&installed)
        .arg("devices")
        .output()
        .unwrap();
    assert_eq!(d.status.code(), Some(2), "{}", text(&d));

    let before = std::fs::read(h.env_dir("rocm").join("greta-env.json")).unwrap();
    let o = rocm_install(&h, &worker, Some(&mi300x_sysroot()), &["--no-smoke"]);
    let err = stderr(&o);
    if o.status.success() {
        // A hipcc that knows gfx942 (ROCm >= 5.7): kernels built, recorded.
        let r = h.receipt("rocm");
        assert_eq!(r["hip_worker"]["gfx"], serde_json::json!(["gfx942"]));
        assert!(r["hip_worker"]["hipcc"].is_string(), "{r}");
    } else {
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(err.contains("[hip.kernels-build-failed]"), "{err}");
        assert!(err.contains("gfx942"), "{err}");
        assert_eq!(
            std::fs::read(h.env_dir("rocm").join("greta-env.json")).unwrap(),
            before
        );
    }
}
