//! What an installer really did: a tool that exits 0 is not proof (a
//! `GRETA_UV` that does nothing made greta print "installed 35 wheels"
//! before the import check failed). After `uv venv` the venv must
//! have its interpreter; after `uv pip install` / `pip install` every
//! wheel's distribution must have its `.dist-info` with a `RECORD` in the
//! venv's site-packages.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Whether `venv` looks made: `pyvenv.cfg` and `bin/python` are there.
pub fn venv_made(venv: &Path) -> bool {
    fs::symlink_metadata(venv.join("pyvenv.cfg")).is_ok_and(|m| m.is_file())
        && fs::symlink_metadata(venv.join("bin").join("python")).is_ok()
}

/// The wheels of `wheels` whose distribution has no `.dist-info` (with a
/// `RECORD`) in `venv`'s site-packages, as "name version".
pub fn missing(venv: &Path, wheels: &[PathBuf]) -> Vec<String> {
    let have = installed(venv);
    wheels
        .iter()
        .filter_map(|w| {
            let file = w.file_name()?.to_str()?;
            let (name, version) = name_version(file.strip_suffix(".whl")?)?;
            let n = normalize(name);
            let found = have
                .iter()
                .any(|(hn, hv)| *hn == n && same_version(hv, version));
            (!found).then(|| format!("{name} {version}"))
        })
        .collect()
}

/// PEP 440 equality (`1.0` is `1.0.0`), else the same text ignoring case.
fn same_version(a: &str, b: &str) -> bool {
    use std::str::FromStr;
    match (
        uv_pep440::Version::from_str(a),
        uv_pep440::Version::from_str(b),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.eq_ignore_ascii_case(b),
    }
}

/// `(normalized name, version)` of every `.dist-info` holding a
/// `RECORD` under `lib/python*/site-packages`.
fn installed(venv: &Path) -> HashSet<(String, String)> {
    let mut out = HashSet::new();
    let Ok(libs) = fs::read_dir(venv.join("lib")) else {
        return out;
    };
    for lib in libs.flatten() {
        if !lib.file_name().to_string_lossy().starts_with("python") {
            continue;
        }
        let Ok(rd) = fs::read_dir(lib.path().join("site-packages")) else {
            continue;
        };
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let Some(stem) = n.strip_suffix(".dist-info") else {
                continue;
            };
            if !e.path().join("RECORD").is_file() {
                continue;
            }
            if let Some((name, version)) = name_version(stem) {
                out.insert((normalize(name), version.to_string()));
            }
        }
    }
    out
}

/// `torch-2.5.1+cpu-cp311-...` → (`torch`, `2.5.1+cpu`): a wheel's file
/// name and a dist-info's directory name both start with the escaped name
/// (no `-` in it) and the version.
fn name_version(stem: &str) -> Option<(&str, &str)> {
    let mut parts = stem.splitn(3, '-');
    let name = parts.next().filter(|n| !n.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    Some((name, version))
}

/// PEP 503: lowercase, runs of `-`, `_`, `.` as one `_`.
fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('_') {
                out.push('_');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wheel_counts_as_installed_only_with_its_dist_info_record() {
        let d = tempfile::tempdir().unwrap();
        let site = d.path().join("lib/python3.11/site-packages");
        fs::create_dir_all(site.join("Jax_Lib-0.4.35.0.dist-info")).unwrap();
        fs::write(site.join("Jax_Lib-0.4.35.0.dist-info/RECORD"), "").unwrap();
        // A dist-info without RECORD (an install cut short) does not count.
        fs::create_dir_all(site.join("torch-2.5.1+cpu.dist-info")).unwrap();
        let wheels = [
            PathBuf::from("/c/jax_lib-0.4.35-py3-none-any.whl"),
            PathBuf::from("/c/torch-2.5.1+cpu-cp311-cp311-linux_x86_64.whl"),
        ];
        assert_eq!(missing(d.path(), &wheels), vec!["torch 2.5.1+cpu"]);
        assert!(!venv_made(d.path()));
    }
}
