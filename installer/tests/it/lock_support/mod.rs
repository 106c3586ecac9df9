//! Helpers for the `lock_*` tests: run the real `greta` binary against the
//! shipped `lock/` directory or a scratch copy of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

pub fn shipped_lock_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../lock")
}

/// The independent pin records the lockfiles were copied from (`lock/sources/`).
pub fn sources_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../lock/sources")
}

pub fn support_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/lock_support")
}

/// `greta lock ARGS` with `--lock-dir DIR`.
pub fn greta_lock(dir: &Path, args: &[&str]) -> Output {
    crate::support::greta()
        .arg("lock")
        .args(args)
        .arg("--lock-dir")
        .arg(dir)
        .output()
        .expect("run greta")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(o), stderr(o)))
}

/// A scratch copy of the shipped lock dir's files (not `sources/`, the pin
/// records they were made from).
pub fn copy_lock_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(shipped_lock_dir()).unwrap() {
        let e = e.unwrap();
        if !e.file_type().unwrap().is_file() {
            continue;
        }
        std::fs::copy(e.path(), d.path().join(e.file_name())).unwrap();
    }
    d
}

/// A scratch copy of the shipped lock dir ([`copy_lock_dir`]) whose `file`
/// is what `edit` makes of it; the new text comes back too.
pub fn edited_lock_dir(
    file: &str,
    edit: impl FnOnce(&str) -> String,
) -> (tempfile::TempDir, String) {
    let d = copy_lock_dir();
    let p = d.path().join(file);
    let text = edit(&std::fs::read_to_string(&p).unwrap());
    std::fs::write(&p, &text).unwrap();
    (d, text)
}

/// Every plain file of a directory with its bytes, to prove nothing was written.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// 1-based (line, column) of the first occurrence of `needle` in `text`.
pub fn position_of(text: &str, needle: &str) -> (usize, usize) {
    let off = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in text"));
    let before = &text[..off];
    let line = before.matches('\n').count() + 1;
    let col = off - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}
