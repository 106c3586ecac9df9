//! `capture` on this machine, replayed as a sysroot, must give the facts of
//! a live run (everything but the source label).

use std::path::Path;

use greta_probe::{CaptureError, Captured, Probe, Root};

use crate::common::{collect, envs_at};

fn capture(dir: &Path) -> Result<Captured, CaptureError> {
    Probe::new(&Root::live())
        .envs_at(envs_at)
        .capture(dir)
        .map(|(_, c)| c)
}

#[test]
fn capture_then_replay_equals_live() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    let cap = capture(&dir).expect("capture");
    assert!(cap.files > 0);
    assert!(dir.join(".greta/env").is_file());
    assert!(dir.join(".greta/id").is_file());
    assert!(dir.join(".greta/cmd/greta-vulkan-devices.txt").is_file());
    // Only allow-listed variables, never the rest of the environment.
    let env = std::fs::read_to_string(dir.join(".greta/env")).unwrap();
    for line in env.lines() {
        let key = line.split('=').next().unwrap();
        assert!(
            greta_probe::ENV_ALLOW.contains(&key),
            "captured non-allow-listed variable {key}"
        );
    }
    // /etc/group is cut to the groups doctor can use.
    if let Ok(g) = std::fs::read_to_string(dir.join("etc/group")) {
        let live = std::fs::read_to_string("/etc/group").unwrap();
        assert!(g.lines().count() <= live.lines().count());
        assert!(g.lines().all(|l| live.lines().any(|x| x == l)));
    }
    // No temp dir left beside the bundle.
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "bundle")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let (mut live, _) = collect(&Root::live());
    let replay_root = Root::sysroot(&dir).unwrap();
    let (mut replay, checks) = collect(&replay_root);
    assert_eq!(replay.sources, vec![format!("sysroot:{}", dir.display())]);
    live.sources.clear();
    replay.sources.clear();
    let (l, r) = (
        serde_json::to_string_pretty(&live).unwrap(),
        serde_json::to_string_pretty(&replay).unwrap(),
    );
    if l != r {
        for (i, (a, b)) in l.lines().zip(r.lines()).enumerate() {
            if a != b {
                panic!("first difference at line {i}:\n live:   {a}\n replay: {b}\n\nlive:\n{l}\n\nreplay:\n{r}");
            }
        }
        panic!("lengths differ:\nlive:\n{l}\n\nreplay:\n{r}");
    }
    assert_eq!(live, replay);
    assert_eq!(checks.len(), 7);
    // The capture's own facts are the live facts too.
    let mut captured = cap.facts.clone();
    captured.sources.clear();
    assert_eq!(captured, live);
}

#[test]
fn capture_refuses_a_non_empty_target() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("x"), "keep me").unwrap();
    match capture(tmp.path()) {
        Err(CaptureError::Exists(p)) => assert_eq!(p, tmp.path()),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("x")).unwrap(),
        "keep me"
    );
}
