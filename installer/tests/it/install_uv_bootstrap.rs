//! The pinned uv bootstrap: with no uv on PATH, `greta install` fetches the
//! uv wheel pinned in lock/tools.toml through its own fetch code, takes the
//! `uv` executable out of it into its cache and installs through it.
//!
//! The served "uv" wheel holds a small shell wrapper that logs its calls and
//! execs the real uv found at test start, so the install still really runs
//! through uv, while greta's PATH holds no uv.

use crate::support;
use crate::support::uvtool::{
    assert_pip_installed_instead, assert_uv_refusal_keeps_the_env, path_without_uv, real_python,
    serving_uv, write_tools, ServedUv,
};
use crate::support::{text, Harness};
use std::path::Path;

fn install(h: &Harness, python: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "install",
        "--reinstall",
        "--profile",
        "cpu",
        "--python",
        python.to_str().unwrap(),
        "--no-smoke",
    ];
    args.extend_from_slice(extra);
    h.cmd(&args)
        .env("PATH", path_without_uv())
        .output()
        .unwrap()
}

#[test]
fn no_uv_on_path_bootstraps_the_pinned_uv_and_reuses_it() {
    let ServedUv {
        h,
        wheel: w,
        version,
        log,
    } = serving_uv(64 * 1024);
    write_tools(&h, &w, &w.sha256);
    let py = real_python();

    let o = install(&h, &py, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let tool = h
        .cache_dir()
        .join("tools")
        .join(format!("uv-{version}"))
        .join("uv");
    let receipt = h.receipt("cpu");
    let installer = receipt["installer"].as_str().unwrap();
    assert_eq!(
        installer,
        format!("uv {version} (bootstrapped {})", tool.display()),
        "{}",
        text(&o)
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&tool).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(calls.contains("--version"), "{calls}");
    assert!(
        calls.lines().any(|l| l.starts_with("pip install")),
        "the wheels were not installed through the bootstrapped uv: {calls}"
    );
    assert_eq!(h.server.hits(&w.filename).len(), 1);
    h.import_in_env("cpu");

    // Second run: the cached tool, no fetch (the server would now fail it).
    h.server
        .fault_always(&w.filename, support::Fault::Status(500));
    std::fs::remove_file(&log).unwrap();
    let o = install(&h, &py, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(h.server.hits(&w.filename).len(), 1, "{}", text(&o));
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .any(|l| l.starts_with("pip install")));
    assert!(h.receipt("cpu")["installer"]
        .as_str()
        .unwrap()
        .contains("(bootstrapped "));
}

#[test]
fn a_tampered_uv_wheel_is_refused_and_pip_installs_instead() {
    let ServedUv {
        h,
        wheel: w,
        version,
        log,
    } = serving_uv(32 * 1024);
    // The pin names other bytes: what the server sends must be refused.
    let mut other = w.bytes.clone();
    let n = other.len();
    other[n / 2] ^= 0x55;
    write_tools(&h, &w, &support::sha256_hex(&other));
    let py = real_python();

    let o = install(&h, &py, &[]);
    assert_pip_installed_instead(&h, &o, &["sha256"]);
    assert!(
        !log.exists(),
        "the tampered uv ran: {:?}",
        std::fs::read_to_string(&log)
    );
    assert!(!h
        .cache_dir()
        .join("tools")
        .join(format!("uv-{version}"))
        .join("uv")
        .exists());

    // --installer uv makes the same refusal an error; nothing is replaced.
    assert_uv_refusal_keeps_the_env(&h, || install(&h, &py, &["--installer", "uv"]));
}

#[test]
fn offline_uses_the_pinned_uv_only_when_cached() {
    let ServedUv { h, wheel: w, .. } = serving_uv(16 * 1024);
    write_tools(&h, &w, &w.sha256);
    let py = real_python();

    // Wheels cached through pip (uv not bootstrapped yet), then offline.
    let o = install(&h, &py, &["--installer", "pip"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = install(&h, &py, &["--offline"]);
    assert_pip_installed_instead(&h, &o, &["--offline: it is not in the cache"]);
    assert!(h.server.hits(&w.filename).is_empty());

    // Online once (bootstraps), then offline uses the cached tool.
    let o = install(&h, &py, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let o = install(&h, &py, &["--offline"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(h.receipt("cpu")["installer"]
        .as_str()
        .unwrap()
        .contains("(bootstrapped "));
    assert_eq!(h.server.hits(&w.filename).len(), 1);
}
