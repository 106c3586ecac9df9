//! Opening a vendor library, and saying which one was taken and why.
//!
//! The candidates come from the one library search ([`super::find_library`]),
//! in its order (an explicit variable, the greta env's own wheels,
//! `ROCM_PATH`/`CUDA_PATH`, the usual install directories, the loader's
//! places); the first that opens wins, and when none does the error names
//! every place looked and what happened there.

use super::{Candidate, State};
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

/// Opens the first candidate that loads. `Err` lists every place looked.
pub fn open_first(
    what: &str,
    candidates: &[Candidate],
) -> Result<(libloading::Library, Loaded), Vec<String>> {
    let mut looked = Vec::new();
    for c in candidates {
        // The search saw what is there; a file is looked at again right
        // before dlopen (a FIFO put there since would block it for ever).
        let usable = match &c.state {
            State::ByName => Ok(()),
            State::Found => loadable(&c.path),
            other => Err(other.to_string()),
        };
        if let Err(why) = usable {
            looked.push(format!("{} ({}): {why}", c.path.display(), c.rule));
            continue;
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
                        why: c.why(),
                    },
                ))
            }
            Err(e) => looked.push(format!(
                "{} ({}): {}",
                c.path.display(),
                c.rule,
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
    use super::super::Rule;
    use super::*;

    /// Every candidate that does not load is named with its rule and why:
    /// one not there, a file that is no library, a name the loader lacks.
    #[test]
    fn every_place_that_did_not_load_is_named() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("libx.so"), "not a library").unwrap();
        let rule = |var| Rule::Variable { var };
        let e = open_first(
            "libx",
            &[
                Candidate::at(t.path().join("nope.so"), rule("FIRST")),
                Candidate::at(t.path().join("libx.so"), rule("SECOND")),
                Candidate::by_name("libgreta-no-such-lib.so.9"),
            ],
        )
        .unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].ends_with("($FIRST): not there"), "{e:?}");
        assert!(e[1].contains("($SECOND): "), "{e:?}");
        assert!(
            e[2].starts_with("libgreta-no-such-lib.so.9 (the dynamic loader's search path): "),
            "{e:?}"
        );
    }

    /// A file that became a FIFO after the search is refused before
    /// dlopen, which would block on it for ever.
    #[test]
    fn a_file_turned_fifo_after_the_search_is_not_opened() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("libx.so");
        std::fs::write(&p, "").unwrap();
        let c = Candidate::at(&p, Rule::Variable { var: "X" });
        assert_eq!(c.state, State::Found);
        std::fs::remove_file(&p).unwrap();
        let cp = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path in our temp dir.
        assert_eq!(unsafe { libc::mkfifo(cp.as_ptr(), 0o644) }, 0);
        let e = open_first("libx", &[c]).unwrap_err();
        assert!(e[0].contains("is a FIFO, not a library file"), "{e:?}");
    }
}
