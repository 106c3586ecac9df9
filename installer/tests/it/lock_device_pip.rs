//! The PEP 751 file of a device-extras profile installed with
//! pip for one chosen target, against the loopback index of `lock_device`
//! (extras-split wheels as AMD's multi-arch index serves them).
//!
//! Two pips are in play. The machine's own (`python3 -m pip`, upgraded by
//! `scripts/setup.sh --test`) reads PEP 751 files itself from 26.1 on and
//! selects their extras from 26.3 on (`-r 'pylock.X.toml[extra]'`): that
//! is tested directly. The pip inside an env greta builds is the one
//! `python -m venv` bundles (23.2 with CPython 3.11.7), which reads no
//! PEP 751 file; `greta install --installer pip` therefore never hands it
//! the lockfile: greta evaluates the markers for this machine's targets,
//! fetches and sha256-checks each wheel itself, and gives pip only those
//! files (`--no-index --no-deps --only-binary :all:`). That path is tested
//! end to end for a captured machine.

use crate::lock_device::{
    amd_like_index, installed, locked, locked_set, machine, package, wheel_names, GFX1151_SET,
};
use crate::support::{python, text, Harness};
use std::path::Path;
use std::process::{Command, Output};

/// The first pip release whose `-r` selects a PEP 751 file's extras.
const PIP_WITH_PYLOCK_EXTRAS: (u32, u32) = (26, 3);

/// `python3 -m pip` of the tests' interpreter, required to read a PEP 751
/// file's extras: never silently skipped, as uv is not.
fn require_pylock_pip() -> Command {
    let mut c = Command::new(python());
    c.args(["-m", "pip", "--version"]);
    let o = c.output().expect("run python3 -m pip --version");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let version: Vec<u32> = out
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .split('.')
        .map_while(|p| p.parse().ok())
        .collect();
    let have = (
        version.first().copied().unwrap_or(0),
        version.get(1).copied().unwrap_or(0),
    );
    assert!(
        o.status.success() && have >= PIP_WITH_PYLOCK_EXTRAS,
        "this test needs pip >= {}.{} (it reads PEP 751 extras); python3 -m pip is {:?}. Run `bash scripts/setup.sh --test`.",
        PIP_WITH_PYLOCK_EXTRAS.0,
        PIP_WITH_PYLOCK_EXTRAS.1,
        out.trim()
    );
    let mut c = Command::new(python());
    c.args(["-m", "pip"]);
    c
}

/// Real pip installs the file greta wrote for one chosen target: the host
/// wheels and that target's device wheels, no other target's. Without an
/// extra it installs the host wheels only: the install that imports and
/// then fails every launch with hipErrorInvalidImage, which is why the
/// extra is not optional. pip checks each wheel against the file's sha256:
/// one altered hash and nothing is installed.
#[test]
fn real_pip_installs_the_lockfile_for_one_target() {
    let (_idx, d, lock) = locked_set();
    let file = lock.join("pylock.rocm10-1.toml");
    // pip's `-r FILE[extras]` into a fresh venv of its own, and what it holds
    let pip_install = |venv_name: &str, file: &Path, selection: &str| -> (Output, Vec<String>) {
        let venv = d.path().join(venv_name);
        let o = Command::new(python())
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let mut pip = require_pylock_pip();
        let o = pip
            .arg("--python")
            .arg(venv.join("bin/python"))
            .args([
                "install",
                "--isolated",
                "--disable-pip-version-check",
                "--no-input",
                "--no-cache-dir",
                "--no-deps",
                "-r",
            ])
            .arg(format!("{}{selection}", file.display()))
            .output()
            .unwrap();
        (o, installed(&venv))
    };
    let install = |venv_name: &str, selection: &str| -> Vec<String> {
        let (o, got) = pip_install(venv_name, &file, selection);
        assert!(o.status.success(), "pip -r {selection}: {}", text(&o));
        got
    };
    assert_eq!(install("gfx1151", "[device-gfx1151]"), GFX1151_SET);
    assert_eq!(
        install("host-only", ""),
        ["rocm-sdk-core", "rocm-sdk-libraries", "torch"]
    );

    let text_lock = std::fs::read_to_string(&file).unwrap();
    let doc: toml::Value = toml::from_str(&text_lock).unwrap();
    let sha = package(&doc, "rocm-sdk-device-gfx1151")["wheels"][0]["hashes"]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let tampered = lock.join("pylock.tampered.toml");
    std::fs::write(&tampered, text_lock.replace(&sha, &"0".repeat(64))).unwrap();
    let (o, got) = pip_install("tampered", &tampered, "[device-gfx1151]");
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("rocm-sdk-device-gfx1151") && err.contains("Expected sha256"),
        "{err}"
    );
    assert!(got.is_empty(), "{got:?}");
}

/// `greta install --installer pip` for a captured Strix Halo (gfx1151 on
/// kernel 6.17): the env holds the host wheels plus exactly gfx1151's
/// device wheels, installed by pip, and the receipt names the same set.
#[test]
fn greta_installs_with_pip_the_captured_targets_device_wheels_only() {
    let h = Harness::serving(amd_like_index(), Vec::new());
    locked(&h.server, &h.lock_dir());
    let halo = machine(&[(110501, "ip discovery")]);
    let py = python();
    let o = h
        .cmd(&[
            "install",
            "--installer",
            "pip",
            "--sysroot",
            halo.path().join("m").to_str().unwrap(),
            "--python",
            py.to_str().unwrap(),
            "--no-smoke",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let env = h.env_dir("rocm10.1");
    // `python -m venv` seeds pip (and, before 3.12, setuptools) itself
    let got: Vec<String> = installed(&env)
        .into_iter()
        .filter(|n| n != "pip" && n != "setuptools")
        .collect();
    assert_eq!(got, GFX1151_SET, "{}", text(&o));
    let r = h.receipt("rocm10.1");
    assert!(r["installer"].as_str().unwrap().starts_with("pip"), "{r}");
    assert_eq!(wheel_names(&r), GFX1151_SET, "{r}");
}
