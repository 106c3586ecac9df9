//! Finding, building and running `greta-hip-worker`, the HIP half of greta.
//!
//! Why a separate binary: the HIP backend links libamdhip64 (hip-sys), and
//! the `greta` binary must start on machines without ROCm. So the worker is
//! built *on the target*, against that machine's ROCm, by `greta install`
//! (or `greta smoke --backend hip` on first use), from greta's own source
//! tree: `cargo build --release -p greta-smoke --features hip --bin
//! greta-hip-worker`. Where it went is recorded (the env receipt), and
//! `greta` runs it and reads JSON from its stdout.
//!
//! Everything here explains itself: which binary was found and how, what is
//! about to be built and why, and — when it cannot — exactly what is missing
//! (cargo, hipcc, HIP headers, libamdhip64, a wrong HIP_PATH).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const WORKER_NAME: &str = "greta-hip-worker";

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(
        "greta-hip-worker not found (looked: {}); build it with `greta install` on this machine, or from greta's \
         source tree: cargo build --release -p greta-smoke --features hip --bin greta-hip-worker",
        searched.join(", ")
    )]
    NotFound { searched: Vec<String> },
    #[error("cannot build greta-hip-worker: {0}")]
    Prerequisite(String),
    #[error("building greta-hip-worker failed ({status}); the command was:\n  {command}\nlast lines of its output:\n{tail}")]
    BuildFailed {
        command: String,
        status: String,
        tail: String,
    },
    #[error("running {path}: {detail}")]
    Run { path: String, detail: String },
}

/// A worker binary and how it was found (said to the user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub path: PathBuf,
    pub how: String,
}

/// Where to look, in order: `$GRETA_HIP_WORKER`, the path recorded by the
/// last install, next to the running `greta`, the source tree's
/// `target/release`, then `PATH`.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub env_override: Option<PathBuf>,
    pub recorded: Option<PathBuf>,
    pub beside: Option<PathBuf>,
    pub tree_target: Option<PathBuf>,
    pub path_var: Option<std::ffi::OsString>,
}

impl Search {
    /// The live machine's search places; `recorded` comes from the env receipt.
    pub fn live(recorded: Option<PathBuf>) -> Search {
        Search {
            env_override: std::env::var_os("GRETA_HIP_WORKER").map(PathBuf::from),
            recorded,
            beside: std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf)),
            tree_target: source_tree().map(|t| target_dir(&t).join("release")),
            path_var: std::env::var_os("PATH"),
        }
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Finds the worker, or says every place it looked.
pub fn locate(s: &Search) -> Result<Located, WorkerError> {
    let mut searched = Vec::new();
    if let Some(p) = &s.env_override {
        // An explicit override that is wrong is an error, not a fallthrough.
        if is_executable(p) {
            return Ok(Located {
                path: p.clone(),
                how: "from $GRETA_HIP_WORKER".into(),
            });
        }
        return Err(WorkerError::NotFound {
            searched: vec![format!(
                "$GRETA_HIP_WORKER={} (not an executable file)",
                p.display()
            )],
        });
    }
    let candidates = [
        (s.recorded.clone(), "recorded by the last `greta install`"),
        (
            s.beside.as_ref().map(|d| d.join(WORKER_NAME)),
            "next to greta",
        ),
        (
            s.tree_target.as_ref().map(|d| d.join(WORKER_NAME)),
            "built in greta's source tree",
        ),
    ];
    for (cand, how) in candidates {
        if let Some(p) = cand {
            if is_executable(&p) {
                return Ok(Located {
                    path: p,
                    how: how.into(),
                });
            }
            let shown = p.display().to_string();
            // "next to greta" and "the source tree's target dir" are often
            // the same folder; name each place once.
            if !searched.contains(&shown) {
                searched.push(shown);
            }
        }
    }
    if let Some(path_var) = &s.path_var {
        if let Ok(p) = which::which_in(WORKER_NAME, Some(path_var), "/") {
            return Ok(Located {
                path: p,
                how: "on PATH".into(),
            });
        }
        searched.push("PATH".into());
    }
    Err(WorkerError::NotFound { searched })
}

/// greta's source tree: `$GRETA_SOURCE_DIR`, else the tree this greta was
/// built from if it is still there (it has the worker's source).
pub fn source_tree() -> Option<PathBuf> {
    let is_tree = |p: &Path| {
        p.join("Cargo.toml").is_file() && p.join("smoke/src/bin/greta-hip-worker.rs").is_file()
    };
    if let Some(p) = std::env::var_os("GRETA_SOURCE_DIR").map(PathBuf::from) {
        return is_tree(&p).then_some(p);
    }
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .to_path_buf();
    is_tree(&built_from).then_some(built_from)
}

/// `$CARGO_TARGET_DIR` when set, else `<tree>/target`: where cargo puts the worker.
pub fn target_dir(tree: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| tree.join("target"))
}

/// What the build needs from ROCm, found before cargo runs so a missing
/// piece is named instead of surfacing as a linker error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    pub cargo: PathBuf,
    pub hipcc: PathBuf,
    /// Directory holding `include/hip/hip_runtime_api.h` (what hip-sys compiles against).
    pub hip_root: PathBuf,
    /// The unversioned `libamdhip64.so` the linker needs (from the -dev package).
    pub libamdhip64: PathBuf,
}

/// The environment the checks read: injectable so tests can point it at fake trees.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub hip_path: Option<PathBuf>,
    pub rocm_path: Option<PathBuf>,
    pub path_var: Option<std::ffi::OsString>,
    /// Roots probed after HIP_PATH/ROCM_PATH (default: /opt/rocm, /usr).
    pub default_roots: Vec<PathBuf>,
    /// Library directories probed for libamdhip64.so besides `<root>/lib`.
    pub lib_dirs: Vec<PathBuf>,
}

impl Env {
    pub fn live() -> Env {
        Env {
            hip_path: std::env::var_os("HIP_PATH").map(PathBuf::from),
            rocm_path: std::env::var_os("ROCM_PATH").map(PathBuf::from),
            path_var: std::env::var_os("PATH"),
            default_roots: vec!["/opt/rocm".into(), "/usr".into()],
            lib_dirs: vec![
                "/usr/lib/x86_64-linux-gnu".into(),
                "/usr/lib64".into(),
                "/usr/lib".into(),
            ],
        }
    }
}

/// Checks cargo, hipcc, the HIP headers and libamdhip64 in the order the
/// build needs them.
pub fn check_toolchain(env: &Env) -> Result<Toolchain, WorkerError> {
    let pre = WorkerError::Prerequisite;
    let find = |name: &str| {
        env.path_var
            .as_ref()
            .and_then(|p| which::which_in(name, Some(p), "/").ok())
    };
    let cargo = find("cargo").ok_or_else(|| {
        pre("cargo is not on PATH; install Rust (https://rustup.rs) to build the HIP worker".into())
    })?;
    if let Some(hp) = &env.hip_path {
        if !hp.join("include/hip/hip_runtime_api.h").is_file() {
            return Err(pre(format!(
                "HIP_PATH={} is wrong: {}/include/hip/hip_runtime_api.h does not exist; unset HIP_PATH or point it at the \
                 ROCm/HIP root (e.g. /opt/rocm, or /usr for Debian's packages)",
                hp.display(),
                hp.display()
            )));
        }
    }
    let roots: Vec<PathBuf> = env
        .hip_path
        .iter()
        .chain(env.rocm_path.iter())
        .chain(env.default_roots.iter())
        .cloned()
        .collect();
    let hip_root = roots
        .iter()
        .find(|r| r.join("include/hip/hip_runtime_api.h").is_file())
        .cloned()
        .ok_or_else(|| {
            pre(format!(
                "the HIP headers (include/hip/hip_runtime_api.h) are not under any of {}; install them (Debian/Ubuntu: \
                 `apt install libamdhip64-dev`; AMD's ROCm repositories: `apt install rocm-hip-sdk`) or set HIP_PATH",
                roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
            ))
        })?;
    let hipcc = [hip_root.join("bin/hipcc")]
        .into_iter()
        .find(|p| is_executable(p))
        .or_else(|| find("hipcc"))
        .ok_or_else(|| {
            pre(format!(
                "hipcc not found ({}/bin/hipcc, PATH): it compiles greta's HIP kernels for this GPU; install it \
                 (Debian/Ubuntu: `apt install hipcc`; ROCm: `apt install rocm-hip-sdk`)",
                hip_root.display()
            ))
        })?;
    let lib_dirs: Vec<PathBuf> = roots
        .iter()
        .map(|r| r.join("lib"))
        .chain(env.lib_dirs.iter().cloned())
        .collect();
    let libamdhip64 = lib_dirs.iter().map(|d| d.join("libamdhip64.so")).find(|p| p.exists()).ok_or_else(|| {
        pre(format!(
            "libamdhip64.so (the link-time name of the HIP runtime) is not in {}; install the HIP runtime's \
             development package (Debian/Ubuntu: `apt install libamdhip64-dev`; ROCm: `apt install rocm-hip-runtime-dev`)",
            lib_dirs.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
        ))
    })?;
    Ok(Toolchain {
        cargo,
        hipcc,
        hip_root,
        libamdhip64,
    })
}

/// The cargo command that builds the worker from `tree` into `target`.
pub fn build_command(tc: &Toolchain, tree: &Path, target: &Path, release: bool) -> Command {
    let mut cmd = Command::new(&tc.cargo);
    cmd.current_dir(tree).arg("build");
    if release {
        cmd.arg("--release");
    }
    cmd.args([
        "-p",
        "greta-smoke",
        "--features",
        "hip",
        "--bin",
        WORKER_NAME,
        "--target-dir",
    ])
    .arg(target);
    // hip-sys finds the headers and library through HIP_PATH.
    cmd.env("HIP_PATH", &tc.hip_root);
    cmd
}

fn describe(cmd: &Command) -> String {
    let mut s = format!(
        "HIP_PATH={} {}",
        cmd.get_envs()
            .find(|(k, _)| *k == "HIP_PATH")
            .and_then(|(_, v)| v)
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_default(),
        cmd.get_program().to_string_lossy()
    );
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Builds the worker, saying what it does on `log`, and returns its path.
pub fn build(
    tc: &Toolchain,
    tree: &Path,
    target: &Path,
    release: bool,
    log: &mut dyn Write,
) -> Result<PathBuf, WorkerError> {
    let mut cmd = build_command(tc, tree, target, release);
    let command = describe(&cmd);
    let _ = writeln!(
        log,
        "greta: building the HIP worker against this machine's ROCm ({}, hipcc {})\n  {command}",
        tc.libamdhip64.display(),
        tc.hipcc.display()
    );
    let started = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| WorkerError::Prerequisite(format!("running {}: {e}", tc.cargo.display())))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(25)..].join("\n");
        return Err(WorkerError::BuildFailed {
            command,
            status: out.status.to_string(),
            tail,
        });
    }
    let path = target
        .join(if release { "release" } else { "debug" })
        .join(WORKER_NAME);
    if !is_executable(&path) {
        return Err(WorkerError::BuildFailed {
            command,
            status: out.status.to_string(),
            tail: format!("cargo succeeded but {} is not there", path.display()),
        });
    }
    let _ = writeln!(
        log,
        "greta: built {} in {:.0} s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(path)
}

/// The worker, built now if it is nowhere yet: what `greta smoke --backend
/// hip` (first use) and `greta install` call. Finding it is instant; building
/// needs cargo, ROCm's headers/library/hipcc and greta's source tree, and
/// says so on `log` before it starts (minutes).
pub fn ensure(search: &Search, log: &mut dyn Write) -> Result<Located, WorkerError> {
    let searched = match locate(search) {
        Ok(found) => return Ok(found),
        // An explicit, wrong $GRETA_HIP_WORKER is reported, not papered over.
        Err(e) if search.env_override.is_some() => return Err(e),
        Err(WorkerError::NotFound { searched }) => searched,
        Err(e) => return Err(e),
    };
    let tree = source_tree().ok_or_else(|| {
        WorkerError::Prerequisite(format!(
            "greta-hip-worker is not built (looked: {}) and greta's source tree is not here to build it from; set \
             GRETA_SOURCE_DIR to a greta checkout",
            searched.join(", ")
        ))
    })?;
    let tc = check_toolchain(&Env::live())?;
    let _ = writeln!(
        log,
        "greta: greta-hip-worker is not built yet (looked: {})",
        searched.join(", ")
    );
    let path = build(&tc, &tree, &target_dir(&tree), true, log)?;
    Ok(Located {
        path,
        how: "built now from greta's source tree".into(),
    })
}

/// Copies the worker into `dir` atomically (temporary name, then rename),
/// so an env never holds half a binary; returns the installed path.
pub fn install_into(worker: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let tmp = tempfile::Builder::new()
        .prefix(".greta-hip-worker-")
        .tempfile_in(dir)?;
    std::fs::copy(worker, tmp.path())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))?;
    let dest = dir.join(WORKER_NAME);
    tmp.persist(&dest).map_err(|e| e.error)?;
    Ok(dest)
}

/// What one worker run printed and how it ended.
#[derive(Debug)]
pub struct WorkerOutput {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the worker with `args`, killing it after `limit` (a hung GPU must
/// not hang greta), and returns its exit code, JSON stdout and stderr.
pub fn run(worker: &Path, args: &[&str], limit: Duration) -> Result<WorkerOutput, WorkerError> {
    let err = |detail: String| WorkerError::Run {
        path: worker.display().to_string(),
        detail,
    };
    let out_f = tempfile::tempfile().map_err(|e| err(e.to_string()))?;
    let err_f = tempfile::tempfile().map_err(|e| err(e.to_string()))?;
    let mut child = Command::new(worker)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out_f.try_clone().map_err(|e| err(e.to_string()))?)
        .stderr(err_f.try_clone().map_err(|e| err(e.to_string()))?)
        .spawn()
        .map_err(|e| err(e.to_string()))?;
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| err(e.to_string()))? {
            break s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(err(format!(
                "no answer within {} s; killed",
                limit.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |mut f: std::fs::File| -> String {
        use std::io::{Read, Seek};
        let mut s = String::new();
        let _ = f.seek(std::io::SeekFrom::Start(0));
        let _ = f.read_to_string(&mut s);
        s
    };
    Ok(WorkerOutput {
        code: status.code().unwrap_or(2),
        stdout: read(out_f),
        stderr: read(err_f),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn exe(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "#!/bin/sh\necho \"$@\"\n").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn locate_follows_the_documented_order() {
        let t = tempfile::tempdir().unwrap();
        let (rec, beside, tree) = (
            t.path().join("env/bin"),
            t.path().join("greta"),
            t.path().join("tree/release"),
        );
        let mut s = Search {
            recorded: Some(rec.join(WORKER_NAME)),
            beside: Some(beside.clone()),
            tree_target: Some(tree.clone()),
            path_var: Some(t.path().join("nowhere").into_os_string()),
            ..Search::default()
        };
        let e = locate(&s).unwrap_err().to_string();
        assert!(
            e.contains("env/bin/greta-hip-worker")
                && e.contains("PATH")
                && e.contains("--features hip"),
            "{e}"
        );
        exe(&tree.join(WORKER_NAME));
        assert_eq!(locate(&s).unwrap().how, "built in greta's source tree");
        exe(&beside.join(WORKER_NAME));
        assert_eq!(locate(&s).unwrap().how, "next to greta");
        exe(&rec.join(WORKER_NAME));
        let l = locate(&s).unwrap();
        assert_eq!(
            (l.path, l.how.as_str()),
            (
                rec.join(WORKER_NAME),
                "recorded by the last `greta install`"
            )
        );
        s.env_override = Some(t.path().join("missing"));
        assert!(locate(&s)
            .unwrap_err()
            .to_string()
            .contains("$GRETA_HIP_WORKER="));
        // A non-executable file is not a worker.
        let plain = t.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        s.env_override = Some(plain);
        assert!(locate(&s).is_err());
    }

    fn fake_rocm(root: &Path, hipcc: bool, headers: bool, lib: bool) {
        if hipcc {
            exe(&root.join("bin/hipcc"));
        }
        if headers {
            std::fs::create_dir_all(root.join("include/hip")).unwrap();
            std::fs::write(root.join("include/hip/hip_runtime_api.h"), "").unwrap();
        }
        if lib {
            std::fs::create_dir_all(root.join("lib")).unwrap();
            std::fs::write(root.join("lib/libamdhip64.so"), "").unwrap();
        }
    }

    fn env_with(t: &Path, root: &Path) -> Env {
        exe(&t.join("bin/cargo"));
        Env {
            hip_path: None,
            rocm_path: None,
            path_var: Some(t.join("bin").into_os_string()),
            default_roots: vec![root.to_path_buf()],
            lib_dirs: vec![],
        }
    }

    #[test]
    fn every_missing_prerequisite_is_named() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("rocm");
        let env = env_with(t.path(), &root);
        let e = check_toolchain(&Env {
            path_var: Some(t.path().join("none").into_os_string()),
            ..env.clone()
        });
        assert!(e.unwrap_err().to_string().contains("cargo is not on PATH"));
        let e = check_toolchain(&env).unwrap_err().to_string();
        assert!(
            e.contains("HIP headers") && e.contains("libamdhip64-dev"),
            "{e}"
        );
        fake_rocm(&root, false, true, false);
        let e = check_toolchain(&env).unwrap_err().to_string();
        assert!(e.contains("hipcc not found"), "{e}");
        fake_rocm(&root, true, true, false);
        let e = check_toolchain(&env).unwrap_err().to_string();
        assert!(
            e.contains("libamdhip64.so") && e.contains("development package"),
            "{e}"
        );
        fake_rocm(&root, true, true, true);
        let tc = check_toolchain(&env).unwrap();
        assert_eq!(tc.hip_root, root);
        assert_eq!(tc.libamdhip64, root.join("lib/libamdhip64.so"));
        let e = check_toolchain(&Env {
            hip_path: Some(t.path().join("wrong")),
            ..env
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("HIP_PATH=") && e.contains("is wrong"), "{e}");
    }

    #[test]
    fn the_build_command_is_the_documented_one_and_failures_show_cargo_output() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("rocm");
        fake_rocm(&root, true, true, true);
        let mut tc = check_toolchain(&env_with(t.path(), &root)).unwrap();
        let cmd = build_command(
            &tc,
            Path::new("/src/greta"),
            Path::new("/src/greta/target"),
            true,
        );
        let text = describe(&cmd);
        assert!(
            text.ends_with("build --release -p greta-smoke --features hip --bin greta-hip-worker --target-dir /src/greta/target"),
            "{text}"
        );
        assert!(
            text.starts_with(&format!("HIP_PATH={} ", root.display())),
            "{text}"
        );
        // A cargo that fails: its output tail is in the error.
        let cargo = t.path().join("failing/cargo");
        std::fs::create_dir_all(cargo.parent().unwrap()).unwrap();
        std::fs::write(
            &cargo,
            "#!/bin/sh\necho 'error: linking with `cc` failed' >&2\nexit 101\n",
        )
        .unwrap();
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
        tc.cargo = cargo;
        let mut log = Vec::new();
        let e = build(&tc, t.path(), &t.path().join("target"), true, &mut log)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("linking with `cc` failed") && e.contains("exit status: 101"),
            "{e}"
        );
        assert!(String::from_utf8(log)
            .unwrap()
            .contains("building the HIP worker against this machine's ROCm"));
    }

    /// The real thing: checks this machine's ROCm, builds the worker from
    /// this source tree with cargo, and runs it. Without an AMD GPU it must
    /// exit 2 saying no HIP device was found and why; it must build kernels
    /// for gfx90a and refuse gfx942 on ROCm 5.2. Slow (a cargo build of the
    /// worker, minutes on a cold target dir), so scripts/test.sh runs it
    /// explicitly: `cargo test -p greta --bin greta hip_worker -- --include-ignored`.
    #[test]
    #[ignore = "builds greta-hip-worker with cargo (minutes); run by scripts/test.sh"]
    fn builds_the_real_worker_and_it_explains_a_missing_gpu() {
        let tc = check_toolchain(&Env::live()).unwrap_or_else(|e| panic!("{e}"));
        let tree = source_tree().expect("greta's source tree");
        // The same target dir as the running `cargo test`: cargo does not hold
        // its lock while tests run, and the dependencies are already built.
        let target = target_dir(&tree);
        let mut log = Vec::new();
        let worker = build(&tc, &tree, &target, false, &mut log).unwrap_or_else(|e| panic!("{e}"));
        let log = String::from_utf8(log).unwrap();
        assert!(
            log.contains("--features hip --bin greta-hip-worker"),
            "{log}"
        );
        let limit = Duration::from_secs(300);
        let cache = tempfile::tempdir().unwrap();
        let cache_arg = cache.path().to_str().unwrap();

        let built = run(
            &worker,
            &["build-kernels", "--gfx", "gfx90a", "--cache-dir", cache_arg],
            limit,
        )
        .unwrap();
        assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
        let v: serde_json::Value = serde_json::from_str(&built.stdout).unwrap();
        assert_eq!(v["schema"], "greta.hip-kernels/v1");
        assert_eq!(v["built"][0]["compiled"], true);
        let again = run(
            &worker,
            &["build-kernels", "--gfx", "gfx90a", "--cache-dir", cache_arg],
            limit,
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
        assert_eq!(
            v["built"][0]["compiled"], false,
            "second build was not a cache hit"
        );

        let old = run(
            &worker,
            &["build-kernels", "--gfx", "gfx942", "--cache-dir", cache_arg],
            limit,
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&old.stdout).unwrap();
        if v["error"].is_null() {
            assert_eq!(old.code, 0, "{}", old.stderr); // a ROCm that knows gfx942
        } else {
            assert_eq!(
                (old.code, &v["unsupported_target"]),
                (2, &serde_json::Value::Bool(true)),
                "{}",
                old.stderr
            );
            assert!(
                old.stderr
                    .contains("gfx target gfx942 is not supported by this hipcc"),
                "{}",
                old.stderr
            );
        }

        if !Path::new("/dev/kfd").exists() {
            let smoke = run(&worker, &["smoke", "--profile", "ultrasafe"], limit).unwrap();
            assert_eq!(smoke.code, 2, "{}{}", smoke.stdout, smoke.stderr);
            assert!(
                smoke
                    .stderr
                    .contains("no HIP device found: hipGetDeviceCount returned"),
                "{}",
                smoke.stderr
            );
            assert!(smoke.stderr.contains("/dev/kfd"), "{}", smoke.stderr);
            let v: serde_json::Value = serde_json::from_str(&smoke.stdout).unwrap();
            assert_eq!(v["error"]["kind"], "no_device");
            let devices = run(&worker, &["devices"], limit).unwrap();
            assert_eq!(devices.code, 2);
            let v: serde_json::Value = serde_json::from_str(&devices.stdout).unwrap();
            assert_eq!(v["devices"].as_array().map(Vec::len), Some(0));
            assert!(v["error"]
                .as_str()
                .unwrap()
                .starts_with("no HIP device found"));
        }
    }

    #[test]
    fn install_is_atomic_and_executable_and_run_reports_exit_codes() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("w");
        std::fs::write(&src, "#!/bin/sh\necho '{\"ok\":1}'\necho why >&2\nexit 2\n").unwrap();
        let dest = install_into(&src, &t.path().join("env/bin")).unwrap();
        assert!(is_executable(&dest));
        assert_eq!(
            std::fs::read_dir(t.path().join("env/bin")).unwrap().count(),
            1
        );
        let out = run(&dest, &["devices"], Duration::from_secs(10)).unwrap();
        assert_eq!(
            (out.code, out.stdout.trim(), out.stderr.trim()),
            (2, "{\"ok\":1}", "why")
        );
        let slow = t.path().join("slow");
        std::fs::write(&slow, "#!/bin/sh\nexec sleep 30\n").unwrap();
        std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = run(&slow, &[], Duration::from_millis(300))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no answer within"), "{e}");
    }
}
