//! Where Mesa keeps its on-disk shader cache, decided by greta before the
//! Vulkan loader is opened.
//!
//! Mesa's drivers (RADV, lavapipe) keep compiled shaders under
//! `$MESA_SHADER_CACHE_DIR`, else `$XDG_CACHE_HOME`, else `~/.cache`, and
//! map a sparse index file into memory there: when that filesystem is full,
//! the first write into an unbacked page of the index kills the process
//! with SIGBUS (seen: `greta smoke` exit 135 with `XDG_CACHE_HOME` on a full
//! tmpfs, Mesa 22.3.6). So greta checks that filesystem first: with at
//! least [`MIN_FREE`] free, Mesa caches there (`MESA_SHADER_CACHE_DIR` is
//! set to the directory greta checked, so Mesa cannot pick another);
//! otherwise, or when the space cannot be read, Mesa's cache is turned off
//! for this process (`MESA_SHADER_CACHE_DISABLE=true`: shaders are compiled
//! again, which is slower, never wrong) and the device says why in its
//! notes. A user's own `MESA_SHADER_CACHE_DISABLE=true` is left as it is.
//! A disk that fills up during the run is not covered.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Free space below which Mesa's cache is turned off: the index alone is
/// 1.3 MB, and the cache grows to 1 GiB by default.
pub const MIN_FREE: u64 = 64 << 20;

/// What was decided, once per process: `Some(note)` when the cache was
/// turned off (the reason, for the device's notes).
static DECIDED: OnceLock<Option<String>> = OnceLock::new();

/// Decides (once) and returns the note to show, if any. Call it before
/// the Vulkan loader is opened, and early in `main`-like code while only one
/// thread runs (it sets environment variables for the driver to read).
pub fn prepare() -> Option<String> {
    DECIDED
        .get_or_init(|| {
            use greta_vocab::dirs;
            // Mesa's own directory (its older name second), read by the
            // settings module's rule for a directory: the first one set
            // wins, refused or not. Else greta's one reading of
            // `XDG_CACHE_HOME`/`HOME` (absolute only), where Mesa caches.
            let mesa_dir = ["MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DIR"]
                .into_iter()
                .find_map(|k| greta_vocab::Setting::dir_path(k).transpose())
                .map(|s| s.map(|s| s.value));
            let decision = decide(
                std::env::var_os("MESA_SHADER_CACHE_DISABLE").filter(|v| !v.is_empty()),
                mesa_dir,
                dirs::base_dir(dirs::Base::Cache, &dirs::process_env),
                free_bytes,
            );
            match &decision {
                Decision::Leave => {}
                Decision::CacheIn(dir) => std::env::set_var("MESA_SHADER_CACHE_DIR", dir),
                Decision::Off(why) => {
                    tracing::debug!("{why}");
                    std::env::set_var("MESA_SHADER_CACHE_DISABLE", "true");
                }
            }
            match decision {
                Decision::Off(why) => Some(why),
                _ => None,
            }
        })
        .clone()
}

#[derive(Debug, PartialEq)]
enum Decision {
    /// Already off, or no directory Mesa could use: nothing to set.
    Leave,
    /// Mesa caches under this directory (it has room).
    CacheIn(PathBuf),
    /// Turn the cache off, for this reason.
    Off(String),
}

/// `mesa_dir`: Mesa's own directory variable, or why it was refused;
/// `cache`: the user's cache directory (`XDG_CACHE_HOME`, else `~/.cache`).
fn decide(
    disable: Option<OsString>,
    mesa_dir: Option<Result<PathBuf, String>>,
    cache: Option<PathBuf>,
    free: impl Fn(&Path) -> Result<u64, String>,
) -> Decision {
    if disable.is_some_and(|v| {
        matches!(
            v.to_string_lossy().trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "y"
        )
    }) {
        return Decision::Leave;
    }
    let dir = match mesa_dir {
        // Mesa would use it as it is (relative to wherever greta runs, or
        // a FIFO as a directory): off, saying which variable and why.
        Some(Err(why)) => {
            return Decision::Off(format!("Mesa's shader cache is off for this run: {why}"))
        }
        Some(Ok(d)) => d,
        None => match cache {
            Some(d) => d,
            None => return Decision::Leave,
        },
    };
    let shown = greta_vocab::os_text(dir.as_os_str());
    let off = |what: String| {
        Decision::Off(format!(
            "Mesa's shader cache is off for this run: {what}; a full filesystem there crashes \
             Mesa's cache (SIGBUS), so shaders are compiled afresh instead"
        ))
    };
    match free(&dir) {
        Ok(n) if n >= MIN_FREE => Decision::CacheIn(dir),
        Ok(n) => off(format!(
            "{shown} has {} KiB free (under {} MiB)",
            n >> 10,
            MIN_FREE >> 20
        )),
        Err(e) => off(format!("the free space of {shown} is unknown ({e})")),
    }
}

/// Bytes an unprivileged writer may still use on the filesystem of `dir`
/// (or of its nearest existing ancestor: Mesa creates the directory).
fn free_bytes(dir: &Path) -> Result<u64, String> {
    let mut at = dir;
    while !at.exists() {
        at = at
            .parent()
            .ok_or_else(|| "no existing ancestor".to_string())?;
    }
    let c = std::ffi::CString::new(at.as_os_str().as_encoded_bytes())
        .map_err(|_| "a NUL byte in the path".to_string())?;
    // SAFETY: statvfs is plain C data, for which all-zero bytes are valid.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a live struct to fill.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    #[allow(clippy::useless_conversion)] // the field widths differ by target
    let (avail, frsize) = (u64::from(s.f_bavail), u64::from(s.f_frsize));
    Ok(avail.saturating_mul(frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<OsString> {
        Some(s.into())
    }

    fn dir(s: &str) -> Option<PathBuf> {
        Some(s.into())
    }

    #[test]
    fn a_directory_without_room_turns_the_cache_off() {
        let roomy = |_: &Path| Ok(1 << 40);
        let full = |_: &Path| Ok(4096);
        assert_eq!(
            decide(None, None, dir("/x/cache"), roomy),
            Decision::CacheIn("/x/cache".into())
        );
        assert_eq!(
            decide(None, Some(Ok("/m".into())), dir("/x"), roomy),
            Decision::CacheIn("/m".into())
        );
        let Decision::Off(why) = decide(None, None, dir("/x/cache"), full) else {
            panic!("a full directory keeps the cache on");
        };
        assert!(why.contains("/x/cache has 4 KiB free"), "{why}");
        let Decision::Off(why) = decide(None, None, dir("/x"), |_: &Path| Err("EIO".to_string()))
        else {
            panic!("an unknown free space keeps the cache on");
        };
        assert!(why.contains("unknown (EIO)"), "{why}");
        // Already off, or nowhere to cache: nothing to decide.
        assert_eq!(decide(os("true"), None, dir("/x"), full), Decision::Leave);
        assert_eq!(decide(None, None, None, full), Decision::Leave);
    }

    /// A Mesa directory variable the settings module refused turns the
    /// cache off with its reason, whatever room the user's cache has; a
    /// cache directory holding a control character is shown escaped.
    #[test]
    fn a_refused_mesa_directory_turns_the_cache_off_saying_why() {
        let roomy = |_: &Path| Ok(1 << 40);
        let refused = "MESA_SHADER_CACHE_DIR=\"/t/fifo\": is a FIFO, not a directory";
        assert_eq!(
            decide(None, Some(Err(refused.into())), dir("/x"), roomy),
            Decision::Off(format!(
                "Mesa's shader cache is off for this run: {refused}"
            ))
        );
        let Decision::Off(why) = decide(None, None, dir("/x/\u{1b}[2J"), |_: &Path| Ok(1)) else {
            panic!("a full directory keeps the cache on");
        };
        assert!(why.contains("/x/\\u{1b}[2J has 0 KiB free"), "{why}");
    }

    #[test]
    fn free_space_is_read_from_the_nearest_existing_directory() {
        let d = tempfile::tempdir().unwrap();
        let n = free_bytes(&d.path().join("not/yet/there")).unwrap();
        assert!(n > 0);
    }
}
