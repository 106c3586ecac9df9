//! Files the tests hand to greta's readers and writers that must be
//! refused at once, never waited on or read whole: a FIFO (an open for
//! reading blocks until a writer comes) and a file past a size cap.

use std::path::{Path, PathBuf};

/// A FIFO at `p`.
pub(crate) fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// In `dir`, a FIFO `fifo.EXT` and a sparse file `huge.EXT` one byte over
/// `cap`, the reader's limit.
pub(crate) fn fifo_and_huge(dir: &Path, ext: &str, cap: u64) -> (PathBuf, PathBuf) {
    let fifo = dir.join(format!("fifo.{ext}"));
    mkfifo(&fifo);
    let huge = dir.join(format!("huge.{ext}"));
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(cap + 1)
        .unwrap();
    (fifo, huge)
}
