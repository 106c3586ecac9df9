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

/// Check every profile of the matrix.
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
                    if !w.url.starts_with("https://") {
                        rep.problems.push(Problem {
                            profile: rep.profile.clone(),
                            at: at.clone(),
                            message: format!("uv {} has a non-https URL {}", w.filename, w.url),
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
    for pkg in &lock.packages {
        if pkg.wheels.is_empty() {
            problem(
                format!("{file}:{}", pkg.line),
                format!("{} has no wheel (greta never builds sdists)", pkg.name),
            );
        }
        for w in &pkg.wheels {
            let at = format!("{file}:{}", w.line);
            if w.sha256.is_none() {
                problem(at.clone(), format!("{} has no sha256", w.filename));
            }
            match &w.url {
                Some(u) if u.starts_with("https://") => {}
                Some(u) => problem(
                    at.clone(),
                    format!("{} has a non-https URL {u}", w.filename),
                ),
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
                let size = pins.iter().map(|w| w.size).sum::<Option<u64>>();
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
                    match pins.iter().find(|w| w.name == name) {
                        None => problem(
                            file.clone(),
                            format!("Python {py}: matrix requirement `{r}` is not in the lockfile"),
                        ),
                        Some(w) => {
                            if let Some(uv_pep508::VersionOrUrl::VersionSpecifier(spec)) =
                                &req.version_or_url
                            {
                                match uv_pep440::Version::from_str(&w.version) {
                                    Ok(v) if spec.contains(&v) => {}
                                    _ => problem(
                                        format!("{file}:{}", w.line),
                                        format!("Python {py}: lockfile has {} {} but matrix requires `{r}`", w.name, w.version),
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
