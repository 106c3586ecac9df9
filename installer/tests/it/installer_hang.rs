//! An installer that never exits hung `greta install` for ever with the
//! env lock held (`uv venv` and `uv pip install` ran with no limit). They
//! run under `--installer-timeout`; one stopped there is not "rerun to
//! continue" (a rerun under the same limit stops at the same point): the
//! last line says to raise the limit.

use crate::support::{self, Harness};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn an_installer_that_never_exits_is_stopped_by_the_installer_timeout() {
    let h = Harness::new(1_000);
    let real = support::uvtool::real_uv();
    let stuck = h.dir.path().join("stuck-uv");
    std::fs::write(
        &stuck,
        format!(
            "#!/bin/sh\n[ \"$1\" = pip ] && [ \"$2\" = install ] && exec sleep 1000\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stuck, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = h.install_command(&["--installer-timeout", "3"]);
    c.env("GRETA_UV", &stuck)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = c.spawn().unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("greta install still running after 90 s: the stuck installer hangs it");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("--installer-timeout"), "{err}");
    assert!(err.contains("3 s"), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(!last.contains("rerun to continue"), "{err}");
    assert!(
        last.contains("raise --installer-timeout above 3 s"),
        "{err}"
    );
    assert!(!h.env_dir("cpu").exists());
    // The env lock is free: the next install runs (and builds) at once.
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
}
