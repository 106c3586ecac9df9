//! From a lockfile and an interpreter to the exact wheels to fetch. PEP 751
//! leaves no choices to a resolver: evaluate each package's marker, then
//! pick its best-ranked compatible wheel, and say why.

use super::matrix::Profile;
use super::pylock::Lockfile;
use super::tags::Interpreter;
use anyhow::{bail, Result};
use greta_vocab::{LockLine, PinnedWheel, Sha256};
use std::collections::BTreeMap;
use std::str::FromStr;

/// One wheel to install, with the reason it was chosen.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WheelPin {
    /// The wheel; its `at` is the lockfile and the line of its sha256,
    /// named when a download hashes otherwise (see `fetch::MismatchedHash`).
    /// Its size is where the lockfile's source recorded it (checked at
    /// download either way).
    #[serde(flatten)]
    pub wheel: PinnedWheel,
    /// e.g. "marker `python_version >= '3.12'` is true; tag cp312-cp312-manylinux_2_28_x86_64 (rank 3)".
    pub why: String,
    /// 1-based line of the package entry in the lockfile.
    pub line: usize,
}

/// The wheel set of `lock` for `interp`. Fails when the profile does not
/// support this Python, a needed package has no compatible or unhashed
/// wheel, or two entries claim the same project for this environment.
///
/// `extras` are the device extras of the GPU targets to install for (a
/// profile with per-GPU device wheels needs at least one; others none).
pub fn resolve(
    profile: &Profile,
    lock: &Lockfile,
    interp: &Interpreter,
    extras: &[String],
) -> crate::Result<Vec<WheelPin>> {
    profile.ensure_locked()?;
    let offered = profile.device_extras();
    if let Some(e) = extras.iter().find(|e| !offered.contains(e)) {
        return Err(super::Refusal {
            message: format!("profile `{}` has no device wheels `{e}`", profile.name),
            fix: if offered.is_empty() {
                format!(
                    "profile `{}` has no per-GPU device wheels; install it without a device",
                    profile.name
                )
            } else {
                format!("choose one of {}", offered.join(", "))
            },
        }
        .into());
    }
    if !offered.is_empty() && extras.is_empty() {
        return Err(super::Refusal {
            message: format!(
                "profile `{}` installs per-GPU device wheels, and no GPU target was chosen: its host wheels alone import, report the GPU, and then fail every launch with hipErrorInvalidImage",
                profile.name
            ),
            fix: format!(
                "let `greta install` choose from this machine's GPUs, or name a target (`greta lock show {} --device gfxNNNN`; targets: {})",
                profile.name,
                profile.gfx.join(", ")
            ),
        }
        .into());
    }
    let xy = interp.xy();
    if !profile.python.contains(&xy) {
        return Err(super::Refusal {
            message: format!(
                "profile `{}` does not support Python {xy} ({})",
                profile.name,
                interp.describe()
            ),
            fix: format!(
                "use one of Python {} (greta install --python PATH)",
                profile.python.join(", ")
            ),
        }
        .into());
    }
    if let Some(reason) = profile.incomplete.get(&xy) {
        return Err(super::Refusal {
            message: format!(
                "profile `{}` is not locked for Python {xy}: {reason}",
                profile.name
            ),
            fix: format!(
                "use Python {} instead",
                profile
                    .python
                    .iter()
                    .filter(|p| profile.supports_python(p))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
        .into());
    }
    Ok(resolve_lock_with(lock, interp, extras)?)
}

/// [`resolve`] without the profile checks (used by `lock check`).
pub fn resolve_lock(lock: &Lockfile, interp: &Interpreter) -> crate::Result<Vec<WheelPin>> {
    Ok(resolve_lock_with(lock, interp, &[])?)
}

/// [`resolve_lock`] with PEP 751 extras in effect (markers such as
/// `'device-gfx942' in extras` evaluate against them).
pub fn resolve_lock_with(
    lock: &Lockfile,
    interp: &Interpreter,
    extras: &[String],
) -> Result<Vec<WheelPin>> {
    let file = lock.path.display();
    let extras: Vec<uv_normalize::ExtraName> = extras
        .iter()
        .map(|e| {
            e.parse()
                .map_err(|err| anyhow::anyhow!("extra {e:?}: {err}"))
        })
        .collect::<Result<_>>()?;
    let env = interp.marker_env()?;
    let pyver = uv_pep440::Version::from_str(&interp.version)
        .map_err(|e| anyhow::anyhow!("interpreter version {}: {e}", interp.version))?;
    if let Some(rp) = &lock.requires_python {
        let spec = uv_pep440::VersionSpecifiers::from_str(rp)
            .map_err(|e| anyhow::anyhow!("{file}: requires-python: {e}"))?;
        if !spec.contains(&pyver) {
            bail!(
                "{file}: requires-python {rp:?} excludes Python {}",
                interp.version
            );
        }
    }
    let mut chosen: BTreeMap<String, WheelPin> = BTreeMap::new();
    for pkg in &lock.packages {
        let marker_why = match (&pkg.marker, &pkg.marker_text) {
            (Some(m), Some(text)) => {
                if !m.evaluate_pep751(&env, &extras, &[]) {
                    continue;
                }
                format!("marker `{text}` is true")
            }
            _ => "no marker".to_string(),
        };
        if let Some(rp) = &pkg.requires_python {
            let spec = uv_pep440::VersionSpecifiers::from_str(rp)
                .map_err(|e| anyhow::anyhow!("{file}:{}: requires-python: {e}", pkg.line))?;
            if !spec.contains(&pyver) {
                continue;
            }
        }
        let version = pkg.version.clone().unwrap_or_default();
        let best = pkg
            .wheels
            .iter()
            .filter_map(|w| interp.wheel_rank(&w.filename).map(|r| (r, w)))
            .min_by_key(|((rank, _), _)| *rank);
        let Some(((rank, tag), wheel)) = best else {
            let have: Vec<&str> = pkg.wheels.iter().map(|w| w.filename.as_str()).collect();
            bail!(
                "{}: {} {version} applies to this environment ({marker_why}) but none of its wheels fits {}: {}",
                greta_vocab::Place::line(&file, pkg.line),
                pkg.name,
                interp.describe(),
                if have.is_empty() { "it has no wheels (greta never builds an sdist)".to_string() } else { have.join(", ") }
            );
        };
        let Some(sha256) = wheel.sha256.as_deref() else {
            bail!("{file}:{}: wheel {} has no sha256: it cannot be verified, so greta will not install it", wheel.line, wheel.filename);
        };
        let sha256: Sha256 = sha256.parse().map_err(|e| {
            anyhow::anyhow!("{file}:{}: wheel {}: {e}", wheel.hash_line, wheel.filename)
        })?;
        let url = match (&wheel.url, &wheel.path) {
            (Some(u), _) => u.clone(),
            (None, Some(p)) => {
                let base = lock.path.parent().unwrap_or(std::path::Path::new("."));
                format!("file://{}", base.join(p).display())
            }
            (None, None) => unreachable!("parse_wheel requires url or path"),
        };
        let pin = WheelPin {
            wheel: PinnedWheel {
                name: pkg.name.clone(),
                version,
                filename: wheel.filename.clone(),
                url,
                sha256,
                size: wheel.size,
                at: Some(LockLine {
                    file: lock.path.clone(),
                    line: wheel.hash_line,
                }),
            },
            why: format!(
                "{marker_why}; tag {tag} (rank {rank} of {} for Python {})",
                interp.tags.len(),
                interp.xy()
            ),
            line: pkg.line,
        };
        if let Some(prev) = chosen.get(&pkg.name) {
            bail!(
                "{file}:{}: two entries for {} match this environment (line {}: {}, line {}: {}); markers must not overlap",
                pkg.line,
                pkg.name,
                prev.line,
                prev.wheel.version,
                pkg.line,
                pin.wheel.version
            );
        }
        chosen.insert(pkg.name.clone(), pin);
    }
    if chosen.is_empty() {
        bail!("{file}: no package applies to {}", interp.describe());
    }
    Ok(chosen.into_values().collect())
}
