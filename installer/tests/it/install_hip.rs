//! The HIP step of `greta install` for rocm profiles: nothing is built; the
//! HIP runtime and compiler greta will load for the env (the env's own ROCm
//! wheels first, then the host's: here Debian's ROCm 5.2) are recorded in
//! greta-env.json, and the smoke step runs `--backend hip` on them. No HIP
//! runtime anywhere is a clear exit 1 that leaves the previous env as it was.
//!
//! The probe reads `probe/tests/sysroots/mi300x-vf` (an MI300X VF, gfx942)
//! so the gfx target is known without an AMD GPU.

use crate::support;
use crate::support::{stderr, text, Harness};
use std::path::{Path, PathBuf};
use std::process::Output;

fn mi300x_sysroot() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe/tests/sysroots/mi300x-vf")
}

/// A harness whose `rocm6.4` profile pins a ROCm 6.4 torch (version.hip set).
pub(crate) fn rocm_harness() -> Harness {
    support::require_uv();
    let h = Harness::new(20_000);
    let torch = support::wheel::torch("2.5.1+rocm6.4", Some("6.4.43484"), None, 20_000);
    h.server
        .add_wheel("torch", &torch.filename, torch.bytes.clone());
    h.add_rocm_profile(&[&torch, h.wheel("triton")]);
    h
}

fn rocm_install(
    h: &Harness,
    hip_lib: Option<&str>,
    sysroot: Option<&Path>,
    extra: &[&str],
) -> Output {
    let py = support::python();
    let mut args = vec![
        "install",
        "--reinstall",
        "--yes",
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
    let mut c = h.cmd(&args);
    if let Some(l) = hip_lib {
        c.env("GRETA_HIP_LIB", l);
    }
    c.output().unwrap()
}

#[test]
fn rocm_install_records_the_hip_runtime_and_smokes_on_it_without_building() {
    let h = rocm_harness();
    let sysroot = mi300x_sysroot();
    let o = rocm_install(&h, None, Some(&sysroot), &["--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    // The plan is the dry run's result: on stdout.
    let err = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(err.contains("HIP step: no build"), "{err}");
    assert!(
        err.contains("kernels compiled by hiprtc for gfx942"),
        "{err}"
    );

    // The stand-in torch cannot compute and this machine has no MI300X:
    // the frameworks are imported only, then the HIP smoke step runs.
    let o = rocm_install(&h, None, Some(&sysroot), &["--framework-check", "imports"]);
    assert!(o.status.success(), "{}", text(&o));
    let r = h.receipt("rocm");
    let hip = &r["hip"];
    assert!(
        hip["library"]
            .as_str()
            .unwrap()
            .contains("libamdhip64.so.5"),
        "{r}"
    );
    assert!(
        hip["library_why"]
            .as_str()
            .unwrap()
            .starts_with("the dynamic loader's search path"),
        "{r}"
    );
    assert!(
        hip["compiler"].as_str().unwrap().starts_with("hiprtc "),
        "{r}"
    );
    assert_eq!(hip["gfx"], serde_json::json!(["gfx942"]));
    assert!(r.get("hip_worker").is_none(), "{r}");
    // The smoke step ran --backend hip; with no AMD GPU here it is undecided.
    let err = stderr(&o);
    assert!(
        err.contains("smoke: undecided") && err.contains("no HIP device found"),
        "{err}"
    );

    // No HIP runtime: exit 1 naming where greta looked; the env is as it was.
    let before = std::fs::read(h.env_dir("rocm").join("greta-env.json")).unwrap();
    let entries = h.envs_entries();
    let o = rocm_install(
        &h,
        Some("/nowhere/libamdhip64.so"),
        Some(&sysroot),
        &["--json", "--no-smoke"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        j["report"]["findings"][0]["id"], "hip.runtime-missing",
        "{j}"
    );
    assert!(
        j["report"]["findings"][0]["evidence"][0]
            .as_str()
            .unwrap()
            .contains("/nowhere/libamdhip64.so ($GRETA_HIP_LIB): not there"),
        "{j}"
    );
    assert_eq!(
        std::fs::read(h.env_dir("rocm").join("greta-env.json")).unwrap(),
        before
    );
    assert_eq!(h.envs_entries(), entries);
}

#[test]
fn cpu_profile_has_no_hip_step() {
    let h = rocm_harness();
    let o = h.install_command(&[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(h.receipt("cpu").get("hip").is_none());
}
