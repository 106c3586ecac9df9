//! `greta install` SIGKILLed at several points: the rerun succeeds, nothing
//! half-written is ever used, and until then the previous env is intact
//! (or, when killed between the two renames of the swap, put back).

use crate::support;
use crate::support::{text, Harness};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn spawn_paused(h: &Harness, step: &str) -> Child {
    h.install_command(&["--reinstall", "--installer", "uv"])
        .env("GRETA_TEST_PAUSE_AT", step)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn sigkill(mut c: Child) {
    c.kill().unwrap(); // SIGKILL on Unix
    c.wait().unwrap();
}

fn rerun_ok(h: &Harness) -> String {
    let o = h.install(&["--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(h.import_in_env("cpu")["torch"], "2.5.1");
    assert_eq!(
        h.envs_entries(),
        vec![".cpu.lock".to_string(), "cpu".to_string()]
    );
    support::stderr(&o)
}

#[test]
fn killed_at_each_build_step_previous_env_survives_and_rerun_cleans_up() {
    support::require_uv();
    let h = Harness::new(50_000);
    rerun_ok(&h);
    for step in ["fetched", "venv", "installed", "checked"] {
        let receipt = h.receipt_bytes("cpu");
        let mut c = spawn_paused(&h, step);
        support::wait_for_line(&mut c, &format!("paused at {step}"));
        sigkill(c);
        // Killed: the old env is exactly as it was; a staging dir may exist.
        assert_eq!(h.receipt_bytes("cpu"), receipt, "{step}");
        assert_eq!(h.import_in_env("cpu")["torch"], "2.5.1");
        let staging: Vec<String> = h
            .envs_entries()
            .into_iter()
            .filter(|e| e == ".staging/cpu")
            .collect();
        if step != "fetched" {
            assert_eq!(staging.len(), 1, "{step}: {:?}", h.envs_entries());
        }
        let err = rerun_ok(&h);
        if step != "fetched" {
            assert!(err.contains("removed the unfinished env"), "{step}: {err}");
        }
        assert_ne!(h.receipt_bytes("cpu"), receipt, "{step}: not rebuilt");
    }
}

#[test]
fn killed_between_the_swap_renames_restores_the_previous_env() {
    support::require_uv();
    let h = Harness::new(20_000);
    rerun_ok(&h);
    let receipt = h.receipt_bytes("cpu");
    let mut c = spawn_paused(&h, "swap");
    support::wait_for_line(&mut c, "paused at swap");
    sigkill(c);
    // The old env sits in its backup name, the new one in staging.
    assert!(!h.env_dir("cpu").exists());
    assert_eq!(
        std::fs::read(h.envs_dir().join(".backup-cpu").join("greta-env.json")).unwrap(),
        receipt
    );
    // The next install puts the previous env back before it builds.
    let err = rerun_ok(&h);
    assert!(err.contains("restored the previous env"), "{err}");
    // Again, but `greta env list` comes first: it puts the previous env
    // back itself (it listed no env, and `env remove` said there
    // was none, until the next install).
    let receipt = h.receipt_bytes("cpu");
    let mut c = spawn_paused(&h, "swap");
    support::wait_for_line(&mut c, "paused at swap");
    sigkill(c);
    assert!(!h.env_dir("cpu").exists());
    let o = h.cmd(&["env", "list", "--json"]).output().unwrap();
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names = support::env_names(&j);
    assert_eq!(names, vec!["cpu"], "{j}");
    assert_eq!(h.receipt_bytes("cpu"), receipt);
    assert!(!h.envs_dir().join(".backup-cpu").exists());
    assert_eq!(h.import_in_env("cpu")["torch"], "2.5.1");
    rerun_ok(&h);
}

#[test]
fn killed_mid_download_resumes_and_never_caches_a_partial_file() {
    support::require_uv();
    let h = Harness::new(600_000);
    let torch = h.throttle_torch(16 * 1024, 40);
    let mut c = spawn_paused(&h, "never");
    let partial = h
        .cache_dir()
        .join("partial")
        .join(format!("{}.part", h.wheel("torch").sha256));
    let t = Instant::now();
    loop {
        let len = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
        if len >= 100_000 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "download never progressed"
        );
        if let Some(st) = c.try_wait().unwrap() {
            panic!("install ended early: {st}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = c.stderr.take();
    sigkill(c);
    let got = std::fs::metadata(&partial).unwrap().len();
    assert!(got > 0 && got < h.wheel("torch").bytes.len() as u64);
    assert!(
        h.cached_wheel("torch").is_none(),
        "partial file in the verified cache"
    );
    assert!(!h.env_dir("cpu").exists());

    h.server.clear_faults();
    h.server.clear_log();
    rerun_ok(&h);
    let hits = h.server.hits(&torch);
    assert_eq!(hits.len(), 1, "{hits:?}");
    let from: u64 = hits[0]
        .range
        .as_deref()
        .expect("resumed with Range")
        .trim_start_matches("bytes=")
        .trim_end_matches('-')
        .parse()
        .unwrap();
    assert!(from > 0 && from <= got, "resumed at {from}, had {got}");
    assert!(!partial.exists());
}
