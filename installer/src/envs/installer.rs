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
use std::time::Duration;

#[derive(Debug)]
pub struct Output {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` to completion (or kills it after `timeout`), capturing output.
pub fn run(cmd: Command, timeout: Option<Duration>) -> Result<Output> {
    start(cmd, false)?.finish(timeout)
}

/// A child started by [`start`]: its output is being collected, and it is
/// killed if dropped unfinished.
pub struct Running {
    shown: String,
    child: Option<std::process::Child>,
    stdin: Option<std::process::ChildStdin>,
    out: Option<std::thread::JoinHandle<Vec<u8>>>,
    err: Option<std::thread::JoinHandle<Vec<u8>>>,
    exited: std::sync::mpsc::Receiver<()>,
}

/// Starts `cmd` with captured output and, when `stdin_piped`, a pipe to
/// its stdin (else /dev/null).
pub fn start(mut cmd: Command, stdin_piped: bool) -> Result<Running> {
    let shown = format!("{cmd:?}");
    cmd.stdin(if stdin_piped {
        Stdio::piped()
    } else {
        Stdio::null()
    })
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
    let stdin = child.stdin.take();
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
    // A waiter thread blocks in waitid(WNOWAIT) (the child stays unreaped)
    // and signals a channel: the caller wakes the moment the child exits
    // instead of on a polling tick, a time limit is a plain `recv_timeout`,
    // and the pid cannot be reused before `child.wait()` reaps it.
    let rx = exit_signal(child.id());
    Ok(Running {
        shown,
        child: Some(child),
        stdin,
        out: Some(t_out),
        err: Some(t_err),
        exited: rx,
    })
}

impl Running {
    /// Waits for the child (killing it after `timeout`, counted from now)
    /// and returns what it printed.
    pub fn finish(self, timeout: Option<Duration>) -> Result<Output> {
        let shown = self.shown.clone();
        let (out, timed_out) = self.wait(timeout);
        if timed_out {
            bail!(
                "{shown} did not finish within {:?} and was killed",
                timeout.unwrap_or_default()
            );
        }
        out
    }

    fn wait(mut self, timeout: Option<Duration>) -> (Result<Output>, bool) {
        let exited = match timeout {
            None => self.exited.recv().is_ok(),
            Some(limit) => self.exited.recv_timeout(limit).is_ok(),
        };
        let mut child = self.child.take().expect("finish runs once");
        if !exited {
            let _ = child.kill();
        }
        // Our stdin end goes too: a child waiting on it sees EOF.
        self.stdin.take();
        let status = match child.wait() {
            Ok(s) => s,
            Err(e) => return (Err(e.into()), !exited),
        };
        let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
            String::from_utf8_lossy(&h.and_then(|h| h.join().ok()).unwrap_or_default()).into_owned()
        };
        let out = Output {
            status,
            stdout: join(self.out.take()),
            stderr: join(self.err.take()),
        };
        (Ok(out), !exited)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Which tool puts the wheels into the venv.
/// A `uv` on PATH that is a shell script (pyenv/asdf shim) costs a shell
/// and a lookup per call; the uv Python package knows its real binary.
fn behind_shim(uv: PathBuf, python: Option<&Path>) -> PathBuf {
    let mut head = [0u8; 2];
    let script = crate::read::open_regular(&uv)
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
    pub fn install(&self, venv: &Path, wheels: &[PathBuf], fresh: bool) -> Result<()> {
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
        if !fresh {
            self.prune_cache();
        }
        Ok(())
    }

    /// Keeps uv's cache bounded (issue 12): uv unpacks a local wheel again
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

/// A channel that receives once when child `pid` has exited. A waiter thread
/// blocks in `waitid(WNOWAIT)`, so the child stays unreaped (its pid cannot
/// be reused before the owner's `child.wait()`), and a time limit is a plain
/// `recv_timeout` instead of a polling loop.
pub(crate) fn exit_signal(pid: u32) -> std::sync::mpsc::Receiver<()> {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        // SAFETY: waitid only writes into the zeroed siginfo we own.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            while libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            ) == -1
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
            }
        }
        let _ = tx.send(());
    });
    rx
}
