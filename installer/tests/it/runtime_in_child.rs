//! greta's own process never loads a GPU runtime library. Opening
//! libamdhip64 or libcuda runs its initialisers, and a broken runtime can
//! crash or hang the process that opened it: the device child exists so
//! that this cannot take greta down. So which runtime `--backend auto`
//! would use, and which one `greta install` records for a rocm env, are
//! asked of the child too.
//!
//! The witness: a fake libamdhip64 whose constructor appends the pid of
//! the process that loaded it to a file. It must be loaded (the child
//! looked), and never by greta's own pid.

use std::path::{Path, PathBuf};
use std::process::Command;

const LOADER_SOURCE: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void loaded(void) {
    const char *f = getenv("FAKE_RUNTIME_LOG");
    if (!f) return;
    char args[4096] = {0};
    FILE *c = fopen("/proc/self/cmdline", "r");
    size_t n = c ? fread(args, 1, sizeof args - 1, c) : 0;
    if (c) fclose(c);
    for (size_t i = 0; i < n; i++) if (args[i] == 0) args[i] = ' ';
    FILE *o = fopen(f, "a");
    if (o) { fprintf(o, "%d %s\n", (int)getpid(), args); fclose(o); }
}
"#;

/// The fake runtime built into `dir` (a C compiler is part of the test
/// machine, as for the fuzz harnesses).
fn fake_runtime(dir: &Path) -> PathBuf {
    let src = dir.join("fake.c");
    std::fs::write(&src, LOADER_SOURCE).unwrap();
    let lib = dir.join("libamdhip64.so");
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .expect("cc runs");
    assert!(st.success(), "cc failed");
    lib
}

/// Each process that loaded the fake runtime: its pid and command line.
fn loaders(log: &Path) -> Vec<(u32, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (pid, args) = l.split_once(' ').unwrap_or((l, ""));
            (pid.parse().unwrap(), args.trim().to_string())
        })
        .collect()
}

/// `c` run with the fake runtime: it was loaded, only ever by greta's
/// device child (`greta __gpu serve`), never by the process started.
fn loaded_only_by_the_child(c: Command) {
    let d = tempfile::tempdir().unwrap();
    let (pid, loaders, said) = run_with_fake(c, d.path());
    assert!(!loaders.is_empty(), "no process loaded the runtime: {said}");
    for (p, args) in &loaders {
        assert!(
            *p != pid && args.contains(" __gpu serve"),
            "{args:?} ({p}; greta is {pid}) loaded the HIP runtime, not the device child: {said}"
        );
    }
}

/// Runs `c` with the fake runtime as GRETA_HIP_LIB and GRETA_CUDA_LIB;
/// greta's pid and the loaders' pids.
fn run_with_fake(mut c: Command, dir: &Path) -> (u32, Vec<(u32, String)>, String) {
    let lib = fake_runtime(dir);
    let log = dir.join("loaded-by");
    c.env("GRETA_HIP_LIB", &lib)
        .env("GRETA_CUDA_LIB", &lib)
        .env("FAKE_RUNTIME_LOG", &log)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (pid, loaders(&log), said)
}

/// greta with `args`, its data and cache under `dir`.
fn greta_in(dir: &Path, args: &[&str]) -> Command {
    let mut c = crate::support::greta();
    c.args(args)
        .env("XDG_DATA_HOME", dir)
        .env("XDG_CACHE_HOME", dir.join("cache"));
    c
}

#[test]
fn backend_auto_asks_the_child_which_hip_runtime_there_is() {
    let d = tempfile::tempdir().unwrap();
    loaded_only_by_the_child(greta_in(
        d.path(),
        &[
            "smoke",
            "--backend",
            "auto",
            "--profile",
            "ultrasafe",
            "--json",
        ],
    ));
}

#[test]
fn the_doctor_asks_the_child_too() {
    let d = tempfile::tempdir().unwrap();
    loaded_only_by_the_child(greta_in(d.path(), &["doctor", "--json"]));
}

#[test]
fn the_install_hip_step_asks_the_child_for_the_runtime() {
    let h = crate::install_hip::rocm_harness();
    let py = crate::support::python();
    loaded_only_by_the_child(h.cmd(&[
        "install",
        "--reinstall",
        "--profile",
        "rocm6.4",
        "--name",
        "rocm",
        "--python",
        py.to_str().unwrap(),
        // The stand-in torch cannot compute: imports only, then the HIP step.
        "--framework-check",
        "imports",
    ]));
}
