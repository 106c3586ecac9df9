//! A pinned uv for machines that have none on PATH.
//!
//! uv is what makes an install fast (a venv in ~20 ms, wheels linked from its
//! cache), so greta does not settle for pip just because uv is missing: the
//! uv wheel for this architecture is pinned in `lock/tools.toml` (url, size,
//! sha256 read from PyPI) and fetched through greta's own fetch code (cache,
//! retries, size + sha256 check). Its `uv` executable is taken out of the
//! wheel, checked against the wheel's RECORD, written to
//! `$XDG_CACHE_HOME/greta/tools/uv-<version>/uv` under a temporary name and
//! renamed, so a half-written binary is never run. Later installs reuse it
//! without touching the network.
//!
//! A bundle (`greta bundle`) carries the pinned wheel for its machine's
//! architecture under `tools/` with `tools.toml` beside it, so a node
//! without internet and without uv still installs through the pinned uv
//! ([`from_bundle`]).

use anyhow::{bail, Context, Result};
use base64::Engine;
use serde::Deserialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::fetch::{self, Cache, FetchOptions, Lookup, PinnedWheel};

// The pin's format is the vocabulary's (the lock set checks the same file);
// these names keep the installer's callers as they were.
pub use greta_lockset::load_tools as load;
pub use greta_vocab::tool_pin::{ToolWheel, UvPin, TOOLS_FILE};
/// Where a bundle keeps the uv wheel (apart from `wheels/`, which holds
/// only what goes into the env).
pub const BUNDLE_TOOLS_DIR: &str = "tools";

/// The uv wheel a bundle carries, as its manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct BundledUv {
    pub version: String,
    /// `std::env::consts::ARCH` the wheel's binary runs on.
    pub arch: String,
    /// File name under the bundle's `tools/`.
    pub filename: String,
    pub size: u64,
    pub sha256: greta_vocab::Sha256,
}

/// The pinned wheel for `arch`, or an error naming the arches that are pinned.
pub fn wheel_for<'a>(pin: &'a UvPin, arch: &str) -> Result<&'a ToolWheel> {
    pin.wheels.iter().find(|w| w.arch == arch).with_context(|| {
        format!(
            "lock/{TOOLS_FILE} pins no uv wheel for {arch} (only {})",
            pin.wheels
                .iter()
                .map(|w| w.arch.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// What a bundle's manifest records for the wheel it carries.
pub fn bundled(pin: &UvPin, w: &ToolWheel) -> BundledUv {
    BundledUv {
        version: pin.version.clone(),
        arch: w.arch.clone(),
        filename: w.filename.clone(),
        size: w.size,
        sha256: w.sha256,
    }
}

pub fn artifact(pin: &UvPin, w: &ToolWheel) -> PinnedWheel {
    pin.artifact(w)
}

/// Where the bootstrapped uv lives.
pub fn tool_path(cache: &Cache, version: &str) -> PathBuf {
    cache
        .root()
        .join("tools")
        .join(format!("uv-{version}"))
        .join("uv")
}

/// The pinned uv, ready to run: the cached one when it answers with the
/// pinned version, else fetched (or taken from the wheel cache; with
/// `--offline` only from there) and extracted now.
pub fn ensure(pin: &UvPin, cache: &Cache, fopts: &FetchOptions) -> Result<PathBuf> {
    let w = wheel_for(pin, std::env::consts::ARCH)?;
    if let Some(exe) = cached_tool(cache, &pin.version) {
        return Ok(exe);
    }
    let exe = tool_path(cache, &pin.version);
    let a = artifact(pin, w);
    let fetched = fetch::fetch_all(cache, std::slice::from_ref(&a), fopts).with_context(|| {
        format!(
            "fetching the pinned uv {} ({})",
            pin.version,
            if fopts.offline {
                "--offline: it is not in the cache".to_string()
            } else {
                format!(
                    "pinned from {}",
                    pin.source.as_deref().unwrap_or("lock/tools.toml")
                )
            }
        )
    })?;
    extract(&fetched[0].path, &pin.version, &exe)?;
    match version_of(&exe) {
        Ok(v) if v == pin.version => Ok(exe),
        got => {
            let _ = std::fs::remove_file(&exe);
            bail!(
                "the uv taken from {} does not run as uv {}: {}",
                w.filename,
                pin.version,
                match got {
                    Ok(v) => format!("it says it is {v}"),
                    Err(e) => format!("{e:#}"),
                }
            )
        }
    }
}

/// The bootstrapped uv of `version` when it is there and says so.
fn cached_tool(cache: &Cache, version: &str) -> Option<PathBuf> {
    let exe = tool_path(cache, version);
    (exe.is_file() && version_of(&exe).is_ok_and(|v| v == version)).then_some(exe)
}

/// The pinned uv from a bundle, never from the network: the wheel under
/// `<dir>/tools/` must be the one the manifest records AND the one the
/// bundle's `tools.toml` pins for this node's architecture, and must hash
/// to that sha256 on its way into the cache; only then is its `uv` taken
/// out (as [`ensure`] does). Every refusal says what was wrong; the caller
/// decides between pip and an error (`--installer auto|uv`).
pub fn from_bundle(
    dir: &Path,
    carried: Option<&BundledUv>,
    cache: &Cache,
    fopts: &FetchOptions,
) -> Result<PathBuf> {
    let arch = std::env::consts::ARCH;
    let Some(b) = carried else {
        bail!(
            "bundle {} carries no uv (made by a greta that did not bundle uv, or without lock/{TOOLS_FILE})",
            dir.display()
        );
    };
    if b.arch != arch {
        bail!(
            "bundle {} carries uv for {}, this node is {arch}",
            dir.display(),
            b.arch
        );
    }
    let pin = load(&greta_lockset::LockDir::of_bundle(dir))?.with_context(|| {
        format!(
            "bundle {}: its manifest lists uv {} but the bundle has no {TOOLS_FILE} to check it against",
            dir.display(),
            b.version
        )
    })?;
    let w = wheel_for(&pin, arch).with_context(|| format!("bundle {}", dir.display()))?;
    let pinned = bundled(&pin, w);
    if &pinned != b {
        bail!(
            "bundle {}: the uv in its manifest ({} {}, sha256 {}) is not the one its {TOOLS_FILE} pins ({} {}, sha256 {}); the bundle was modified",
            dir.display(),
            b.version,
            b.filename,
            b.sha256,
            pinned.version,
            pinned.filename,
            pinned.sha256
        );
    }
    if let Some(exe) = cached_tool(cache, &pin.version) {
        return Ok(exe);
    }
    let a = artifact(&pin, w);
    if !matches!(cache.lookup(&a)?, Lookup::Hit(_)) {
        let src = dir.join(BUNDLE_TOOLS_DIR).join(&w.filename);
        if !src.is_file() {
            bail!(
                "bundle {}: {} is missing (its manifest lists it)",
                dir.display(),
                src.display()
            );
        }
        cache.import(&src, &a).with_context(|| {
            format!(
                "the bundle's uv wheel failed verification against its manifest and {TOOLS_FILE}; it is not used"
            )
        })?;
    }
    let mut offline = fopts.clone();
    offline.offline = true;
    ensure(&pin, cache, &offline)
}

/// "0.13.9" from `uv --version` ("uv 0.13.9 (x86_64-unknown-linux-gnu)").
fn version_of(uv: &Path) -> Result<String> {
    let mut cmd = Command::new(uv);
    cmd.arg("--version");
    let o = super::installer::run(cmd, Some(Duration::from_secs(30)))?;
    if !o.status.success() {
        bail!("`{} --version` failed ({})", uv.display(), o.status);
    }
    o.stdout
        .split_whitespace()
        .nth(1)
        .map(String::from)
        .with_context(|| format!("`{} --version` printed {:?}", uv.display(), o.stdout))
}

/// Takes `uv-<version>.data/scripts/uv` out of the verified wheel into
/// `dest` (0755, temporary name then rename), after checking its bytes
/// against the sha256 the wheel's RECORD gives for it.
fn extract(wheel: &Path, version: &str, dest: &Path) -> Result<()> {
    let member = format!("uv-{version}.data/scripts/uv");
    let record_name = format!("uv-{version}.dist-info/RECORD");
    let f = crate::read::open_regular(wheel)?;
    let mut z = zip::ZipArchive::new(f)
        .with_context(|| format!("{} is not a readable wheel (zip)", wheel.display()))?;
    let mut record = String::new();
    z.by_name(&record_name)
        .with_context(|| format!("{}: no {record_name}", wheel.display()))?
        // Whatever size the archive claims: a RECORD is a few KiB.
        .take(crate::read::MAX_DATA_FILE)
        .read_to_string(&mut record)
        .with_context(|| format!("{}: reading {record_name}", wheel.display()))?;
    let rows = super::record::parse(&record).map_err(|(line, why)| {
        let at = greta_vocab::Place::line(&record_name, line);
        anyhow::anyhow!("{}: {at}: {why}", wheel.display())
    })?;
    let want = rows
        .into_iter()
        .find(|r| r.path == member)
        .and_then(|r| r.hash.strip_prefix("sha256=").map(String::from))
        .with_context(|| format!("{}: its RECORD has no sha256 for {member}", wheel.display()))?;
    let dir = dest.parent().context("tool path has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".uv-")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    let mut entry = z
        .by_name(&member)
        .with_context(|| format!("{}: no {member} in the wheel", wheel.display()))?;
    std::io::copy(&mut entry, tmp.as_file_mut()).with_context(|| {
        format!(
            "{}: copying {member} to {}",
            wheel.display(),
            tmp.path().display()
        )
    })?;
    // The copy as written is what is checked (the cache's streaming hash).
    let got = fetch::cache::sha256_file(tmp.path())?;
    let got = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(got.0);
    if got != want {
        bail!(
            "{}: {member} hashes to sha256={got}, its RECORD says sha256={want}; the wheel is inconsistent",
            wheel.display()
        );
    }
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o755))?;
    tmp.as_file().sync_all()?;
    tmp.persist(dest)
        .map_err(|e| e.error)
        .with_context(|| format!("moving the uv binary into {}", dest.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_tools_toml_is_valid_and_pins_this_arch() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lock");
        let pin = load(&greta_lockset::LockDir::from_flag(&dir))
            .unwrap()
            .expect("lock/tools.toml is shipped");
        assert!(pin.wheels.iter().any(|w| w.arch == "x86_64"));
        for w in &pin.wheels {
            assert!(w.filename.starts_with(&format!("uv-{}-", pin.version)));
            assert!(w.url.ends_with(&w.filename));
        }
    }

    /// Why a lock dir holding only a tools.toml of `text` cannot be loaded.
    fn refusal(text: &str) -> String {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join(TOOLS_FILE), text).unwrap();
        format!(
            "{:#}",
            load(&greta_lockset::LockDir::from_flag(t.path())).unwrap_err()
        )
    }

    #[test]
    fn malformed_tools_toml_names_line_and_column() {
        let e = refusal(
            "schema = 1\n[uv]\nversion = \"1\"\nwheels = [{ arch = \"x86_64\", filename = 3 }]\n",
        );
        assert!(e.contains("tools.toml:4:"), "{e}");
    }

    #[test]
    fn a_pin_with_a_bad_hash_is_refused() {
        let e = refusal(
            "schema = 1\n[uv]\nversion = \"1\"\n[[uv.wheels]]\narch = \"x86_64\"\nfilename = \"uv-1-py3-none-any.whl\"\nurl = \"https://x/uv-1-py3-none-any.whl\"\nsize = 1\nsha256 = \"abc\"\n",
        );
        assert!(
            e.contains("tools.toml:9:") && e.contains("\"abc\" is not a sha256"),
            "{e}"
        );
    }

    #[test]
    fn no_tools_toml_is_no_pin() {
        let t = tempfile::tempdir().unwrap();
        assert!(load(&greta_lockset::LockDir::from_flag(t.path()))
            .unwrap()
            .is_none());
    }
}
