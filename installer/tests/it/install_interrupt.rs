//! Ctrl-C during `greta install`: a terminal sends SIGINT to the whole
//! foreground process group (greta and its uv/python children), so each
//! test starts greta in its own group and signals all of it, at a point
//! where a child is really running: mid-download, while uv installs into
//! the staging dir, while the import check runs. Then greta must end
//! (bounded wait, not a timing assertion) with a failure status, the
//! previous env is byte-for-byte intact and still imports, no staging dir
//! is taken for an env, the cache holds only verified files, and a rerun
//! succeeds.

use crate::support;
use crate::support::{text, wheel, Harness};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Set only for the interrupted run: the stand-in torch then creates this
/// file on import and sleeps, so the import check is running for sure.
const HOLD: &str = "GRETA_TEST_IMPORT_HOLD";

/// Small modules in the stand-in torch.
const FILLER: usize = 2000;

/// How long greta may take to end after SIGINT before the test fails.
const EXIT_BOUND: Duration = Duration::from_secs(30);

/// The harness wheels, with a torch whose import can be held open.
fn harness(blob: usize) -> Harness {
    let init = format!(
        "import os as _os\n_hold = _os.environ.get({HOLD:?})\nif _hold:\n    open(_hold, 'w').close()\n    import time as _t\n    _t.sleep(3600)\nfrom . import version\n__version__ = version.__version__\n\nclass _Cuda:\n    @staticmethod\n    def device_count():\n        return 0\n\ncuda = _Cuda()\n"
    );
    let mut files = vec![
        ("torch/__init__.py".to_string(), init),
        (
            "torch/version.py".to_string(),
            "__version__ = \"2.5.1\"\nhip = None\ncuda = None\n".to_string(),
        ),
    ];
    // Many small files, as real torch has: uv's install step takes a while
    // (and the interrupt test has a wide window to land in it).
    for i in 0..FILLER {
        files.push((format!("torch/_filler/m{i}.py"), format!("N = {i}\n")));
    }
    let files: Vec<(&str, String)> = files.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    let torch = wheel::build("torch", "2.5.1", "torch", &files, blob);
    Harness::with_wheels(vec![
        torch,
        wheel::triton("3.1.0", blob / 2),
        wheel::jax("0.4.35", blob / 3),
    ])
}

/// `greta install` as the leader of a new process group (as a shell puts
/// a foreground job), stderr drained in the background into the returned
/// buffer.
fn spawn_in_group(
    h: &Harness,
    env: &[(&str, &Path)],
) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut cmd = h.install_command(&["--reinstall", "--installer", "uv"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // A shell starts a foreground job with SIGINT at its default action.
    // The test runner may itself run with SIGINT ignored (a non-interactive
    // shell ignores it for jobs it puts in the background, `cargo test &`,
    // and exec keeps an ignored signal ignored): then greta and its
    // children would ignore the Ctrl-C this test sends, finish the install
    // and exit 0. Reset it, as the terminal's shell would.
    // SAFETY: signal() is async-signal-safe; nothing else runs in the child
    // between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::signal(libc::SIGINT, libc::SIG_DFL) == libc::SIG_ERR {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut c = cmd
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = c.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        let _ = tx.send(s);
    });
    (c, rx)
}

/// Ctrl-C: SIGINT to every process of the group.
fn sigint_group(c: &Child) {
    let pgid = c.id() as libc::pid_t;
    // SAFETY: plain syscall; a negative pid names the process group.
    let rc = unsafe { libc::kill(-pgid, libc::SIGINT) };
    assert_eq!(rc, 0, "kill(-{pgid}, SIGINT)");
}

/// Waits (bounded) for greta to end; a hung greta fails the test and is
/// SIGKILLed with its group so nothing outlives it.
fn wait_bounded(mut c: Child, err: std::sync::mpsc::Receiver<String>) -> (ExitStatus, String) {
    let t = Instant::now();
    let st = loop {
        if let Some(st) = c.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > EXIT_BOUND {
            // SAFETY: as in sigint_group.
            unsafe { libc::kill(-(c.id() as libc::pid_t), libc::SIGKILL) };
            let _ = c.wait();
            panic!("greta did not exit within {EXIT_BOUND:?} of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Children still holding the pipe would keep this open: bounded too.
    let stderr = err
        .recv_timeout(EXIT_BOUND)
        .expect("greta's stderr was still open (a child outlived it)");
    (st, stderr)
}

/// Polls `ready` until true; fails if greta ends or nothing happens in 120 s.
fn wait_until(c: &mut Child, what: &str, every: Duration, mut ready: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ready() {
        if let Some(st) = c.try_wait().unwrap() {
            panic!("install ended ({st}) before {what}");
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "never reached {what}"
        );
        std::thread::sleep(every);
    }
}

/// Every file (relative path → sha256) under `dir`, symlinks as their target.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, p: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                let t = std::fs::read_link(&path).unwrap();
                out.insert(rel, format!("-> {}", t.display()));
            } else if ft.is_dir() {
                walk(root, &path, out);
            } else {
                let b = std::fs::read(&path).unwrap();
                out.insert(rel, hex::encode(Sha256::digest(&b)));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Whether a child of `pid` (any of its threads) has all of `words` in
/// its argv. Reads a handful of small /proc files, so it can poll fast.
fn child_with_args(pid: u32, words: &[&str]) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        kids.split_whitespace().any(|k| {
            let argv = std::fs::read(format!("/proc/{k}/cmdline")).unwrap_or_default();
            let argv: Vec<&[u8]> = argv.split(|b| *b == 0).collect();
            words.iter().all(|w| argv.contains(&w.as_bytes()))
        })
    })
}

/// First install; returns the env's snapshot (taken after one import, so
/// the `__pycache__` files a later import writes are already there).
fn install_previous(h: &Harness) -> BTreeMap<PathBuf, String> {
    let o = h.install(&["--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(h.import_in_env("cpu")["torch"], "2.5.1");
    snapshot(&h.env_dir("cpu"))
}

/// Everything that must hold after the interrupt, then the rerun.
fn after_interrupt(
    h: &Harness,
    what: &str,
    mid_build: bool,
    before: &BTreeMap<PathBuf, String>,
    st: ExitStatus,
    err: &str,
) {
    assert!(!st.success(), "{what}: greta exited 0 after SIGINT\n{err}");
    // The previous env: not one byte changed, and it still imports.
    assert_eq!(
        &snapshot(&h.env_dir("cpu")),
        before,
        "{what}: previous env changed"
    );
    assert_eq!(h.import_in_env("cpu")["torch"], "2.5.1", "{what}");
    // Only the previous env is an env; a leftover staging dir is not one.
    let o = h.cmd(&["env", "list", "--json"]).output().unwrap();
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let envs = j["envs"].as_array().unwrap();
    assert_eq!(envs.len(), 1, "{what}: {j}");
    assert_eq!(envs[0]["name"], "cpu", "{what}: {j}");
    assert_eq!(
        Path::new(envs[0]["path"].as_str().unwrap()),
        h.env_dir("cpu"),
        "{what}: {j}"
    );
    for e in h.envs_entries() {
        assert!(
            e == "cpu" || e == ".cpu.lock" || e == ".staging/cpu",
            "{what}: unexpected {e} in {:?}",
            h.envs_entries()
        );
    }
    assert_cache_verified(h, what);
    // Interrupted mid-build, the staging dir is left for the next run
    // (which holds the env's lock, so no live install owns it) to delete.
    let staged = h
        .envs_entries()
        .iter()
        .filter(|e| *e == ".staging/cpu")
        .count();
    assert_eq!(
        staged,
        usize::from(mid_build),
        "{what}: {:?}",
        h.envs_entries()
    );

    // The rerun succeeds and replaces the env.
    let o = h.install(&["--installer", "uv"]);
    assert!(o.status.success(), "{what}: rerun\n{}", text(&o));
    if mid_build {
        let err = support::stderr(&o);
        assert!(err.contains("removed the unfinished env"), "{what}: {err}");
    }
    assert_eq!(h.import_in_env("cpu")["torch"], "2.5.1");
    assert_eq!(
        h.envs_entries(),
        vec![".cpu.lock".to_string(), "cpu".to_string()],
        "{what}"
    );
    assert_ne!(&snapshot(&h.env_dir("cpu")), before, "{what}: not rebuilt");
    assert_cache_verified(h, what);
}

/// Every file in the verified cache is a wheel of the lock with its sha256.
fn assert_cache_verified(h: &Harness, what: &str) {
    for p in h.cached_wheels() {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let w = h
            .wheels
            .iter()
            .find(|w| w.filename == name)
            .unwrap_or_else(|| panic!("{what}: unknown file {} in the cache", p.display()));
        let got = support::sha256_hex(&std::fs::read(&p).unwrap());
        assert_eq!(got, w.sha256, "{what}: {} is not verified", p.display());
    }
}

#[test]
fn ctrl_c_mid_download_keeps_the_previous_env_and_the_cache_clean() {
    support::require_uv();
    let h = harness(600_000);
    let before = install_previous(&h);
    // Forget torch so this run downloads it again, slowly.
    let torch = (
        h.wheel("torch").filename.clone(),
        h.wheel("torch").sha256.clone(),
    );
    for p in h.cached_wheels() {
        if p.ends_with(&torch.0) {
            std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
        }
    }
    h.throttle_torch(16 * 1024, 40);
    let partial = h
        .cache_dir()
        .join("partial")
        .join(format!("{}.part", torch.1));
    let (mut c, err) = spawn_in_group(&h, &[]);
    wait_until(
        &mut c,
        "a partial download",
        Duration::from_millis(10),
        || std::fs::metadata(&partial).is_ok_and(|m| m.len() >= 100_000),
    );
    sigint_group(&c);
    let (st, err) = wait_bounded(c, err);
    h.server.clear_faults();
    assert!(
        !h.cached_wheels().iter().any(|p| p.ends_with(&torch.0)),
        "partial file in the verified cache"
    );
    after_interrupt(&h, "download", false, &before, st, &err);
}

#[test]
fn ctrl_c_while_uv_installs_keeps_the_previous_env() {
    support::require_uv();
    let h = harness(50_000);
    let before = install_previous(&h);
    let (mut c, err) = spawn_in_group(&h, &[]);
    let pid = c.id();
    wait_until(
        &mut c,
        "uv pip install running",
        Duration::from_millis(1),
        || child_with_args(pid, &["pip", "install", "--offline"]),
    );
    sigint_group(&c);
    let (st, err) = wait_bounded(c, err);
    after_interrupt(&h, "uv install", true, &before, st, &err);
}

#[test]
fn ctrl_c_during_the_import_check_keeps_the_previous_env() {
    support::require_uv();
    let h = harness(50_000);
    let before = install_previous(&h);
    let marker = h.dir.path().join("importing");
    let (mut c, err) = spawn_in_group(&h, &[(HOLD, &marker)]);
    wait_until(
        &mut c,
        "the import check",
        Duration::from_millis(10),
        || marker.exists(),
    );
    sigint_group(&c);
    let (st, err) = wait_bounded(c, err);
    after_interrupt(&h, "import check", true, &before, st, &err);
}
