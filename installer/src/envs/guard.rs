//! One install at a time per environment: an exclusive `flock` on
//! `envs/.<name>.lock`. The kernel drops the lock when the process dies, so
//! a killed install never leaves the env locked forever.

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

pub struct Guard {
    file: File,
}

impl Guard {
    /// Takes the lock or fails at once, naming the holder's pid.
    pub fn try_acquire(path: &Path) -> Result<Guard> {
        // Never through a symlink or into a FIFO; anything but a regular
        // file is moved aside, as for the cache's lock files.
        let mut file = crate::fetch::owned::open(path, crate::fetch::owned::Use::Lock)
            .with_context(|| format!("opening lock file {}", path.display()))?;
        // SAFETY: flock on a file descriptor we own.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let holder = crate::read::text_capped(path, 4096).unwrap_or_default();
                bail!(
                    "another greta install is running on this environment (lock {} held by pid {}); wait for it to finish",
                    path.display(),
                    holder.trim()
                );
            }
            return Err(err).with_context(|| format!("locking {}", path.display()));
        }
        file.set_len(0)?;
        let _ = writeln!(file, "{}", std::process::id());
        Ok(Guard { file })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        // SAFETY: unlock our own descriptor; closing it would do the same.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}
