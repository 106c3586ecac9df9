//! The output flags (`--json`, `--no-save`, `--out`, `--html`, `--prom`,
//! `--oneline`) with `greta smoke --tune` and `--compile-only`: each is
//! honoured or refused with exit 2 and its reason, never ignored. `--tune`
//! runs for real on lavapipe; Debian 12's lavapipe cannot give pipeline
//! statistics, so `--compile-only` here stops at the device (its `--json`
//! is checked on RADV in `radv_targets.rs`), which is after every flag was
//! judged.

use crate::support::run::Run;
use std::path::{Path, PathBuf};

/// `greta smoke <args>` on lavapipe (ultrasafe), the tuning cache in
/// `<home>/tuning`, result files under `<home>/data`.
fn smoke(home: &Path, args: &[&str]) -> Run {
    let mut cmd = crate::support::greta();
    cmd.arg("smoke")
        .args(["--device", "cpu", "--no-progress"])
        .args(args)
        .env("GRETA_TUNING_CACHE", home.join("tuning"))
        .env("HOME", home.join("home"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"));
    Run::of(cmd)
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

const TUNE: &[&str] = &["--tune", "--profile", "ultrasafe"];

#[test]
fn tune_json_prints_the_sweep_on_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    let r = smoke(tmp.path(), &[TUNE, &["--json"]].concat());
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON on stdout");
    assert_eq!(v["schema"], "greta.tune/v1");
    let gates: Vec<&str> = v["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["gate"].as_str().unwrap())
        .collect();
    assert_eq!(gates, ["fill.tiny", "copy.tiny"]);
    // The table went to stderr.
    assert!(r.stderr.contains("tuning cache: "), "{}", r.stderr);
}

/// Without `--no-save` the winners land in the tuning cache (the
/// control); with it the sweep is shown and nothing is stored.
#[test]
fn tune_no_save_stores_nothing_in_the_tuning_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    let r = smoke(&plain, TUNE);
    assert_eq!(r.code, 0);
    assert_eq!(files_in(&plain.join("tuning")).len(), 1);

    let home = tmp.path().join("no-save");
    let r = smoke(&home, &[TUNE, &["--no-save"]].concat());
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("fill.tiny"), "{}", r.stdout);
    assert!(
        r.stdout.contains("tuning cache: not written"),
        "{}",
        r.stdout
    );
    assert_eq!(files_in(&home.join("tuning")), Vec::<PathBuf>::new());
}

/// `--compile-only` writes no files: `--no-save` is taken (the run goes
/// on to the device, which on Debian 12's lavapipe cannot give pipeline
/// statistics), not refused.
#[test]
fn compile_only_takes_no_save() {
    let tmp = tempfile::tempdir().unwrap();
    let r = smoke(
        tmp.path(),
        &["--compile-only", "--gate", "fill.tiny", "--no-save"],
    );
    assert!(!r.stderr.contains("bad arguments"), "{}", r.stderr);
    assert!(
        r.code == 0 || r.stderr.contains("VK_KHR_pipeline_executable_properties"),
        "{}",
        r.stderr
    );
    assert_eq!(files_in(&tmp.path().join("data")), Vec::<PathBuf>::new());
}

/// Each flag the mode has no use for, alone: exit 2 naming it and why,
/// before any device is opened, and nothing it names is written.
fn refuses_each(mode: &[&str], says: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("page.html");
    let prom = tmp.path().join("greta.prom");
    let out = tmp.path().join("out");
    let (page_s, prom_s, out_s) = (
        page.to_string_lossy().into_owned(),
        prom.to_string_lossy().into_owned(),
        out.to_string_lossy().into_owned(),
    );
    for (flag, name) in [
        (&["--out", out_s.as_str()][..], "--out"),
        (&["--html", page_s.as_str()], "--html"),
        (&["--prom", prom_s.as_str()], "--prom"),
        (&["--oneline"], "--oneline"),
        (&["--baseline", "/nonexistent.json"], "--baseline"),
        (&["--floor-fraction", "0.5"], "--floor-fraction"),
        (&["--peer-fraction", "0.5"], "--peer-fraction"),
        (&["--deny-list", "/nonexistent.toml"], "--deny-list"),
        (&["--repeat", "3"], "--repeat"),
    ] {
        let r = smoke(tmp.path(), &[mode, flag].concat());
        assert_eq!(r.code, 2, "{flag:?}");
        assert!(
            r.stderr.contains(&format!("{says} does not take {name} (")),
            "{flag:?}: {}",
            r.stderr
        );
        assert!(
            !r.stderr.contains("backend"),
            "a device was probed: {}",
            r.stderr
        );
        assert_eq!(r.stdout, "", "{flag:?}");
    }
    assert!(!page.exists() && !prom.exists() && !out.exists());
    assert_eq!(files_in(&tmp.path().join("tuning")), Vec::<PathBuf>::new());
}

#[test]
fn tune_refuses_the_flags_it_has_no_use_for() {
    refuses_each(TUNE, "--tune");
}

#[test]
fn compile_only_refuses_the_flags_it_has_no_use_for() {
    refuses_each(&["--compile-only"], "--compile-only");
    // And what only a run of the gates uses: nothing is submitted, no
    // inputs are made, every profile is compiled.
    let tmp = tempfile::tempdir().unwrap();
    for (flag, name) in [
        (&["--timeout", "5"][..], "--timeout"),
        (&["--seed", "7"], "--seed"),
        (&["--profile", "perf"], "--profile"),
    ] {
        let r = smoke(tmp.path(), &[&["--compile-only"][..], flag].concat());
        assert_eq!(r.code, 2, "{flag:?}");
        assert!(
            r.stderr
                .contains(&format!("--compile-only does not take {name} (")),
            "{flag:?}: {}",
            r.stderr
        );
    }
}
