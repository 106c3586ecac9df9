//! Step 4, build: the installer tool (uv, else the pinned uv, else pip), a
//! venv in a staging directory, and the verified wheel files installed into
//! it. Nothing here touches the env in place; dropping the staging dir
//! undoes it all.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Instant;

use super::bundle::BundleManifest;
use super::fetch::Fetch;
use super::prepare::{Prepared, Rebuild};
use super::{say, InstallInput, Plan, Timings};
use crate::envs::{self, build::Staging, check, installer};

/// A staged env with every wheel installed.
pub(super) struct Built {
    pub staging: Staging,
    /// The interpreter the venv was made from.
    pub python: PathBuf,
    /// "uv 0.9.1 (the pinned uv ...)", for the receipt and the report.
    pub installer: String,
    /// How the venv was made ("uv venv", "python -m venv", ...).
    pub venv: &'static str,
}

/// Builds the staged env. The import-check interpreters are started while
/// the wheels install (their start-up overlaps it); they come back as the
/// second value, for [`super::prove`].
pub(super) fn build(
    plan: &Plan,
    input: &InstallInput,
    prepared: &Prepared,
    fetched: &Fetch,
    rebuild: &Rebuild,
    timings: &mut Timings,
) -> Result<(Built, check::Prestarted)> {
    let cache = &prepared.cache;
    let t = Instant::now();
    let python = plan
        .python
        .path
        .clone()
        .context("install needs a real interpreter")?;
    let lock_dir = &plan.lock_dir;
    let bootstrap = || -> Result<PathBuf> {
        if let Some(dir) = &input.bundle {
            let m = BundleManifest::load(dir)?;
            if let Some(b) = &m.uv {
                say(
                    input.verbose,
                    format!(
                        "uv is not on PATH: using the uv {} the bundle carries",
                        b.version
                    ),
                );
            }
            return envs::uv_bootstrap::from_bundle(dir, m.uv.as_ref(), cache, &input.fetch);
        }
        let pin = envs::uv_bootstrap::load(lock_dir)?.with_context(|| {
            format!(
                "no uv pinned ({} has no {})",
                lock_dir,
                envs::uv_bootstrap::TOOLS_FILE
            )
        })?;
        say(
            input.verbose,
            format!("uv is not on PATH: using the pinned uv {}", pin.version),
        );
        envs::uv_bootstrap::ensure(&pin, cache, &input.fetch)
    };
    let (tool, tool_how) = installer::Tool::choose(
        input.installer,
        prepared.named_uv.clone(),
        Some(&python),
        &bootstrap,
    )?;
    if let Some(how) = &tool_how {
        say(input.verbose, format!("installer: {how}"));
    }
    let staging = Staging::create(&prepared.root, &input.name)?;
    let venv_how = staging
        .make_venv(&python, &tool, Some(cache.root()), input.installer_timeout)
        .map_err(|e| on_full_disk(e, &prepared.root.dir, &[]))?;
    timings.insert("venv", t);
    super::pause_at("venv");
    let t = Instant::now();
    // "uv 0.9.1" for the receipt, asked while the install runs.
    let describe = {
        let (tool, vp) = (tool.clone(), staging.path.join("bin").join("python"));
        let cache_root = cache.root().to_path_buf();
        std::thread::spawn(move || tool.describe_cached(&vp, Some(&cache_root)))
    };
    // The import-check interpreters start now and wait: their start-up
    // overlaps the install (they import nothing before it is done).
    let names: Vec<String> = plan.wheels.iter().map(|w| w.wheel.name.clone()).collect();
    let modules = check::modules_for(&names);
    let prestarted = check::prestart(&staging.path, &modules, &plan.env_vars, input.gates);
    let files: Vec<PathBuf> = fetched.wheels.iter().map(|f| f.path.clone()).collect();
    // A file of the old env changed in place: uv linked it from its cache,
    // so that cached copy is damaged too. Drop uv's entries for that
    // distribution so it unpacks the verified wheel again; if uv cannot,
    // install this once without uv's cache.
    let mut fresh = false;
    if let (Some(dist), installer::Tool::Uv(_)) = (&rebuild.damaged_in_place, &tool) {
        match tool.clean_cache(dist) {
            Ok(()) => say(
                input.verbose,
                format!("uv's cache entries for {dist} were dropped (its installed files had been changed in place, and uv links them from its cache)"),
            ),
            Err(e) => {
                say(input.verbose, format!("{e:#}; installing without uv's cache"));
                fresh = true;
            }
        }
    }
    // Every file was hashed moments ago (cache hit or download): no second
    // pass, unless the installer fails: a cached file its stamp vouched for
    // may be damaged all the same (bit rot, a tool that restores times), and
    // then every rerun failed inside uv until GRETA_VERIFY_CACHE=1. Re-hash
    // the plan's files and drop any that is wrong, so the rerun fetches it.
    if let Err(e) = tool
        .install(&staging.path, &files, fresh, input.installer_timeout)
        .map_err(|e| on_full_disk(e, &prepared.root.dir, &files))
    {
        let bad: Vec<String> = fetched
            .wheels
            .iter()
            .filter_map(|f| cache.reverify(&f.artifact).ok().flatten())
            .collect();
        if bad.is_empty() {
            return Err(e);
        }
        return Err(e.context(format!(
            "{} cached file(s) failed re-verification and were removed (rerun to fetch them again): {}",
            bad.len(),
            bad.join("; ")
        )));
    }
    timings.insert("install", t);
    let mut installer_name = describe.join().unwrap_or_else(|_| "unknown".into());
    if let (installer::Tool::Uv(_), Some(how)) = (&tool, &tool_how) {
        installer_name = format!("{installer_name} ({how})");
    }
    say(
        input.verbose,
        format!("installed {} wheels with {installer_name}", files.len()),
    );
    Ok((
        Built {
            staging,
            python,
            installer: installer_name,
            venv: venv_how,
        },
        prestarted,
    ))
}

/// An installer step that failed for want of space says so in its own
/// words only: those words ([`crate::rerun::ChildFailed`]) or a nearly
/// full filesystem make the error carry [`crate::rerun::DiskFull`], which
/// says how much to free where (the `wheels`' unpacked size against the
/// free space), never "rerun to continue".
fn on_full_disk(e: anyhow::Error, dir: &std::path::Path, wheels: &[PathBuf]) -> anyhow::Error {
    let needs = (!wheels.is_empty())
        .then(|| unpacked_size(wheels))
        .flatten();
    match crate::rerun::out_of_space_in(&e, dir, needs) {
        Some(full) => e.context(full),
        None => e,
    }
}

/// What `wheels` unpack to, from their zip directories (no member is
/// read); `None` when one cannot be read or does not say.
fn unpacked_size(wheels: &[PathBuf]) -> Option<u64> {
    let mut total: u64 = 0;
    for w in wheels {
        let f = crate::read::open_regular(w).ok()?;
        let z = zip::ZipArchive::new(std::io::BufReader::new(f)).ok()?;
        let n = u64::try_from(z.decompressed_size()?).ok()?;
        total = total.checked_add(n)?;
    }
    Some(total)
}
