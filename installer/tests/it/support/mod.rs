//! Test harness for `greta install`: a loopback index with fresh wheels, a
//! lock dir pointing at it, private HOME/XDG dirs, and a way to run the real
//! `greta` binary against all of that. Nothing here touches the internet.

#![allow(dead_code)]

pub mod claims;
pub mod docs_part;
pub mod greta;
pub mod pty;
pub mod run;
pub mod server;
pub mod sid_chroot;
pub mod uvtool;
pub mod wheel;

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub use greta::greta;
#[allow(unused_imports)]
pub use server::{Fault, Server};
pub use wheel::Wheel;

pub fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// The interpreter the tests build envs with: `GRETA_TEST_PYTHON`, else
/// `python3` on PATH.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("GRETA_TEST_PYTHON") {
        return PathBuf::from(p);
    }
    which::which("python3")
        .expect("python3 must be on PATH for the install tests (scripts/setup.sh installs it)")
}

/// "3.11" of [`python`].
pub fn python_xy() -> String {
    let o = Command::new(python())
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .expect("run python3");
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// uv is required, never silently skipped: the product's fast path is
/// under test.
pub fn require_uv() -> PathBuf {
    which::which("uv").unwrap_or_else(|_| {
        panic!("uv is not on PATH: the install tests drive real uv. Run `bash scripts/setup.sh --test` (it runs `python3 -m pip install uv`).")
    })
}

pub struct Harness {
    pub server: Server,
    pub dir: tempfile::TempDir,
    pub wheels: Vec<Wheel>,
}

impl Harness {
    /// A server with fake torch, triton and jax wheels (each `blob` random
    /// bytes) and a lock dir whose `cpu` profile pins them.
    pub fn new(blob: usize) -> Harness {
        Self::with_wheels(vec![
            wheel::torch("2.5.1", None, None, blob),
            wheel::triton("3.1.0", blob / 2),
            wheel::jax("0.4.35", blob / 3),
        ])
    }

    pub fn with_wheels(wheels: Vec<Wheel>) -> Harness {
        let server = Server::start();
        for w in &wheels {
            server.add_wheel(&w.project, &w.filename, w.bytes.clone());
        }
        let h = Self::serving(server, wheels);
        h.write_lock();
        h
    }

    /// Private HOME/XDG/lock dirs around `server` (already serving
    /// `wheels`); the lock dir is left empty for the test to fill.
    pub fn serving(server: Server, wheels: Vec<Wheel>) -> Harness {
        let dir = tempfile::Builder::new()
            .prefix("greta-install-test")
            .tempdir()
            .unwrap();
        for d in ["home", "cache", "data", "lock"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        Harness {
            server,
            dir,
            wheels,
        }
    }

    pub fn lock_dir(&self) -> PathBuf {
        self.dir.path().join("lock")
    }
    pub fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("cache").join("greta")
    }
    pub fn envs_dir(&self) -> PathBuf {
        self.dir.path().join("data").join("greta").join("envs")
    }
    pub fn env_dir(&self, name: &str) -> PathBuf {
        self.envs_dir().join(name)
    }

    pub fn wheel(&self, project: &str) -> &Wheel {
        self.wheels.iter().find(|w| w.project == project).unwrap()
    }

    /// Makes every download of torch's wheel crawl (`chunk` bytes, then a
    /// pause of `delay_ms`), so a test can act while it is under way;
    /// returns the wheel's file name.
    pub fn throttle_torch(&self, chunk: usize, delay_ms: u64) -> String {
        let torch = self.wheel("torch").filename.clone();
        self.server.fault_always(
            &torch,
            Fault::Throttle {
                chunk,
                delay: std::time::Duration::from_millis(delay_ms),
            },
        );
        torch
    }

    /// `lock/matrix.toml` with a `cpu` profile and `lock/pylock.cpu.toml`
    /// pinning every wheel at its loopback URL.
    pub fn write_lock(&self) {
        std::fs::write(self.lock_dir().join("matrix.toml"), self.matrix_text()).unwrap();
        std::fs::write(self.lock_dir().join("pylock.cpu.toml"), self.pylock_text()).unwrap();
    }

    pub fn matrix_text(&self) -> String {
        let xy = python_xy();
        format!(
            r#"# Test matrix: one cpu profile served from a loopback index.
schema = 1

[profiles.cpu]
backend = "cpu"
summary = "CPU-only test profile"
status = "locked"
serves = "*"
python = ["{xy}"]
indexes = ["https://download.pytorch.org/whl/cpu"]
requirements = ["torch", "triton", "jax"]
lockfile = "pylock.cpu.toml"
"#
        )
    }

    /// Adds a `rocm6.4` profile (gfx942 wheels) whose lockfile pins these
    /// wheels, to `matrix.toml`.
    pub fn add_rocm_profile(&self, wheels: &[&Wheel]) {
        let m = format!(
            r#"{}
[profiles."rocm6.4"]
backend = "rocm"
summary = "ROCm 6.4 test profile"
status = "locked"
backend-version = "6.4.1"
serves = ">=6.2.0, <6.5.0"
gfx = ["gfx942"]
python = ["{}"]
indexes = ["https://download.pytorch.org/whl/rocm6.4"]
requirements = ["torch"]
lockfile = "pylock.rocm6-4.toml"
"#,
            self.matrix_text(),
            python_xy()
        );
        std::fs::write(self.lock_dir().join("matrix.toml"), m).unwrap();
        std::fs::write(
            self.lock_dir().join("pylock.rocm6-4.toml"),
            self.pylock_for(wheels),
        )
        .unwrap();
    }

    pub fn pylock_text(&self) -> String {
        self.pylock_for(&self.wheels.iter().collect::<Vec<_>>())
    }

    pub fn pylock_for(&self, wheels: &[&Wheel]) -> String {
        let mut s = String::from(
            "# Test lock for the loopback index.\nlock-version = \"1.0\"\ncreated-by = \"greta-tests\"\nrequires-python = \">=3.8\"\n",
        );
        for w in wheels {
            s.push_str(&format!(
                "\n[[packages]]\nname = \"{}\"\nversion = \"{}\"\nwheels = [\n  {{ name = \"{}\", url = \"{}\", size = {}, hashes = {{ sha256 = \"{}\" }} }},\n]\n",
                w.project,
                w.version,
                w.filename,
                self.server.file_url(&w.filename),
                w.bytes.len(),
                w.sha256
            ));
        }
        s
    }

    /// The real binary with private HOME/XDG dirs, short timeouts and backoff.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = greta();
        c.args(args)
            .env("HOME", self.dir.path().join("home"))
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("GRETA_LOCK_DIR", self.lock_dir())
            .env("GRETA_FETCH_BACKOFF_MS", "20")
            .env("GRETA_FETCH_TIMEOUT_S", "2")
            .env("UV_CACHE_DIR", self.dir.path().join("cache").join("uv"))
            .env("PIP_NO_CACHE_DIR", "1")
            .stdin(Stdio::null());
        c
    }

    /// `greta install --reinstall --profile cpu --python <python3> --no-smoke
    /// ARGS`: every call builds the env, also when the previous one is up to
    /// date (the tests of fetching, faults and kills are about that path;
    /// `install_uptodate.rs` tests the no-op with [`Harness::install_plain`]).
    pub fn install(&self, extra: &[&str]) -> Output {
        let mut args = vec!["--reinstall"];
        args.extend_from_slice(extra);
        self.install_plain(&args)
    }

    /// `greta install --profile cpu --python <python3> --no-smoke ARGS`.
    pub fn install_plain(&self, extra: &[&str]) -> Output {
        self.install_command(extra).output().unwrap()
    }

    /// The command of [`Harness::install_plain`], not yet run (e.g. to
    /// run it on a pseudo-terminal).
    pub fn install_command(&self, extra: &[&str]) -> Command {
        let mut args = vec!["--no-smoke"];
        args.extend_from_slice(extra);
        self.install_with(&python(), &args)
    }

    /// `greta install --profile cpu --python PYTHON ARGS`, not yet run
    /// (the framework gates run unless ARGS say `--no-smoke`).
    pub fn install_with(&self, python: &Path, extra: &[&str]) -> Command {
        let mut args = vec!["install", "--profile", "cpu", "--python"];
        args.push(python.to_str().unwrap());
        args.extend_from_slice(extra);
        self.cmd(&args)
    }

    /// `greta bundle --profile cpu --python X.Y -o OUT ARGS`, not yet run.
    pub fn bundle_command(&self, out: &Path, extra: &[&str]) -> Command {
        let xy = python_xy();
        let mut args = vec![
            "bundle",
            "--profile",
            "cpu",
            "--python",
            &xy,
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.cmd(&args)
    }

    /// `greta install --bundle BUNDLE --python PY --no-smoke ARGS`, not yet
    /// run, on a node with no lock dir of its own.
    pub fn bundle_install_command(&self, bundle: &Path, py: &Path, extra: &[&str]) -> Command {
        let mut args = vec![
            "install",
            "--bundle",
            bundle.to_str().unwrap(),
            "--python",
            py.to_str().unwrap(),
            "--no-smoke",
        ];
        args.extend_from_slice(extra);
        let mut c = self.cmd(&args);
        c.env_remove("GRETA_LOCK_DIR");
        c
    }

    /// Imports the frameworks with the env's own python and returns what
    /// torch says about its build.
    pub fn import_in_env(&self, name: &str) -> serde_json::Value {
        let py = self.env_dir(name).join("bin").join("python");
        let o = Command::new(&py)
            .args([
                "-I",
                "-c",
                "import json, torch, triton, jax; print(json.dumps({'torch': torch.__version__, 'hip': torch.version.hip, 'triton': triton.__version__, 'jax': jax.__version__, 'file': torch.__file__}))",
            ])
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", py.display()));
        assert!(
            o.status.success(),
            "import in env failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// The receipt of an env.
    pub fn receipt(&self, name: &str) -> serde_json::Value {
        serde_json::from_slice(&self.receipt_bytes(name)).unwrap()
    }

    /// The receipt of an env as it is on disk, to prove it unchanged.
    pub fn receipt_bytes(&self, name: &str) -> Vec<u8> {
        let p = self.env_dir(name).join("greta-env.json");
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// Files under the cache's verified tree.
    pub fn cached_wheels(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        walk(&self.cache_dir().join("wheels"), &mut out);
        out.sort();
        out
    }

    /// The verified cache's file of `project`'s wheel, if it is there.
    pub fn cached_wheel(&self, project: &str) -> Option<PathBuf> {
        let name = &self.wheel(project).filename;
        self.cached_wheels().into_iter().find(|p| p.ends_with(name))
    }

    /// Entries of the envs dir (hidden ones included): nothing half-built
    /// may linger there after a failure. `.trash-*` (a replaced env that a
    /// detached `rm -rf` may still be deleting) is by design and left out.
    /// What is in the envs dir, with the envs being built (inside
    /// `.staging/`) listed as `.staging/NAME`; trash being deleted is left out.
    pub fn envs_entries(&self) -> Vec<String> {
        let names = |d: &Path| -> Vec<String> {
            std::fs::read_dir(d)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut v: Vec<String> = names(&self.envs_dir())
            .into_iter()
            .filter(|n| !n.starts_with(".trash-") && n != ".staging")
            .collect();
        v.extend(
            names(&self.envs_dir().join(".staging"))
                .into_iter()
                .map(|n| format!(".staging/{n}")),
        );
        v.sort();
        v
    }
}

fn walk(p: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            if e.path().is_dir() {
                walk(&e.path(), out);
            } else if !e.file_name().to_string_lossy().starts_with('.') {
                out.push(e.path());
            }
        }
    }
}

/// The env names in `greta env list --json`'s output, in its order.
pub fn env_names(list: &serde_json::Value) -> Vec<&str> {
    list["envs"]
        .as_array()
        .expect("env list --json has an envs array")
        .iter()
        .map(|e| e["name"].as_str().expect("each env has a name"))
        .collect()
}

/// The `key` string of every object in the array `items`, sorted: a wheel
/// set's names or sha256s, to compare as a set.
pub fn sorted_strings(items: &serde_json::Value, key: &str) -> Vec<String> {
    let mut v: Vec<String> = items
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {items}"))
        .iter()
        .map(|o| {
            o[key]
                .as_str()
                .unwrap_or_else(|| panic!("no string {key:?} in {o}"))
                .to_string()
        })
        .collect();
    v.sort();
    v
}

/// The object of the array `items` whose `key` is the string `value`.
pub fn find_by<'a>(
    items: &'a serde_json::Value,
    key: &str,
    value: &str,
) -> Option<&'a serde_json::Value> {
    items
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {items}"))
        .iter()
        .find(|o| o[key] == value)
}

/// The ids of a report's findings, in its order: `doctor --json` itself, or
/// the `report` of `install --json`.
pub fn finding_ids(report: &serde_json::Value) -> Vec<&str> {
    report["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings array in {report}"))
        .iter()
        .map(|f| f["id"].as_str().expect("each finding has an id"))
        .collect()
}

pub fn text(o: &Output) -> String {
    format!(
        "status: {}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Reads a child's stderr until a line contains `needle` (the pause hook
/// prints one), then keeps draining it in the background.
pub fn wait_for_line(child: &mut std::process::Child, needle: &str) {
    use std::io::BufRead;
    let err = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    let want = needle.to_string();
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(&want) {
                let _ = tx.send(Ok(()));
            }
        }
        let _ = tx.send(Err(seen));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(Ok(())) => {}
        Ok(Err(seen)) => panic!("child exited before {needle:?}:\n{seen}"),
        Err(_) => panic!("no {needle:?} within 120 s"),
    }
}

/// Spawns `c` with SIGINT at its default action, as a terminal's foreground
/// job has it (a test harness may ignore it), stdin and stdout closed and
/// stderr piped: the start of every Ctrl-C test.
pub fn spawn_interruptible(mut c: Command) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: signal() is async-signal-safe; the child only execs after it.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    c.spawn().unwrap()
}
