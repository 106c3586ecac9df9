//! Running the tools greta drives (python, uv, pip) as children that cannot
//! outlive greta, with an optional time bound.
//!
//! Children get `PR_SET_PDEATHSIG(SIGKILL)`: if greta is killed mid-install,
//! uv/pip die with it instead of writing on into a staging dir that the next
//! run is about to delete.

use anyhow::{bail, Context, Result};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Output {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` to completion (or kills it after `timeout`), capturing output.
pub fn run(mut cmd: Command, timeout: Option<Duration>) -> Result<Output> {
    let shown = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().with_context(|| format!("starting {shown}"))?;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = match timeout {
        None => child.wait()?,
        Some(limit) => loop {
            if let Some(st) = child.try_wait()? {
                break st;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                bail!("{shown} did not finish within {limit:?} and was killed");
            }
            std::thread::sleep(Duration::from_millis(5));
        },
    };
    let stdout = String::from_utf8_lossy(&t_out.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&t_err.join().unwrap_or_default()).into_owned();
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// Which tool puts the wheels into the venv.
/// A `uv` on PATH that is a shell script (pyenv/asdf shim) costs a shell
/// and a lookup per call; the uv Python package knows its real binary.
fn behind_shim(uv: PathBuf, python: Option<&Path>) -> PathBuf {
    let mut head = [0u8; 2];
    let script = std::fs::File::open(&uv)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
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
    /// `python` helps find the uv binary behind a pyenv-style shim. With no
    /// uv on PATH (and no GRETA_UV), `bootstrap` is asked for the pinned uv
    /// (see `uv_bootstrap`); when it cannot give one, `auto` falls back to
    /// pip. The second value says how uv was had or why pip is used.
    pub fn choose(
        choice: Choice,
        python: Option<&Path>,
        bootstrap: &dyn Fn() -> Result<PathBuf>,
    ) -> Result<(Tool, Option<String>)> {
        if choice == Choice::Pip {
            return Ok((Tool::Pip, None));
        }
        let uv = std::env::var_os("GRETA_UV")
            .map(PathBuf::from)
            .or_else(|| which::which("uv").ok())
            .map(|p| behind_shim(p, python));
        if let Some(p) = uv {
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

    /// Installs exactly `wheels` (verified local files) into the venv: no
    /// index, no dependency resolution, no source builds.
    pub fn install(&self, venv: &Path, wheels: &[PathBuf]) -> Result<()> {
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
        let o = run(cmd, None)?;
        if !o.status.success() {
            bail!(
                "{} failed ({}):\n{}{}",
                match self {
                    Tool::Uv(_) => "uv pip install",
                    Tool::Pip => "pip install",
                },
                o.status,
                o.stdout,
                o.stderr
            );
        }
        Ok(())
    }
}
