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

use greta_vocab::Place;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::{activate, Receipt};

/// What the install at hand would put into the env.
pub struct Wanted<'a> {
    pub name: &'a str,
    pub profile: &'a str,
    pub lock_sha256: greta_vocab::Sha256,
    /// (name, version, filename, sha256) of every wheel.
    pub wheels: Vec<(&'a str, &'a str, &'a str, greta_vocab::Sha256)>,
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
pub fn verify(env: &Path, want: &Wanted, early: Option<Contents>) -> Result<Verified, Stale> {
    let stale = |reason: String| Stale {
        reason,
        changed_in_place: None,
    };
    let text =
        crate::read::bytes_capped(&env.join(super::receipt::FILE), crate::read::MAX_DATA_FILE)
            .map_err(|e| stale(format!("{:#}", anyhow::Error::new(e))))?;
    let receipt = Receipt::load(env).map_err(|e| stale(format!("{e:#}")))?;
    check_against(env, &receipt, want).map_err(stale)?;
    // The files: checked already (beside the plan) when that check saw
    // this very receipt in this very env directory; else now.
    let contents = match early {
        Some(c) if c.receipt == text && c.env_id == dir_id(env) => c,
        _ => check_contents(env),
    };
    let (distributions, files) = contents
        .result
        .map_err(|(reason, changed_in_place)| Stale {
            reason,
            changed_in_place,
        })?;
    Ok(Verified {
        receipt,
        distributions,
        files,
    })
}

/// The checks that need the plan: the receipt against it, the interpreter
/// link, the activation script.
fn check_against(env: &Path, receipt: &Receipt, want: &Wanted) -> Result<(), String> {
    compare_receipt(receipt, want)?;
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
    let expected = activate::render(
        env,
        &receipt.profile,
        &receipt.env_vars,
        receipt.probe.hip_devices(),
    )
    .map_err(|e| e.to_string())?;
    if crate::read::bytes_capped(&act, 1 << 20).ok().as_deref() != Some(expected.as_bytes()) {
        return Err(format!(
            "{} is missing or not what greta writes",
            act.display()
        ));
    }
    Ok(())
}

/// The env's installed files checked against its own receipt: each wheel
/// it records installed once at its version, every RECORD entry with its
/// size. Needs no plan, so `greta install` runs it beside the planning;
/// [`verify`] uses it only if the receipt it read is byte for byte the one
/// read under the env's lock (and the env directory is the same one), and
/// the receipt matches the plan (so the wheels are the plan's).
pub struct Contents {
    receipt: Vec<u8>,
    env_id: Option<(u64, u64)>,
    /// (distributions, files checked), or why not (and the distribution
    /// changed in place, if that is the reason).
    result: Result<(usize, usize), (String, Option<String>)>,
}

fn dir_id(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

pub fn check_contents(env: &Path) -> Contents {
    let env_id = dir_id(env);
    let receipt =
        crate::read::bytes_capped(&env.join(super::receipt::FILE), crate::read::MAX_DATA_FILE)
            .unwrap_or_default();
    let mut changed_in_place = None;
    let result = serde_json::from_slice::<Receipt>(&receipt)
        .map_err(|e| format!("{}: {e}", env.join(super::receipt::FILE).display()))
        .and_then(|r| contents_of(env, &r, &mut changed_in_place))
        .map_err(|why| (why, changed_in_place.clone()));
    Contents {
        receipt,
        env_id,
        result,
    }
}

fn contents_of(
    env: &Path,
    receipt: &Receipt,
    changed_in_place: &mut Option<String>,
) -> Result<(usize, usize), String> {
    let xy: String = receipt
        .python
        .version
        .split('.')
        .take(2)
        .collect::<Vec<_>>()
        .join(".");
    let site = env
        .join("lib")
        .join(format!("python{xy}"))
        .join("site-packages");
    let installed = dist_infos(&site)?;
    let mut files: Vec<(PathBuf, u64, &str)> = Vec::new();
    for w in &receipt.wheels {
        let (name, version) = (w.name.as_str(), w.version.as_str());
        let key = greta_vocab::normalize_name(name);
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
        for (p, size) in record_entries(&site, dir)? {
            files.push((p, size, name));
        }
    }
    let n = check_sizes(&files).map_err(|(why, in_place)| {
        *changed_in_place = in_place;
        why
    })?;
    Ok((receipt.wheels.len(), n))
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
            &r.lockfile.sha256.to_string(),
            &want.lock_sha256.to_string(),
        );
    }
    let mut had: Vec<(&str, greta_vocab::Sha256)> = r
        .wheels
        .iter()
        .map(|w| (w.filename.as_str(), w.sha256))
        .collect();
    let mut now: Vec<(&str, greta_vocab::Sha256)> =
        want.wheels.iter().map(|w| (w.2, w.3)).collect();
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

fn same_version(a: &str, b: &str) -> bool {
    use std::str::FromStr;
    match (
        uv_pep440::Version::from_str(a),
        uv_pep440::Version::from_str(b),
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
        let text = crate::read::text_capped(&meta, crate::read::MAX_DATA_FILE).map_err(|err| {
            let err = anyhow::Error::new(err);
            format!("{err:#} (a damaged install of {stem})")
        })?;
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
                name: greta_vocab::normalize_name(&n),
                version: v,
                dir: e.path(),
            }),
            _ => return Err(format!("{}: no Name/Version header", meta.display())),
        }
    }
    Ok(out)
}

/// The RECORD entries of one distribution that have a size: (path, size).
fn record_entries(site: &Path, dist_info: &Path) -> Result<Vec<(PathBuf, u64)>, String> {
    let record = dist_info.join("RECORD");
    let text = crate::read::text_capped(&record, crate::read::MAX_DATA_FILE)
        .map_err(|e| format!("{:#}", anyhow::Error::new(e)))?;
    let rows = super::record::parse(&text)
        .map_err(|(line, why)| format!("{}: {why}", Place::line(record.display(), line)))?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        if r.size.is_empty() {
            continue;
        }
        let size: u64 = r.size.parse().map_err(|_| {
            format!(
                "{}: size {:?} is not a number",
                Place::line(record.display(), r.line),
                r.size
            )
        })?;
        out.push((site.join(&r.path), size));
    }
    Ok(out)
}

/// Checks that every file exists with its RECORD size, on a few threads
/// (a torch install lists ~15,000 files; each check is one `statx`).
/// Returns how many were checked; `Err` names the first bad file and, when
/// it exists with another size (changed in place), its distribution.
fn check_sizes(files: &[(PathBuf, u64, &str)]) -> Result<usize, (String, Option<String>)> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    let chunk = files.len().div_ceil(threads).max(256);
    let results: Vec<Result<(), (String, Option<String>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut dir = DirCursor::default();
                    for (p, size, name) in part {
                        match dir.stat(p) {
                            Ok((true, len)) if len == *size => {}
                            Ok((_, len)) => {
                                return Err((
                                    format!(
                                        "{} (of {name}) has {len} bytes, its RECORD says {size}",
                                        p.display(),
                                    ),
                                    Some(name.to_string()),
                                ))
                            }
                            Err(e) => {
                                return Err((format!("{} (of {name}): {e}", p.display()), None))
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(("the size check panicked".into(), None)))
            })
            .collect()
    });
    for r in results {
        r?;
    }
    Ok(files.len())
}

/// `stat` of files relative to their directory, which stays open while
/// consecutive files share it (RECORD lists a package's files directory by
/// directory): the kernel then resolves one name per file instead of the
/// whole site-packages path, about half the cost of the check.
#[derive(Default)]
struct DirCursor {
    dir: Option<(PathBuf, fs::File)>,
}

impl DirCursor {
    /// (is a regular file, size), following symlinks like `fs::metadata`.
    fn stat(&mut self, p: &Path) -> std::io::Result<(bool, u64)> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::io::AsRawFd;
        let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
            let m = fs::metadata(p)?;
            return Ok((m.is_file(), m.len()));
        };
        // Byte comparison: `Path` equality walks both paths' components.
        if self.dir.as_ref().map(|(d, _)| d.as_os_str()) != Some(parent.as_os_str()) {
            self.dir = Some((parent.to_path_buf(), fs::File::open(parent)?));
        }
        let fd = self.dir.as_ref().map(|(_, f)| f.as_raw_fd()).unwrap_or(-1);
        let cname = std::ffi::CString::new(name.as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: `libc::stat` is plain integers, for which all zeroes is a
        // valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstatat writes only into the zeroed stat we own; the name
        // is NUL-terminated and the fd is open for the call.
        if unsafe { libc::fstatat(fd, cname.as_ptr(), &mut st, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((
            st.st_mode & libc::S_IFMT == libc::S_IFREG,
            st.st_size as u64,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake env of one distribution `demo 1.0` built from `base`.
    fn fake_env(root: &Path, base: &Path) -> (PathBuf, Receipt) {
        let env = root.join("env");
        let site = env.join("lib/python3.11/site-packages");
        fs::create_dir_all(site.join("demo-1.0.dist-info")).unwrap();
        fs::create_dir_all(site.join("demo")).unwrap();
        fs::create_dir_all(env.join("bin")).unwrap();
        std::os::unix::fs::symlink(base, env.join("bin/python")).unwrap();
        fs::write(site.join("demo/__init__.py"), "x = 1\n").unwrap();
        fs::write(
            site.join("demo-1.0.dist-info/METADATA"),
            "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        )
        .unwrap();
        fs::write(
            site.join("demo-1.0.dist-info/RECORD"),
            "demo/__init__.py,sha256=x,6\ndemo-1.0.dist-info/RECORD,,\n",
        )
        .unwrap();
        let vars = BTreeMap::new();
        fs::write(
            env.join(activate::FILE),
            activate::render(&env, "cpu", &vars, &[]).unwrap(),
        )
        .unwrap();
        let mut receipt = Receipt::sample();
        receipt.python.path = env.join("bin/python").display().to_string();
        receipt.python.base = Some(base.display().to_string());
        receipt.write(&env).unwrap();
        (env, receipt)
    }

    #[test]
    fn an_early_check_is_used_only_for_the_same_receipt() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("python3.11");
        fs::write(&base, b"\x7fELF").unwrap();
        let (env, mut receipt) = fake_env(d.path(), &base);
        let (lock, wheel_sha, vars) = (
            greta_vocab::Sha256([0xab; 32]),
            greta_vocab::Sha256([0xcd; 32]),
            BTreeMap::new(),
        );
        let want = Wanted {
            name: "env",
            profile: "cpu",
            lock_sha256: lock,
            wheels: vec![("demo", "1.0", "demo-1.0-py3-none-any.whl", wheel_sha)],
            env_vars: &vars,
            python: &base,
            python_version: "3.11.7",
            installer: None,
        };
        let v = verify(&env, &want, None).unwrap();
        assert_eq!((v.distributions, v.files), (1, 1));
        // Checked early, then the env changed and so did its receipt (a
        // rebuild by someone else): the early result is not used.
        let early = check_contents(&env);
        assert!(early.result.is_ok());
        fs::remove_file(env.join("lib/python3.11/site-packages/demo/__init__.py")).unwrap();
        receipt.created = "2026-11-22T00:00:01Z".into();
        receipt.write(&env).unwrap();
        let e = verify(&env, &want, Some(early)).unwrap_err();
        assert!(e.reason.contains("__init__.py (of demo)"), "{}", e.reason);
        // Same receipt and directory: the early result stands for the files
        // (a point-in-time check, made while the plan was being made).
        fs::write(
            env.join("lib/python3.11/site-packages/demo/__init__.py"),
            "x = 1\n",
        )
        .unwrap();
        let early = check_contents(&env);
        assert!(early.result.is_ok());
        fs::remove_file(env.join("lib/python3.11/site-packages/demo/__init__.py")).unwrap();
        assert!(verify(&env, &want, Some(early)).is_ok());
        assert!(verify(&env, &want, None).is_err());
        // An in-place size change names the distribution (uv's cache).
        fs::write(
            env.join("lib/python3.11/site-packages/demo/__init__.py"),
            "x = 22\n",
        )
        .unwrap();
        let e = verify(&env, &want, None).unwrap_err();
        assert_eq!(e.changed_in_place.as_deref(), Some("demo"), "{}", e.reason);
        // Another wanted lockfile is a mismatch before any file is looked at.
        let other = greta_vocab::Sha256([0xef; 32]);
        let want2 = Wanted {
            lock_sha256: other,
            ..want
        };
        assert!(verify(&env, &want2, None)
            .unwrap_err()
            .reason
            .contains("the lockfile (sha256) changed"));
    }

    #[test]
    fn versions_compare_by_pep440() {
        assert!(same_version("2.5.1", "2.5.1"));
        assert!(same_version("1.0", "1.0.0"));
        assert!(same_version("2.5.1+CPU", "2.5.1+cpu"));
        assert!(!same_version("2.5.1", "2.5.2"));
    }
}
