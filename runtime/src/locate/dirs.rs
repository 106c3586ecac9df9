//! The directory listings a library search reads: Python's site-packages
//! of an env, versioned install directories (`/opt/rocm-6.3.1`), and the
//! files of a library stem (`libamdhip64.so`, `libamdhip64.so.6`, ...).

use std::path::{Path, PathBuf};

/// `<root>/lib/python*/site-packages/<rel>` for every Python under `root`
/// (a venv or the greta env), sorted newest Python first.
pub(crate) fn site_packages(root: &Path, rel: &str) -> Vec<PathBuf> {
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
/// version numbers it read from the name. A directory that is not there
/// has none; one that cannot be listed is the error.
fn versioned_entries(
    dir: &Path,
    version_of: impl Fn(&str) -> Option<Vec<u64>>,
) -> std::io::Result<Vec<(Vec<u64>, PathBuf)>> {
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        r => r?,
    };
    Ok(entries
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((version_of(&e.file_name().to_string_lossy())?, e.path())))
        .collect())
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
pub(crate) fn versioned_dirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v = versioned_entries(dir, |name| {
        let rest = name.strip_prefix(prefix)?;
        Some(numbers(rest.trim_start_matches(['-', '_']), &['.', '-']))
    })
    .unwrap_or_default();
    v.sort();
    v.reverse();
    v.into_iter().map(|(_, p)| p).collect()
}

/// Files in `dir` named `stem` or `stem.N...`, the unversioned name first,
/// then the highest version; none where `dir` cannot be listed.
pub(crate) fn lib_files(dir: &Path, stem: &str) -> Vec<PathBuf> {
    listed_lib_files(dir, stem).unwrap_or_default()
}

/// [`lib_files`], or why `dir` could not be listed (not being there is
/// no error: it has no files).
pub(crate) fn listed_lib_files(dir: &Path, stem: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut v = versioned_entries(dir, |name| {
        let rest = name.strip_prefix(stem)?;
        (rest.is_empty() || rest.starts_with('.')).then(|| numbers(rest, &['.']))
    })?;
    // Unversioned first (empty vec sorts first), then highest version.
    v.sort_by(|a, b| match (a.0.is_empty(), b.0.is_empty()) {
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => b.0.cmp(&a.0),
    });
    Ok(v.into_iter().map(|(_, p)| p).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_newest_first() {
        let t = tempfile::tempdir().unwrap();
        for d in ["rocm-5.7.1", "rocm-6.10.0", "rocm-6.3.1", "other"] {
            std::fs::create_dir(t.path().join(d)).unwrap();
        }
        let names = |v: Vec<PathBuf>| -> Vec<String> {
            v.iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names(versioned_dirs(t.path(), "rocm")),
            ["rocm-6.10.0", "rocm-6.3.1", "rocm-5.7.1"]
        );
        for f in ["libx.so.5", "libx.so", "libx.so.6.1", "libxy.so"] {
            std::fs::write(t.path().join(f), "").unwrap();
        }
        assert_eq!(
            names(lib_files(t.path(), "libx.so")),
            ["libx.so", "libx.so.6.1", "libx.so.5"]
        );
        assert!(listed_lib_files(&t.path().join("none"), "libx.so")
            .unwrap()
            .is_empty());
        let not_a_dir = listed_lib_files(&t.path().join("libx.so"), "libx.so").unwrap_err();
        assert_eq!(not_a_dir.kind(), std::io::ErrorKind::NotADirectory);
    }
}
