//! Is the env already exactly what `greta install` would build? Then the
//! install is a no-op ("up to date", like `uv sync`), after a verification
//! that is cheap but real:
//!
//! - the receipt names the same env, profile, lockfile (sha256), wheel set
//!   (every filename and sha256), platform variables, base interpreter
//!   (path and version) and greta version; an explicit `--installer` must
//!   match the tool that built it;
//! - the env's `bin/python` still resolves to that interpreter (it exists,
//!   and the venv was not re-pointed);
//! - the activation script is byte-for-byte what greta would write now,
//!   and a recorded HIP worker is still there;
//! - in site-packages each locked distribution is installed once, at the
//!   locked version (its `.dist-info` METADATA), and every file its RECORD
//!   lists with a size exists with that size.
//!
//! File contents are not re-hashed (several GiB for torch); a file that was
//! deleted, truncated or replaced by one of another size is caught, as is a
//! package upgraded or removed behind greta's back. `--reinstall` rebuilds
//! regardless. Any mismatch is returned as the reason to rebuild.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::{activate, Receipt};

/// What the install at hand would put into the env.
pub struct Wanted<'a> {
    pub name: &'a str,
    pub profile: &'a str,
    pub lock_sha256: &'a str,
    /// (name, version, filename, sha256) of every wheel.
    pub wheels: Vec<(&'a str, &'a str, &'a str, &'a str)>,
    pub env_vars: &'a BTreeMap<String, String>,
    /// The interpreter the env is (to be) built from.
    pub python: &'a Path,
    pub python_version: &'a str,
    /// "uv" or "pip" when the user named the tool; None for auto.
    pub installer: Option<&'a str>,
}

/// What the verification looked at, for the report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verified {
    pub receipt: Receipt,
    pub distributions: usize,
    /// Files listed in the RECORDs whose presence and size were checked.
    pub files: usize,
}

/// Why an env is not up to date.
#[derive(Debug, Clone)]
pub struct Stale {
    pub reason: String,
    /// A distribution one of whose files changed size, or whose METADATA
    /// names another version. uv links installed files from its cache
    /// (hardlinks on Linux), so an in-place edit of an env's file changes
    /// uv's cached copy too, and a rebuild from that cache would bring the
    /// damage back.
    pub changed_in_place: Option<String>,
}

/// `Ok` when the env at `env` is up to date; `Err` says why not.
pub fn verify(env: &Path, want: &Wanted) -> Result<Verified, Stale> {
    let mut changed_in_place = None;
    verify_inner(env, want, &mut changed_in_place).map_err(|reason| Stale {
        reason,
        changed_in_place,
    })
}

fn verify_inner(
    env: &Path,
    want: &Wanted,
    changed_in_place: &mut Option<String>,
) -> Result<Verified, String> {
    let receipt = Receipt::load(env).map_err(|e| format!("{e:#}"))?;
    compare_receipt(&receipt, want)?;
    let base = receipt
        .python
        .base
        .as_deref()
        .ok_or("the receipt does not record the base interpreter")?;
    let real_base =
        fs::canonicalize(base).map_err(|e| format!("the env's base interpreter {base}: {e}"))?;
    let env_python = env.join("bin").join("python");
    match fs::canonicalize(&env_python) {
        Ok(p) if p == real_base => {}
        Ok(p) => {
            return Err(format!(
                "{} resolves to {}, not to {base}",
                env_python.display(),
                p.display()
            ))
        }
        Err(e) => return Err(format!("{}: {e}", env_python.display())),
    }
    let act = env.join(activate::FILE);
    let expected = activate::render(env, &receipt.profile, &receipt.env_vars);
    if fs::read(&act).ok().as_deref() != Some(expected.as_bytes()) {
        return Err(format!(
            "{} is missing or not what greta writes",
            act.display()
        ));
    }
    if let Some(w) = &receipt.hip_worker {
        if !Path::new(&w.path).is_file() {
            return Err(format!("the recorded HIP worker {} is gone", w.path));
        }
    }
    let xy: String = want
        .python_version
        .split('.')
        .take(2)
        .collect::<Vec<_>>()
        .join(".");
    let site = env
        .join("lib")
        .join(format!("python{xy}"))
        .join("site-packages");
    let installed = dist_infos(&site)?;
    let mut files = 0;
    for (name, version, _, _) in &want.wheels {
        let key = normalize(name);
        let found: Vec<&DistInfo> = installed.iter().filter(|d| d.name == key).collect();
        let (installed_version, dir) = match found.as_slice() {
            [one] => (&one.version, &one.dir),
            [] => return Err(format!("{name} is not installed in {}", site.display())),
            _ => {
                return Err(format!(
                    "{name} is installed {} times in {}",
                    found.len(),
                    site.display()
                ))
            }
        };
        if !same_version(installed_version, version) {
            // Upgraded by a tool (new files), or its METADATA edited in place
            // (then uv's cached copy changed with it): either way uv's cache
            // entry for it is not to be trusted.
            *changed_in_place = Some(name.to_string());
            return Err(format!(
                "{name} {installed_version} is installed, the lock pins {version}"
            ));
        }
        files += check_record(&site, dir, name, changed_in_place)?;
    }
    Ok(Verified {
        receipt,
        distributions: want.wheels.len(),
        files,
    })
}

fn compare_receipt(r: &Receipt, want: &Wanted) -> Result<(), String> {
    let differs = |what: &str, had: &str, now: &str| {
        Err(format!("{what} changed ({had} in the env, {now} now)"))
    };
    if r.schema != super::receipt::SCHEMA {
        return differs("the receipt schema", &r.schema, super::receipt::SCHEMA);
    }
    let greta = env!("CARGO_PKG_VERSION");
    if r.greta_version != greta {
        return differs("greta's version", &r.greta_version, greta);
    }
    if r.name != want.name {
        return differs("the env name", &r.name, want.name);
    }
    if r.profile != want.profile {
        return differs("the profile", &r.profile, want.profile);
    }
    if r.lockfile.sha256 != want.lock_sha256 {
        return differs(
            "the lockfile (sha256)",
            &r.lockfile.sha256,
            want.lock_sha256,
        );
    }
    let mut had: Vec<(&str, &str)> = r
        .wheels
        .iter()
        .map(|w| (w.filename.as_str(), w.sha256.as_str()))
        .collect();
    let mut now: Vec<(&str, &str)> = want.wheels.iter().map(|w| (w.2, w.3)).collect();
    had.sort();
    now.sort();
    if had != now {
        let only_had: Vec<&str> = had
            .iter()
            .filter(|w| !now.contains(w))
            .map(|w| w.0)
            .collect();
        let only_now: Vec<&str> = now
            .iter()
            .filter(|w| !had.contains(w))
            .map(|w| w.0)
            .collect();
        return Err(format!(
            "the wheel set changed (in the env only: {}; wanted now: {})",
            list_or_none(&only_had),
            list_or_none(&only_now)
        ));
    }
    if &r.env_vars != want.env_vars {
        return Err(format!(
            "the platform variables changed ({:?} in the env, {:?} now)",
            r.env_vars, want.env_vars
        ));
    }
    let base = want.python.display().to_string();
    match &r.python.base {
        Some(b) if *b == base => {}
        Some(b) => return differs("the interpreter", b, &base),
        None => return Err("the receipt does not record the base interpreter".into()),
    }
    if r.python.version != want.python_version {
        return differs(
            "the interpreter version",
            &r.python.version,
            want.python_version,
        );
    }
    if let Some(tool) = want.installer {
        if !r.installer.starts_with(tool) {
            return differs("the installer", &r.installer, tool);
        }
    }
    Ok(())
}

fn list_or_none(v: &[&str]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// PEP 503 name normalisation.
fn normalize(name: &str) -> String {
    crate::fetch::index::normalize(name)
}

fn same_version(a: &str, b: &str) -> bool {
    use std::str::FromStr;
    match (
        pep440_rs::Version::from_str(a),
        pep440_rs::Version::from_str(b),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// One installed distribution, from its `.dist-info` METADATA.
struct DistInfo {
    /// PEP 503-normalized.
    name: String,
    version: String,
    dir: PathBuf,
}

/// Every `*.dist-info` in site-packages.
fn dist_infos(site: &Path) -> Result<Vec<DistInfo>, String> {
    let rd = fs::read_dir(site).map_err(|e| format!("{}: {e}", site.display()))?;
    let mut out = Vec::new();
    for e in rd.flatten() {
        let fname = e.file_name();
        let Some(stem) = fname.to_str().and_then(|n| n.strip_suffix(".dist-info")) else {
            continue;
        };
        let meta = e.path().join("METADATA");
        let text = fs::read_to_string(&meta)
            .map_err(|err| format!("{}: {err} (a damaged install of {stem})", meta.display()))?;
        let header = |k: &str| {
            text.lines().take_while(|l| !l.is_empty()).find_map(|l| {
                let (key, v) = l.split_once(':')?;
                key.trim()
                    .eq_ignore_ascii_case(k)
                    .then(|| v.trim().to_string())
            })
        };
        match (header("Name"), header("Version")) {
            (Some(n), Some(v)) => out.push(DistInfo {
                name: normalize(&n),
                version: v,
                dir: e.path(),
            }),
            _ => return Err(format!("{}: no Name/Version header", meta.display())),
        }
    }
    Ok(out)
}

/// Checks that every RECORD entry with a size exists with that size;
/// returns how many were checked.
fn check_record(
    site: &Path,
    dist_info: &Path,
    name: &str,
    changed_in_place: &mut Option<String>,
) -> Result<usize, String> {
    let record = dist_info.join("RECORD");
    let text = fs::read_to_string(&record).map_err(|e| format!("{}: {e}", record.display()))?;
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let fields = csv_fields(line);
        let (Some(path), Some(size)) = (fields.first(), fields.get(2)) else {
            return Err(format!("{}:{}: not a RECORD line", record.display(), i + 1));
        };
        if size.is_empty() {
            continue;
        }
        let size: u64 = size.parse().map_err(|_| {
            format!(
                "{}:{}: size {size:?} is not a number",
                record.display(),
                i + 1
            )
        })?;
        let p = site.join(path);
        match fs::metadata(&p) {
            Ok(m) if m.is_file() && m.len() == size => n += 1,
            Ok(m) => {
                *changed_in_place = Some(name.to_string());
                return Err(format!(
                    "{} (of {name}) has {} bytes, its RECORD says {size}",
                    p.display(),
                    m.len()
                ));
            }
            Err(e) => return Err(format!("{} (of {name}): {e}", p.display())),
        }
    }
    Ok(n)
}

/// One line of RECORD (CSV: fields may be double-quoted, `""` escapes `"`).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_handle_quotes() {
        assert_eq!(
            csv_fields(r#""a,b/c.py",sha256=x,12"#),
            vec!["a,b/c.py", "sha256=x", "12"]
        );
        assert_eq!(csv_fields(r#""a""b",,"#), vec!["a\"b", "", ""]);
        assert_eq!(csv_fields("x/RECORD,,"), vec!["x/RECORD", "", ""]);
    }

    #[test]
    fn versions_compare_by_pep440() {
        assert!(same_version("2.5.1", "2.5.1"));
        assert!(same_version("1.0", "1.0.0"));
        assert!(same_version("2.5.1+CPU", "2.5.1+cpu"));
        assert!(!same_version("2.5.1", "2.5.2"));
    }
}
