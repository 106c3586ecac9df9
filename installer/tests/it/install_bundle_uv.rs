//! Bundles carry the pinned uv: `greta bundle` stages the uv wheel of
//! lock/tools.toml (verified like every wheel) under `tools/`, and
//! `greta install --bundle` on a node without uv on PATH and without network
//! installs through it. A tampered or missing bundled uv is never run (pip
//! installs instead, logged; `--installer uv` fails), a bundle of another
//! architecture is refused, and bundles without uv still install.

use crate::support;
use crate::support::uvtool::{
    assert_pip_installed_instead, assert_uv_refusal_keeps_the_env, path_without_uv, real_python,
    serving_uv, write_tools, ServedUv,
};
use crate::support::{stderr, text, Harness};
use std::path::{Path, PathBuf};

struct Setup {
    h: Harness,
    uv: support::Wheel,
    version: String,
    log: PathBuf,
    bundle: PathBuf,
}

/// A harness whose lock pins a served uv wrapper, bundled into `bundle/`.
fn bundled(blob: usize) -> Setup {
    let ServedUv {
        h,
        wheel: uv,
        version,
        log,
    } = serving_uv(blob);
    write_tools(&h, &uv, &uv.sha256);
    let bundle = h.dir.path().join("bundle");
    let o = h.bundle_command(&bundle, &[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    Setup {
        h,
        uv,
        version,
        log,
        bundle,
    }
}

fn manifest(bundle: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(bundle.join("greta-bundle.json")).unwrap())
        .unwrap()
}

fn write_manifest(bundle: &Path, m: &serde_json::Value) {
    std::fs::write(
        bundle.join("greta-bundle.json"),
        serde_json::to_string_pretty(m).unwrap(),
    )
    .unwrap();
}

/// `greta install --bundle` on `node` (its own empty cache and data dirs,
/// no lock dir) with no uv on PATH.
fn install_from(node: &Harness, bundle: &Path, extra: &[&str]) -> std::process::Output {
    node.bundle_install_command(bundle, &real_python(), extra)
        .env("PATH", path_without_uv())
        .output()
        .unwrap()
}

fn bootstrapped(node: &Harness, version: &str) -> PathBuf {
    node.cache_dir()
        .join("tools")
        .join(format!("uv-{version}"))
        .join("uv")
}

/// Flips one byte in the middle of a file (a new inode: the bundle's files
/// may be hard links into the maker's cache).
fn tamper(p: &Path) {
    let mut b = std::fs::read(p).unwrap();
    let n = b.len() / 2;
    b[n] ^= 0x55;
    std::fs::remove_file(p).unwrap();
    std::fs::write(p, b).unwrap();
}

#[test]
fn bundle_round_trip_installs_with_the_bundled_uv_on_a_node_without_uv() {
    let s = bundled(64 * 1024);
    let m = manifest(&s.bundle);
    assert_eq!(m["arch"], std::env::consts::ARCH);
    assert_eq!(m["uv"]["version"], s.version.as_str());
    assert_eq!(m["uv"]["filename"], s.uv.filename.as_str());
    assert_eq!(m["uv"]["sha256"], s.uv.sha256.as_str());
    assert_eq!(m["uv"]["size"], s.uv.bytes.len() as u64);
    let carried = std::fs::read(s.bundle.join("tools").join(&s.uv.filename)).unwrap();
    assert_eq!(support::sha256_hex(&carried), s.uv.sha256);
    assert!(s.bundle.join("tools.toml").is_file());
    assert!(
        !s.bundle.join("wheels").join(&s.uv.filename).exists(),
        "uv is a tool, not a wheel of the env"
    );
    assert_eq!(s.h.server.hits(&s.uv.filename).len(), 1);

    // The node: fresh cache/home, no uv on PATH, and the index now fails
    // every request (nothing may be fetched).
    for w in s.h.wheels.iter().chain([&s.uv]) {
        s.h.server
            .fault_always(&w.filename, support::Fault::Status(500));
    }
    let node = Harness::with_wheels(vec![]);
    let o = install_from(&node, &s.bundle, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let tool = bootstrapped(&node, &s.version);
    assert_eq!(
        node.receipt("cpu")["installer"].as_str().unwrap(),
        format!("uv {} (bootstrapped {})", s.version, tool.display()),
        "{}",
        text(&o)
    );
    assert!(
        stderr(&o).contains(&format!("using the uv {} the bundle carries", s.version)),
        "{}",
        text(&o)
    );
    let calls = std::fs::read_to_string(&s.log).unwrap();
    assert!(
        calls.lines().any(|l| l.starts_with("pip install")),
        "the wheels were not installed through the bundled uv: {calls}"
    );
    assert_eq!(s.h.server.hits(&s.uv.filename).len(), 1, "{}", text(&o));
    node.import_in_env("cpu");
}

#[test]
fn a_tampered_or_missing_bundled_uv_is_never_run_and_pip_installs_instead() {
    let s = bundled(32 * 1024);
    let carried = s.bundle.join("tools").join(&s.uv.filename);
    tamper(&carried);

    let node = Harness::with_wheels(vec![]);
    let o = install_from(&node, &s.bundle, &[]);
    assert_pip_installed_instead(&node, &o, &["failed verification", "sha256"]);
    assert!(!s.log.exists(), "the tampered uv ran");
    assert!(!bootstrapped(&node, &s.version).exists());
    node.import_in_env("cpu");

    // --installer uv turns the refusal into an error; the env is untouched.
    assert_uv_refusal_keeps_the_env(&node, || {
        install_from(&node, &s.bundle, &["--reinstall", "--installer", "uv"])
    });

    // The pin in tools.toml edited to the tampered bytes: the manifest
    // still names the original, so the two disagree and uv is refused.
    let pin = std::fs::read_to_string(s.bundle.join("tools.toml")).unwrap();
    let bad_sha = support::sha256_hex(&std::fs::read(&carried).unwrap());
    std::fs::write(
        s.bundle.join("tools.toml"),
        pin.replace(&s.uv.sha256, &bad_sha),
    )
    .unwrap();
    let fresh = Harness::with_wheels(vec![]);
    let o = install_from(&fresh, &s.bundle, &[]);
    assert_pip_installed_instead(&fresh, &o, &["the bundle was modified"]);
    assert!(!s.log.exists(), "the tampered uv ran");

    // The wheel gone (pin restored): named as missing, pip installs.
    std::fs::write(s.bundle.join("tools.toml"), &pin).unwrap();
    std::fs::remove_file(&carried).unwrap();
    let fresh = Harness::with_wheels(vec![]);
    let o = install_from(&fresh, &s.bundle, &[]);
    let missing = format!("{} is missing", carried.display());
    assert_pip_installed_instead(&fresh, &o, &[&missing]);
}

#[test]
fn a_bundle_of_another_architecture_is_refused_by_name() {
    let s = bundled(16 * 1024);
    let here = std::env::consts::ARCH;
    let other = if here == "aarch64" {
        "x86_64"
    } else {
        "aarch64"
    };
    let mut m = manifest(&s.bundle);
    m["arch"] = other.into();
    write_manifest(&s.bundle, &m);
    let node = Harness::with_wheels(vec![]);
    let o = install_from(&node, &s.bundle, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("was made on a {other} machine"))
            && err.contains(&format!("this node is {here}")),
        "{err}"
    );
    assert!(node.envs_entries().is_empty(), "{:?}", node.envs_entries());
    assert!(!s.log.exists());
}

#[test]
fn a_bundle_without_uv_still_installs() {
    // What an older greta wrote: no arch, no uv, no tools/ or tools.toml.
    let s = bundled(16 * 1024);
    let mut m = manifest(&s.bundle);
    let o = m.as_object_mut().unwrap();
    o.remove("arch");
    o.remove("uv");
    write_manifest(&s.bundle, &m);
    std::fs::remove_dir_all(s.bundle.join("tools")).unwrap();
    std::fs::remove_file(s.bundle.join("tools.toml")).unwrap();

    let node = Harness::with_wheels(vec![]);
    let o = install_from(&node, &s.bundle, &[]);
    assert_pip_installed_instead(&node, &o, &["carries no uv"]);
    node.import_in_env("cpu");

    // With uv on PATH the old bundle installs through it, as before.
    support::require_uv();
    let o = node
        .bundle_install_command(
            &s.bundle,
            &real_python(),
            &["--reinstall", "--installer", "uv"],
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(node.receipt("cpu")["installer"]
        .as_str()
        .unwrap()
        .starts_with("uv "));
    node.import_in_env("cpu");
}
