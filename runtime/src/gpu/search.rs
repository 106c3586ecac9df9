//! Finding a vendor library, and saying which one was taken and why.
//!
//! Each backend lists candidates in its search order (an explicit variable,
//! the greta env's own wheels, `ROCM_PATH`/`CUDA_PATH`, the usual install
//! directories, the loader's names); the first that opens wins, and when
//! none does the error names every place looked and what happened there.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A shared library greta opened, and why that one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loaded {
    /// What it is, e.g. `libamdhip64`, `hiprtc`, `libcuda`, `NVRTC`.
    pub what: String,
    /// The file (or loader name) that was opened.
    pub path: PathBuf,
    /// Which rule of the search order found it (e.g. `$GRETA_HIP_LIB`).
    pub why: String,
}

impl std::fmt::Display for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({})", self.what, self.path.display(), self.why)
    }
}

/// One place to try: a file path, or a bare name for the dynamic loader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    pub why: String,
}

impl Candidate {
    pub fn new(path: impl Into<PathBuf>, why: impl Into<String>) -> Candidate {
        Candidate {
            path: path.into(),
            why: why.into(),
        }
    }
}

/// Opens the first candidate that loads. `Err` lists every place looked.
pub fn open_first(
    what: &str,
    candidates: &[Candidate],
) -> Result<(libloading::Library, Loaded), Vec<String>> {
    let mut looked = Vec::new();
    for c in candidates {
        let bare = c.path.components().count() == 1 && !c.path.is_absolute();
        if !bare {
            if let Err(why) = loadable(&c.path) {
                looked.push(format!("{} ({}): {why}", c.path.display(), c.why));
                continue;
            }
        }
        // SAFETY: loading a vendor runtime runs its initialisers; that is
        // what using it means. Nothing else is called here.
        match unsafe { libloading::Library::new(&c.path) } {
            Ok(lib) => {
                return Ok((
                    lib,
                    Loaded {
                        what: what.to_string(),
                        path: c.path.clone(),
                        why: c.why.clone(),
                    },
                ))
            }
            Err(e) => looked.push(format!(
                "{} ({}): {}",
                c.path.display(),
                c.why,
                short_dl_error(&e.to_string())
            )),
        }
    }
    Err(looked)
}

/// Whether the file at `path` may be handed to dlopen: it must resolve to
/// a regular file. dlopen of a FIFO blocks for ever in `open` (no writer)
/// and a device or directory fails late and obscurely, so anything else is
/// refused here, saying what it is. The check opens without blocking and
/// looks at the opened descriptor (`greta_fsread::open_regular`).
pub fn loadable(path: &Path) -> Result<(), String> {
    match greta_fsread::open_regular(path) {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => Err("not there".into()),
        Err(greta_fsread::Error::NotRegular { kind, .. }) => Err(format!(
            "is a {kind}, not a library file (only a regular file is loaded)"
        )),
        Err(e) => Err(e.into_io().to_string()),
    }
}

/// dlopen's message without the repeated file name.
fn short_dl_error(e: &str) -> String {
    e.rsplit(": ").next().unwrap_or(e).trim().to_string()
}

/// `<root>/lib/python*/site-packages/<rel>` for every Python under `root`
/// (a venv or the greta env), sorted newest Python first.
pub fn site_packages(root: &Path, rel: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("lib"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .map(|e| e.path().join("site-packages").join(rel))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out.reverse();
    out
}

/// The entries of `dir` whose names `version_of` accepts, each with the
/// version numbers it read from the name.
fn versioned_entries(
    dir: &Path,
    version_of: impl Fn(&str) -> Option<Vec<u64>>,
) -> Vec<(Vec<u64>, PathBuf)> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((version_of(&e.file_name().to_string_lossy())?, e.path())))
        .collect()
}

/// The numbers of a version text (`6.3.1`, `-6.3`), parts that are not
/// numbers skipped.
fn numbers(text: &str, separators: &[char]) -> Vec<u64> {
    text.split(separators)
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Directories named `<prefix>*` in `dir` (e.g. `/opt/rocm-6.3.1`), newest
/// version first.
pub fn versioned_dirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v = versioned_entries(dir, |name| {
        let rest = name.strip_prefix(prefix)?;
        Some(numbers(rest.trim_start_matches(['-', '_']), &['.', '-']))
    });
    v.sort();
    v.reverse();
    v.into_iter().map(|(_, p)| p).collect()
}

/// Files in `dir` named `stem` or `stem.N...`, the unversioned name first,
/// then the highest version.
pub fn lib_files(dir: &Path, stem: &str) -> Vec<PathBuf> {
    let mut v = versioned_entries(dir, |name| {
        let rest = name.strip_prefix(stem)?;
        (rest.is_empty() || rest.starts_with('.')).then(|| numbers(rest, &['.']))
    });
    // Unversioned first (empty vec sorts first), then highest version.
    v.sort_by(|a, b| match (a.0.is_empty(), b.0.is_empty()) {
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => b.0.cmp(&a.0),
    });
    v.into_iter().map(|(_, p)| p).collect()
}

/// The file a loaded symbol lives in (canonical path): which library the
/// dynamic loader really took when it was opened by a bare name.
pub(crate) fn loaded_from(addr: *const std::ffi::c_void) -> Option<PathBuf> {
    // SAFETY: `Dl_info` is plain C data (pointers and integers), for which
    // all-zero bytes are a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and writes `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a non-NULL dli_fname is a NUL-terminated string owned by the
    // loader, alive while the library stays loaded (the caller holds it).
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let p = PathBuf::from(name.to_string_lossy().into_owned());
    Some(std::fs::canonicalize(&p).unwrap_or(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_newest_first_and_missing_files_are_named() {
        let t = tempfile::tempdir().unwrap();
        for d in ["rocm-5.7.1", "rocm-6.10.0", "rocm-6.3.1", "other"] {
            std::fs::create_dir(t.path().join(d)).unwrap();
        }
        let v = versioned_dirs(t.path(), "rocm");
        let names: Vec<String> = v
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["rocm-6.10.0", "rocm-6.3.1", "rocm-5.7.1"]);
        for f in ["libx.so.5", "libx.so", "libx.so.6.1", "libxy.so"] {
            std::fs::write(t.path().join(f), "").unwrap();
        }
        let names: Vec<String> = lib_files(t.path(), "libx.so")
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["libx.so", "libx.so.6.1", "libx.so.5"]);
        let e = open_first(
            "libx",
            &[
                Candidate::new(t.path().join("nope.so"), "first rule"),
                Candidate::new(t.path().join("libx.so"), "second rule"),
                Candidate::new("libgreta-no-such-lib.so.9", "loader name"),
            ],
        )
        .unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].ends_with("(first rule): not there"), "{e:?}");
        assert!(e[1].contains("(second rule): "), "{e:?}");
        assert!(
            e[2].starts_with("libgreta-no-such-lib.so.9 (loader name): "),
            "{e:?}"
        );
    }
}
