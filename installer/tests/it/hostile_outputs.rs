//! Outputs written where the user named them (`smoke --prom`, `--html`,
//! `--out`, `report --out`, `doctor --capture`, the envs directory of
//! `install`), against what another user or a stop signal can do to them,
//! end to end with the real binary:
//! - a symbolic link another user planted in a sticky, world-writable
//!   directory (`/tmp`, a shared textfile directory) is not written
//!   through, whether it points to a file or dangles; root's is;
//! - `report --out` never replaces one of the results it reads;
//! - SIGTERM or SIGINT at the moment an output is written leaves no
//!   temporary and greta dies of the signal; what SIGKILL leaves, the next
//!   write to the directory removes, and only that.

use crate::support::greta::CPU_SMOKE;
use crate::support::run::Run;
use crate::support::{self, Harness};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

const NOBODY: u32 = 65534;

fn greta(args: &[&str]) -> Command {
    let mut c = crate::support::greta();
    c.args(args).env("GRETA_VK_VALIDATION", "1");
    c
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn temporaries(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// Links owned by another user can only be made by root.
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("SKIPPED: a link owned by another user needs root to make");
    }
    root
}

/// A link at `at` to `to`, owned by nobody (as if nobody had planted it).
fn plant(to: &Path, at: &Path) {
    symlink(to, at).unwrap();
    std::os::unix::fs::lchown(at, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// A 1777 directory `shared` and a directory `etc` with a file `config`.
fn sticky_setup(root: &Path) -> (PathBuf, PathBuf) {
    let shared = root.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let etc = root.join("etc");
    std::fs::create_dir(&etc).unwrap();
    std::fs::write(etc.join("config"), "keep me\n").unwrap();
    (shared, etc)
}

/// The refusal names the link, its owner and the rule.
fn says_refused(r: &Run, link: &Path) {
    assert_eq!(r.code, 2, "{}", r.stderr);
    for want in [
        format!("not following the symbolic link {}", link.display()),
        "owned by uid 65534 (nobody)".into(),
        "sticky, world-writable".into(),
        "protected_symlinks".into(),
    ] {
        assert!(r.stderr.contains(&want), "{want:?} not in:\n{}", r.stderr);
    }
}

/// Root runs `greta smoke --prom /shared/greta.prom` (and `--html`,
/// `--out`, `report --out`, `doctor --capture`) where nobody planted a
/// link to a file elsewhere, or a dangling one: each is refused before
/// any work, exit 2, and the file is untouched or not created. A link root
/// owns in the same directory is followed and stays a link.
#[test]
fn links_another_user_planted_in_a_sticky_directory_are_not_written_through() {
    if !root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (shared, etc) = sticky_setup(dir.path());
    let config = etc.join("config");
    let prom = shared.join("greta.prom");
    plant(&config, &prom);
    let r = Run::of(greta(&[&CPU_SMOKE[..], &["--prom", s(&prom)]].concat()));
    says_refused(&r, &prom);
    assert!(!r.stderr.contains("fill.tiny"), "gates ran: {}", r.stderr);

    let page = shared.join("run.html");
    plant(&etc.join("new.conf"), &page);
    let r = Run::of(greta(&[&CPU_SMOKE[..], &["--html", s(&page)]].concat()));
    says_refused(&r, &page);

    let results = shared.join("results");
    plant(&etc, &results);
    let mut args = CPU_SMOKE.to_vec();
    args.retain(|a| *a != "--no-save");
    let r = Run::of(greta(&[&args[..], &["--out", s(&results)]].concat()));
    says_refused(&r, &results);

    let result = dir.path().join("r.json");
    std::fs::write(&result, "{}").unwrap();
    let r = Run::of(greta(&["report", s(&result), "--out", s(&prom)]));
    says_refused(&r, &prom);

    let snap = shared.join("snap");
    plant(&etc.join("snap"), &snap);
    let r = Run::of(greta(&["doctor", "--capture", s(&snap)]));
    says_refused(&r, &snap);

    assert_eq!(std::fs::read_to_string(&config).unwrap(), "keep me\n");
    assert_eq!(names(&etc), ["config"], "a target was created");
    assert!(temporaries(&shared).is_empty(), "{:?}", names(&shared));

    // Root's own link in the same directory: written through, kept.
    let roots = shared.join("root.prom");
    symlink(&config, &roots).unwrap();
    let r = Run::of(greta(&[&CPU_SMOKE[..], &["--prom", s(&roots)]].concat()));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::symlink_metadata(&roots).unwrap().is_symlink());
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("greta_smoke_status{"), "{text}");
}

/// `greta install` with its envs directory (here `GRETA_HOME`) behind a
/// link nobody planted in a sticky directory: refused, nothing created
/// where the link points.
#[test]
fn install_refuses_an_envs_directory_behind_a_planted_link() {
    if !root() {
        return;
    }
    let h = Harness::new(1_000);
    let (shared, etc) = sticky_setup(h.dir.path());
    let home = shared.join("greta-home");
    plant(&etc, &home);
    let o = h
        .install_command(&[])
        .env("GRETA_HOME", &home)
        .output()
        .unwrap();
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}", support::text(&o));
    assert!(
        err.contains(&format!(
            "not following the symbolic link {}",
            home.display()
        )) && err.contains("uid 65534 (nobody)"),
        "{err}"
    );
    assert_eq!(names(&etc), ["config"]);
}

/// A real lavapipe result (report/tests/data).
fn result_json() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/data/lavapipe-default.json"),
    )
    .unwrap()
}

/// `greta report --out F F` replaced the result with the page. The output
/// is compared with the inputs as files (device and inode), however named:
/// the same name, another spelling, a hard link, a symbolic link; a `.json`
/// name in a results directory read (a DIR argument, `--history`) is
/// refused too. Each is exit 2 with a reason, the result unchanged.
#[test]
fn report_refuses_to_write_its_page_over_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let f = results.join("smoke-1.json");
    let json = result_json();
    std::fs::write(&f, &json).unwrap();
    let hard = dir.path().join("hard.html");
    std::fs::hard_link(&f, &hard).unwrap();
    let soft = dir.path().join("soft.html");
    symlink(&f, &soft).unwrap();
    let other_spelling = results.join("../results/./smoke-1.json");
    for (input, out) in [
        (&f, &f),
        (&f, &other_spelling),
        (&f, &hard),
        (&f, &soft),
        (&results, &results.join("page.json")),
    ] {
        let r = Run::of(greta(&["report", s(input), "--out", s(out)]));
        assert_eq!(
            r.code,
            2,
            "{} -> {}: {}",
            input.display(),
            out.display(),
            r.stderr
        );
        assert!(
            r.stderr.contains("is the input") || r.stderr.contains("is a .json name"),
            "{}",
            r.stderr
        );
    }
    let r = Run::of(greta(&[
        "report",
        "--history",
        s(&results),
        "--out",
        s(&results.join("history.json")),
    ]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("is a .json name in the results directory"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), json);
    assert_eq!(names(&results), ["smoke-1.json"]);
    // An HTML page beside the results is fine.
    let r = Run::of(greta(&[
        "report",
        "--history",
        s(&results),
        "--out",
        s(&results.join("history.html")),
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), json);
}

/// Waits for `c` to end (at most two minutes: a hang fails the test).
fn end_of(mut c: Child) -> ExitStatus {
    let pid = c.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(c.wait());
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(s) => s.unwrap(),
        Err(_) => {
            // SAFETY: a plain kill of the child we started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("greta did not end");
        }
    }
}

/// `c` started and held at `step` (`GRETA_TEST_PAUSE_AT`), its stderr
/// read until it says so.
fn paused_at(mut c: Command, step: &str) -> Child {
    c.env("GRETA_TEST_PAUSE_AT", step);
    let mut child = support::spawn_interruptible(c);
    support::wait_for_line(&mut child, &format!("paused at {step}"));
    child
}

fn signal(c: &Child, sig: libc::c_int) {
    // SAFETY: a plain kill of the child we started.
    assert_eq!(unsafe { libc::kill(c.id() as i32, sig) }, 0);
}

/// `greta_smoke_status` of a textfile.
fn prom_status(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    text.lines()
        .find(|l| l.starts_with("greta_smoke_status{"))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no status in\n{text}"))
        .to_string()
}

/// SIGTERM or SIGINT while `smoke` writes its result file, its textfile or
/// its page, and while `report` writes its page: held at the write (the
/// temporary is written, not yet renamed), signalled; greta dies of the
/// signal, leaves no temporary, and the textfile says undecided.
#[test]
fn a_stop_signal_at_write_time_leaves_no_temporary_and_greta_dies_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let fleet = dir.path().join("fleet");
    std::fs::create_dir(&fleet).unwrap();
    let prom = fleet.join("greta.prom");
    let healthy = "# TYPE greta_smoke_status gauge\ngreta_smoke_status{profile=\"ultrasafe\"} 0\n";
    let mut saved = CPU_SMOKE.to_vec();
    saved.retain(|a| *a != "--no-save");
    let smoke = |extra: &[&str]| greta(&[&saved[..], &["--out", s(&out)], extra].concat());
    for (step, sig) in [
        ("write-result", libc::SIGTERM),
        ("write-prom", libc::SIGINT),
        ("write-page", libc::SIGTERM),
    ] {
        std::fs::write(&prom, healthy).unwrap();
        let page = fleet.join("run.html");
        let c = paused_at(smoke(&["--prom", s(&prom), "--html", s(&page)]), step);
        assert!(
            !temporaries(&fleet).is_empty() || !temporaries(&out).is_empty(),
            "{step}: held with no temporary written"
        );
        signal(&c, sig);
        let st = end_of(c);
        assert_eq!(st.signal(), Some(sig), "{step}: {st:?}");
        assert_eq!(prom_status(&prom), "2", "{step}: the healthy file lingers");
        assert!(
            temporaries(&fleet).is_empty(),
            "{step}: {:?}",
            names(&fleet)
        );
        assert!(temporaries(&out).is_empty(), "{step}: {:?}", names(&out));
    }
    // report, interrupted while it writes its page: the old page stays.
    let result = out.read_dir().unwrap().next().unwrap().unwrap().path();
    let page = fleet.join("report.html");
    std::fs::write(&page, "old page").unwrap();
    let c = paused_at(
        greta(&["report", s(&result), "--out", s(&page)]),
        "write-page",
    );
    assert_eq!(temporaries(&fleet).len(), 1, "{:?}", names(&fleet));
    signal(&c, libc::SIGINT);
    assert_eq!(end_of(c).signal(), Some(libc::SIGINT));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "old page");
    assert!(temporaries(&fleet).is_empty(), "{:?}", names(&fleet));
}

/// SIGKILL at write time leaves the temporary (nothing can catch it); the
/// next write to that directory removes it, and not the temporary of a
/// greta still alive there.
#[test]
fn what_a_killed_run_left_is_swept_by_the_next_write_and_only_that() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("greta.prom");
    let smoke = || greta(&[&CPU_SMOKE[..], &["--prom", s(&prom)]].concat());
    let killed = paused_at(smoke(), "write-prom");
    signal(&killed, libc::SIGKILL);
    end_of(killed); // reaped: its pid is gone
    let left = temporaries(dir.path());
    assert_eq!(left.len(), 1, "{:?}", names(dir.path()));
    // A run that writes there removes it (here at its check, before any
    // gate), and holds its own temporary at the write.
    let alive = paused_at(smoke(), "write-prom");
    let held = temporaries(dir.path());
    assert_eq!(held.len(), 1, "{held:?}");
    assert_ne!(held, left, "the killed run's temporary stayed");
    // Another run leaves the live one's alone.
    let r = Run::of(smoke());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        temporaries(dir.path()),
        held,
        "the live run's temporary was touched"
    );
    signal(&alive, libc::SIGTERM);
    assert_eq!(end_of(alive).signal(), Some(libc::SIGTERM));
    assert_eq!(names(dir.path()), ["greta.prom"]);
}
