//! The CI-length fuzz run, without AFL++: every target replays its whole
//! seed corpus (the repository's real fixtures and every saved regression
//! input), then runs blind mutations of those seeds for a fixed time
//! (`GRETA_FUZZ_SECS`, default 15 s per target). The mutator is seeded:
//! the seed is printed, and `GRETA_FUZZ_SEED=N` replays a run. A panic, an
//! input that runs past the hang limit, or one that asks for more than
//! 1 GiB at once fails the test (the last two end the process) and leaves
//! the input in `target/tmp/fuzz-failures/`, named on stderr, to be added
//! to `fuzz/regressions/TARGET/` beside the fix. Coverage-guided runs (AFL++, `scripts/fuzz.sh`) use the
//! same target functions; docs/reliability.md has both.
use greta_fuzz_targets::{run, seeds, Scratch};
use greta_vocab::EnvVars;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One input running longer than this is a hang (debug build, busy machine).
const HANG: Duration = Duration::from_secs(60);
/// The largest single allocation any target may ask for: a size computed
/// from an input is the defect class these targets look for. A larger
/// request fails as an out-of-memory would (the process aborts with
/// "memory allocation of N bytes failed"); AFL++ runs the same bar with
/// `-m 1024`.
const MAX_ALLOC: usize = 1 << 30;

struct Capped;

// SAFETY: every call is passed to the system allocator unchanged, or
// refused (null) before it reaches it.
unsafe impl std::alloc::GlobalAlloc for Capped {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        if l.size() > MAX_ALLOC {
            over_cap(l.size());
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout, as GlobalAlloc requires.
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: `p` came from `alloc`/`realloc` above with layout `l`.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        if l.size() > MAX_ALLOC {
            over_cap(l.size());
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout, as GlobalAlloc requires.
        unsafe { std::alloc::System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        if new > MAX_ALLOC {
            over_cap(new);
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's pointer and layout, as GlobalAlloc requires.
        unsafe { std::alloc::System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Capped = Capped;

/// Every target's watch, for the allocator: a refused request usually ends
/// the process ("memory allocation of N bytes failed", then an abort that
/// no test can catch), so the input that asked is saved first.
static WATCHES: Mutex<Vec<Arc<Watch>>> = Mutex::new(Vec::new());

thread_local! {
    /// The watch of the target this thread drives; null on every other
    /// thread (a target's own worker threads among them). A raw pointer in
    /// a `Cell`: no destructor, no allocation, so the allocator may read it.
    static DRIVING: Cell<*const Watch> = const { Cell::new(std::ptr::null()) };
}

/// Called by the allocator when a request of `size` bytes is refused:
/// saves the input that asked and says so on the real stderr (the test
/// harness's capture is lost when the process aborts). A request from a
/// thread that drives no target (a target's worker thread) saves every
/// input running at that moment. Saving allocates a little, under the cap.
fn over_cap(size: usize) {
    // One report at a time (another thread's waits); none from inside one.
    static REPORTING: Mutex<()> = Mutex::new(());
    thread_local! {
        static INSIDE: Cell<bool> = const { Cell::new(false) };
    }
    if INSIDE.try_with(|i| i.replace(true)).unwrap_or(true) {
        return;
    }
    let _one = REPORTING.lock().unwrap_or_else(|e| e.into_inner());
    let mine = DRIVING.try_with(Cell::get).unwrap_or(std::ptr::null());
    let mut err = std::io::stderr();
    if mine.is_null() {
        let all: Vec<Arc<Watch>> = WATCHES.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let _ = writeln!(
            err,
            "a thread that drives no target asked for {size} bytes (over the {MAX_ALLOC}-byte \
             cap); saving every input running now"
        );
        for w in &all {
            w.save_running("alloc", size);
        }
    } else {
        // SAFETY: `exec` sets the pointer from a live `&Watch` for the
        // length of one run on this thread and clears it after.
        unsafe { &*mine }.save_running("alloc", size);
    }
    let _ = INSIDE.try_with(|i| i.set(false));
}

/// Mutants never grow past this.
const MAX_INPUT: usize = 1 << 20;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("fuzz-targets sits in the repository")
        .to_path_buf()
}

fn budget() -> Duration {
    let secs = std::env::var(EnvVars::GRETA_FUZZ_SECS)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(15);
    Duration::from_secs(secs)
}

fn rng_seed(target: &str) -> u64 {
    match std::env::var(EnvVars::GRETA_FUZZ_SEED)
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(s) => s,
        None => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1);
            now ^ target
                .bytes()
                .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b))
        }
    }
}

/// Saves a failing input and returns where.
fn save(target: &str, tag: &str, data: &[u8]) -> std::io::Result<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    std::fs::create_dir_all(&dir)?;
    let p = dir.join(format!("{target}-{tag}"));
    std::fs::write(&p, data)?;
    Ok(p)
}

/// How to replay a saved input.
fn replay_hint(target: &str) -> String {
    format!(
        "Replay: add it to fuzz/regressions/{target}/ and run `cargo test -p greta-fuzz-targets`"
    )
}

/// The input a target runs now: its name and since when.
struct Running {
    since: Instant,
    tag: String,
    data: Vec<u8>,
}

/// One target's input now running, watched by a thread that aborts the
/// process (after saving the input) when one runs past [`HANG`] (a hung
/// target cannot be stopped from inside), and by the allocator, which
/// saves it when it asks for more than [`MAX_ALLOC`].
struct Watch {
    target: &'static str,
    state: Mutex<Option<Running>>,
    changed: Condvar,
}

impl Watch {
    /// A watch the allocator can find (see [`over_cap`]).
    fn new(target: &'static str) -> Arc<Watch> {
        let w = Arc::new(Watch {
            target,
            state: Mutex::new(None),
            changed: Condvar::new(),
        });
        WATCHES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(w.clone());
        w
    }

    /// Saves the input now running, if any, as `TAG-why`, and says so on
    /// the real stderr: what follows (an abort) ends the process and
    /// everything the test harness captured. Never panics (the allocator
    /// calls it).
    fn save_running(&self, why: &str, size: usize) {
        let g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(r) = &*g else {
            return;
        };
        Self::report(self.target, r, why, size);
    }

    fn report(target: &str, r: &Running, why: &str, size: usize) {
        let what = match why {
            "hang" => format!("ran past {HANG:?}"),
            _ => format!("asked for {size} bytes at once (the cap is {MAX_ALLOC})"),
        };
        let saved = match save(target, &format!("{}-{why}", r.tag), &r.data) {
            Ok(p) => format!("saved as {}. {}", p.display(), replay_hint(target)),
            Err(e) => format!("could not be saved ({e}); its tag replays it"),
        };
        let _ = writeln!(
            std::io::stderr(),
            "{target}: input {} {what}; {saved}",
            r.tag
        );
    }
}

fn watchdog(watch: Arc<Watch>) {
    std::thread::spawn(move || {
        let mut g = watch.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let wait = match &*g {
                Some(r) if r.since.elapsed() >= HANG => {
                    Watch::report(watch.target, r, "hang", 0);
                    std::process::abort();
                }
                Some(r) => HANG - r.since.elapsed(),
                None => HANG,
            };
            g = watch
                .changed
                .wait_timeout(g, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    });
}

/// Runs one input of `watch`'s target; returns how long it took.
fn exec(watch: &Watch, scratch: &Scratch, tag: &str, data: &[u8]) -> Duration {
    let target = watch.target;
    let start = Instant::now();
    *watch.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(Running {
        since: start,
        tag: tag.to_string(),
        data: data.to_vec(),
    });
    watch.changed.notify_all();
    DRIVING.with(|d| d.set(watch));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(target, scratch, data)));
    DRIVING.with(|d| d.set(std::ptr::null()));
    let took = start.elapsed();
    *watch.state.lock().unwrap_or_else(|e| e.into_inner()) = None;
    if r.is_err() {
        let p = save(target, tag, data).expect("failure file");
        panic!(
            "{target}: input {tag} panicked (message above); saved as {}. {}",
            p.display(),
            replay_hint(target)
        );
    }
    took
}

/// One to eight stacked byte-level edits of `base`, some borrowing a slice
/// of another seed (so tokens of the real formats travel between inputs).
fn mutate(rng: &mut StdRng, base: &[u8], other: &[u8]) -> Vec<u8> {
    const INTERESTING: &[u8] = b"\x00\xff\x7f\x80\n=\"[]:{},.-+0 \t\\";
    let mut d = base.to_vec();
    for _ in 0..rng.gen_range(1..=8) {
        let len = d.len();
        match rng.gen_range(0..9) {
            0 if len > 0 => {
                let i = rng.gen_range(0..len);
                d[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.gen_range(0..len);
                d[i] = INTERESTING[rng.gen_range(0..INTERESTING.len())];
            }
            2 if len > 0 => {
                let i = rng.gen_range(0..len);
                d[i] = rng.gen();
            }
            3 => {
                let i = rng.gen_range(0..=len);
                let n = rng.gen_range(1..=16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
                d.splice(i..i, bytes);
            }
            4 if len > 0 => {
                let i = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - i).min(256));
                d.drain(i..i + n);
            }
            5 if len > 0 => {
                let i = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - i).min(256));
                let chunk = d[i..i + n].to_vec();
                let at = rng.gen_range(0..=len);
                d.splice(at..at, chunk);
            }
            6 if !other.is_empty() => {
                let i = rng.gen_range(0..other.len());
                let n = rng.gen_range(1..=(other.len() - i).min(512));
                let at = rng.gen_range(0..=len);
                d.splice(at..at, other[i..i + n].iter().copied());
            }
            7 if len > 1 => d.truncate(rng.gen_range(1..len)),
            8 if len > 0 => {
                // A number where a digit was: sizes and counts at their edges.
                let i = rng.gen_range(0..len);
                let edge = [
                    "0",
                    "-1",
                    "4294967295",
                    "4294967296",
                    "18446744073709551616",
                    "1e308",
                    "NaN",
                ];
                let s = edge[rng.gen_range(0..edge.len())];
                d.splice(i..i + 1, s.bytes());
            }
            _ => {}
        }
    }
    d.truncate(MAX_INPUT);
    d
}

fn fuzz(target: &'static str) {
    let corpus = seeds(target, &repo()).expect("seed corpus");
    assert!(!corpus.is_empty(), "{target}: the seed corpus is empty");
    let scratch = Scratch::new().expect("scratch directory");
    let watch = Watch::new(target);
    watchdog(watch.clone());

    // The slowest input and its name (debug build: AFL++'s release
    // harnesses run several times faster).
    let mut slowest = (Duration::ZERO, String::new());
    let mut timed = |took: Duration, name: &str| {
        if took > slowest.0 {
            slowest = (took, name.to_string());
        }
    };
    for (name, data) in &corpus {
        timed(exec(&watch, &scratch, &name.replace('/', "_"), data), name);
    }

    let seed = rng_seed(target);
    let mut rng = StdRng::seed_from_u64(seed);
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget() {
        let base = &corpus[rng.gen_range(0..corpus.len())].1;
        let other = &corpus[rng.gen_range(0..corpus.len())].1;
        let input = mutate(&mut rng, base, other);
        let tag = format!("seed{seed}-n{n}");
        timed(exec(&watch, &scratch, &tag, &input), &tag);
        n += 1;
    }
    eprintln!(
        "{target}: {} seeds replayed, {n} mutants in {:.1} s ({}={seed}); slowest input {:.3} s ({})",
        corpus.len(),
        start.elapsed().as_secs_f64(),
        EnvVars::GRETA_FUZZ_SEED,
        slowest.0.as_secs_f64(),
        slowest.1
    );
}

#[test]
fn from_text() {
    fuzz("from_text");
}

#[test]
fn sysroot() {
    fuzz("sysroot");
}

#[test]
fn lock_files() {
    fuzz("lock_files");
}

#[test]
fn data_files() {
    fuzz("data_files");
}

#[test]
fn gemm_plan() {
    fuzz("gemm_plan");
}

#[test]
fn cache_paths() {
    fuzz("cache_paths");
}

#[test]
fn report() {
    fuzz("report");
}

#[test]
fn lock_markers() {
    fuzz("lock_markers");
}

/// The driver can fail: a target that panics is caught, reported and its
/// input saved (a fuzz run that could not fail would prove nothing).
#[test]
fn a_panicking_input_is_caught_and_saved() {
    let scratch = Scratch::new().expect("scratch directory");
    let watch = Watch::new("no_such_target");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        exec(&watch, &scratch, "probe", b"x")
    }));
    let msg = r.expect_err("an unknown target panics");
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("saved as"), "{msg}");
    let saved = failures().join("no_such_target-probe");
    assert_eq!(std::fs::read(saved).expect("saved input"), b"x");
}

fn failures() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures")
}

/// `watch` runs `data` as `tag` on this thread until the guard drops, as
/// `exec` sets it (without a target to run).
fn running<'a>(watch: &'a Watch, tag: &str, data: &[u8]) -> impl Drop + 'a {
    struct Done<'a>(&'a Watch);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            DRIVING.with(|d| d.set(std::ptr::null()));
            *self.0.state.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
    *watch.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(Running {
        since: Instant::now(),
        tag: tag.to_string(),
        data: data.to_vec(),
    });
    DRIVING.with(|d| d.set(watch));
    Done(watch)
}

/// A request over the cap saves the input that made it, from the thread
/// that drives it or from a worker thread of the target.
#[test]
fn an_input_over_the_allocation_cap_is_saved() {
    let watch = Watch::new("alloc_cap_probe");
    let saved = failures().join("alloc_cap_probe-probe-alloc");
    let _ = std::fs::remove_file(&saved);
    let _run = running(&watch, "probe", b"asks for too much");
    let mut v: Vec<u8> = Vec::new();
    assert!(v.try_reserve_exact(MAX_ALLOC + 1).is_err());
    assert_eq!(
        std::fs::read(&saved).expect("saved input"),
        b"asks for too much"
    );
    std::fs::remove_file(&saved).expect("saved input");
    std::thread::spawn(|| {
        let mut v: Vec<u8> = Vec::new();
        assert!(v.try_reserve_exact(MAX_ALLOC + 1).is_err());
    })
    .join()
    .expect("worker thread");
    assert_eq!(
        std::fs::read(&saved).expect("saved from a worker thread"),
        b"asks for too much"
    );
}

/// The child of [`an_abort_at_the_allocation_cap_leaves_the_input`]: an
/// input whose request over the cap ends the process, as an unchecked
/// `Vec::with_capacity` from an input's number does.
#[test]
#[ignore = "run as a child process by an_abort_at_the_allocation_cap_leaves_the_input"]
fn child_aborting_at_the_allocation_cap() {
    let watch = Watch::new("alloc_abort_probe");
    let _run = running(&watch, "probe", b"ends the process");
    let v: Vec<u8> = Vec::with_capacity(std::hint::black_box(MAX_ALLOC + 1));
    drop(v);
}

/// The abort itself (the default out-of-memory handler) cannot be caught:
/// a child process runs it, and its input is on disk, named on stderr.
#[test]
fn an_abort_at_the_allocation_cap_leaves_the_input() {
    let saved = failures().join("alloc_abort_probe-probe-alloc");
    let _ = std::fs::remove_file(&saved);
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
            "--exact",
            "child_aborting_at_the_allocation_cap",
            "--nocapture",
        ])
        .output()
        .expect("child test process");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child did not abort: {err}");
    assert!(
        err.contains("alloc_abort_probe: input probe asked for 1073741825 bytes")
            && err.contains(&saved.display().to_string())
            && err.contains("memory allocation of 1073741825 bytes failed"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&saved).expect("saved input"),
        b"ends the process"
    );
}

/// Every target has seeds from the repository's real data, and every saved
/// regression directory names a real target.
#[test]
fn every_target_has_real_seeds_and_regressions_name_targets() {
    for t in greta_fuzz_targets::TARGETS {
        let s = seeds(t, &repo()).expect("seeds");
        assert!(s.len() >= 2, "{t}: only {} seeds", s.len());
    }
    let reg = repo().join("fuzz/regressions");
    for e in std::fs::read_dir(&reg).expect("fuzz/regressions") {
        let e = e.expect("entry");
        if e.path().is_dir() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                greta_fuzz_targets::TARGETS.contains(&name.as_str()),
                "fuzz/regressions/{name} names no target"
            );
        }
    }
}

/// The allocation cap is in effect for every target run here: a request
/// past it fails as an out-of-memory would, and one under it is served.
#[test]
fn an_allocation_over_one_gib_fails() {
    // Driving a target with no input running: nothing to save.
    let idle = Watch::new("idle");
    DRIVING.with(|d| d.set(&*idle));
    let mut v: Vec<u8> = Vec::new();
    assert!(v.try_reserve_exact(MAX_ALLOC + 1).is_err());
    assert!(v.try_reserve_exact(1 << 20).is_ok());
    let mut w: Vec<u8> = vec![0; 1 << 20];
    assert!(
        w.try_reserve_exact(MAX_ALLOC).is_err(),
        "grown past the cap"
    );
    DRIVING.with(|d| d.set(std::ptr::null()));
}
