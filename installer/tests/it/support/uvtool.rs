//! A served "uv" wheel for the pinned-uv tests: its `uv` is a small shell
//! wrapper that logs its calls and execs the real uv found at test start, so
//! installs really run through uv while greta's PATH holds none.

use super::{Harness, Wheel};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The real uv binary (behind a pyenv-style shim when there is one).
pub fn real_uv() -> PathBuf {
    let uv = super::require_uv();
    let o = Command::new(super::python())
        .args(["-I", "-c", "import uv; print(uv.find_uv_bin())"])
        .output()
        .unwrap();
    let p = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    if o.status.success() && p.is_file() {
        p
    } else {
        uv
    }
}

/// The real interpreter (not a shim that needs PATH to find pyenv).
pub fn real_python() -> PathBuf {
    let o = Command::new(super::python())
        .args(["-I", "-S", "-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

/// "0.9.1" of `uv --version`.
pub fn version_of(uv: &Path) -> String {
    let o = Command::new(uv).arg("--version").output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string()
}

/// A "uv" wheel whose `uv` logs to `log` and execs `real`.
pub fn uv_wheel(version: &str, real: &Path, log: &Path) -> Wheel {
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> '{}'\nexec '{}' \"$@\"\n",
        log.display(),
        real.display()
    );
    super::wheel::build(
        "uv",
        version,
        "uv",
        &[(&format!("uv-{version}.data/scripts/uv"), script)],
        4096,
    )
}

/// A harness whose server also serves a "uv" wheel of the real uv's
/// version ([`uv_wheel`], logging to `log`), not pinned yet
/// ([`write_tools`] pins it).
pub struct ServedUv {
    pub h: Harness,
    pub wheel: Wheel,
    pub version: String,
    pub log: PathBuf,
}

pub fn serving_uv(blob: usize) -> ServedUv {
    let real = real_uv();
    let version = version_of(&real);
    let h = Harness::new(blob);
    let log = h.dir.path().join("uv-calls.log");
    let wheel = uv_wheel(&version, &real, &log);
    h.server
        .add_wheel("uv", &wheel.filename, wheel.bytes.clone());
    ServedUv {
        h,
        wheel,
        version,
        log,
    }
}

/// `lock/tools.toml` pinning `w` for this architecture at its loopback URL.
pub fn write_tools(h: &Harness, w: &Wheel, sha256: &str) {
    std::fs::write(
        h.lock_dir().join("tools.toml"),
        format!(
            "schema = 1\n[uv]\nversion = \"{}\"\n[[uv.wheels]]\narch = \"{}\"\nfilename = \"{}\"\nurl = \"{}\"\nsize = {}\nsha256 = \"{sha256}\"\n",
            w.version,
            std::env::consts::ARCH,
            w.filename,
            h.server.file_url(&w.filename),
            w.bytes.len()
        ),
    )
    .unwrap();
}

/// PATH without any directory holding `uv` (keeps sh, coreutils).
pub fn path_without_uv() -> String {
    let p = "/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin";
    assert!(
        which::which_in("uv", Some(p), "/").is_err(),
        "uv is in {p}; this test needs a PATH without it"
    );
    p.to_string()
}

/// Asserts that the install `o` into `h` succeeded through pip instead of
/// uv, for the reason whose words `why` its stderr gives: greta says
/// `installer: pip`, and the receipt of the `cpu` env names pip.
pub fn assert_pip_installed_instead(h: &Harness, o: &Output, why: &[&str]) {
    assert!(o.status.success(), "{}", super::text(o));
    let err = super::stderr(o);
    for w in why {
        assert!(err.contains(w), "{w:?} not in: {err}");
    }
    assert!(err.contains("installer: pip"), "{err}");
    let r = h.receipt("cpu");
    assert!(r["installer"].as_str().unwrap().starts_with("pip "), "{r}");
}

/// `--installer uv` where the pinned uv cannot be had: the install that
/// `install` runs must fail saying so, and leave the `cpu` env of `h` as it
/// was (its receipt unchanged).
pub fn assert_uv_refusal_keeps_the_env(h: &Harness, install: impl FnOnce() -> Output) {
    let before = h.receipt("cpu");
    let o = install();
    assert!(!o.status.success(), "{}", super::text(&o));
    assert!(
        super::stderr(&o).contains("pinned uv could not be had"),
        "{}",
        super::text(&o)
    );
    assert_eq!(h.receipt("cpu"), before);
}
