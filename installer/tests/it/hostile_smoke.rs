//! Hostile inputs (the fault campaign of 2026-11-25), the smoke/runtime side, end to end
//! with the real binary (Mesa lavapipe for the Vulkan runs): each test
//! names the item of the issue it covers and failed on the code before
//! its fix.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
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
    let mut c = crate::support::greta();
    c.env("GRETA_VK_VALIDATION", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// A temporary path as an argument (they are UTF-8).
fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The quick smoke run on `backend` (`hip`, `cuda`), where this machine
/// has no such device.
fn on(backend: &str) -> [&str; 7] {
    [
        "smoke",
        "--backend",
        backend,
        "--profile",
        "ultrasafe",
        "--no-save",
        "--no-progress",
    ]
}

/// `greta ARGS` with `envs` set, not yet run.
fn greta_with(args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut c = greta();
    c.args(args);
    for (k, v) in envs {
        c.env(k, v);
    }
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

/// An agent of a rocminfo paste, enough for `doctor --from` to find a GPU.
const ROCMINFO: &str = "*******\nAgent 2\n*******\n  Name:                    gfx1103\n  Device Type:             GPU\n";

use crate::support::greta::CPU_SMOKE;

/// Item 2: a FIFO (as `/dev/full` or `/dev/stdout` would be) at the
/// `--prom` path is refused before any gate runs and stays a FIFO; a
/// symlink is written through, and stays a symlink.
#[test]
fn prom_refuses_a_node_and_writes_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("greta.prom");
    mkfifo(&fifo);
    let o = bounded(greta_with(
        &[&CPU_SMOKE[..], &["--prom", path(&fifo)]].concat(),
        &[],
    ));
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
    let o = bounded(greta_with(
        &[&CPU_SMOKE[..], &["--prom", path(&link)]].concat(),
        &[],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(status_of(&real).0, 0.0);
}

/// Item 3: SIGTERM (the Slurm wrapper's `timeout`) and SIGINT in the
/// middle of a run turn a healthy textfile from an earlier run into
/// "undecided" with a fresh timestamp, and greta still dies of the signal.
/// The run hangs on purpose (`--inject hang:0`, a 600 s limit); the signal
/// is sent once greta has said which backend it runs (its handler is in
/// place by then), and the test waits for the process, never a sleep.
#[test]
fn a_stop_signal_marks_the_prom_file_undecided() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let prom = dir.path().join("greta.prom");
        let healthy = "# TYPE greta_smoke_status gauge\ngreta_smoke_status{profile=\"health\"} 0\n\
                       # TYPE greta_smoke_last_run_timestamp_seconds gauge\n\
                       greta_smoke_last_run_timestamp_seconds{profile=\"health\"} 1000\n";
        std::fs::write(&prom, healthy).unwrap();
        let mut c = greta();
        c.args(CPU_SMOKE)
            .args(["--inject", "hang:0", "--timeout", "600", "--prom"])
            .arg(&prom);
        // A background job of a non-interactive shell inherits SIGINT
        // ignored (and greta keeps it so): give the child the default.
        // SAFETY: signal(2) is async-signal-safe, fine between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut c, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = c.spawn().unwrap();
        let pid = child.id() as i32;
        let (tx, rx) = mpsc::channel();
        let err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for l in err.lines().map_while(Result::ok) {
                eprintln!("greta: {l}");
                let _ = tx.send(l);
            }
        });
        let started = loop {
            match rx.recv_timeout(LIMIT) {
                Ok(l) if l.starts_with("greta smoke: backend") => break true,
                Ok(_) => continue,
                Err(_) => break false,
            }
        };
        if !started {
            // SAFETY: a plain kill of the child we started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("greta never said which backend it runs");
        }
        // SAFETY: a plain kill of the child we started.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
        let (wtx, wrx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = wtx.send(child.wait());
        });
        let Ok(status) = wrx.recv_timeout(LIMIT) else {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("greta did not stop on signal {sig}");
        };
        let status = status.unwrap();
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        let (st, t) = status_of(&prom);
        assert_eq!(st, 2.0, "signal {sig}: the healthy file lingers");
        assert!(t > 1000.0, "signal {sig}: the old timestamp lingers");
        assert!(
            std::fs::read_dir(dir.path()).unwrap().count() == 1,
            "temporaries left"
        );
    }
}

/// Item 7 (loading) and 15: `GRETA_HIP_LIB` / `GRETA_CUDA_LIB` naming a
/// FIFO hung in dlopen; now each is refused at once, naming the variable.
/// `GRETA_CUDA_LIB` naming a library without `cuInit` says so and names it.
#[test]
fn vendor_library_variables_naming_a_fifo_or_a_wrong_library_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("libamdhip64.so");
    mkfifo(&fifo);
    for (var, backend) in [("GRETA_HIP_LIB", "hip"), ("GRETA_CUDA_LIB", "cuda")] {
        let o = bounded(greta_with(&on(backend), &[(var, path(&fifo))]));
        assert_eq!(o.status.code(), Some(2));
        let err = stderr(&o);
        assert!(err.contains(var) && err.contains("is a FIFO"), "{err}");
    }
    // The doctor's HIP check runs the same search (in a child it bounds).
    let o = bounded(greta_with(&["doctor"], &[("GRETA_HIP_LIB", path(&fifo))]));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("($GRETA_HIP_LIB): is a FIFO"),
        "doctor: {out}{}",
        stderr(&o)
    );
    // Any real shared library that is not libcuda.
    let not_cuda = [
        "/lib/x86_64-linux-gnu/libz.so.1",
        "/usr/lib/x86_64-linux-gnu/libz.so.1",
    ]
    .into_iter()
    .find(|p| Path::new(p).is_file())
    .expect("libz is installed");
    let o = bounded(greta_with(&on("cuda"), &[("GRETA_CUDA_LIB", not_cuda)]));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("GRETA_CUDA_LIB={not_cuda}")) && err.contains("cuInit"),
        "{err}"
    );
}

/// The HIP search's variables are read as settings: a `GRETA_HIP_LIB`
/// holding a control character or bytes that are not UTF-8 is refused,
/// named, its value escaped, as `GRETA_CUDA_LIB` is, and nothing is
/// searched; the directories other tools' variables name (`ROCM_PATH`,
/// `HIP_PATH`, `VIRTUAL_ENV`) are not searched when relative or naming a
/// FIFO or a file, and a warning names each, once (they were searched in
/// silence, a relative one from wherever greta ran, a FIFO as a ROCm
/// install).
#[test]
fn hip_search_variables_are_read_as_settings() {
    use std::os::unix::ffi::OsStrExt;
    for (raw, shown, why) in [
        (
            &b"/x/lib\x1b[2Jamdhip64.so"[..],
            "/x/lib\\u{1b}[2Jamdhip64.so",
            "holds a control character",
        ),
        (
            &b"/x/\xffamdhip64.so"[..],
            "/x/\\xffamdhip64.so",
            "not UTF-8",
        ),
    ] {
        let mut c = greta_with(&on("hip"), &[]);
        c.env("GRETA_HIP_LIB", std::ffi::OsStr::from_bytes(raw));
        let o = bounded(c);
        assert_eq!(o.status.code(), Some(2));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("GRETA_HIP_LIB=\"{shown}\": {why}")),
            "{err}"
        );
        assert!(!err.contains("looked in"), "searched: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("rocm");
    mkfifo(&fifo);
    let file = dir.path().join("venv");
    std::fs::write(&file, "").unwrap();
    let o = bounded(greta_with(
        &on("hip"),
        &[
            ("ROCM_PATH", "opt/rocm-relative"),
            ("HIP_PATH", path(&fifo)),
            ("VIRTUAL_ENV", path(&file)),
        ],
    ));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    for said in [
        "ROCM_PATH=\"opt/rocm-relative\": not an absolute path".to_string(),
        format!(
            "HIP_PATH=\"{}\": is a FIFO, not a directory",
            fifo.display()
        ),
        format!(
            "VIRTUAL_ENV=\"{}\": is a regular file, not a directory",
            file.display()
        ),
    ] {
        assert!(err.contains(&said), "{said}\n{err}");
    }
    // Each said once.
    assert_eq!(err.matches("ROCM_PATH=").count(), 1, "{err}");
    assert!(
        !err.contains("($ROCM_PATH)") && !err.contains("($HIP_PATH)"),
        "{err}"
    );
}

/// A Mesa shader-cache variable naming a FIFO, or a relative path, turns
/// Mesa's cache off for the run with a note naming it, and the run passes
/// (the FIFO was taken as Mesa's cache directory, in silence).
#[test]
fn a_mesa_cache_variable_naming_a_fifo_or_a_relative_path_is_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("mesa");
    mkfifo(&fifo);
    for (var, value, why) in [
        (
            "MESA_SHADER_CACHE_DIR",
            path(&fifo),
            "is a FIFO, not a directory",
        ),
        (
            "MESA_GLSL_CACHE_DIR",
            "mesa-relative",
            "not an absolute path",
        ),
    ] {
        let mut c = greta_with(&[&CPU_SMOKE[..], &["--json"]].concat(), &[(var, value)]);
        c.env("XDG_CACHE_HOME", dir.path())
            .env_remove("MESA_SHADER_CACHE_DIR")
            .env_remove("MESA_GLSL_CACHE_DIR")
            .env(var, value);
        let o = bounded(c);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let said = format!("Mesa's shader cache is off for this run: {var}=\\\"{value}\\\": {why}");
        assert!(out.contains(&said), "{said}\n{out}");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }
}

/// Item 7 (`--from`): a FIFO nobody writes to waited for ever; now greta
/// gives up after GRETA_FROM_WAIT_S and says what it waited for, while a
/// FIFO whose writer comes, writes and closes is read as before.
#[test]
fn from_a_fifo_waits_a_bounded_time_for_its_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("rocminfo.txt");
    mkfifo(&fifo);
    let from = ["doctor", "--from", path(&fifo)];
    let o = bounded(greta_with(&from, &[("GRETA_FROM_WAIT_S", "1")]));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("waited 1 s for a writer") && err.contains("GRETA_FROM_WAIT_S"),
        "{err}"
    );
    assert_eq!(err.matches("waited 1 s").count(), 1, "said twice: {err}");

    // A writer that comes: opened (blocking until greta reads), written, closed.
    let w = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, ROCMINFO))
    };
    let o = bounded(greta_with(&from, &[]));
    w.join().unwrap().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("gfx1103"));

    let o = bounded(greta_with(&from, &[("GRETA_FROM_WAIT_S", "soon")]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("GRETA_FROM_WAIT_S=\"soon\": not a whole number of seconds"));
}

/// Items 8 and 15: a numeric setting with garbage is refused, naming the
/// variable (as the fetch settings are); a huge one is clamped, never an
/// overflow.
#[test]
fn numeric_settings_refuse_garbage_and_clamp_huge_values() {
    let o = bounded(greta_with(&CPU_SMOKE, &[("GRETA_VK_WARMUP_MS", "garbage")]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("GRETA_VK_WARMUP_MS=\"garbage\": not a whole number of milliseconds"),
        "{}",
        stderr(&o)
    );
    for huge in ["18446744073709551615", "99999999999999999999999999"] {
        let o = bounded(greta_with(&CPU_SMOKE, &[("GRETA_VK_WARMUP_MS", huge)]));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    // The --from wait: huge is clamped (never an overflow in poll's
    // milliseconds), and the paste is read.
    let dir = tempfile::tempdir().unwrap();
    let paste = dir.path().join("paste.txt");
    std::fs::write(&paste, ROCMINFO).unwrap();
    let o = bounded({
        let mut c = greta();
        c.args(["doctor", "--from", "-"])
            .env("GRETA_FROM_WAIT_S", "18446744073709551615")
            .stdin(std::fs::File::open(&paste).unwrap());
        c
    });
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("gfx1103"));
}

/// Item 9: with `XDG_CACHE_HOME` on a full filesystem, Mesa's shader-cache
/// thread killed greta with SIGBUS (exit 135). Now greta turns Mesa's cache
/// off and says why, and the run passes. The full filesystem is a 2 MiB
/// tmpfs, filled, in a private mount namespace (`unshare`: as root, or
/// through a user namespace), so nothing outlives the test.
#[test]
fn a_full_filesystem_under_the_shader_cache_is_a_note_not_sigbus() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("cache");
    std::fs::create_dir(&mnt).unwrap();
    // SAFETY: plain getter.
    let root = unsafe { libc::geteuid() } == 0;
    let script = "mount -t tmpfs -o size=2m tmpfs \"$1\" || exit 99; \
         dd if=/dev/zero of=\"$1/fill\" bs=4k 2>/dev/null; \
         [ \"$(df --output=avail \"$1\" | tail -1 | tr -d ' ')\" = 0 ] || exit 98; \
         shift; exec \"$@\"";
    let mut cmd = Command::new("unshare");
    if !root {
        cmd.arg("--map-root-user");
    }
    cmd.args(["--mount", "sh", "-c", script, "sh"])
        .arg(&mnt)
        .arg(env!("CARGO_BIN_EXE_greta"))
        .args(CPU_SMOKE)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("XDG_CACHE_HOME", &mnt)
        .env("GRETA_VK_VALIDATION", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let o = bounded(cmd);
    assert_ne!(o.status.code(), Some(99), "could not mount a tmpfs here");
    assert_ne!(o.status.code(), Some(98), "the tmpfs did not fill");
    assert_eq!(
        o.status.signal(),
        None,
        "killed by a signal: {:?}",
        o.status
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Mesa's shader cache is off for this run") && out.contains("KiB free"),
        "no note: {out}"
    );
}
