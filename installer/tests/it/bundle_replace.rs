//! Replacing a bundle was not atomic (`greta bundle -o
//! DIR` killed while deleting the previous bundle left DIR with its
//! manifest and some wheels gone, or nothing), a damaged bundle was blamed
//! on the Python version, and each killed bundle run left its
//! `.DIR.partial-PID` (2.9 GB for cpu) until the next bundle to that DIR.

use crate::support::{self, Harness};
use std::path::{Path, PathBuf};

/// A pid that has exited (its process reaped): a killed run's.
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn bundled(h: &Harness) -> PathBuf {
    let b = h.dir.path().join("bundle");
    let o = h.bundle_command(&b, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    b
}

fn install_from(h: &Harness, b: &Path) -> std::process::Output {
    // A node of its own: nothing cached, so the bundle's wheels are needed.
    let node = Harness::new(10);
    node.bundle_install_command(b, &support::python(), &[])
        .env("XDG_CACHE_HOME", node.dir.path().join("cache"))
        .env("XDG_DATA_HOME", h.dir.path().join("node-data"))
        .output()
        .unwrap()
}

/// A wheel the manifest lists is missing: the bundle is damaged, and says
/// so (it said "made for Python X.Y ... make the bundle with --python").
#[test]
fn a_bundle_missing_a_listed_wheel_is_diagnosed_as_damaged() {
    let h = Harness::new(1_000);
    let b = bundled(&h);
    let torch = &h.wheel("torch").filename;
    std::fs::remove_file(b.join("wheels").join(torch)).unwrap();
    let o = install_from(&h, &b);
    let err = support::stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(
        err.contains("damaged") && err.contains(torch.as_str()),
        "{err}"
    );
    assert!(!err.contains("--python X.Y"), "{err}");
}

/// Killed between the two renames of a swap (on a filesystem without an
/// atomic exchange), DIR was gone and the previous bundle sat beside it:
/// the next run puts it back.
#[test]
fn a_bundle_left_aside_by_a_killed_swap_is_restored() {
    let h = Harness::new(1_000);
    let b = bundled(&h);
    let aside = h.dir.path().join(format!(".bundle.old-{}", dead_pid()));
    std::fs::rename(&b, &aside).unwrap();
    let o = install_from(&h, &b);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(b.join("greta-bundle.json").is_file());
    assert!(!aside.exists());
}

/// A killed bundle run's `.DIR.partial-PID` is swept by the next greta
/// that looks at DIR (an install from it too), not only the next bundle.
#[test]
fn a_killed_bundle_runs_partial_dir_is_swept_by_the_next_install() {
    let h = Harness::new(1_000);
    let b = bundled(&h);
    let partial = h.dir.path().join(format!(".bundle.partial-{}", dead_pid()));
    std::fs::create_dir_all(partial.join("wheels")).unwrap();
    std::fs::write(partial.join("wheels/big.whl"), vec![0u8; 4096]).unwrap();
    let o = install_from(&h, &b);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(!partial.exists(), "{} stayed", partial.display());
}

/// Replacing a bundle leaves a complete bundle and nothing beside it.
#[test]
fn replacing_a_bundle_leaves_one_complete_bundle() {
    let h = Harness::new(1_000);
    let b = bundled(&h);
    let o = h.bundle_command(&b, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    let left: Vec<String> = std::fs::read_dir(h.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".bundle"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let o = install_from(&h, &b);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
}

/// A bundle run killed (SIGKILL) while writing `far/.b.partial-PID` left it
/// until the next bundle *to that DIR*; any later bundle or install now
/// collects it (greta records its partial bundles in its cache).
#[test]
fn a_killed_bundle_runs_partial_dir_anywhere_is_swept_by_the_next_run() {
    let h = Harness::new(1_000);
    let far = h.dir.path().join("far");
    std::fs::create_dir_all(&far).unwrap();
    let mut c = h.bundle_command(&far.join("b"), &[]);
    c.env("GRETA_TEST_PAUSE_AT", "bundle-written")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    support::wait_for_line(&mut child, "paused at bundle-written");
    let partial = far.join(format!(".b.partial-{}", child.id()));
    assert!(partial.join("greta-bundle.json").is_file());
    child.kill().unwrap();
    child.wait().unwrap();
    // Another bundle, elsewhere.
    let o = h
        .bundle_command(&h.dir.path().join("near"), &[])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(!partial.exists(), "{} stayed", partial.display());
}
