//! `greta lock check`: everything that must hold before a lockfile ships.
//! Each problem names the file and line, so CI output points at the fix.

use super::matrix::{Matrix, Profile};
use super::pylock::{normalize_name, Lockfile};
use super::resolve::resolve_lock;
use super::tags::Interpreter;
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

/// Why a pinned download `url` must not ship, if it must not: it does not
/// parse as a URL, is not https, has no host (`https:// evil.example/x`
/// passed a `starts_with("https://")` test), or its last path segment names
/// another file than the entry's `filename` (another package, version or
/// an sdist behind a wheel's name).
pub fn url_problem(url: &str, filename: &str) -> Option<String> {
    let u = match reqwest::Url::parse(url) {
        Ok(u) => u,
        Err(e) => return Some(format!("{filename} has an unparsable URL {url:?}: {e}")),
    };
    if u.scheme() != "https" {
        return Some(format!("{filename} has a non-https URL {url}"));
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Some(format!("{filename} has a URL without a host: {url}"));
    }
    let named = super::pylock::url_filename(u.path());
    if named != filename {
        return Some(format!(
            "{filename}: its URL names another file, {named:?} ({url})"
        ));
    }
    None
}

/// Check every profile of the matrix, and the tool pins beside it
/// (`tools.toml`, the uv greta bootstraps) when the lock dir has them.
pub fn check_matrix(m: &Matrix) -> Vec<ProfileReport> {
    let mut out: Vec<ProfileReport> = m.profiles.iter().map(check_profile).collect();
    let tools = m.dir.shown(crate::envs::uv_bootstrap::TOOLS_FILE);
    if matches!(
        m.dir.read(crate::envs::uv_bootstrap::TOOLS_FILE),
        Ok(Some(_))
    ) {
        let mut rep = ProfileReport {
            profile: "tools".into(),
            status: "locked".into(),
            lockfile: crate::envs::uv_bootstrap::TOOLS_FILE.into(),
            wheel_sets: vec![],
            problems: vec![],
        };
        let at = tools.display().to_string();
        match crate::envs::uv_bootstrap::load(&m.dir) {
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
    let mut problems = Vec::new();
    let mut wheel_sets = Vec::new();
    let mut problem = |at: String, message: String| {
        problems.push(Problem {
            profile: p.name.clone(),
            at,
            message,
        })
    };
    let lock = match p.load_lockfile() {
        Ok(l) => l,
        Err(e) => {
            problem(file.clone(), format!("{e:#}"));
            rep.problems = problems;
            return rep;
        }
    };
    // sha256 -> (file name, line) of the first wheel that carries it: two
    // different files cannot share a hash, so a second one is a copy error.
    let mut by_hash: std::collections::HashMap<&str, (&str, usize)> = Default::default();
    for pkg in &lock.packages {
        if pkg.wheels.is_empty() {
            problem(
                format!("{file}:{}", pkg.line),
                format!("{} has no wheel (greta never builds sdists)", pkg.name),
            );
        }
        for w in &pkg.wheels {
            let at = format!("{file}:{}", w.line);
            match &w.sha256 {
                None => problem(at.clone(), format!("{} has no sha256", w.filename)),
                Some(h) => match by_hash.get(h.as_str()) {
                    Some((other, line)) if *other != w.filename => problem(
                        at.clone(),
                        format!(
                            "{} has the sha256 of {other} ({file}:{line}): two files, one hash",
                            w.filename
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
                        problem(at.clone(), why);
                    }
                }
                None => problem(
                    at.clone(),
                    format!("{} has no URL (only a local path)", w.filename),
                ),
            }
            if let Some(wt) = super::tags::WheelTags::parse(&w.filename) {
                if normalize_name(&wt.name) != pkg.name {
                    problem(
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
                        problem(
                            at.clone(),
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
    for py in &p.python {
        if p.incomplete.contains_key(py) {
            continue;
        }
        let interp = match Interpreter::synthetic(py, Some(CHECK_GLIBC)) {
            Ok(i) => i,
            Err(e) => {
                problem(
                    format!("{}:{}", p.lockfile.display(), 1),
                    format!("python {py}: {e:#}"),
                );
                continue;
            }
        };
        match resolve_lock(&lock, &interp) {
            Err(e) => problem(file.clone(), format!("Python {py}: {e:#}")),
            Ok(pins) => {
                let size = pins.iter().map(|w| w.wheel.size).sum::<Option<u64>>();
                let env = interp.marker_env().ok();
                for r in &p.requirements {
                    let Ok(req) = r.parse::<uv_pep508::Requirement>() else {
                        continue;
                    };
                    if let Some(env) = &env {
                        if !req.marker.evaluate(env, &[]) {
                            continue;
                        }
                    }
                    let name = normalize_name(req.name.as_ref());
                    match pins.iter().find(|w| w.wheel.name == name) {
                        None => problem(
                            file.clone(),
                            format!("Python {py}: matrix requirement `{r}` is not in the lockfile"),
                        ),
                        Some(w) => {
                            if let Some(uv_pep508::VersionOrUrl::VersionSpecifier(spec)) =
                                &req.version_or_url
                            {
                                match uv_pep440::Version::from_str(&w.wheel.version) {
                                    Ok(v) if spec.contains(&v) => {}
                                    _ => problem(
                                        format!("{file}:{}", w.line),
                                        format!("Python {py}: lockfile has {} {} but matrix requires `{r}`", w.wheel.name, w.wheel.version),
                                    ),
                                }
                            }
                        }
                    }
                }
                wheel_sets.push((py.to_string(), pins.len(), size));
            }
        }
    }
    rep.problems = problems;
    rep.wheel_sets = wheel_sets;
    rep
}
