//! The env lock (`envs/.<name>.lock`) is opened as the cache's lock files
//! are: a symlink there to a file outside greta's
//! dirs was truncated and got greta's pid written into it; a FIFO there
//! failed the install. Both are moved aside with a warning.

use crate::support::{self, Harness};

#[test]
fn a_symlink_or_fifo_at_the_env_lock_is_moved_aside_not_written_through() {
    let h = Harness::new(1_000);
    std::fs::create_dir_all(h.envs_dir()).unwrap();
    let victim = h.dir.path().join("victim");
    std::fs::write(&victim, b"the user's file").unwrap();
    let lock = h.envs_dir().join(".cpu.lock");
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), b"the user's file");
    assert!(
        support::stderr(&o).contains("moved it aside"),
        "{}",
        support::text(&o)
    );

    std::fs::remove_file(&lock).unwrap();
    let c = std::ffi::CString::new(lock.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0);
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(std::fs::symlink_metadata(&lock).unwrap().is_file());
}
