//! What a file is, in words: the one wording of greta's messages about a
//! path that is not what it should be (the readers of `greta-fsread`, the
//! wheel cache, `smoke --prom`, a path setting naming a FIFO).

use std::os::unix::fs::FileTypeExt;

/// What a file of type `t` is, in words ("FIFO", "symbolic link", ...).
pub fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "symbolic link"
    } else if t.is_file() {
        "regular file"
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}
