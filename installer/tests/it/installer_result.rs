//! The uv greta is told to use is the uv it uses, and what it did is
//! checked before greta says so.
//!
//! - `GRETA_UV` naming a `#!` script (a user's wrapper) was taken for a
//!   pyenv shim and silently replaced by the uv of the interpreter's `uv`
//!   package: the wrapper never ran.
//! - A `GRETA_UV` that does nothing and exits 0 made greta print
//!   "installed 3 wheels" before the import check failed.
//! - `GRETA_UV=/bin/false` fetched every wheel, failed in `uv venv` and
//!   said "rerun to continue", which failed the same way: a `GRETA_UV`
//!   that does not answer `--version` as uv does is refused by name before
//!   anything is fetched.

use crate::support::{self, uvtool, Harness};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn script(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `greta install` with `GRETA_UV` naming `uv`.
fn install_with_uv(h: &Harness, uv: &std::path::Path) -> std::process::Output {
    h.install_command(&[]).env("GRETA_UV", uv).output().unwrap()
}

#[test]
fn a_greta_uv_script_is_run_not_replaced() {
    let h = Harness::new(1_000);
    let real = uvtool::real_uv();
    let log = h.dir.path().join("wrapper.log");
    let wrapper = h.dir.path().join("my-uv");
    script(
        &wrapper,
        &format!(
            "#!/bin/sh\necho \"$1 $2\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    );
    let o = install_with_uv(&h, &wrapper);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        calls.contains("pip install"),
        "the wrapper never ran: {calls:?}"
    );
}

/// A GRETA_UV that does nothing: no venv, no wheels, and no "installed".
#[test]
fn a_greta_uv_that_does_nothing_is_caught_before_installed_is_said() {
    let h = Harness::new(1_000);
    let noop = h.dir.path().join("noop-uv");
    // An ELF that exits 0 whatever it is asked (a copy, so its identity is
    // its own and no venv template of another uv applies).
    std::fs::copy("/bin/true", &noop).unwrap();
    let o = install_with_uv(&h, &noop);
    let err = support::stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(!err.contains("installed 3 wheels"), "{err}");
    assert!(err.contains(&noop.display().to_string()), "{err}");
    assert!(!h.env_dir("cpu").exists());
}

/// `GRETA_UV=/bin/false`: refused by name, nothing fetched, and the last
/// line says what to fix instead of promising a rerun.
#[test]
fn a_greta_uv_that_is_no_uv_is_refused_before_anything_is_fetched() {
    let h = Harness::new(1_000);
    let o = install_with_uv(&h, Path::new("/bin/false"));
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{}", support::text(&o));
    assert!(
        err.contains("GRETA_UV=\"/bin/false\" is not a working uv: its `--version` ended with exit status 1 and printed \"false (GNU coreutils"),
        "{err}"
    );
    let last = err.lines().last().unwrap_or_default();
    assert!(!last.contains("rerun to continue"), "{err}");
    assert!(last.contains("fix the setting above, then rerun"), "{err}");
    assert!(h.server.log().is_empty(), "fetched: {:?}", h.server.log());
    assert!(h.cached_wheels().is_empty());
    assert!(!h.env_dir("cpu").exists());
    // With pip installing, GRETA_UV is not asked.
    let o = h
        .install_command(&["--installer", "pip"])
        .env("GRETA_UV", "/bin/false")
        .output()
        .unwrap();
    assert!(
        !support::stderr(&o).contains("GRETA_UV"),
        "{}",
        support::text(&o)
    );
}

/// A uv that makes the venv but installs nothing (`pip install` exits 0):
/// the missing distributions are named, before any "installed".
#[test]
fn an_installer_that_installs_nothing_names_the_missing_wheels() {
    let h = Harness::new(1_000);
    let real = uvtool::real_uv();
    let lazy = h.dir.path().join("lazy-uv");
    script(
        &lazy,
        &format!(
            "#!/bin/sh\n[ \"$1\" = pip ] && [ \"$2\" = install ] && exit 0\nexec '{}' \"$@\"\n",
            real.display()
        ),
    );
    let o = install_with_uv(&h, &lazy);
    let err = support::stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(!err.contains("installed 3 wheels"), "{err}");
    for w in ["torch", "triton", "jax"] {
        assert!(err.contains(w), "{w} not named: {err}");
    }
    assert!(err.contains("exited 0 but"), "{err}");
}
