//! A directory of the live machine that doctor cannot list (permission
//! denied, a loop of links, a FIFO or a file where it should be) is
//! unknown, not empty: a note names it and why, the check that needed it
//! is not a pass, and the report is not a clean one, by the same rule as a
//! captured machine's (`sysroot_unreadable.rs`). Before, it read as
//! "nothing there", in silence (an unreadable `/etc/vulkan` was "no ICD
//! manifest there", a `/dev/dri` that could not be listed "no render
//! node").
//!
//! Root is not stopped by mode 000: as root, the permission part runs in
//! `greta doctor` as another user (`installer/tests/it/doctor_live_unreadable.rs`);
//! a loop of links, a FIFO and a file stop every user and run here.

use greta_probe::{CheckStatus, Probe, Root};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A listing the root cannot make is recorded with the absolute path and
/// why, a file where a directory was looked for too; an absent directory
/// is an answer (nothing there) and is not.
#[test]
fn a_directory_that_cannot_be_listed_is_unknown_and_an_absent_one_is_not() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::os::unix::fs::symlink(d.join("b"), d.join("a")).unwrap();
    std::os::unix::fs::symlink(d.join("a"), d.join("b")).unwrap();
    std::fs::write(d.join("file"), "x").unwrap();
    std::fs::create_dir(d.join("locked")).unwrap();
    std::fs::set_permissions(d.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let root = Root::live();
    let p = |n: &str| d.join(n).display().to_string();
    assert!(root.list(&p("a")).is_empty());
    assert!(root.list(&p("missing")).is_empty());
    assert!(root.list(&p("file")).is_empty());
    assert!(root.list(&p("file/x")).is_empty());
    root.list(&p("locked"));
    let u = root.unreadable();
    let looped = u
        .iter()
        .find(|u| u.file == p("a"))
        .expect("the loop is noted");
    assert!(looped.why.contains("cannot be listed"), "{looped}");
    assert!(
        looped.why.to_lowercase().contains("symbolic links"),
        "{looped}"
    );
    assert!(!u.iter().any(|u| u.file == p("missing")), "{u:?}");
    // The file itself is named, once, listed or on the way.
    let file = u.iter().find(|u| u.file == p("file")).expect("noted");
    assert!(
        file.why
            .contains("a regular file where a directory should be"),
        "{file}"
    );
    assert!(!u.iter().any(|u| u.file == p("file/x")), "{u:?}");
    if is_root() {
        eprintln!(
            "mode 000 does not stop root: the permission case runs as another user in \
             installer/tests/it/doctor_live_unreadable.rs"
        );
        assert!(!u.iter().any(|u| u.file == p("locked")), "{u:?}");
    } else {
        let locked = u.iter().find(|u| u.file == p("locked")).expect("noted");
        assert!(locked.why.contains("ermission denied"), "{locked}");
    }
    assert_eq!(u.len(), if is_root() { 2 } else { 3 }, "{u:?}");
}

/// Doctor's report: the user's Vulkan ICD directory is a loop of links.
/// A note names it, the Vulkan ICD check is not a pass, and the report is
/// undecided (exit 2) unless a failure stands.
#[test]
fn doctor_notes_an_icd_directory_it_cannot_list() {
    let t = tempfile::tempdir().unwrap();
    let vk = t.path().join("cfg/vulkan");
    std::fs::create_dir_all(&vk).unwrap();
    std::os::unix::fs::symlink(vk.join("icd.d"), vk.join("icd.d")).unwrap();
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.insert(
        "XDG_CONFIG_HOME".into(),
        t.path().join("cfg").display().to_string(),
    );
    let root = Root::live().with_env(env);
    let report = Probe::new(&root).run().into_report(Vec::new());
    let dir = vk.join("icd.d").display().to_string();
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with(&format!("{dir}: cannot be listed")) && n.contains("unknown")),
        "{:#?}",
        report.notes
    );
    let icds = report
        .checks
        .iter()
        .find(|c| c.id == "vulkan-icds")
        .expect("the Vulkan ICD check");
    assert_ne!(icds.status, CheckStatus::Pass, "{icds:?}");
    assert_ne!(report.summary.exit_code, 0);
}

fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// What stands where a directory should be, and the words its note says.
const SPOILS: [(&str, &str); 3] = [
    ("fifo", "a FIFO where a directory should be"),
    ("file", "a regular file where a directory should be"),
    ("loop", "symbolic links"),
];

/// Makes `p` a FIFO, a regular file or a loop of links.
fn spoil(p: &Path, how: &str) {
    match how {
        "fifo" => mkfifo(p),
        "file" => std::fs::write(p, "x").unwrap(),
        _ => std::os::unix::fs::symlink(p, p).unwrap(),
    }
}

/// Every way the live root reads a directory goes through the one
/// lister: the directory listed (`/sys/bus/pci/devices`, the KFD
/// topology), the one a file is read from (a PCI device's directory) and
/// the one device nodes are listed from (`/dev/dri`). Each that cannot be
/// read is named with why, whatever stands there, and the listing is
/// unknown, never "none".
#[test]
fn every_live_directory_read_notes_what_stops_it() {
    for (how, says) in SPOILS {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let p = |n: &str| d.join(n).display().to_string();
        for n in ["listed", "device", "dri"] {
            spoil(&d.join(n), how);
        }
        let root = Root::live();
        assert_eq!(root.list(&p("listed")), Vec::<String>::new());
        assert!(root.read(&p("device/class")).is_err());
        assert_eq!(root.list_nodes(&p("dri"), "renderD"), Vec::<String>::new());
        let u = root.unreadable();
        for n in ["listed", "device", "dri"] {
            let note = u
                .iter()
                .find(|u| u.file == p(n))
                .unwrap_or_else(|| panic!("{how}: {n} not noted: {u:?}"));
            assert!(note.why.starts_with("cannot be listed"), "{how}: {note}");
            assert!(note.why.contains(says), "{how}: {note}");
        }
        assert_eq!(u.len(), 3, "{how}: {u:?}");
    }
}

/// Doctor's report: the user's Vulkan ICD directory is a FIFO, a file or
/// a loop of links. A note names it, the Vulkan ICD check is not a pass,
/// and no `vulkan.no-icd` is concluded from it.
#[test]
fn doctor_notes_an_icd_directory_that_is_no_directory() {
    for (how, says) in SPOILS {
        let t = tempfile::tempdir().unwrap();
        let vk = t.path().join("cfg/vulkan");
        std::fs::create_dir_all(&vk).unwrap();
        spoil(&vk.join("icd.d"), how);
        let mut env: BTreeMap<String, String> = std::env::vars().collect();
        env.insert(
            "XDG_CONFIG_HOME".into(),
            t.path().join("cfg").display().to_string(),
        );
        let root = Root::live().with_env(env);
        let report = Probe::new(&root).run().into_report(Vec::new());
        let dir = vk.join("icd.d").display().to_string();
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.starts_with(&format!("{dir}: cannot be listed"))
                    && n.contains(says)
                    && n.contains("unknown")),
            "{how}: {:#?}",
            report.notes
        );
        let icds = report
            .checks
            .iter()
            .find(|c| c.id == "vulkan-icds")
            .expect("the Vulkan ICD check");
        assert_ne!(icds.status, CheckStatus::Pass, "{how}: {icds:?}");
        assert!(
            !report.facts.scanned.iter().any(|s| s == "vulkan-icds"),
            "{how}: {:?}",
            report.facts.scanned
        );
        assert!(
            !report.findings.iter().any(|f| f.id == "vulkan.no-icd"),
            "{how}"
        );
        assert_ne!(report.summary.exit_code, 0, "{how}");
    }
}

/// greta's envs directory holds a lock file beside each env
/// (`.NAME.lock`): it is no env, and no directory doctor cannot read.
#[test]
fn the_installers_lock_files_beside_its_envs_are_no_note() {
    let t = tempfile::tempdir().unwrap();
    let envs = t.path().join("data/greta/envs");
    std::fs::create_dir_all(envs.join("torch/lib/python3.12/site-packages")).unwrap();
    std::fs::write(envs.join(".torch.lock"), "").unwrap();
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.insert(
        "XDG_DATA_HOME".into(),
        t.path().join("data").display().to_string(),
    );
    let root = Root::live().with_env(env);
    let _ = Probe::new(&root).envs_at(crate::common::envs_at).run();
    let u = root.unreadable();
    assert!(
        !u.iter()
            .any(|u| u.file.starts_with(&t.path().display().to_string())),
        "{u:?}"
    );
}

/// `PATH` and `LD_LIBRARY_PATH` entries that are no directory (a file, a
/// FIFO, a loop of links) hold nothing, for the shell and the loader alike:
/// skipped in silence, never a directory the doctor could not read (which
/// would end a healthy machine's doctor with exit 2).
#[test]
fn search_path_entries_that_are_no_directory_are_skipped_quietly() {
    for (how, _) in SPOILS {
        let t = tempfile::tempdir().unwrap();
        let odd = t.path().join("odd");
        spoil(&odd, how);
        let odd = odd.display().to_string();
        let mut env: BTreeMap<String, String> = std::env::vars().collect();
        let path = env.get("PATH").cloned().unwrap_or_default();
        env.insert("PATH".into(), format!("{odd}:{path}"));
        env.insert("LD_LIBRARY_PATH".into(), odd.clone());
        let root = Root::live().with_env(env);
        let report = Probe::new(&root).run().into_report(Vec::new());
        assert!(
            !report.notes.iter().any(|n| n.contains(&odd)),
            "{how}: {:#?}",
            report.notes
        );
        assert!(
            !root.unreadable().iter().any(|u| u.file.starts_with(&odd)),
            "{how}"
        );
    }
}
