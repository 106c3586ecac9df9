//! What dead runs leave is collected. Partial downloads
//! a later run does not need stayed for ever (315 MB after a killed cold
//! install and two "up to date" runs), and each killed install left its
//! framework-gate scratch directory (`$TMPDIR/greta-gates-XXXXXX/`).

use crate::support::{self, Harness};
use std::os::fd::AsRawFd;

fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn partials_no_run_needs_are_collected_even_when_up_to_date() {
    let h = Harness::new(1_000);
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    let partial = h.cache_dir().join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    // A wheel now verified in the cache, a wheel of no plan, and one whose
    // download another greta holds (its lock taken).
    let cached = partial.join(format!("{}.part", h.wheel("torch").sha256));
    let stray = partial.join(format!("{}.part", "ab".repeat(32)));
    let busy = partial.join(format!("{}.part", "cd".repeat(32)));
    for p in [&cached, &stray, &busy] {
        std::fs::write(p, vec![7u8; 100_000]).unwrap();
    }
    let held = std::fs::File::create(busy.with_extension("lock")).unwrap();
    // SAFETY: flock on our own descriptor.
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);
    let o = h.install_plain(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(
        support::stderr(&o).contains("up to date"),
        "{}",
        support::text(&o)
    );
    assert!(!cached.exists(), "a partial of a cached wheel stayed");
    assert!(!stray.exists(), "a partial no plan needs stayed");
    assert!(busy.exists(), "a partial in use was removed");
    drop(held);
}

#[test]
fn a_dead_runs_gate_scratch_dir_is_swept() {
    let h = Harness::new(1_000);
    let tmp = h.dir.path().join("tmp");
    let dead = tmp.join(format!("greta-gates-{}-Xy12Ab", dead_pid()));
    std::fs::create_dir_all(&dead).unwrap();
    std::fs::write(dead.join("greta_gates.py"), "# left by a killed run").unwrap();
    let o = h.install_command(&[]).env("TMPDIR", &tmp).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(!dead.exists(), "{} stayed", dead.display());
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
