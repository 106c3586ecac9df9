//! Profile selection from probe facts, through `greta lock select --facts`.
//! The facts mirror captured machines in probe/tests/fixtures.

use crate::lock_support::*;
use greta_probe::{DeviceNode, Facts, Gpu, KernelDriver, RocmInstall, Vendor};
use std::path::Path;

fn select_in(dir: &Path, facts: &Facts, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        f.path(),
        serde_json::to_vec(&serde_json::json!({ "facts": facts })).unwrap(),
    )
    .unwrap();
    let mut args = vec!["select", "--json", "--facts", f.path().to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = greta_lock(dir, &args);
    (o.status.code(), json(&o))
}

fn select(facts: &Facts, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    select_in(&shipped_lock_dir(), facts, extra)
}

fn amd(name: &str, gfx: &str) -> Gpu {
    Gpu {
        vendor: Vendor::Amd,
        name: name.into(),
        gfx: Some(gfx.into()),
        seen_by: vec!["kfd".into()],
        kernel_driver: Some("amdgpu".into()),
        ..Default::default()
    }
}

fn kfd(exists: bool) -> DeviceNode {
    DeviceNode {
        path: "/dev/kfd".into(),
        exists,
        ..Default::default()
    }
}

/// The refusal's `key` ("message", "fix") in a `select --json` answer.
fn refusal<'a>(v: &'a serde_json::Value, key: &str) -> &'a str {
    v["refusal"][key]
        .as_str()
        .unwrap_or_else(|| panic!("no refusal {key} in {v}"))
}

/// A machine with these AMD GPUs and /dev/kfd, nothing else known.
fn amd_machine(gpus: Vec<Gpu>) -> Facts {
    Facts {
        gpus,
        device_nodes: vec![kfd(true)],
        ..Default::default()
    }
}

/// fixtures/mi300x-vf-rocm7.2: amd-smi "amdgpu version: 6.16.13  ROCm version: 7.2.4", rocminfo gfx942.
fn mi300x_rocm72() -> Facts {
    let mut f = amd_machine(vec![Gpu {
        vf: true,
        ..amd("AMD Instinct MI300X VF", "gfx942")
    }]);
    f.kernel_driver_version = Some("6.16.13".into());
    f.rocm.version = Some("7.2.4".into());
    f.rocm.installs.push(RocmInstall {
        path: "/opt/rocm-7.2.4".into(),
        version: Some("7.2.4".into()),
        active: true,
    });
    f.rocm.active_reason = Some("ROCM_PATH".into());
    f
}

fn reasons(v: &serde_json::Value) -> String {
    v["selection"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_gpu_is_cpu() {
    let (code, v) = select(&Facts::default(), &[]);
    assert_eq!(code, Some(0));
    assert_eq!(v["selection"]["profile"], "cpu");
    assert!(reasons(&v).contains("no NVIDIA or AMD GPU"), "{v}");
    // lavapipe-only machines are still CPU-only
    let mut f = Facts::default();
    f.gpus.push(Gpu {
        vendor: Vendor::Cpu,
        name: "llvmpipe".into(),
        ..Default::default()
    });
    assert_eq!(select(&f, &[]).1["selection"]["profile"], "cpu");
}

#[test]
fn mi300x_on_rocm72_is_rocm72() {
    let (code, v) = select(&mi300x_rocm72(), &[]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["selection"]["profile"], "rocm7.2");
    let r = reasons(&v);
    assert!(
        r.contains("ROCm 7.2.4 at /opt/rocm-7.2.4 (ROCM_PATH) -> rocm7.2"),
        "{r}"
    );
    assert!(r.contains("gfx942 is in its wheel targets"), "{r}");
    assert!(
        r.contains("/dev/kfd present") && r.contains("6.16.13"),
        "{r}"
    );
    assert!(v["selection"]["env_vars"].as_array().unwrap().is_empty());
}

#[test]
fn host_driver_window_decides_not_opt_rocm_alone() {
    // An MI300X whose host carries ROCm 6.1 (KMD 6.1): rocm7.2 (window >=6.4) and
    // rocm6.4 (>=6.2) are out, rocm6.3 (>=6.1) serves it.
    let mut f = mi300x_rocm72();
    f.rocm.version = Some("6.1.40091".into());
    f.rocm.installs = vec![RocmInstall {
        path: "/opt/rocm-6.1.0".into(),
        version: Some("6.1.0".into()),
        active: true,
    }];
    let (code, v) = select(&f, &[]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["selection"]["profile"], "rocm6.3");
    // ...and with no ROCm on the host at all the newest profile with the target is chosen,
    // since torch brings its own user space; the unknown driver is a warning.
    let mut f = mi300x_rocm72();
    f.rocm.version = None;
    f.rocm.installs.clear();
    let (_, v) = select(&f, &[]);
    assert_eq!(v["selection"]["profile"], "rocm7.2");
    assert!(
        v["selection"]["warnings"]
            .to_string()
            .contains("kernel-driver release unknown"),
        "{v}"
    );
}

#[test]
fn gfx906_goes_to_the_last_profile_that_runs_it() {
    let f = amd_machine(vec![amd("AMD Instinct MI50", "gfx906")]);
    let (code, v) = select(&f, &[]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["selection"]["profile"], "rocm6.3");
}

#[test]
fn nvidia_is_cuda() {
    let mut f = Facts::default();
    f.gpus.push(Gpu {
        vendor: Vendor::Nvidia,
        name: "NVIDIA H100 80GB HBM3".into(),
        ..Default::default()
    });
    f.drivers.push(KernelDriver {
        name: "nvidia".into(),
        loaded: true,
        version: Some("580.95.05".into()),
    });
    let (code, v) = select(&f, &[]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["selection"]["profile"], "cuda");
    assert!(reasons(&v).contains("NVIDIA driver 580.95.05 meets"), "{v}");
    // fixtures/nvidia-rtx2060-debian-contrast era driver: too old for CUDA 13
    f.drivers[0].version = Some("535.183.01".into());
    let (code, v) = select(&f, &[]);
    assert_eq!(code, Some(1));
    assert!(refusal(&v, "message").contains("too old"), "{v}");
    assert!(refusal(&v, "fix").contains("--profile cpu"), "{v}");
}

#[test]
fn gfx1103_uses_the_documented_override_with_its_risk() {
    // fixtures/phoenix-760m-8600g: Radeon 760M, gfx1103, /dev/kfd present
    let f = amd_machine(vec![Gpu {
        integrated: Some(true),
        ..amd("AMD Radeon 760M Graphics", "gfx1103")
    }]);
    let (code, v) = select(&f, &[]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["selection"]["profile"], "rocm7.2");
    assert_eq!(
        v["selection"]["env_vars"],
        serde_json::json!([["HSA_OVERRIDE_GFX_VERSION", "11.0.0"]])
    );
    assert!(
        reasons(&v).contains("gfx1103 is not in its wheel targets; running it as gfx1100"),
        "{v}"
    );
    let w = v["selection"]["warnings"].to_string();
    assert!(w.contains("risk") && w.contains("page faults"), "{w}");
}

#[test]
fn gfx1103_without_an_override_is_refused_with_the_fix() {
    let (d, _) = edited_lock_dir("matrix.toml", |t| {
        t[..t.find("[[gfx-override]]").unwrap()].to_string()
    });
    let f = amd_machine(vec![amd("AMD Radeon 760M Graphics", "gfx1103")]);
    let (code, v) = select_in(d.path(), &f, &[]);
    assert_eq!(code, Some(1), "{v}");
    assert!(refusal(&v, "message").contains("gfx1103"), "{v}");
    // rocm10.1 carries gfx1103 natively but is not locked: the
    // fix is the command that locks it, not a torch build.
    let fix = refusal(&v, "fix");
    assert!(
        fix.contains("`greta lock update rocm10.1 --lock-dir lock`")
            && fix.contains("https://stable.repo.amd.com/rocm/whl-next/"),
        "{v}"
    );
    assert!(
        refusal(&v, "message").contains("rocm10.1: not yet locked"),
        "{v}"
    );
}

/// A gfx1103 machine gets the override profile only while no
/// native one is locked, and is told which native profile exists, why it
/// was not used, and the command that locks it.
#[test]
fn gfx1103_with_an_override_is_told_of_the_native_profile_and_how_to_lock_it() {
    let f = amd_machine(vec![amd("AMD Radeon 780M", "gfx1103")]);
    let (code, v) = select(&f, &[]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["selection"]["profile"], "rocm7.2", "{v}");
    let w = v["selection"]["warnings"].to_string();
    assert!(
        w.contains("rocm10.1 carries gfx1103 natively but is not locked")
            && w.contains("`greta lock update rocm10.1 --lock-dir lock`"),
        "{w}"
    );
}

/// Once a native profile with per-GPU device wheels is locked,
/// gfx1103 gets it (no override), with its own device extra.
#[test]
fn gfx1103_gets_a_locked_native_device_profile_and_its_device_extra() {
    let (d, _) = edited_lock_dir("matrix.toml", |t| {
        t.replacen(
            "status = \"not-locked\"\nnot-locked-reason = \"no public lockfile pins the Linux torch 2.14.0",
            "status = \"locked\"\n# not-locked-reason = \"no public lockfile pins the Linux torch 2.14.0",
            1,
        )
    });
    let f = amd_machine(vec![
        amd("AMD Radeon 780M", "gfx1103"),
        amd("AMD Instinct MI300X", "gfx942"),
    ]);
    let (code, v) = select_in(d.path(), &f, &[]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["selection"]["profile"], "rocm10.1", "{v}");
    assert!(
        v["selection"]["env_vars"].as_array().unwrap().is_empty(),
        "{v}"
    );
    assert_eq!(
        v["selection"]["device_extras"],
        serde_json::json!(["device-gfx1103", "device-gfx942"]),
        "{v}"
    );
    assert!(
        reasons(&v).contains("gfx1103 -> device-gfx1103, gfx942 -> device-gfx942"),
        "{v}"
    );
}

#[test]
fn rocm61_is_refused_as_not_locked() {
    let (code, v) = select(&mi300x_rocm72(), &["--profile", "rocm6.1"]);
    assert_eq!(code, Some(1), "{v}");
    let msg = refusal(&v, "message");
    assert!(
        msg.contains("rocm6.1") && msg.contains("not yet locked"),
        "{msg}"
    );
    assert!(
        refusal(&v, "fix").contains("greta lock update rocm6.1"),
        "{v}"
    );
}

#[test]
fn missing_kfd_is_refused() {
    let mut f = mi300x_rocm72();
    f.device_nodes = vec![kfd(false)];
    let (code, v) = select(&f, &[]);
    assert_eq!(code, Some(1), "{v}");
    assert!(refusal(&v, "fix").contains("--device /dev/kfd"), "{v}");
}

#[test]
fn forced_profile_without_the_gfx_is_refused() {
    let mut f = Facts::default();
    f.gpus.push(amd("AMD Instinct MI50", "gfx906"));
    let (code, v) = select(&f, &["--profile", "rocm7.2"]);
    assert_eq!(code, Some(1), "{v}");
    assert!(refusal(&v, "fix").contains("--profile rocm6.3"), "{v}");
    // a forced profile on a machine without its GPU installs with a warning
    let (code, v) = select(&Facts::default(), &["--profile", "cuda"]);
    assert_eq!(code, Some(0));
    assert!(v["selection"]["warnings"]
        .to_string()
        .contains("no NVIDIA GPU"));
}

#[test]
fn unknown_profile_is_a_refusal() {
    let (code, v) = select(&Facts::default(), &["--profile", "rocm9.9"]);
    assert_eq!(code, Some(1));
    assert!(refusal(&v, "fix").contains("rocm7.2"), "{v}");
}

/// `lock list` for people: every column starts where its header does, and
/// the profile `lock select` picks for this machine (asked independently,
/// as JSON) is the one line marked `*`.
#[test]
fn lock_list_aligns_its_columns_and_marks_this_machines_profile() {
    let dir = shipped_lock_dir();
    let o = greta_lock(&dir, &["select", "--json"]);
    let mine = json(&o)["selection"]["profile"]
        .as_str()
        .map(str::to_string);
    let o = greta_lock(&dir, &["list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.trim_start().starts_with("profile "))
        .unwrap_or_else(|| panic!("{out}"));
    let col = |w: &str| lines[head].find(w).unwrap();
    let rows: Vec<&str> = lines[head + 1..]
        .iter()
        .copied()
        .filter(|l| l.contains("pylock."))
        .collect();
    assert!(rows.len() >= 5, "{out}");
    for r in &rows {
        let lockfile = r.find("pylock.").unwrap();
        assert_eq!(lockfile, col("lockfile"), "lockfile column:\n{out}");
        assert!(
            r[col("python")..].starts_with("3."),
            "python column:\n{out}"
        );
        let status = &r[col("status")..];
        assert!(
            status.starts_with("locked ") || status.starts_with("NOT LOCKED "),
            "status column:\n{out}"
        );
        let summary = r[lockfile..].find("  ").map(|i| i + lockfile);
        assert!(
            summary.is_some_and(|s| !r[s..].trim_start().is_empty()),
            "{r}"
        );
    }
    let marked: Vec<&&str> = rows.iter().filter(|r| r.starts_with("* ")).collect();
    match mine {
        Some(p) => {
            assert_eq!(marked.len(), 1, "{out}");
            assert!(marked[0][2..].starts_with(&format!("{p} ")), "{p}: {out}");
            assert!(out.contains("* this machine's profile"), "{out}");
        }
        None => {
            assert!(marked.is_empty(), "{out}");
            assert!(out.contains("no profile fits this machine"), "{out}");
        }
    }
}
