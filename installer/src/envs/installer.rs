//! The tools greta drives (python, uv, pip): which one installs the wheels,
//! and how. They run through [`greta_vocab::child`]: children that cannot
//! outlive greta (`PR_SET_PDEATHSIG`), with an optional time bound.

use anyhow::{bail, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

// The runner lives in the vocabulary crate (one runner for every crate);
// these names keep the installer's callers as they were.
pub use greta_vocab::child::{run, Output};

/// Runs an installer step (`uv venv`, `uv pip install`, `pip install`,
/// `python -m venv`) under `--installer-timeout` (one that never exited
/// hung `greta install` with the env lock held). Past the limit it is
/// killed and the error ([`crate::rerun::OverTimeLimit`]) says which
/// setting bounds it.
pub fn run_limited(cmd: Command, limit: Duration) -> Result<Output> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let args: Vec<String> = cmd
        .get_args()
        .take(2)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let step = format!("{program} {}", args.join(" "));
    match run(cmd, Some(limit)) {
        Ok(o) => Ok(o),
        Err(greta_vocab::child::ChildError::TimedOut { .. }) => Err(crate::rerun::OverTimeLimit {
            step,
            limit,
            flag: "--installer-timeout",
            default: DEFAULT_LIMIT_S,
        }
        .into()),
        Err(e) => Err(e.into()),
    }
}

/// `--installer-timeout`'s default, in seconds.
pub const DEFAULT_LIMIT_S: u64 = 1800;

/// The error of an installer step that exited unsuccessfully: `text`,
/// then `hint` unless the child said it ran out of space, which the error
/// then carries ([`crate::rerun::ChildFailed`]).
pub fn failed(o: &Output, text: String, hint: &str) -> anyhow::Error {
    let out_of_space =
        crate::rerun::out_of_space(&o.stdout) || crate::rerun::out_of_space(&o.stderr);
    let text = if out_of_space { text } else { text + hint };
    crate::rerun::ChildFailed { text, out_of_space }.into()
}

/// A `uv` on PATH that is a version manager's shim (a `#!` script in a
/// directory named `shims`: pyenv, asdf, mise) costs a shell and a lookup
/// per call; the uv Python package knows its real binary. Only such a shim
/// is looked behind: any other script is somebody's wrapper, and a uv named
/// by `GRETA_UV` is never replaced (a user's wrapper was once silently
/// swapped for another uv).
fn behind_shim(uv: PathBuf, python: Option<&Path>) -> PathBuf {
    let in_shims = uv
        .parent()
        .and_then(|d| d.file_name())
        .is_some_and(|n| n == "shims");
    let mut head = [0u8; 2];
    let script = in_shims
        && crate::read::open_regular(&uv)
            .ok()
            .is_some_and(|mut f| f.read_exact(&mut head).is_ok())
        && &head == b"#!";
    let Some(py) = python.filter(|_| script) else {
        return uv;
    };
    let mut cmd = Command::new(py);
    cmd.args(["-I", "-c", "import uv; print(uv.find_uv_bin())"]);
    match run(cmd, Some(Duration::from_secs(20))) {
        Ok(o) if o.status.success() => {
            let real = PathBuf::from(o.stdout.trim());
            if real.is_absolute() && real.is_file() {
                return real;
            }
            uv
        }
        _ => uv,
    }
}

/// The uv `GRETA_UV` names (unset or empty: `None`), refused by name
/// unless it answers as uv does: asked before anything is fetched.
pub fn named_uv() -> Result<Option<PathBuf>> {
    let Some(v) = std::env::var_os(greta_vocab::EnvVars::GRETA_UV).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let uv = PathBuf::from(v);
    is_uv(&uv).map_err(crate::rerun::FixFirst)?;
    Ok(Some(uv))
}

/// `Err(why)` unless the uv named by `GRETA_UV` answers `--version` as uv
/// does (`uv X.Y.Z`): a wrong path or another program there failed every
/// install the same way, under a "rerun to continue".
fn is_uv(uv: &Path) -> Result<(), String> {
    let var = greta_vocab::EnvVars::GRETA_UV;
    let shown = greta_vocab::os_text(uv.as_os_str());
    let why = |what: String| {
        format!("{var}=\"{shown}\" {what}: set {var} to a uv binary, or unset it (then uv on PATH, else the pinned uv, is used)")
    };
    let mut cmd = Command::new(uv);
    cmd.arg("--version");
    match run(cmd, Some(Duration::from_secs(30))) {
        Ok(o) if o.status.success() && o.stdout.starts_with("uv ") => Ok(()),
        Ok(o) => {
            // Its first line says what it is (GNU `false --version`:
            // "false (GNU coreutils) 9.1").
            let said = format!("{}{}", o.stdout, o.stderr);
            let said: String = said
                .trim()
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect();
            Err(why(format!(
                "is not a working uv: its `--version` ended with {} and printed {}",
                greta_vocab::child::describe(o.status),
                if said.is_empty() {
                    "nothing".to_string()
                } else {
                    format!("{said:?}")
                }
            )))
        }
        Err(e) => Err(why(format!("could not be run: {e}"))),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tool {
    Uv(PathBuf),
    Pip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// uv when on PATH (or GRETA_UV), else the pinned uv of lock/tools.toml
    /// (bootstrapped into greta's cache), else pip.
    Auto,
    Uv,
    Pip,
}

impl Tool {
    /// `named`: the uv of `GRETA_UV` ([`named_uv`]), used as it is.
    /// `python` helps find the uv binary behind a pyenv-style shim. With no
    /// uv on PATH (and no GRETA_UV), `bootstrap` is asked for the pinned uv
    /// (see `uv_bootstrap`); when it cannot give one, `auto` falls back to
    /// pip. The second value says how uv was had or why pip is used.
    pub fn choose(
        choice: Choice,
        named: Option<PathBuf>,
        python: Option<&Path>,
        bootstrap: &dyn Fn() -> Result<PathBuf>,
    ) -> Result<(Tool, Option<String>)> {
        if choice == Choice::Pip {
            return Ok((Tool::Pip, None));
        }
        if let Some(uv) = named {
            return Ok((Tool::Uv(uv), None));
        }
        if let Some(p) = which::which("uv").ok().map(|p| behind_shim(p, python)) {
            return Ok((Tool::Uv(p), None));
        }
        match (choice, bootstrap()) {
            (_, Ok(p)) => {
                let how = format!("bootstrapped {}", p.display());
                Ok((Tool::Uv(p), Some(how)))
            }
            (Choice::Uv, Err(e)) => bail!("--installer uv: uv is not on PATH and the pinned uv could not be had: {e:#} (install uv with `python3 -m pip install uv`, or set GRETA_UV)"),
            (_, Err(e)) => Ok((
                Tool::Pip,
                Some(format!("pip: uv is not on PATH and the pinned uv could not be had ({e:#})")),
            )),
        }
    }

    /// [`describe`](Self::describe), for uv remembered under `cache_root`
    /// while the uv binary is the same file (path, inode, size, times): the
    /// version is then known without starting uv once more per install.
    pub fn describe_cached(&self, venv_python: &Path, cache_root: Option<&Path>) -> String {
        let (Tool::Uv(uv), Some(root)) = (self, cache_root) else {
            return self.describe(venv_python);
        };
        let Some(id) = super::venv_template::identity(uv) else {
            return self.describe(venv_python);
        };
        let file = root.join("tools").join(format!(
            "{}.txt",
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(id.as_bytes()))
        ));
        if let Ok(text) = crate::read::text_capped(&file, 4096) {
            if let Some(v) = text.strip_prefix(&format!("{id}\n")) {
                if v.starts_with("uv ") && !v.contains('\n') {
                    return v.to_string();
                }
            }
        }
        let v = self.describe(venv_python);
        if v.starts_with("uv ") && v != "uv ?" {
            let tmp = file.with_extension(format!("{}.tmp", std::process::id()));
            let _ = std::fs::create_dir_all(root.join("tools"))
                .and_then(|_| std::fs::write(&tmp, format!("{id}\n{v}")))
                .and_then(|_| std::fs::rename(&tmp, &file));
            let _ = std::fs::remove_file(&tmp);
        }
        v
    }

    /// "uv 0.9.1" / "pip 24.0", for the receipt.
    pub fn describe(&self, venv_python: &Path) -> String {
        let (mut cmd, name) = match self {
            Tool::Uv(p) => {
                let mut c = Command::new(p);
                c.arg("--version");
                (c, "uv")
            }
            Tool::Pip => {
                let mut c = Command::new(venv_python);
                c.args(["-m", "pip", "--version"]);
                (c, "pip")
            }
        };
        match run(
            std::mem::replace(&mut cmd, Command::new("true")),
            Some(Duration::from_secs(30)),
        ) {
            Ok(o) if o.status.success() => {
                let v = o
                    .stdout
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("?")
                    .to_string();
                format!("{name} {v}")
            }
            _ => name.to_string(),
        }
    }

    /// "uv pip install (PATH)" / "pip install", for messages.
    fn command_name(&self) -> String {
        match self {
            Tool::Uv(uv) => format!("uv pip install ({})", uv.display()),
            Tool::Pip => "pip install".to_string(),
        }
    }

    /// Drops uv's cache entries for the distribution `name` (`uv cache
    /// clean NAME`), so the next install unpacks its wheel again.
    pub fn clean_cache(&self, name: &str) -> Result<()> {
        let Tool::Uv(uv) = self else { return Ok(()) };
        let mut c = Command::new(uv);
        c.args(["cache", "clean", "--no-config", name]);
        let o = run(c, Some(Duration::from_secs(120)))?;
        if !o.status.success() {
            bail!(
                "uv cache clean {name} failed ({}): {}",
                o.status,
                o.stderr.trim()
            );
        }
        Ok(())
    }

    /// Installs exactly `wheels` (verified local files) into the venv: no
    /// index, no dependency resolution, no source builds. `fresh`: without
    /// uv's cache (a temporary one), so nothing is linked from it.
    pub fn install(
        &self,
        venv: &Path,
        wheels: &[PathBuf],
        fresh: bool,
        limit: Duration,
    ) -> Result<()> {
        for w in wheels {
            if w.extension().and_then(|e| e.to_str()) != Some("whl") {
                bail!("{} is not a wheel; greta installs wheels only", w.display());
            }
        }
        let py = venv.join("bin").join("python");
        let mut cmd = match self {
            Tool::Uv(uv) => {
                let mut c = Command::new(uv);
                c.args([
                    "pip",
                    "install",
                    "--no-config",
                    "--no-index",
                    "--no-deps",
                    "--no-build",
                    "--offline",
                    "--python",
                ])
                .arg(&py)
                .args(fresh.then_some("--no-cache"))
                .env("UV_PYTHON_DOWNLOADS", "never")
                .env_remove("UV_INDEX_URL")
                .env_remove("UV_EXTRA_INDEX_URL")
                .env_remove("VIRTUAL_ENV");
                c
            }
            Tool::Pip => {
                let mut c = Command::new(&py);
                c.args([
                    "-m",
                    "pip",
                    "install",
                    "--no-index",
                    "--no-deps",
                    "--only-binary",
                    ":all:",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--isolated",
                ])
                .env("PIP_NO_CACHE_DIR", "1");
                c
            }
        };
        cmd.args(wheels);
        let o = run_limited(cmd, limit)?;
        if !o.status.success() {
            let step = match self {
                Tool::Uv(_) => "uv pip install",
                Tool::Pip => "pip install",
            };
            let text = format!("{step} failed ({}):\n{}{}", o.status, o.stdout, o.stderr);
            return Err(failed(&o, text, ""));
        }
        // Exit 0 is not proof: every wheel must be in the venv.
        let missing = super::installed::missing(venv, wheels);
        if !missing.is_empty() {
            bail!(
                "{} exited 0 but did not install {} of {} wheels into {}: {}",
                self.command_name(),
                missing.len(),
                wheels.len(),
                venv.display(),
                missing.join(", ")
            );
        }
        if !fresh {
            self.prune_cache();
        }
        Ok(())
    }

    /// Keeps uv's cache bounded: uv unpacks a local wheel again
    /// whenever its file times change and keeps the old unpacked copy, so
    /// every rebuild after such a change (a restored cache, a tool that
    /// touches files) added a whole profile (~5.7 GB for cpu) that nothing
    /// removed. `uv cache prune` removes what no cache entry points to any
    /// more (those old copies), leaving one unpacked copy per wheel; envs
    /// linked from a removed copy keep their files (hard links). uv waits
    /// while another uv reads the cache, so the wait is bounded; a prune
    /// that fails or times out is a warning, never a failed install.
    fn prune_cache(&self) {
        let Tool::Uv(uv) = self else { return };
        let mut c = Command::new(uv);
        c.args(["cache", "prune", "--no-config", "--quiet"]);
        match run(c, Some(PRUNE_LIMIT)) {
            Ok(o) if o.status.success() => {}
            Ok(o) => tracing::warn!(
                "uv cache prune failed ({}); uv's cache keeps unpacked copies it no longer uses: {}",
                o.status,
                o.stderr.trim()
            ),
            Err(e) => tracing::warn!("uv cache prune: {e:#}"),
        }
    }
}

/// How long the post-install `uv cache prune` may wait for another uv.
const PRUNE_LIMIT: Duration = Duration::from_secs(30);
