//! Network and disk faults during `greta install`: each ends in success or a
//! clear error, never in a broken env; the previous env stays intact.

use crate::support;
use crate::support::{text, Fault, Harness};
use std::time::{Duration, Instant};

fn install_ok(h: &Harness) -> serde_json::Value {
    let o = h.install(&["--installer", "uv", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A first good env, so every fault test can check it survives.
fn with_previous_env(blob: usize) -> (Harness, Vec<u8>) {
    support::require_uv();
    let h = Harness::new(blob);
    install_ok(&h);
    let receipt = h.receipt_bytes("cpu");
    std::fs::remove_dir_all(h.cache_dir()).unwrap();
    h.server.clear_log();
    (h, receipt)
}

/// Installs over a previous env while `project`'s wheel meets `faults`,
/// one request each, and must succeed: the requests the server saw for it.
fn install_through(
    blob: usize,
    project: &str,
    faults: &[Fault],
) -> (Harness, Vec<support::server::Logged>) {
    let (h, _) = with_previous_env(blob);
    let file = h.wheel(project).filename.clone();
    for f in faults {
        h.server.fault_once(&file, f.clone());
    }
    install_ok(&h);
    let hits = h.server.hits(&file);
    (h, hits)
}

fn assert_previous_intact(h: &Harness, receipt: &[u8]) {
    assert_eq!(h.receipt_bytes("cpu"), receipt, "previous env changed");
    assert_eq!(h.import_in_env("cpu")["torch"], "2.5.1");
    assert_eq!(
        h.envs_entries(),
        vec![".cpu.lock".to_string(), "cpu".to_string()],
        "leftovers next to the env"
    );
}

#[test]
fn server_errors_then_success_are_retried() {
    let (h, _) = with_previous_env(100_000);
    let torch = h.wheel("torch").filename.clone();
    let jax = h.wheel("jax").filename.clone();
    h.server.fault_once(&torch, Fault::Status(500));
    h.server.fault_once(&torch, Fault::Status(503));
    h.server.fault_once(&jax, Fault::Status(503));
    install_ok(&h);
    let codes: Vec<u16> = h.server.hits(&torch).iter().map(|l| l.status).collect();
    assert_eq!(codes, vec![500, 503, 200]);
    h.import_in_env("cpu");
}

#[test]
fn persistent_server_error_fails_clearly_and_keeps_the_env() {
    let (h, receipt) = with_previous_env(50_000);
    let triton = h.wheel("triton").filename.clone();
    h.server.fault_always(&triton, Fault::Status(503));
    let o = h.install(&["--installer", "uv"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let e = support::stderr(&o);
    assert!(e.contains(&triton) && e.contains("HTTP 503"), "{e}");
    assert_eq!(h.server.hits(&triton).len(), 5, "default 5 attempts");
    assert_previous_intact(&h, &receipt);
    // 404 is not retried.
    h.server.fault_always(&triton, Fault::Status(404));
    h.server.clear_log();
    let o = h.install(&["--installer", "uv"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(h.server.hits(&triton).len(), 1);
    assert_previous_intact(&h, &receipt);
}

#[test]
fn reset_mid_body_resumes_with_range() {
    let resets = [Fault::ResetAfter(150_000), Fault::ResetAfter(100_000)];
    let (h, hits) = install_through(400_000, "torch", &resets);
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert_eq!(hits[0].range, None);
    // The second and third requests resume where the data stopped.
    let from = |i: usize| -> u64 {
        hits[i]
            .range
            .as_deref()
            .unwrap()
            .trim_start_matches("bytes=")
            .trim_end_matches('-')
            .parse()
            .unwrap()
    };
    let (r1, r2) = (from(1), from(2));
    assert!(r1 > 0 && r1 <= 150_000, "{hits:?}");
    assert!(r2 > r1 && r2 <= r1 + 100_000, "{hits:?}");
    assert!(hits[1].status == 206 && hits[2].status == 206);
    h.import_in_env("cpu");
}

#[test]
fn reset_without_range_support_restarts_from_zero() {
    let (h, _) = with_previous_env(300_000);
    h.server.set_range_support(false);
    let torch = h.wheel("torch").filename.clone();
    h.server.fault_once(&torch, Fault::ResetAfter(100_000));
    install_ok(&h);
    let hits = h.server.hits(&torch);
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[1].status, 200, "server ignored Range, full body taken");
    h.import_in_env("cpu");
}

#[test]
fn truncated_body_is_detected_and_resumed() {
    let (h, hits) = install_through(200_000, "jax", &[Fault::TruncateAfter(10_000)]);
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(hits[1].range.is_some());
    h.import_in_env("cpu");
}

/// A wheel whose bytes differ from the lock is traced to the
/// lockfile line that pins its sha256 (the file to look at when a wheel
/// was republished), and nothing is built.
#[test]
fn a_changed_hash_names_the_lockfile_and_line() {
    let h = Harness::new(20_000);
    let torch = h.wheel("torch");
    h.server.fault_always(&torch.filename, Fault::WrongContent);
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let lock = std::fs::read_to_string(h.lock_dir().join("pylock.cpu.toml")).unwrap();
    let line = 1 + lock
        .lines()
        .position(|l| l.contains(&torch.sha256))
        .expect("torch's hash in the lock");
    let e = support::stderr(&o);
    assert!(
        e.contains(&format!(
            "sha256 mismatch: the lock says {} ({}:{line})",
            torch.sha256,
            h.lock_dir().join("pylock.cpu.toml").display()
        )),
        "{e}"
    );
    assert!(e.contains(&format!("pylock.cpu.toml:{line}")), "{e}");
    assert!(!h.envs_dir().join("cpu").exists());
}

#[test]
fn wrong_content_is_refetched_once_then_refused() {
    let (h, receipt) = with_previous_env(60_000);
    let torch = h.wheel("torch").filename.clone();
    // Once: the clean retry gets the right bytes.
    h.server.fault_once(&torch, Fault::WrongContent);
    install_ok(&h);
    assert_eq!(h.server.hits(&torch).len(), 2);
    let receipt2 = h.receipt_bytes("cpu");
    assert_ne!(receipt2, receipt);

    // Always: a clear sha256 error, nothing cached, env untouched.
    std::fs::remove_dir_all(h.cache_dir()).unwrap();
    h.server.fault_always(&torch, Fault::WrongContent);
    let o = h.install(&["--installer", "uv"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let e = support::stderr(&o);
    assert!(
        e.contains("sha256 mismatch") && e.contains(&h.wheel("torch").sha256),
        "{e}"
    );
    assert!(
        h.cached_wheel("torch").is_none(),
        "a bad file entered the cache"
    );
    assert_previous_intact(&h, &receipt2);
}

/// A machine with the cpu env installed: `project`'s wheel file name and its
/// file in the verified cache.
fn installed_with_cached(project: &str) -> (Harness, String, std::path::PathBuf) {
    support::require_uv();
    let h = Harness::new(80_000);
    install_ok(&h);
    let name = h.wheel(project).filename.clone();
    let cached = h.cached_wheel(project).expect("the wheel is cached");
    (h, name, cached)
}

/// Edits a cached file in place, as damage on disk would (the cache keeps
/// its files read-only).
fn damage(cached: &std::path::Path, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut b = std::fs::read(cached).unwrap();
    edit(&mut b);
    let mut perm = std::fs::metadata(cached).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(cached, perm).unwrap();
    std::fs::write(cached, &b).unwrap();
}

#[test]
fn tampered_cache_file_is_detected_and_refetched() {
    let (h, jax, cached) = installed_with_cached("jax");
    // Same size, one byte flipped, mtime unchanged in spirit: only a re-hash can tell.
    damage(&cached, |b| {
        let mid = b.len() / 3;
        b[mid] ^= 0x01;
    });
    h.server.clear_log();
    let j = install_ok(&h);
    let w = support::find_by(&j["report"]["wheels"], "filename", &jax)
        .unwrap()
        .clone();
    assert_eq!(w["source"], "network", "{w}");
    assert!(
        w["replaced_corrupt"].as_str().unwrap().contains("sha256"),
        "{w}"
    );
    assert_eq!(h.server.hits(&jax).len(), 1);
    assert_eq!(
        support::sha256_hex(&std::fs::read(&cached).unwrap()),
        h.wheel("jax").sha256
    );
    h.import_in_env("cpu");
}

#[test]
fn server_that_never_answers_times_out_in_bounded_time() {
    let (h, receipt) = with_previous_env(20_000);
    let triton = h.wheel("triton").filename.clone();
    h.server.fault_always(&triton, Fault::Hang);
    let t = Instant::now();
    let o = h
        .install_command(&["--reinstall"])
        .env("GRETA_FETCH_ATTEMPTS", "2")
        .output()
        .unwrap();
    let took = t.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let e = support::stderr(&o);
    assert!(e.contains("timed out") && e.contains(&triton), "{e}");
    // 2 attempts x 2 s timeout + backoff; generous bound, never a hang.
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert_previous_intact(&h, &receipt);
}

#[test]
fn second_concurrent_install_is_refused_by_the_guard() {
    support::require_uv();
    let h = Harness::new(10_000);
    install_ok(&h);
    let receipt = h.receipt_bytes("cpu");
    let mut first = h
        .install_command(&["--reinstall"])
        .env("GRETA_TEST_PAUSE_AT", "fetched")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    support::wait_for_line(&mut first, "paused at fetched");
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        support::stderr(&o).contains("another greta install is running"),
        "{}",
        text(&o)
    );
    first.kill().unwrap();
    first.wait().unwrap();
    assert_previous_intact(&h, &receipt);
}

#[test]
fn import_that_hangs_is_killed_after_the_timeout_and_keeps_the_env() {
    let (h, receipt) = with_previous_env(10_000);
    // The lock now pins a jax whose import never returns.
    let hung = support::wheel::build(
        "jax",
        "0.4.36",
        "jax",
        &[(
            "jax/__init__.py",
            "import time\ntime.sleep(600)\n".to_string(),
        )],
        1_000,
    );
    h.server
        .add_wheel("jax", &hung.filename, hung.bytes.clone());
    let lock = h.pylock_for(&[h.wheel("torch"), h.wheel("triton"), &hung]);
    std::fs::write(h.lock_dir().join("pylock.cpu.toml"), lock).unwrap();
    let t = Instant::now();
    let o = h.install(&["--installer", "uv", "--import-timeout", "3"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "took {:?}",
        t.elapsed()
    );
    let e = support::stderr(&o);
    assert!(
        e.contains("import check of jax") && e.contains("did not finish within 3s"),
        "{e}"
    );
    assert_previous_intact(&h, &receipt);
}

/// "N download(s) failed" counted the siblings cancelled by the
/// one real failure, and the footer said "rerun to continue" after a 404,
/// which no rerun fixes.
#[test]
fn one_failure_is_counted_once_and_a_404_does_not_promise_a_rerun() {
    let (h, receipt) = with_previous_env(400_000);
    let triton = h.wheel("triton").filename.clone();
    let torch = h.wheel("torch").filename.clone();
    let jax = h.wheel("jax").filename.clone();
    // torch and jax are still downloading (slowly) when triton's 404 cancels them.
    for slow in [&torch, &jax] {
        h.server.fault_always(
            slow,
            Fault::Throttle {
                chunk: 4096,
                delay: Duration::from_millis(20),
            },
        );
    }
    h.server.fault_always(&triton, Fault::Status(404));
    let o = h.install(&["--installer", "uv"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let e = support::stderr(&o);
    assert!(e.contains("1 download(s) failed"), "{e}");
    assert!(e.contains(&triton) && e.contains("404"), "{e}");
    assert!(!e.contains("cancelled"), "{e}");
    assert!(!e.contains("rerun to continue"), "{e}");
    assert!(e.contains("a rerun alone will not help"), "{e}");
    assert_previous_intact(&h, &receipt);
    // A server error may pass: then the footer does say so.
    h.server.fault_always(&triton, Fault::Status(503));
    let o = h.install(&["--installer", "uv"]);
    let e = support::stderr(&o);
    assert!(e.contains("rerun to continue"), "{e}");
    assert!(e.contains("resumed on the next run"), "{e}");
}

/// Five attempts in all, even while every attempt made progress:
/// a server cutting every response short failed a wheel that was almost
/// all on disk. Only attempts that add no byte count now.
#[test]
fn a_server_that_cuts_every_response_still_delivers_the_file() {
    let (h, _) = with_previous_env(600_000);
    let torch = h.wheel("torch").filename.clone();
    // Each response stops after 60 kB: about 10 resumed attempts for torch.
    h.server.fault_always(&torch, Fault::ResetAfter(60_000));
    install_ok(&h);
    let hits = h.server.hits(&torch).len();
    assert!(hits > 5, "only {hits} requests: the file was not cut");
    h.import_in_env("cpu");
}

/// A corrupt cached wheel that its verification stamp still
/// vouched for (here the stamp is rewritten to match the damaged file, as
/// bit rot or a tool that restores times would leave it) failed every
/// rerun inside uv until GRETA_VERIFY_CACHE=1. greta now re-hashes the
/// plan's files when the installer fails, drops the bad one, and the next
/// run fetches it again.
#[test]
fn a_corrupt_wheel_the_stamp_vouches_for_is_dropped_when_the_installer_fails() {
    use std::os::unix::fs::MetadataExt;
    let (h, jax, cached) = installed_with_cached("jax");
    // Zero the zip's central directory end: no installer can read it.
    damage(&cached, |b| {
        let n = b.len();
        b[n - 22..].fill(0);
    });
    let m = std::fs::metadata(&cached).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    std::fs::write(
        cached.with_file_name(".verified"),
        format!(
            "{} {} {}.{} {}.{} {now}",
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec()
        ),
    )
    .unwrap();
    let o = h.install(&["--installer", "uv"]);
    let e = support::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("failed re-verification and were removed"), "{e}");
    assert!(e.contains(&jax), "{e}");
    assert!(!cached.exists(), "the corrupt file is still cached");
    // The rerun fetches it again and succeeds.
    h.server.clear_log();
    install_ok(&h);
    assert_eq!(h.server.hits(&jax).len(), 1);
    h.import_in_env("cpu");
}

/// `--index-url` project pages were not retried: one 500 ended
/// the run. They are retried like files now.
#[test]
fn index_pages_are_retried_after_server_errors() {
    support::require_uv();
    let h = Harness::new(50_000);
    let idx = h.server.index_url();
    h.server.fault_page_once("torch", Fault::Status(500));
    h.server.fault_page_once("torch", Fault::Status(503));
    let o = h.install(&["--index-url", &idx, "--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    let pages: Vec<u16> = h
        .server
        .log()
        .into_iter()
        .filter(|l| l.path == "/simple/torch/")
        .map(|l| l.status)
        .collect();
    assert_eq!(pages, vec![500, 503, 200]);
    h.import_in_env("cpu");
}
