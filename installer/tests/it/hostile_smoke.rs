//! Issue 28 (hostile inputs, round 2), the smoke/runtime side, end to end
//! with the real binary (Mesa lavapipe for the Vulkan runs): each test
//! names the item of the issue it covers and failed on the code before
//! its fix.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Generous: the defects here are hangs for ever and signals, not slowness.
const LIMIT: Duration = Duration::from_secs(180);

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn greta() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_greta"));
    c.env("GRETA_VK_VALIDATION", "1")
        .env_remove("GRETA_SMOKE_INJECT")
        .env_remove("GRETA_SMOKE_TEST_GATES")
        .env_remove("GRETA_VK_WARMUP_MS")
        .env_remove("GRETA_HIP_LIB")
        .env_remove("GRETA_CUDA_LIB")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs `c` to its end, failing (and killing it) past [`LIMIT`]: waited
/// for on a thread, so a hang is a test failure, not a stuck suite.
fn bounded(mut c: Command) -> Output {
    let child = c.spawn().expect("greta starts");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(o) => {
            let o = o.unwrap();
            eprintln!(
                "{c:?} -> {:?}\n--- stdout\n{}--- stderr\n{}",
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            o
        }
        Err(_) => {
            // SAFETY: a plain kill of the child we started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("{c:?} still running after {LIMIT:?}: a hang");
        }
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn status_of(prom: &Path) -> (f64, f64) {
    let text = std::fs::read_to_string(prom).unwrap();
    let s = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let v = |m: &str| {
        s.samples
            .iter()
            .find(|x| x.metric == m)
            .map(|x| match x.value {
                prometheus_parse::Value::Gauge(v) => v,
                ref v => panic!("{m}: {v:?}"),
            })
            .unwrap_or_else(|| panic!("{m} missing in\n{text}"))
    };
    (
        v("greta_smoke_status"),
        v("greta_smoke_last_run_timestamp_seconds"),
    )
}

const SMOKE: [&str; 7] = [
    "smoke",
    "--device",
    "cpu",
    "--profile",
    "ultrasafe",
    "--no-save",
    "--no-progress",
];

/// Item 2: a FIFO (as `/dev/full` or `/dev/stdout` would be) at the
/// `--prom` path is refused before any gate runs and stays a FIFO; a
/// symlink is written through, and stays a symlink.
#[test]
fn prom_refuses_a_node_and_writes_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("greta.prom");
    mkfifo(&fifo);
    let o = bounded({
        let mut c = greta();
        c.args(SMOKE).arg("--prom").arg(&fifo);
        c
    });
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("is a FIFO, not a regular file"),
        "no reason given: {err}"
    );
    assert!(!err.contains("fill.tiny"), "gates ran: {err}");
    let t = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(t.is_fifo(), "the FIFO was replaced: {t:?}");

    let real = dir.path().join("real.prom");
    let link = dir.path().join("link.prom");
    std::os::unix::fs::symlink("real.prom", &link).unwrap();
    let o = bounded({
        let mut c = greta();
        c.args(SMOKE).arg("--prom").arg(&link);
        c
    });
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(status_of(&real).0, 0.0);
}

/// Items 8 and 15: a numeric setting with garbage is refused, naming the
/// variable (as the fetch settings are); a huge one is clamped, never an
/// overflow.
#[test]
fn numeric_settings_refuse_garbage_and_clamp_huge_values() {
    let o = bounded({
        let mut c = greta();
        c.args(SMOKE).env("GRETA_VK_WARMUP_MS", "garbage");
        c
    });
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("GRETA_VK_WARMUP_MS=\"garbage\": not a whole number of milliseconds"),
        "{}",
        stderr(&o)
    );
    for huge in ["18446744073709551615", "99999999999999999999999999"] {
        let o = bounded({
            let mut c = greta();
            c.args(SMOKE).env("GRETA_VK_WARMUP_MS", huge);
            c
        });
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
}
