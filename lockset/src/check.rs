//! `greta lock check`: everything that must hold before a lockfile ships.
//! Each problem names the file and line, so CI output points at the fix.

use super::matrix::{Matrix, Profile};
use super::pylock::{normalize_name, Lockfile};
use super::resolve::resolve_lock;
use super::tags::Interpreter;
use greta_vocab::url_secrets::{self, redact};
use greta_vocab::Place;
use std::str::FromStr;

/// glibc assumed for the per-Python resolution in `check`: the floor of the
/// manylinux_2_28 torch wheels, so a lock that needs a newer glibc is caught.
pub const CHECK_GLIBC: (u32, u32) = (2, 28);

#[derive(Debug, Clone, serde::Serialize)]
pub struct Problem {
    pub profile: String,
    /// "file:line" (or just the file).
    pub at: String,
    pub message: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ProfileReport {
    pub profile: String,
    /// "locked", "not-locked: REASON".
    pub status: String,
    pub lockfile: String,
    /// Per Python version: number of wheels and their total size in bytes
    /// (None when some wheel's size is not recorded).
    pub wheel_sets: Vec<(String, usize, Option<u64>)>,
    pub problems: Vec<Problem>,
}

/// Why a pinned download `url` must not ship, if it must not: it carries
/// credentials (a user or password, a token or signature in its query:
/// the lockfile is shared and its URLs printed), does not parse as a URL,
/// is not https, has no host (`https:// evil.example/x` passed a
/// `starts_with("https://")` test), or its last path segment names another
/// file than the entry's `filename` (another package, version or an sdist
/// behind a wheel's name). The URL is quoted with its credentials hidden.
pub fn url_problem(url: &str, filename: &str) -> Option<String> {
    let shown = redact(url);
    let secrets = url_secrets::secrets(url);
    if !secrets.is_empty() {
        return Some(format!(
            "{filename}: its URL carries credentials ({}): {shown}; a lockfile is shared and its URLs are printed, so pin the URL without them",
            secrets.join(", ")
        ));
    }
    let u = match url::Url::parse(url) {
        Ok(u) => u,
        Err(e) => return Some(format!("{filename} has an unparsable URL {shown:?}: {e}")),
    };
    if u.scheme() != "https" {
        return Some(format!("{filename} has a non-https URL {shown}"));
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Some(format!("{filename} has a URL without a host: {shown}"));
    }
    let named = super::pylock::url_filename(u.path());
    if named != filename {
        return Some(format!(
            "{filename}: its URL names another file, {named:?} ({shown})"
        ));
    }
    None
}

/// Check every profile of the matrix, and the tool pins beside it
/// (`tools.toml`, the uv greta bootstraps) when the lock dir has them.
pub fn check_matrix(m: &Matrix) -> Vec<ProfileReport> {
    let mut out: Vec<ProfileReport> = m.profiles.iter().map(check_profile).collect();
    let tools = m.dir.shown(greta_vocab::tool_pin::TOOLS_FILE);
    if matches!(m.dir.read(greta_vocab::tool_pin::TOOLS_FILE), Ok(Some(_))) {
        let mut rep = ProfileReport {
            profile: "tools".into(),
            status: "locked".into(),
            lockfile: greta_vocab::tool_pin::TOOLS_FILE.into(),
            wheel_sets: vec![],
            problems: vec![],
        };
        let at = tools.display().to_string();
        match crate::tools::load(&m.dir) {
            Err(e) => rep.problems.push(Problem {
                profile: rep.profile.clone(),
                at: at.clone(),
                message: format!("{e:#}"),
            }),
            Ok(None) => {}
            Ok(Some(pin)) => {
                for w in &pin.wheels {
                    if let Some(why) = url_problem(&w.url, &w.filename) {
                        rep.problems.push(Problem {
                            profile: rep.profile.clone(),
                            at: at.clone(),
                            message: format!("uv {why}"),
                        });
                    }
                }
                rep.profile = format!("uv {}", pin.version);
            }
        }
        out.push(rep);
    }
    out
}

pub fn check_profile(p: &Profile) -> ProfileReport {
    let mut rep = ProfileReport {
        profile: p.name.clone(),
        status: match &p.status {
            super::LockStatus::Locked => "locked".into(),
            super::LockStatus::NotLocked { reason } => format!("not-locked: {reason}"),
        },
        lockfile: p.lockfile_name.clone(),
        wheel_sets: vec![],
        problems: vec![],
    };
    if !p.is_locked() {
        // Nothing to verify; `greta install` refuses it (reported as such).
        return rep;
    }
    let file = p.lockfile.display().to_string();
    let mut problems = Problems {
        profile: &p.name,
        found: Vec::new(),
    };
    match p.load_lockfile() {
        Err(e) => problems.add(file.clone(), format!("{e:#}")),
        Ok(lock) => {
            wheel_problems(&lock, &file, &mut problems);
            let devices = p.device_extras();
            device_list_problems(p, &lock, &devices, &file, &mut problems);
            for py in p.python.iter().filter(|py| !p.incomplete.contains_key(*py)) {
                if devices.is_empty() {
                    if let Some(set) = python_problems(p, &lock, py, None, &file, &mut problems) {
                        rep.wheel_sets.push(set);
                    }
                    continue;
                }
                // Each target on its own: the host wheels plus its device
                // wheels, which must add something (a target whose extra
                // selects nothing would import and then fail every launch).
                let host = Interpreter::synthetic(py, Some(CHECK_GLIBC))
                    .and_then(|i| resolve_lock(&lock, &i))
                    .map(|w| w.len())
                    .unwrap_or(0);
                for d in &devices {
                    if let Some(set) = python_problems(p, &lock, py, Some(d), &file, &mut problems)
                    {
                        if set.1 <= host {
                            problems.add(
                                file.clone(),
                                format!("Python {py}: extra `{d}` selects no device wheel"),
                            );
                        }
                        rep.wheel_sets.push((format!("{py} {d}"), set.1, set.2));
                    }
                }
            }
        }
    }
    rep.problems = problems.found;
    rep
}

/// The problems of one profile, in the order found.
struct Problems<'a> {
    profile: &'a str,
    found: Vec<Problem>,
}

impl Problems<'_> {
    fn add(&mut self, at: String, message: String) {
        self.found.push(Problem {
            profile: self.profile.to_string(),
            at,
            message,
        })
    }
}

/// What is wrong with the lockfile's entries themselves: no wheel, no sha256,
/// one hash for two files, no or a bad URL (credentials in it or in the
/// package's index URL among them), a wheel of another package or version.
fn wheel_problems(lock: &Lockfile, file: &str, problems: &mut Problems) {
    // sha256 -> (file name, line) of the first wheel that carries it: two
    // different files cannot share a hash, so a second one is a copy error.
    let mut by_hash: std::collections::HashMap<&str, (&str, usize)> = Default::default();
    for pkg in &lock.packages {
        if pkg.wheels.is_empty() {
            problems.add(
                format!("{file}:{}", pkg.line),
                format!("{} has no wheel (greta never builds sdists)", pkg.name),
            );
        }
        if let Some(index) = &pkg.index {
            let secrets = url_secrets::secrets(index);
            if !secrets.is_empty() {
                problems.add(
                    format!("{file}:{}", pkg.line),
                    format!(
                        "{}: its index URL carries credentials ({}): {}",
                        pkg.name,
                        secrets.join(", "),
                        redact(index)
                    ),
                );
            }
        }
        for w in &pkg.wheels {
            let at = Place::line(file, w.line).to_string();
            match &w.sha256 {
                None => problems.add(at.clone(), format!("{} has no sha256", w.filename)),
                Some(h) => match by_hash.get(h.as_str()) {
                    Some((other, line)) if *other != w.filename => problems.add(
                        at.clone(),
                        format!(
                            "{} has the sha256 of {other} ({}): two files, one hash",
                            w.filename,
                            Place::line(file, *line)
                        ),
                    ),
                    Some(_) => {}
                    None => {
                        by_hash.insert(h, (&w.filename, w.line));
                    }
                },
            }
            match &w.url {
                Some(u) => {
                    if let Some(why) = url_problem(u, &w.filename) {
                        problems.add(at.clone(), why);
                    }
                }
                None => problems.add(
                    at.clone(),
                    format!("{} has no URL (only a local path)", w.filename),
                ),
            }
            let Some(wt) = super::tags::WheelTags::parse(&w.filename) else {
                continue;
            };
            if normalize_name(&wt.name) != pkg.name {
                problems.add(
                    at.clone(),
                    format!(
                        "wheel {} does not belong to package {}",
                        w.filename, pkg.name
                    ),
                );
            }
            if let Some(v) = &pkg.version {
                let same = match (
                    uv_pep440::Version::from_str(&wt.version),
                    uv_pep440::Version::from_str(v),
                ) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => wt.version == *v,
                };
                if !same {
                    problems.add(
                        at,
                        format!(
                            "wheel {} is version {}, entry says {v}",
                            w.filename, wt.version
                        ),
                    );
                }
            }
        }
    }
}

/// The lockfile's PEP 751 `extras` must be the matrix's device targets
/// (what uv and pip accept as `--extra`, what greta installs from).
fn device_list_problems(
    p: &Profile,
    lock: &Lockfile,
    devices: &[String],
    file: &str,
    problems: &mut Problems,
) {
    let want: std::collections::BTreeSet<&String> = devices.iter().collect();
    let have: std::collections::BTreeSet<&String> = lock.extras.iter().collect();
    if want != have {
        let list = |s: &std::collections::BTreeSet<&String>| {
            s.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")
        };
        problems.add(
            file.to_string(),
            format!(
                "lockfile extras [{}] are not the device targets of matrix profile {} [{}]; run `greta lock update {}`",
                list(&have),
                p.name,
                list(&want),
                p.name
            ),
        );
    }
}

/// Resolves the lockfile for Python `py` and checks the result holds every
/// matrix requirement at an allowed version: the wheel set (python, wheels,
/// total size) when it resolves.
fn python_problems(
    p: &Profile,
    lock: &Lockfile,
    py: &str,
    device: Option<&String>,
    file: &str,
    problems: &mut Problems,
) -> Option<(String, usize, Option<u64>)> {
    let extras: Vec<String> = device.into_iter().cloned().collect();
    let py_shown = match device {
        Some(d) => format!("{py} [{d}]"),
        None => py.to_string(),
    };
    let py_shown = py_shown.as_str();
    let interp = match Interpreter::synthetic(py, Some(CHECK_GLIBC)) {
        Ok(i) => i,
        Err(e) => {
            problems.add(
                Place::line(p.lockfile.display(), 1).to_string(),
                format!("python {py}: {e:#}"),
            );
            return None;
        }
    };
    let pins = match super::resolve::resolve_lock_with(lock, &interp, &extras) {
        Ok(pins) => pins,
        Err(e) => {
            problems.add(file.to_string(), format!("Python {py_shown}: {e:#}"));
            return None;
        }
    };
    let size = pins.iter().map(|w| w.wheel.size).sum::<Option<u64>>();
    let env = interp.marker_env().ok();
    let markers = super::marker::Budget::per_file();
    for r in &p.requirements {
        let Ok(req) = super::marker::requirement(r, &markers) else {
            continue;
        };
        if env
            .as_ref()
            .is_some_and(|env| !req.marker.evaluate(env, &[]))
        {
            continue;
        }
        let name = normalize_name(req.name.as_ref());
        let Some(w) = pins.iter().find(|w| w.wheel.name == name) else {
            problems.add(
                file.to_string(),
                format!("Python {py_shown}: matrix requirement `{r}` is not in the lockfile"),
            );
            continue;
        };
        if let Some(uv_pep508::VersionOrUrl::VersionSpecifier(spec)) = &req.version_or_url {
            match uv_pep440::Version::from_str(&w.wheel.version) {
                Ok(v) if spec.contains(&v) => {}
                _ => problems.add(
                    format!("{file}:{}", w.line),
                    format!(
                        "Python {py_shown}: lockfile has {} {} but matrix requires `{r}`",
                        w.wheel.name, w.wheel.version
                    ),
                ),
            }
        }
    }
    Some((py.to_string(), pins.len(), size))
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: &str = "x-1-py3-none-any.whl";

    /// A URL with credentials is a problem, and the problem quotes it with
    /// the credentials hidden.
    #[test]
    fn credentials_in_a_url_are_a_problem_shown_hidden() {
        for (url, what) in [
            (
                "https://user:s3cret@e.example/x-1-py3-none-any.whl",
                "a user name or password",
            ),
            (
                "https://e.example/x-1-py3-none-any.whl?token=s3cret",
                "query parameter `token`",
            ),
            (
                "https://e.example/x-1-py3-none-any.whl?X-Amz-Signature=s3cret",
                "query parameter `X-Amz-Signature`",
            ),
            // Before the other checks: a non-https URL with a password too.
            (
                "http://u:s3cret@e.example/x-1-py3-none-any.whl",
                "a user name or password",
            ),
        ] {
            let p = url_problem(url, W).unwrap_or_else(|| panic!("{url} passed"));
            assert!(p.contains("carries credentials"), "{p}");
            assert!(p.contains(what), "{p}");
            assert!(!p.contains("s3cret"), "{p}");
            assert!(p.contains("***"), "{p}");
        }
        assert_eq!(
            url_problem("https://e.example/x-1-py3-none-any.whl", W),
            None
        );
        // The other problems hide credentials they quote too (an unparsable
        // URL is checked on its text).
        let p = url_problem("https://u:s3cret@ho st/x-1-py3-none-any.whl", W).unwrap();
        assert!(!p.contains("s3cret"), "{p}");
    }

    /// `lock check` reports them at the wheel's line, and a package's
    /// index URL with credentials too.
    #[test]
    fn lock_check_flags_credentials_at_their_line() {
        let h = "ab".repeat(32);
        let text = format!(
            "lock-version = \"1.0\"\ncreated-by = \"t\"\n\n[[packages]]\nname = \"x\"\nversion = \"1\"\nindex = \"https://tok:en@idx.example/simple\"\nwheels = [\n  {{ url = \"https://u:s3cret@e.example/{W}\", hashes = {{ sha256 = \"{h}\" }} }},\n]\n"
        );
        let lock = Lockfile::parse(std::path::Path::new("pylock.t.toml"), text).unwrap();
        let mut problems = Problems {
            profile: "t",
            found: Vec::new(),
        };
        wheel_problems(&lock, "pylock.t.toml", &mut problems);
        let found: Vec<(String, String)> = problems
            .found
            .into_iter()
            .map(|p| (p.at, p.message))
            .collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].0, "pylock.t.toml:4");
        assert!(
            found[0].1.contains("index URL carries credentials"),
            "{found:?}"
        );
        assert!(
            found[0].1.contains("https://***@idx.example/simple"),
            "{found:?}"
        );
        assert_eq!(found[1].0, "pylock.t.toml:9");
        assert!(found[1].1.contains("https://***@e.example/"), "{found:?}");
        // And the lockfile's JSON (`lock show --json` carries the same
        // types) shows neither.
        let json = serde_json::to_string(&lock).unwrap();
        assert!(
            !json.contains("s3cret") && !json.contains("tok:en"),
            "{json}"
        );
        assert!(json.contains("https://***@e.example/"), "{json}");
    }
}
