//! The framework gates (`greta smoke --profile frameworks`, and `greta
//! install`'s post-install check) on real interpreters.
//!
//! - Always: envs broken on purpose (a torch that raises on import, a jax
//!   whose import hangs and starts a grandchild) fail cleanly, with the
//!   reason, in bounded time, and nothing they started is left running.
//! - With `GRETA_TEST_CPU_PROFILE=1` (CI runs it in its own job; ~3 GB of
//!   PyPI wheels fetched once into `target/test-cache`): `greta install
//!   --profile cpu` builds the real cpu profile, whose torch and jax pass
//!   their gates on the CPU (triton skipped with its reason) before the
//!   swap; `greta smoke --profile frameworks --env cpu` agrees; and the same
//!   frameworks with a sabotaged `matmul` fail with a wrong result.

use crate::support;
use crate::support::finding_ids;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn greta(home: &Path) -> Command {
    let mut c = crate::support::greta();
    c.env("HOME", home.join("home"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .stdin(Stdio::null());
    c
}

/// `greta smoke --profile frameworks --json` with `args` (which Python or
/// env, limits), report files under `<home>/out`: the output and the report
/// it printed.
fn smoke_frameworks(home: &Path, args: &[&str]) -> (Output, serde_json::Value) {
    let o = greta(home)
        .args(["smoke", "--profile", "frameworks", "--json"])
        .args(args)
        .arg("--out")
        .arg(home.join("out"))
        .output()
        .unwrap();
    let r = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("no JSON report on stdout ({e}): {}", text(&o)));
    (o, r)
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A venv without pip (`python -m venv --without-pip`), and its site-packages.
fn venv(python: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let o = Command::new(python)
        .args(["-m", "venv", "--without-pip"])
        .arg(dir)
        .output()
        .expect("python -m venv");
    assert!(o.status.success(), "{}", text(&o));
    let lib = dir.join("lib");
    let py = std::fs::read_dir(&lib)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("python")
        })
        .expect("lib/pythonX.Y");
    (dir.join("bin").join("python"), py.join("site-packages"))
}

fn write(p: &Path, s: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, s).unwrap();
}

/// Whether `pid` is a process that still runs (a zombie has ended).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            let state = s.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Waits (bounded) until none of `pids` runs; the kill was already sent,
/// the kernel only has to finish it.
fn assert_all_gone(pids: &[u32]) {
    let t = Instant::now();
    while pids.iter().any(|&p| running(p)) {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "still running after greta returned: {:?}",
            pids.iter().filter(|&&p| running(p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn gate<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["gates"].as_array().unwrap())
        .find(|g| g["id"] == id)
        .unwrap_or_else(|| panic!("no gate {id} in {report}"))
}

#[test]
fn broken_envs_fail_cleanly_with_the_reason_and_nothing_left_running() {
    let tmp = tempfile::tempdir().unwrap();
    let (py, sp) = venv(&support::python(), &tmp.path().join("broken"));
    let pids = tmp.path().join("pids");
    // torch raises on import, as a ROCm wheel without its runtime does.
    write(
        &sp.join("torch/__init__.py"),
        "raise ImportError('libamdhip64.so: cannot open shared object file: No such file or directory')\n",
    );
    // jax hangs in its import, after starting a grandchild that would
    // outlive a careless runner.
    write(
        &sp.join("jax/__init__.py"),
        &format!(
            "import os, subprocess, sys, time\n\
             p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)'])\n\
             open({pids:?} + '.tmp', 'w').write('%d %d %d' % (os.getppid(), os.getpid(), p.pid))\n\
             os.rename({pids:?} + '.tmp', {pids:?})\n\
             while True:\n    time.sleep(1)\n",
            pids = pids.display().to_string()
        ),
    );
    let t = Instant::now();
    let (o, r) = smoke_frameworks(
        tmp.path(),
        &[
            "--python",
            &py.to_string_lossy(),
            "--timeout",
            "3",
            "--seed",
            "11",
        ],
    );
    let took = t.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert_eq!(r["schema"], "greta.smoke/v1");
    assert_eq!(r["profile"], "frameworks");
    assert_eq!(r["status"], "fail");
    let ti = gate(&r, "torch.import");
    assert_eq!(ti["status"], "fail");
    assert!(
        ti["reason"]
            .as_str()
            .unwrap()
            .contains("ImportError: libamdhip64.so"),
        "{ti}"
    );
    let ji = gate(&r, "jax.import");
    assert_eq!(ji["status"], "fail");
    let why = ji["reason"].as_str().unwrap();
    assert!(
        why.contains("jax") && why.contains("did not finish within 3s") && why.contains("import"),
        "{why}"
    );
    // triton is not installed here: skipped, with that reason.
    let tr = gate(&r, "triton.import");
    assert_eq!(tr["status"], "skip");
    assert!(
        tr["reason"].as_str().unwrap().contains("not installed"),
        "{tr}"
    );
    let ids = finding_ids(&r);
    assert!(ids.contains(&"framework.import-failed"), "{ids:?}");
    assert!(ids.contains(&"framework.gate-failed"), "{ids:?}");
    // The table names them too (stderr with --json).
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("FAIL") && err.contains("framework.import-failed"),
        "{err}"
    );
    // The result files were written, and parse.
    let files: Vec<_> = std::fs::read_dir(tmp.path().join("out"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    // Nothing the run started is left: the gate runner, jax's child and
    // the grandchild it started.
    let ids: Vec<u32> = std::fs::read_to_string(&pids)
        .expect("the hanging import ran")
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    assert_all_gone(&ids);
}

#[test]
fn a_module_that_kills_its_process_is_named_with_the_step() {
    let tmp = tempfile::tempdir().unwrap();
    let (py, sp) = venv(&support::python(), &tmp.path().join("crash"));
    write(&sp.join("torch/__init__.py"), "import os\nos.abort()\n");
    let (o, r) = smoke_frameworks(
        tmp.path(),
        &["--python", &py.to_string_lossy(), "--timeout", "30"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let g = gate(&r, "torch.import");
    assert_eq!(g["status"], "fail");
    let why = g["reason"].as_str().unwrap();
    assert!(why.contains("signal 6") && why.contains("import"), "{why}");
}

#[test]
fn bad_arguments_are_exit_2_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let frameworks = ["smoke", "--profile", "frameworks"];
    for (args, says) in [
        (
            [&frameworks[..], &["--python", "/nonexistent/python3"]].concat(),
            "/nonexistent/python3",
        ),
        (
            [&frameworks[..], &["--env", "nosuchenv"]].concat(),
            "no greta env",
        ),
        (
            vec!["smoke", "--profile", "ultrasafe", "--python", "python3"],
            "go with --profile frameworks",
        ),
    ] {
        let o = greta(tmp.path()).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

/// The real cpu profile, built by `greta install` from PyPI (cached).
#[test]
fn cpu_profile_env_passes_torch_and_jax_and_a_sabotaged_matmul_fails() {
    if std::env::var_os("GRETA_TEST_CPU_PROFILE").is_none() {
        eprintln!("skipped: set GRETA_TEST_CPU_PROFILE=1 to build the real cpu profile (~3 GB from PyPI, cached in target/test-cache)");
        return;
    }
    let cache = std::env::var_os("GRETA_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-cache"));
    let tmp = tempfile::tempdir().unwrap();
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lock");
    let o = greta(tmp.path())
        .env("XDG_CACHE_HOME", &cache)
        .env("UV_CACHE_DIR", cache.join("uv"))
        .env("GRETA_LOCK_DIR", &lock)
        .args(["install", "--profile", "cpu", "--json"])
        .arg("--python")
        .arg(support::python())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["result"], "installed", "{j}");
    let checks = &j["report"]["checks"];
    for (m, gates) in [
        (
            "torch",
            &[
                "torch.matmul_f32",
                "torch.matmul_f16",
                "torch.matmul_bf16",
                "torch.softmax",
                "torch.sdpa",
            ][..],
        ),
        ("jax", &["jax.matmul_f32"][..]),
    ] {
        let got = checks[m]["gates"].as_array().unwrap();
        for id in gates {
            let g = got
                .iter()
                .find(|g| g["id"] == *id)
                .unwrap_or_else(|| panic!("{id} in {got:?}"));
            assert_eq!(g["status"], "pass", "{g}");
            assert!(g["rel_err"].as_f64().unwrap() < 1e-2, "{g}");
            assert!(g["device"].as_str().unwrap().starts_with("cpu"), "{g}");
        }
    }
    let tri = checks["triton"]["gates"].as_array().unwrap();
    assert_eq!(tri[1]["status"], "skip", "{tri:?}");
    assert!(
        tri[1]["reason"].as_str().unwrap().contains("cpu profile"),
        "{tri:?}"
    );
    let env = tmp.path().join("data/greta/envs/cpu");
    assert!(env.join("greta-env.json").is_file());

    // The smoke profile on the env greta built agrees, as greta.smoke/v1.
    let (o, r) = smoke_frameworks(tmp.path(), &["--env", "cpu", "--seed", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r["status"], "pass");
    assert_eq!(gate(&r, "torch.device")["status"], "pass");
    assert_eq!(gate(&r, "jax.matmul_f32")["status"], "pass");
    assert!(
        gate(&r, "torch.matmul_f32")["metrics"]["first_call_us"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(gate(&r, "triton.device")["status"], "skip");
    assert!(finding_ids(&r).is_empty(), "{r}");

    // The same frameworks with torch.matmul and jnp.matmul off by 1e-4
    // (relative): the f32 gates catch it, the f16/bf16 tolerance does not.
    let (py, sp) = venv(&env.join("bin/python"), &tmp.path().join("sabotaged"));
    let real_sp = std::fs::read_dir(env.join("lib"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .unwrap();
    write(&sp.join("a_real.pth"), &format!("{}\n", real_sp.display()));
    write(&sp.join("b_sabotage.pth"), "import greta_sabotage\n");
    // Patched on the first import made by the gate script (__main__) once
    // a framework is loaded: patching torch during its own import breaks it.
    write(
        &sp.join("greta_sabotage.py"),
        "import builtins, sys\n\
         _imp = builtins.__import__\n\
         def _patched(name, *a, **k):\n\
         \x20   m = _imp(name, *a, **k)\n\
         \x20   if sys._getframe(1).f_globals.get('__name__') != '__main__':\n\
         \x20       return m\n\
         \x20   t = sys.modules.get('torch')\n\
         \x20   if t is not None and hasattr(t, 'matmul') and not hasattr(t, '_sab'):\n\
         \x20       f = t.matmul\n\
         \x20       t.matmul = lambda a, b, _f=f: _f(a, b) * 1.0001\n\
         \x20       t._sab = True\n\
         \x20   jn = sys.modules.get('jax.numpy')\n\
         \x20   if jn is not None and hasattr(jn, 'matmul') and not hasattr(jn, '_sab'):\n\
         \x20       g = jn.matmul\n\
         \x20       jn.matmul = lambda a, b, _g=g, **k: _g(a, b, **k) * 1.0001\n\
         \x20       jn._sab = True\n\
         \x20   return m\n\
         builtins.__import__ = _patched\n",
    );
    let (o, r) = smoke_frameworks(tmp.path(), &["--python", &py.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    for id in ["torch.matmul_f32", "jax.matmul_f32"] {
        let g = gate(&r, id);
        assert_eq!(g["status"], "fail", "{g}");
        let rel = g["metrics"]["rel_err"].as_f64().unwrap();
        assert!((5e-5..2e-4).contains(&rel), "{g}");
    }
    assert_eq!(gate(&r, "torch.matmul_f16")["status"], "pass");
    assert_eq!(finding_ids(&r), ["framework.wrong-result"]);
}

/// `greta smoke --profile frameworks` with `args` on a venv whose torch
/// raises on import (a decided run: exit 1, with a report), result files
/// under `<home>/out`.
fn failing_frameworks_run(home: &Path, py: &Path, args: &[&str]) -> Output {
    greta(home)
        .args(["smoke", "--profile", "frameworks", "--python"])
        .arg(py)
        .args(["--timeout", "30", "--out"])
        .arg(home.join("out"))
        .args(args)
        .output()
        .unwrap()
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// A venv under `tmp` whose torch raises on import: a run there decides
/// (exit 1) and has a report to write, draw and summarise.
fn torch_that_fails(tmp: &Path) -> PathBuf {
    let (py, sp) = venv(&support::python(), &tmp.join("broken"));
    write(
        &sp.join("torch/__init__.py"),
        "raise ImportError('libamdhip64.so: cannot open shared object file')\n",
    );
    py
}

/// Each output flag is honoured by the frameworks profile as by the kernel
/// profiles (one test per flag). Without a flag the result files are
/// written (the control); `--no-save` writes none.
#[test]
fn frameworks_no_save_writes_no_result_files() {
    let tmp = tempfile::tempdir().unwrap();
    let py = torch_that_fails(tmp.path());
    let home = tmp.path().join("plain");
    let o = failing_frameworks_run(&home, &py, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(files_in(&home.join("out")).len(), 2, "{}", text(&o));

    let home = tmp.path().join("no-save");
    let o = failing_frameworks_run(&home, &py, &["--no-save"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(files_in(&home.join("out")), Vec::<PathBuf>::new());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("results:"));
}

#[test]
fn frameworks_html_draws_the_page() {
    let tmp = tempfile::tempdir().unwrap();
    let py = torch_that_fails(tmp.path());
    let page = tmp.path().join("page.html");
    let o = failing_frameworks_run(tmp.path(), &py, &["--html", &page.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert!(
        html.contains("<html") && html.contains("torch.import"),
        "{html}"
    );
}

#[test]
fn frameworks_prom_writes_the_textfile() {
    let tmp = tempfile::tempdir().unwrap();
    let py = torch_that_fails(tmp.path());
    let prom = tmp.path().join("greta.prom");
    let o = failing_frameworks_run(tmp.path(), &py, &["--prom", &prom.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let textfile = std::fs::read_to_string(&prom).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let status: Vec<&str> = textfile
        .lines()
        .filter(|l| l.starts_with("greta_smoke_status"))
        .collect();
    assert_eq!(status.len(), 1, "{textfile}");
    assert!(status[0].ends_with(" 1"), "{textfile}");
    assert!(textfile.contains("profile=\"frameworks\""), "{textfile}");
}

#[test]
fn frameworks_oneline_prints_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let py = torch_that_fails(tmp.path());
    let o = failing_frameworks_run(tmp.path(), &py, &["--oneline"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.lines().count(), 1, "{}", text(&o));
    assert!(out.starts_with("FAIL: frameworks"), "{out}");
    // The table went to stderr.
    assert!(String::from_utf8_lossy(&o.stderr).contains("torch.import"));
}

/// The kernel gates' flags mean nothing to the frameworks profile: each is
/// refused with exit 2 before an interpreter starts, never ignored.
#[test]
fn the_frameworks_profile_refuses_the_kernel_gates_flags() {
    let tmp = tempfile::tempdir().unwrap();
    for (flag, says) in [
        (&["--device", "0"][..], "--device"),
        (&["--backend", "vulkan"], "--backend"),
        (&["--baseline", "/nonexistent.json"], "--baseline"),
        (&["--deny-list", "/nonexistent.toml"], "--deny-list"),
        (&["--floor-fraction", "0.5"], "--floor-fraction"),
        (&["--peer-fraction", "0.5"], "--peer-fraction"),
        (&["--tune"], "--tune"),
        (&["--gate", "ultrasafe.fill"], "--gate"),
    ] {
        let o = greta(tmp.path())
            .args([
                "smoke",
                "--profile",
                "frameworks",
                "--python",
                "/nonexistent/python3",
            ])
            .args(flag)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{flag:?}: {}", text(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains("--profile frameworks does not take") && e.contains(says),
            "{flag:?}: {e}"
        );
    }
}

/// With no env active, no `--env` and no `--python`: several greta envs
/// are named and none is guessed (exit 2); the only one is used.
#[test]
fn with_no_env_active_the_greta_envs_are_named_or_the_only_one_is_used() {
    let tmp = tempfile::tempdir().unwrap();
    let envs = tmp.path().join("data/greta/envs");
    for name in ["cpu", "rocm"] {
        std::fs::create_dir_all(envs.join(name)).unwrap();
    }
    let o = greta(tmp.path())
        .args(["smoke", "--profile", "frameworks"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("2 greta envs (cpu, rocm)") && e.contains("--env NAME"),
        "{e}"
    );
    // With one left, that one is checked (its receipt is missing here, so
    // the run stops at it, naming it).
    std::fs::remove_dir(envs.join("rocm")).unwrap();
    let o = greta(tmp.path())
        .args(["smoke", "--profile", "frameworks"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("greta's only env, cpu") && e.contains("--env cpu: no greta env at"),
        "{e}"
    );
}
