//! What a new user's shell gets from greta's command-line definition: the
//! completion scripts load in the real bash, zsh and fish and complete a
//! subcommand and a flag; the manual page renders with man-db's `man -l`;
//! `greta --help` ends with the first steps and the exit codes.

use crate::support::greta;
use crate::support::pty::converse;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn stdout_of(args: &[&str]) -> String {
    let o = greta().args(args).output().unwrap();
    assert!(o.status.success(), "greta {args:?}: {o:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// A PATH whose first entry holds the greta under test.
fn path_with_greta() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_greta")).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The script `greta completions SHELL` writes, saved as `name` in `dir`.
fn script(shell: &str, dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, stdout_of(&["completions", shell])).unwrap();
    p
}

/// Interactive bash: `greta do<TAB>` becomes `greta doctor`, and
/// `greta smoke --prof<TAB>` becomes `--profile`.
#[test]
fn bash_completes_a_subcommand_and_a_flag() {
    let d = tempfile::tempdir().unwrap();
    let s = script("bash", d.path(), "greta.bash");
    let mut c = Command::new("bash");
    c.args(["--norc", "--noprofile", "-i"])
        .env("PATH", path_with_greta())
        .env("PS1", "$ ")
        .env("TERM", "xterm");
    let seen = converse(
        c,
        &[
            &format!("source {}\n", s.display()),
            "greta do\t",
            "\x15greta smoke --prof\t",
        ],
        "--profile",
        Duration::from_secs(20),
    );
    assert!(seen.contains("greta doctor"), "{seen}");
    assert!(seen.contains("greta smoke --profile"), "{seen}");
}

/// Interactive zsh with compinit: `_greta` from the function path completes
/// `greta do<TAB>` to `greta doctor`.
#[test]
fn zsh_completes_a_subcommand() {
    let d = tempfile::tempdir().unwrap();
    script("zsh", d.path(), "_greta");
    let mut c = Command::new("zsh");
    c.args(["-f", "-i"])
        .env("PATH", path_with_greta())
        .env("TERM", "xterm");
    let setup = format!(
        "fpath=({} $fpath); autoload -U compinit; compinit -u -D; PS1='$ '\n",
        d.path().display()
    );
    let seen = converse(
        c,
        &[&setup, "greta do\t"],
        "greta doctor",
        Duration::from_secs(20),
    );
    assert!(seen.contains("greta doctor"), "{seen}");
}

/// fish's own completion query (`complete -C`) over the sourced script:
/// the subcommand with its one-line description, and the smoke flags.
#[test]
fn fish_completes_a_subcommand_and_a_flag() {
    let d = tempfile::tempdir().unwrap();
    let s = script("fish", d.path(), "greta.fish");
    let o = Command::new("fish")
        .arg("--no-config")
        .arg("-c")
        .arg(format!(
            "source {}; complete -C 'greta do'; complete -C 'greta smoke --prof'",
            s.display()
        ))
        .env("PATH", path_with_greta())
        .output()
        .expect("fish is installed (scripts/setup.sh --test)");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("doctor\tFind the GPU stack")),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("--profile\t")), "{out}");
}

/// `greta man` renders with man-db (through groff) to a page that names
/// every visible subcommand; `--dir` writes one page per subcommand too.
#[test]
fn man_page_renders_and_names_every_subcommand() {
    let d = tempfile::tempdir().unwrap();
    let page = d.path().join("greta.1");
    std::fs::write(&page, stdout_of(&["man"])).unwrap();
    let o = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("man-db is installed (scripts/setup.sh --test)");
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    for want in [
        "NAME",
        "SYNOPSIS",
        "greta - Get a GPU machine ready",
        "--color",
        "Getting started:",
    ] {
        assert!(
            text.contains(want),
            "{want:?} not in the rendered page:\n{text}"
        );
    }
    for sub in [
        "doctor",
        "install",
        "smoke",
        "report",
        "lock",
        "bundle",
        "env",
        "completions",
    ] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("greta-{sub}"))),
            "{sub} not listed:\n{text}"
        );
    }
    assert!(!text.contains("__gpu"), "the internal subcommand stays out");
    let dir = d.path().join("pages");
    std::fs::create_dir(&dir).unwrap();
    stdout_of(&["man", "--dir", dir.to_str().unwrap()]);
    for f in [
        "greta.1",
        "greta-doctor.1",
        "greta-smoke.1",
        "greta-lock-show.1",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    assert!(!dir.join("greta-__gpu.1").exists());
}

/// `greta --help` ends with the path (doctor, install, smoke) and the
/// exit codes, as rustup's "common commands" do.
#[test]
fn help_ends_with_the_first_steps_and_the_exit_codes() {
    let help = stdout_of(&["--help"]);
    let steps: Vec<usize> = ["greta doctor ", "greta install ", "greta smoke "]
        .iter()
        .map(|s| {
            help.find(s)
                .unwrap_or_else(|| panic!("{s:?} missing:\n{help}"))
        })
        .collect();
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "in order:\n{help}");
    for code in [
        "0  everything checked passed",
        "1  a check or gate failed",
        "2  could not decide",
    ] {
        assert!(help.contains(code), "{code:?} missing:\n{help}");
    }
    // The footer comes after the options, at the end.
    assert!(help.find("Options:").unwrap() < steps[0], "{help}");
}

/// `--color` is one flag for every command, and a bad value is a usage error.
#[test]
fn color_is_global_and_checked() {
    let o = greta()
        .args(["lock", "list", "--color", "never"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let o = greta()
        .args(["--color", "sometimes", "doctor"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("possible values: auto, always, never"));
}
