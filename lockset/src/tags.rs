//! Wheel compatibility tags (PEP 425 / PEP 600) and the interpreter they are
//! matched against. The supported-tag list follows `packaging.tags` for
//! CPython on Linux, in its priority order, so greta picks the same wheel pip
//! and uv would.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
use uv_pep508::{MarkerEnvironment, MarkerEnvironmentBuilder};

pub use greta_vocab::WheelTags;

/// A Python interpreter as far as wheel choice is concerned.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interpreter {
    /// None for a synthetic interpreter (`greta lock show --python 3.12`).
    pub path: Option<PathBuf>,
    /// Full version, e.g. "3.11.7".
    pub version: String,
    pub major: u32,
    pub minor: u32,
    /// e.g. "cpython".
    pub implementation: String,
    /// `platform.machine()`, e.g. "x86_64".
    pub machine: String,
    /// glibc (major, minor); None on musl or unknown.
    pub glibc: Option<(u32, u32)>,
    /// `platform.release()` (kernel), used only for markers.
    pub platform_release: String,
    /// Supported tags, best first.
    pub tags: Vec<String>,
}

/// Printed by the interpreter in [`Interpreter::inspect`]; plain
/// `key=value` lines so no JSON module quirks matter.
const PROBE: &str = r#"
import sys, platform, os
print("version=" + platform.python_version())
print("impl=" + sys.implementation.name)
print("machine=" + platform.machine())
print("release=" + platform.release())
try:
    print("glibc=" + os.confstr("CS_GNU_LIBC_VERSION").split()[1])
except Exception:
    print("glibc=")
# A venv (Python's own rule: pyvenv.cfg beside the executable or one level
# up; -S leaves sys.prefix alone, so that is the test).
d = os.path.dirname(sys.executable)
if any(os.path.isfile(os.path.join(x, "pyvenv.cfg")) for x in (d, os.path.dirname(d))):
    print("base=" + getattr(sys, "_base_executable", ""))
"#;

impl Interpreter {
    /// Ask a real interpreter (one run, 20 s limit) for its version,
    /// implementation, machine and glibc; compute the tags from that.
    pub fn inspect(python: &Path) -> crate::Result<Interpreter> {
        Ok(Self::ask(python)?)
    }

    fn ask(python: &Path) -> Result<Interpreter> {
        let mut cmd = std::process::Command::new(python);
        cmd.args(["-I", "-S", "-c", PROBE]);
        let out = greta_vocab::child::run(cmd, Some(Duration::from_secs(20)))
            .with_context(|| format!("cannot run {}", python.display()))?;
        if !out.status.success() {
            bail!("{} failed: {}", python.display(), out.stderr.trim());
        }
        let text = out.stdout;
        let get = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}=")))
                .map(str::trim)
                .unwrap_or("")
                .to_string()
        };
        let version = get("version");
        let glibc = parse_glibc(&get("glibc"));
        let mut i = Interpreter::new(&version, &get("impl"), &get("machine"), glibc)
            .with_context(|| format!("{} reported version {version:?}", python.display()))?;
        i.path = Some(python.to_path_buf());
        // A virtual environment's interpreter (e.g. `greta install` run
        // with an env activated) stands for the interpreter it was made
        // from: an env built from another env's python would point into an
        // env greta may replace or the user may delete.
        let base = PathBuf::from(get("base"));
        if base.is_absolute() && base.is_file() {
            i.path = Some(base);
        }
        i.platform_release = get("release");
        Ok(i)
    }

    /// [`inspect`](Self::inspect) through a small cache under `cache_dir`
    /// (greta's cache), the way uv caches interpreter queries: an entry is
    /// used only while the path still resolves to the same file (device,
    /// inode, size, mtime, ctime), on the same kernel release and glibc, by
    /// the same greta. Starting Python costs 10-30 ms; a warm `greta
    /// install` should not pay it on every run. Scripts (pyenv/asdf shims,
    /// whose answer depends on the environment) are always asked. This only
    /// reads the cache (planning writes nothing); [`remember`](Self::remember)
    /// stores an answer. The flag says the answer came from the cache.
    pub fn inspect_cached(
        python: &Path,
        cache_dir: Option<&Path>,
    ) -> crate::Result<(Interpreter, bool)> {
        Ok(Self::cached_with(python, cache_dir, Interpreter::ask)?)
    }

    fn cached_with(
        python: &Path,
        cache_dir: Option<&Path>,
        ask: impl Fn(&Path) -> Result<Interpreter>,
    ) -> Result<(Interpreter, bool)> {
        if let Some(file) = cache_dir.and_then(|d| cache_file(d, python)) {
            if let Ok(text) = crate::read::text_capped(&file.1, 1 << 20) {
                if let Ok(e) = serde_json::from_str::<CacheEntry>(&text) {
                    if e.key == file.0 && e.interpreter.path.as_deref() == Some(python) {
                        return Ok((e.interpreter, true));
                    }
                }
            }
        }
        Ok((ask(python)?, false))
    }

    /// Stores this answer (asked of `queried`) for [`inspect_cached`](Self::inspect_cached);
    /// best effort, whole or absent (unique temporary name, then rename).
    pub fn remember(&self, queried: &Path, cache_dir: &Path) {
        if self.path.as_deref() != Some(queried) {
            return;
        }
        let Some((key, file)) = cache_file(cache_dir, queried) else {
            return;
        };
        let entry = CacheEntry {
            key,
            interpreter: self.clone(),
        };
        if let (Some(parent), Ok(text)) = (file.parent(), serde_json::to_string(&entry)) {
            let tmp = parent.join(format!(".{}.tmp", std::process::id()));
            let _ = std::fs::create_dir_all(parent)
                .and_then(|_| std::fs::write(&tmp, text))
                .and_then(|_| std::fs::rename(&tmp, &file));
            let _ = std::fs::remove_file(&tmp);
        }
    }

    /// An interpreter described rather than run: `version` "3.12" or
    /// "3.12.4", CPython on x86_64 Linux with the given glibc.
    pub fn synthetic(version: &str, glibc: Option<(u32, u32)>) -> crate::Result<Interpreter> {
        let full = if version.matches('.').count() == 1 {
            format!("{version}.0")
        } else {
            version.to_string()
        };
        Ok(Interpreter::new(
            &full,
            "cpython",
            std::env::consts::ARCH,
            glibc,
        )?)
    }

    fn new(
        version: &str,
        implementation: &str,
        machine: &str,
        glibc: Option<(u32, u32)>,
    ) -> Result<Interpreter> {
        let mut it = version.split('.');
        let major: u32 = it
            .next()
            .and_then(|s| s.parse().ok())
            .context("no major version")?;
        let minor: u32 = it
            .next()
            .and_then(|s| s.parse().ok())
            .context("no minor version")?;
        if major != 3 {
            bail!("Python {version} is not Python 3");
        }
        // The tag list grows with the minor version (one abi3 and one py3X
        // line per earlier minor): an absurd minor from a lock file is
        // refused, not enumerated (the lock_files fuzz target hung on
        // "3.11111111").
        if minor > MAX_MINOR {
            bail!("Python {version}: no CPython 3 has a minor version above {MAX_MINOR}");
        }
        if implementation != "cpython" {
            bail!("{implementation} is not supported: the pinned wheels are CPython builds");
        }
        let tags = supported_tags(minor, machine, glibc);
        Ok(Interpreter {
            path: None,
            version: version.to_string(),
            major,
            minor,
            implementation: implementation.to_string(),
            machine: machine.to_string(),
            glibc,
            platform_release: String::new(),
            tags,
        })
    }

    /// "3.11".
    pub fn xy(&self) -> String {
        format!("{}.{}", self.major, self.minor)
    }

    /// Rank of the best tag of `filename` (0 = most preferred), None if the
    /// wheel does not fit this interpreter.
    pub fn wheel_rank(&self, filename: &str) -> Option<(usize, String)> {
        let wt = WheelTags::parse(filename)?;
        wt.tags
            .iter()
            .filter_map(|(p, a, pl)| {
                let t = format!("{p}-{a}-{pl}");
                self.tags.iter().position(|s| *s == t).map(|i| (i, t))
            })
            .min_by_key(|(i, _)| *i)
    }

    /// PEP 508 environment for marker evaluation.
    pub fn marker_env(&self) -> Result<MarkerEnvironment> {
        let xy = self.xy();
        MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
            implementation_name: &self.implementation,
            implementation_version: &self.version,
            os_name: "posix",
            platform_machine: &self.machine,
            platform_python_implementation: "CPython",
            platform_release: &self.platform_release,
            platform_system: "Linux",
            platform_version: "",
            python_full_version: &self.version,
            python_version: &xy,
            sys_platform: "linux",
        })
        .map_err(|e| anyhow::anyhow!("bad interpreter version {}: {e}", self.version))
    }

    /// A one-line description for reports.
    pub fn describe(&self) -> String {
        let libc = match self.glibc {
            Some((a, b)) => format!("glibc {a}.{b}"),
            None => "no glibc".into(),
        };
        let at = self
            .path
            .as_ref()
            .map(|p| format!(" at {}", p.display()))
            .unwrap_or_default();
        format!(
            "CPython {}{at} ({} Linux, {libc})",
            self.version, self.machine
        )
    }
}

/// Read glibc's version on this machine (for synthetic interpreters).
#[derive(serde::Serialize, serde::Deserialize)]
struct CacheEntry {
    key: String,
    interpreter: Interpreter,
}

/// The cache key of an interpreter query and the file that holds it; None
/// when the answer must not be cached (a script, an unreadable file).
fn cache_file(cache_dir: &Path, python: &Path) -> Option<(String, PathBuf)> {
    use sha2::Digest;
    let key = cache_key(python)?;
    let digest = hex::encode(sha2::Sha256::digest(key.as_bytes()));
    Some((
        key,
        cache_dir
            .join("interpreters")
            .join(format!("{digest}.json")),
    ))
}

/// What an interpreter query depends on: the script itself (a changed
/// query invalidates older answers even within one greta version), the
/// path as given, the file it resolves to and that file's identity, the
/// kernel release (`platform.release()`), the glibc, and greta's version.
fn cache_key(python: &Path) -> Option<String> {
    use sha2::Digest;
    use std::io::Read;
    let abs = std::path::absolute(python).ok()?;
    let canonical = std::fs::canonicalize(&abs).ok()?;
    let mut head = [0u8; 2];
    std::fs::File::open(&canonical)
        .and_then(|mut f| f.read_exact(&mut head))
        .ok()?;
    if &head == b"#!" {
        return None;
    }
    let release =
        crate::read::text_capped(Path::new("/proc/sys/kernel/osrelease"), 4096).unwrap_or_default();
    Some(format!(
        "v1\0{}\0{}\0{}\0{:?}\0{}",
        hex::encode(sha2::Sha256::digest(PROBE.as_bytes())),
        crate::read::identity(&abs)?,
        release.trim(),
        host_glibc(),
        env!("CARGO_PKG_VERSION"),
    ))
}

pub fn host_glibc() -> Option<(u32, u32)> {
    // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        extern "C" {
            fn gnu_get_libc_version() -> *const std::os::raw::c_char;
        }
        let p = gnu_get_libc_version();
        if p.is_null() {
            return None;
        }
        return parse_glibc(&std::ffi::CStr::from_ptr(p).to_string_lossy());
    }
    #[allow(unreachable_code)]
    None
}

fn parse_glibc(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().split_once('.')?;
    let b: String = b.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Linux platform tags for `machine` and glibc, best first (PEP 600 plus
/// the legacy manylinux aliases, then plain `linux_<arch>`).
fn platform_tags(machine: &str, glibc: Option<(u32, u32)>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((2, minor)) = glibc {
        for m in (5..=minor).rev() {
            out.push(format!("manylinux_2_{m}_{machine}"));
            let legacy = match m {
                17 => Some("manylinux2014"),
                12 => Some("manylinux2010"),
                5 => Some("manylinux1"),
                _ => None,
            };
            if let Some(l) = legacy {
                if matches!(machine, "x86_64" | "i686") || l == "manylinux2014" {
                    out.push(format!("{l}_{machine}"));
                }
            }
        }
    }
    out.push(format!("linux_{machine}"));
    out
}

/// The largest CPython 3 minor version greta accepts (3.14 is current).
pub const MAX_MINOR: u32 = 99;

/// `packaging.tags.sys_tags()` order for CPython 3.`minor`.
fn supported_tags(minor: u32, machine: &str, glibc: Option<(u32, u32)>) -> Vec<String> {
    let plats = platform_tags(machine, glibc);
    let cp = format!("cp3{minor}");
    let mut tags = Vec::new();
    for p in &plats {
        tags.push(format!("{cp}-{cp}-{p}"));
    }
    for p in &plats {
        tags.push(format!("{cp}-abi3-{p}"));
    }
    for p in &plats {
        tags.push(format!("{cp}-none-{p}"));
    }
    for m in (2..minor).rev() {
        for p in &plats {
            tags.push(format!("cp3{m}-abi3-{p}"));
        }
    }
    // compatible_tags: py3X-none-plat, py3-none-plat, ... then -any.
    let mut pys = vec![format!("py3{minor}"), "py3".to_string()];
    pys.extend((0..minor).rev().map(|m| format!("py3{m}")));
    for py in &pys {
        for p in &plats {
            tags.push(format!("{py}-none-{p}"));
        }
    }
    tags.push(format!("{cp}-none-any"));
    for py in &pys {
        tags.push(format!("{py}-none-any"));
    }
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_venv_interpreter_stands_for_its_base() {
        // A real venv of the python3 on PATH (CI installs python3-venv).
        let Ok(py) = which::which("python3") else {
            eprintln!("no python3 on PATH, skipping");
            return;
        };
        let base = Interpreter::inspect(&py).unwrap();
        // The real binary behind python3 (it may be a pyenv shim script).
        let real = std::process::Command::new(&py)
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .unwrap();
        let real = PathBuf::from(String::from_utf8(real.stdout).unwrap().trim());
        let d = tempfile::tempdir().unwrap();
        let venv = d.path().join("v");
        let made = std::process::Command::new(&py)
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .status()
            .unwrap();
        assert!(made.success(), "python3 -m venv failed");
        let inner = Interpreter::inspect(&venv.join("bin/python3")).unwrap();
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap();
        let got = inner.path.clone().unwrap();
        assert!(!got.starts_with(&venv), "{got:?} is inside the venv");
        assert_eq!(canon(&got), canon(&real));
        assert_eq!(inner.version, base.version);
    }

    #[test]
    fn interpreter_queries_are_cached_until_the_file_changes() {
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("cache");
        // Any binary stands in for python (its identity is what counts);
        // `ask` stands in for running it and counts the runs.
        let py = d.path().join("python3");
        let exe = std::env::current_exe().unwrap();
        std::fs::copy(&exe, &py).unwrap();
        let asked = std::cell::Cell::new(0);
        let ask = |p: &Path| {
            asked.set(asked.get() + 1);
            let mut i = Interpreter::synthetic("3.11.7", Some((2, 36)))?;
            i.path = Some(p.to_path_buf());
            Ok(i)
        };
        let first = Interpreter::cached_with(&py, Some(&cache), ask).unwrap().0;
        assert_eq!(asked.get(), 1);
        // Looking up writes nothing (planning writes nothing).
        assert!(!cache.exists());
        Interpreter::cached_with(&py, Some(&cache), ask).unwrap();
        assert_eq!(asked.get(), 2);
        first.remember(&py, &cache);
        let (again, hit) = Interpreter::cached_with(&py, Some(&cache), ask).unwrap();
        assert!(hit);
        assert_eq!(again, first);
        assert_eq!(asked.get(), 2, "a cache hit runs nothing");
        // Replaced by another file (other inode, size, times): asked again.
        std::fs::remove_file(&py).unwrap();
        std::fs::write(&py, b"\x7fELF another interpreter").unwrap();
        Interpreter::cached_with(&py, Some(&cache), ask).unwrap();
        assert_eq!(asked.get(), 3);
        // No cache dir: always asked.
        Interpreter::cached_with(&py, None, ask).unwrap();
        assert_eq!(asked.get(), 4);
        // A corrupt entry is not used.
        first.remember(&py, &cache);
        for e in std::fs::read_dir(cache.join("interpreters"))
            .unwrap()
            .flatten()
        {
            std::fs::write(e.path(), b"{not json").unwrap();
        }
        Interpreter::cached_with(&py, Some(&cache), ask).unwrap();
        assert_eq!(asked.get(), 5);
        // A script (a pyenv shim answers per environment) is never cached.
        let shim = d.path().join("shim");
        std::fs::write(&shim, b"#!/bin/sh\nexec python3 \"$@\"\n").unwrap();
        let mut s = first.clone();
        s.path = Some(shim.clone());
        s.remember(&shim, &cache);
        let (_, hit) = Interpreter::cached_with(&shim, Some(&cache), ask).unwrap();
        assert!(!hit);
        assert_eq!(asked.get(), 6);
    }

    #[test]
    fn ranks_follow_packaging_order() {
        let i = Interpreter::synthetic("3.12", Some((2, 36))).unwrap();
        let exact = i
            .wheel_rank("a-1-cp312-cp312-manylinux_2_28_x86_64.whl")
            .unwrap()
            .0;
        let abi3 = i
            .wheel_rank("a-1-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
            .unwrap()
            .0;
        let pure = i.wheel_rank("a-1-py3-none-any.whl").unwrap().0;
        assert!(exact < abi3 && abi3 < pure);
        assert!(i
            .wheel_rank("a-1-cp311-cp311-manylinux_2_28_x86_64.whl")
            .is_none());
        assert!(
            i.wheel_rank("a-1-cp312-cp312-manylinux_2_38_x86_64.whl")
                .is_none(),
            "needs newer glibc"
        );
        assert!(i.wheel_rank("a-1-cp312-cp312-linux_x86_64.whl").is_some());
        assert!(i
            .wheel_rank("a-1-cp312-cp312-macosx_11_0_arm64.whl")
            .is_none());
    }

    #[test]
    fn inspects_a_real_python() {
        let Ok(py) = which::which("python3") else {
            return;
        };
        let i = Interpreter::inspect(&py).unwrap();
        assert_eq!(i.major, 3);
        assert!(i.tags.iter().any(|t| t.ends_with("-none-any")));
    }
}
