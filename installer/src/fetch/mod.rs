//! Getting verified wheel files onto local disk: from the cache when a
//! cached copy still hashes right, else over HTTP (parallel, resumable,
//! retried), else — offline — a clear list of what is missing.

pub mod cache;
pub mod http;
pub mod index;
pub(crate) mod owned;
mod progress;
mod reach;

#[cfg(test)]
mod hostile_tests;

use anyhow::{Context, Result};
use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub use cache::{Cache, Lookup};
pub use http::MismatchedHash;

/// One file to fetch, as the lock pins it (the vocabulary's pinned wheel).
pub use greta_vocab::{LockLine, PinnedWheel};

/// Refuses what greta never installs (the rule is the vocabulary's, shared
/// with the lock set that reads the pins): called before any byte is fetched.
pub fn validate(w: &PinnedWheel) -> Result<()> {
    w.validate()
}

#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Parallel downloads.
    pub jobs: usize,
    /// Tries per file (first try included).
    pub attempts: u32,
    /// First backoff; doubles per retry, capped at 10 s.
    pub backoff: Duration,
    pub connect_timeout: Duration,
    /// Bound on the wait for a response head and on every single read.
    pub read_timeout: Duration,
    /// Never touch the network.
    pub offline: bool,
    /// Draw progress bars (only ever on a terminal).
    pub progress: bool,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            jobs: 4,
            attempts: 5,
            backoff: Duration::from_millis(500),
            connect_timeout: Duration::from_secs(15),
            read_timeout: Duration::from_secs(30),
            offline: false,
            progress: false,
        }
    }
}

impl FetchOptions {
    /// Defaults, overridden by `GRETA_FETCH_{JOBS,ATTEMPTS,BACKOFF_MS,TIMEOUT_S}`
    /// (mirrors with odd limits; the tests use short timeouts). An empty
    /// variable is unset; one that is not a whole number is an error that
    /// names it, never silently the default, and so is one below what the
    /// setting allows (`GRETA_FETCH_ATTEMPTS=0`, `GRETA_FETCH_JOBS=0`,
    /// `GRETA_FETCH_TIMEOUT_S=0`). A duration above a week is a week
    /// (`greta_vocab::number`, the one reading of numeric settings).
    pub fn from_env() -> Result<Self> {
        let mut o = FetchOptions::default();
        use greta_vocab::number::{env_duration_in, env_whole, Unit, MAX_WAIT};
        use greta_vocab::EnvVars;
        let whole = |k: &'static str, min, max| env_whole(k, min, max).map_err(anyhow::Error::msg);
        if let Some(j) = whole(EnvVars::GRETA_FETCH_JOBS, 1, 64)? {
            o.jobs = j as usize;
        }
        if let Some(a) = whole(EnvVars::GRETA_FETCH_ATTEMPTS, 1, 100)? {
            o.attempts = a as u32;
        }
        let wait = |k: &'static str, unit: Unit, min| {
            env_duration_in(k, unit, min, MAX_WAIT).map_err(anyhow::Error::msg)
        };
        if let Some(b) = wait(
            EnvVars::GRETA_FETCH_BACKOFF_MS,
            Unit::Millis,
            Duration::ZERO,
        )? {
            o.backoff = b;
        }
        if let Some(t) = wait(
            EnvVars::GRETA_FETCH_TIMEOUT_S,
            Unit::Secs,
            Duration::from_secs(1),
        )? {
            o.connect_timeout = t;
            o.read_timeout = t;
        }
        Ok(o)
    }
}

/// Where one artifact came from, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Cache,
    /// Already in an up-to-date env: nothing was fetched or installed.
    Installed,
    /// Downloaded (the cached copy, if any, was corrupt and is gone).
    Network,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Fetched {
    pub artifact: PinnedWheel,
    pub path: PathBuf,
    pub source: Source,
    /// Set when a cached copy failed verification and was replaced.
    pub replaced_corrupt: Option<String>,
}

/// Makes every artifact available as a verified file in the cache, in the
/// order given. Fails (after finishing or cancelling the other downloads)
/// with every file that could not be had.
pub fn fetch_all(
    cache: &Cache,
    items: &[PinnedWheel],
    opts: &FetchOptions,
) -> Result<Vec<Fetched>> {
    for a in items {
        validate(a)?;
    }
    // Cache pass first: cheap, and decides what the network has to do.
    let CachePass {
        mut results,
        todo,
        mut corrupt,
    } = cache_pass(cache, items, opts.jobs)?;
    if todo.is_empty() {
        return Ok(results.into_iter().map(|r| r.expect("all hits")).collect());
    }
    if opts.offline {
        return Err(offline_error(cache, items, &todo));
    }
    // Every server the missing wheels come from answers before the first
    // byte is fetched from any of them.
    let missing: Vec<&PinnedWheel> = todo.iter().map(|&i| &items[i]).collect();
    reach::check(&http::client(opts)?, &missing, opts)?;
    let partial_dir = cache.root().join("partial");
    owned::dir(&partial_dir)?;
    sweep_stale_partials(&partial_dir, STALE_PARTIAL);
    let (done, errors) = download(cache, items, todo, opts);
    if !errors.is_empty() {
        return Err(download_failure(errors, &partial_dir));
    }
    for (i, path) in done {
        results[i] = Some(Fetched {
            artifact: items[i].clone(),
            path,
            source: Source::Network,
            replaced_corrupt: corrupt[i].take(),
        });
    }
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.with_context(|| format!("{} was not fetched", items[i].filename)))
        .collect()
}

/// What the cache already has, by position in the plan.
struct CachePass {
    /// Verified hits.
    results: Vec<Option<Fetched>>,
    /// Positions the network must supply, in plan order.
    todo: VecDeque<usize>,
    /// Why a cached copy was dropped (it failed verification).
    corrupt: Vec<Option<String>>,
}

fn cache_pass(cache: &Cache, items: &[PinnedWheel], jobs: usize) -> Result<CachePass> {
    let mut pass = CachePass {
        results: vec![None; items.len()],
        todo: VecDeque::new(),
        corrupt: vec![None; items.len()],
    };
    for (i, (a, found)) in items
        .iter()
        .zip(lookup_all(cache, items, jobs)?)
        .enumerate()
    {
        match found {
            Lookup::Hit(path) => {
                pass.results[i] = Some(Fetched {
                    artifact: a.clone(),
                    path,
                    source: Source::Cache,
                    replaced_corrupt: None,
                })
            }
            Lookup::Miss => pass.todo.push_back(i),
            Lookup::Corrupt { path, reason } => {
                tracing::warn!(
                    "cached {} failed verification ({reason}); fetching it again",
                    path.display()
                );
                crate::errln!(
                    "greta: cached {} failed verification ({reason}); removed, fetching it again",
                    a.filename
                );
                pass.corrupt[i] = Some(reason);
                pass.todo.push_back(i);
            }
        }
    }
    Ok(pass)
}

/// `--offline` with wheels missing: each one named, and how to get them.
fn offline_error(cache: &Cache, items: &[PinnedWheel], todo: &VecDeque<usize>) -> anyhow::Error {
    let mut msg = format!(
        "--offline: {} of {} wheels are not in the cache ({}):",
        todo.len(),
        items.len(),
        cache.root().display()
    );
    for &i in todo {
        let a = &items[i];
        msg.push_str(&format!(
            "\n  {} {}  {}  sha256:{}",
            a.name, a.version, a.filename, a.sha256
        ));
    }
    msg.push_str("\nfetch them on a connected machine with `greta bundle` and install with `greta install --bundle DIR`, or run without --offline");
    anyhow::anyhow!(msg)
}

/// One download that failed, as its worker saw it.
struct DownloadError {
    text: String,
    /// A server error or timeout: running again resumes it.
    rerun_helps: bool,
    mismatched: Vec<MismatchedHash>,
}

/// Downloads the `todo` positions on `opts.jobs` threads, stopping the others
/// at the first failure: the files fetched (position, path) and the failures.
fn download(
    cache: &Cache,
    items: &[PinnedWheel],
    todo: VecDeque<usize>,
    opts: &FetchOptions,
) -> (Vec<(usize, PathBuf)>, Vec<DownloadError>) {
    let total: u64 = todo.iter().map(|&i| items[i].size.unwrap_or(0)).sum();
    let bars = progress::Bars::new(opts.progress, total, todo.len());
    let jobs = opts.jobs.max(1).min(todo.len());
    let queue = Mutex::new(todo);
    let done = Mutex::new(Vec::new());
    let errors = Mutex::new(Vec::new());
    let cancel = AtomicBool::new(false);
    let fail = |e: DownloadError| {
        errors.lock().unwrap().push(e);
        cancel.store(true, Ordering::Relaxed);
    };
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let client = match http::client(opts) {
                    Ok(c) => c,
                    Err(e) => {
                        return fail(DownloadError {
                            text: format!("{e:#}"),
                            rerun_helps: false,
                            mismatched: vec![],
                        })
                    }
                };
                while !cancel.load(Ordering::Relaxed) {
                    let Some(i) = queue.lock().unwrap().pop_front() else {
                        return;
                    };
                    let a = &items[i];
                    let bar = bars.file(a);
                    match fetch_one(cache, &client, a, opts, &cancel, &bar) {
                        Ok(path) => {
                            bar.finish();
                            done.lock().unwrap().push((i, path));
                        }
                        // Stopped because a sibling failed: not counted.
                        Err(e) if e.downcast_ref::<http::Cancelled>().is_some() => {
                            bar.fail();
                            return;
                        }
                        Err(e) => {
                            bar.fail();
                            let failed = e.downcast_ref::<http::Failed>();
                            fail(DownloadError {
                                text: format!("{e:#}"),
                                rerun_helps: failed.is_some_and(|f| f.rerun_helps),
                                mismatched: failed
                                    .map(|f| f.mismatched.clone())
                                    .unwrap_or_default(),
                            });
                        }
                    }
                }
            });
        }
    });
    bars.finish();
    (done.into_inner().unwrap(), errors.into_inner().unwrap())
}

/// Every failed download in one error, saying whether a rerun can help (a
/// server error or timeout) or a 404, a wrong hash or an unwritable cache
/// needs a fix first.
fn download_failure(errors: Vec<DownloadError>, partial_dir: &Path) -> anyhow::Error {
    let rerun_helps = errors.iter().any(|e| e.rerun_helps);
    let next = if rerun_helps {
        format!(
            "partial files are kept under {} and resumed on the next run",
            partial_dir.display()
        )
    } else {
        "a rerun alone will not help: fix the cause below first".to_string()
    };
    let what: Vec<&str> = errors.iter().map(|e| e.text.as_str()).collect();
    http::Failed {
        msg: format!(
            "{} download(s) failed ({next}):\n  {}",
            errors.len(),
            what.join("\n  ")
        ),
        rerun_helps,
        mismatched: errors.into_iter().flat_map(|e| e.mismatched).collect(),
    }
    .into()
}

/// Looks every artifact up in the cache, re-hashing hits on `jobs` threads
/// (a warm reinstall is mostly this: gigabytes of sha256).
fn lookup_all(cache: &Cache, items: &[PinnedWheel], jobs: usize) -> Result<Vec<Lookup>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<Lookup>>>> =
        items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(a) = items.get(i) else { return };
                *slots[i].lock().unwrap() = Some(cache.lookup(a));
            });
        }
    });
    slots
        .into_iter()
        .map(|m| m.into_inner().unwrap().expect("every slot filled"))
        .collect()
}

/// Downloads one artifact into the cache while holding an exclusive lock on
/// its partial file, so two greta processes never write the same bytes.
fn fetch_one(
    cache: &Cache,
    client: &reqwest::blocking::Client,
    a: &PinnedWheel,
    opts: &FetchOptions,
    cancel: &AtomicBool,
    bar: &progress::FileBar,
) -> Result<PathBuf> {
    let partial = cache.partial_path(a);
    let lock_path = partial.with_extension("lock");
    // Never through a symlink or into a FIFO: see `owned`.
    let lock = owned::open(&lock_path, owned::Use::Lock)?;
    owned::flock_exclusive(&lock).with_context(|| format!("locking {}", lock_path.display()))?;
    // Another process may have finished it while we waited for the lock.
    if let Lookup::Hit(p) = cache.lookup(a)? {
        return Ok(p);
    }
    let mut on_progress = |p: http::Progress| bar.update(p);
    let file = http::download(client, a, &partial, opts, cancel, &mut on_progress)?;
    // The lock file stays: deleting it would let a waiter and a newcomer
    // hold locks on two different inodes.
    let path = cache.commit(&partial, &file, a)?;
    drop(lock);
    Ok(path)
}

/// Removes the partial downloads the plan `needed` will not resume (issue
/// 28: they were never collected, 315 MB after a killed cold install and
/// two "up to date" runs): a partial of a wheel the plan does not pin, or of
/// one already verified in the cache, and a bundle import's temporary copy
/// whose greta is gone. Run by every install, up to date or not. A partial
/// whose lock another greta holds (a download in progress) stays; what is
/// not a regular file was set aside by `owned` and is left to its owner.
pub fn sweep_unneeded_partials(cache: &Cache, needed: &[PinnedWheel]) {
    use std::os::fd::AsRawFd;
    let dir = cache.root().join("partial");
    if !owned::is_real_dir(&dir) {
        return;
    }
    let Ok(rd) = fs::read_dir(&dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if let Some((_, pid)) = name.split_once(".import.") {
            let gone = pid.parse::<libc::pid_t>().is_ok_and(|p| {
                // SAFETY: signal 0 only checks that the process exists.
                let rc = unsafe { libc::kill(p, 0) };
                p > 0
                    && rc != 0
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
            });
            if gone {
                let _ = fs::remove_file(e.path());
            }
            continue;
        }
        let Some(hex) = name.strip_suffix(".part") else {
            continue;
        };
        let resumable = needed.iter().any(|a| {
            a.sha256.to_string() == hex
                && !fs::symlink_metadata(cache.wheel_path(a)).is_ok_and(|m| m.is_file())
        });
        if resumable {
            continue;
        }
        let p = e.path();
        let Ok(lock) = owned::open(&p.with_extension("lock"), owned::Use::Lock) else {
            continue;
        };
        // SAFETY: flock on a descriptor we own; released when `lock` drops.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            match fs::remove_file(&p) {
                Ok(()) => tracing::info!(
                    "removed partial download {} (no plan needs it)",
                    p.display()
                ),
                Err(err) => tracing::warn!("cannot remove {}: {err}", p.display()),
            }
        }
    }
}

/// How long an untouched partial download is kept for a rerun to resume.
const STALE_PARTIAL: Duration = Duration::from_secs(7 * 24 * 3600);

/// Removes partial downloads nobody resumed for `age` (a profile switched,
/// a lock updated): they were never cleaned and grew the cache for ever. A
/// partial whose lock another greta holds (a download in progress) stays;
/// the lock files themselves stay (see `fetch_one`).
fn sweep_stale_partials(dir: &std::path::Path, age: Duration) {
    use std::os::fd::AsRawFd;
    if !owned::is_real_dir(dir) {
        return;
    }
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "part") {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|d| d > age);
        if !old {
            continue;
        }
        let Ok(lock) = owned::open(&p.with_extension("lock"), owned::Use::Lock) else {
            continue;
        };
        // SAFETY: flock on a descriptor we own; released when `lock` drops.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            match fs::remove_file(&p) {
                Ok(()) => tracing::info!("removed stale partial download {}", p.display()),
                Err(err) => tracing::warn!("cannot remove {}: {err}", p.display()),
            }
        }
    }
}

#[cfg(test)]
mod sweep_tests {
    use super::*;
    use std::fs::File;

    /// `partial/` downloads were never cleaned.
    #[test]
    fn stale_partials_go_and_fresh_or_locked_ones_stay() {
        use std::os::fd::AsRawFd;
        let d = tempfile::tempdir().unwrap();
        let old = d.path().join("aa.part");
        let fresh = d.path().join("bb.part");
        let busy = d.path().join("cc.part");
        for p in [&old, &fresh, &busy] {
            fs::write(p, b"some bytes").unwrap();
        }
        let ten_days_ago = std::time::SystemTime::now() - Duration::from_secs(10 * 24 * 3600);
        for p in [&old, &busy] {
            File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(ten_days_ago)
                .unwrap();
        }
        // Another download holds busy's lock.
        let held = File::create(busy.with_extension("lock")).unwrap();
        // SAFETY: flock on our own descriptor.
        assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);
        sweep_stale_partials(d.path(), STALE_PARTIAL);
        assert!(!old.exists(), "a stale partial stayed");
        assert!(fresh.exists() && busy.exists());
        drop(held);
    }
}

#[cfg(test)]
mod mismatch_tests {
    use super::*;
    use sha2::{Digest, Sha256};

    /// The loopback server of the hostile-path tests (one for the module).
    fn serve(body: &'static [u8]) -> String {
        super::hostile_tests::serve(body.to_vec())
    }

    /// A changed hash is traced to the lockfile line that pins it,
    /// and code decides on the typed failure, not on its words.
    #[test]
    fn a_wrong_hash_is_a_typed_failure_naming_the_lock_line() {
        let sent: &[u8] = b"the server's bytes";
        let url = serve(sent);
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().to_path_buf());
        let lock = LockLine {
            file: PathBuf::from("lock/pylock.cpu.toml"),
            line: 42,
        };
        let a = PinnedWheel {
            name: "x".into(),
            version: "1".into(),
            filename: "x-1-py3-none-any.whl".into(),
            url,
            sha256: greta_vocab::Sha256(Sha256::digest(b"the promised bytes").into()),
            size: Some(sent.len() as u64),
            at: Some(lock.clone()),
        };
        let opts = FetchOptions {
            backoff: Duration::from_millis(1),
            ..FetchOptions::default()
        };
        let e = fetch_all(&cache, std::slice::from_ref(&a), &opts).unwrap_err();
        let failed = e
            .downcast_ref::<http::Failed>()
            .expect("a download failure");
        assert!(!failed.rerun_helps, "the same wrong bytes twice: {e:#}");
        assert_eq!(
            failed.mismatched,
            vec![MismatchedHash {
                name: "x".into(),
                filename: a.filename.clone(),
                expected: a.sha256,
                actual: greta_vocab::Sha256(Sha256::digest(sent).into()),
                bytes: sent.len() as u64,
                lock: Some(lock),
            }]
        );
        let msg = format!("{e:#}");
        assert!(
            msg.contains(&format!(
                "sha256 mismatch: the lock says {} (lock/pylock.cpu.toml:42), the server sent",
                a.sha256
            )),
            "{msg}"
        );
        assert!(!cache.root().join("x-1-py3-none-any.whl").exists());
    }
}
