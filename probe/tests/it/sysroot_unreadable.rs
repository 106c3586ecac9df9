//! A capture file that exists but cannot be read (a FIFO,
//! a directory, unreadable bytes, a line that is not the format) is
//! *unknown*, never absence: it raises no finding of its own, a note names
//! the file and why, its check line is `!`, and with no `fail` standing the
//! exit code is 2 (undecided), not 0.

use std::path::{Path, PathBuf};

use greta_probe::{CheckStatus, Probe, Report, Root};

use crate::common::copy_tree;

fn tree(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sysroots")
        .join(name)
}

fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// The ways a capture file can exist and still be unreadable.
#[derive(Debug, Clone, Copy)]
enum Spoil {
    Fifo,
    Directory,
    DanglingLink,
    /// Garbage bytes in place of the format (every line malformed).
    Garbage,
}

fn spoil(p: &Path, how: Spoil) {
    std::fs::remove_file(p).unwrap();
    match how {
        Spoil::Fifo => mkfifo(p),
        Spoil::Directory => std::fs::create_dir(p).unwrap(),
        Spoil::DanglingLink => std::os::unix::fs::symlink("/nonexistent/x", p).unwrap(),
        Spoil::Garbage => std::fs::write(p, "\u{1}\u{2}zzz 0x 99\n/dev/kfd c 06x0 0 0\n").unwrap(),
    }
}

/// phoenix-apu with one capture file spoiled, as doctor reports it.
fn report_with(file: &str, how: Spoil) -> Report {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&tree("phoenix-apu"), tmp.path());
    spoil(&tmp.path().join(file), how);
    let root = Root::sysroot(tmp.path()).unwrap();
    Probe::new(&root).run().into_report(Vec::new())
}

/// `report_with(file, how)`, checked for what every unreadable input of
/// the device-nodes check must give: a note naming the file, and that
/// check's line a warning whose summary `says` what is unknown.
fn nodes_unknown_with(file: &str, how: Spoil, says: &str) -> Report {
    let r = report_with(file, how);
    assert!(
        r.notes.iter().any(|n| n.starts_with(&format!("{file}: "))),
        "{how:?}: no note names the file: {:?}",
        r.notes
    );
    let line = r.checks.iter().find(|c| c.id == "device-nodes").unwrap();
    assert_eq!(line.status, CheckStatus::Warn, "{how:?}: {line:?}");
    assert!(line.summary.contains(says), "{how:?}: {line:?}");
    r
}

fn ids(r: &Report) -> Vec<&str> {
    r.findings.iter().map(|f| f.id.as_str()).collect()
}

#[test]
fn the_intact_capture_raises_kfd_permission() {
    // The control: what the spoiled captures below must not contradict.
    let root = Root::sysroot(tree("phoenix-apu")).unwrap();
    let r = Probe::new(&root).run().into_report(Vec::new());
    assert!(ids(&r).contains(&"kfd.permission"), "{:?}", ids(&r));
    assert!(!ids(&r).contains(&"kfd.missing"));
    assert_eq!(r.summary.exit_code, 1);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}

#[test]
fn unreadable_dev_nodes_is_unknown_not_missing() {
    for how in [
        Spoil::Fifo,
        Spoil::Directory,
        Spoil::DanglingLink,
        Spoil::Garbage,
    ] {
        let r = nodes_unknown_with(".greta/dev-nodes", how, "/dev/kfd unknown");
        assert!(
            !ids(&r).contains(&"kfd.missing"),
            "{how:?}: false kfd.missing: {:?}",
            ids(&r)
        );
        assert!(!r.facts.scanned.iter().any(|s| s == "device-nodes"));
        // Nothing failed that is known; the run could not decide.
        assert_eq!(r.summary.exit_code, 2, "{how:?}: {:?}", ids(&r));
    }
}

#[test]
fn unreadable_id_is_unknown_and_never_a_pass() {
    for how in [
        Spoil::Fifo,
        Spoil::Directory,
        Spoil::DanglingLink,
        Spoil::Garbage,
    ] {
        let r = nodes_unknown_with(".greta/id", how, "openable unknown");
        // The permission finding cannot be concluded without the identity,
        // and its absence must not read as a pass.
        assert_ne!(r.summary.exit_code, 0, "{how:?}: {:?}", ids(&r));
    }
}

#[test]
fn unreadable_captured_command_output_is_noted() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&tree("mi300x-vf"), tmp.path());
    spoil(&tmp.path().join(".greta/cmd/rocminfo.txt"), Spoil::Fifo);
    let root = Root::sysroot(tmp.path()).unwrap();
    let r = Probe::new(&root).run().into_report(Vec::new());
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with(".greta/cmd/rocminfo.txt: ") && n.contains("FIFO")),
        "{:?}",
        r.notes
    );
    let line = r.checks.iter().find(|c| c.id == "rocm").unwrap();
    assert_ne!(line.status, CheckStatus::Pass, "{line:?}");
}

#[test]
fn one_malformed_line_leaves_the_other_nodes_known() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&tree("phoenix-apu"), tmp.path());
    std::fs::write(
        tmp.path().join(".greta/dev-nodes"),
        "/dev/kfd c 06x0 0 105\n/dev/dri/renderD128 c 0660 0 44\n",
    )
    .unwrap();
    let root = Root::sysroot(tmp.path()).unwrap();
    let r = Probe::new(&root).run().into_report(Vec::new());
    assert!(!ids(&r).contains(&"kfd.missing"), "{:?}", ids(&r));
    assert!(
        r.notes.iter().any(|n| n.contains("line 1")),
        "{:?}",
        r.notes
    );
    // The render node's line was read: its verdict stands (group video, 44,
    // which this user lacks).
    assert!(ids(&r).contains(&"kfd.permission"), "{:?}", ids(&r));
    assert_eq!(r.summary.exit_code, 1);
}

/// The ways a directory of a capture can be there and still not be
/// listable, whoever runs the test (root reads through `chmod 000`).
#[derive(Debug, Clone, Copy)]
enum SpoilDir {
    Fifo,
    /// A regular file where the directory should be.
    File,
    /// A link to itself: a loop.
    Loop,
}

fn spoil_dir(p: &Path, how: SpoilDir) {
    std::fs::remove_dir_all(p).unwrap();
    match how {
        SpoilDir::Fifo => mkfifo(p),
        SpoilDir::File => std::fs::write(p, "not a directory\n").unwrap(),
        SpoilDir::Loop => {
            std::os::unix::fs::symlink(p.file_name().unwrap(), p).unwrap();
        }
    }
}

/// The directory case of "unknown is not absence": a capture directory
/// that is there but cannot be listed (`.greta` a FIFO gave a false
/// "/dev/kfd missing"; `sys/bus/pci/devices`, a PCI device's directory,
/// `etc` or `etc/vulkan/icd.d` dropped their findings) gets a note naming
/// it, the check that needed it is not a pass, and a run with no `fail`
/// left exits 2, not 0.
#[test]
fn unreadable_directories_are_unknown_with_a_note() {
    // (directory, the check that reads beneath it)
    let cases = [
        (".greta", "device-nodes"),
        (".greta/cmd", "vulkan-devices"),
        ("sys/bus/pci/devices", "pci"),
        ("sys/bus/pci/devices/0000:c5:00.0", "pci"),
        ("sys/class/kfd/kfd/topology/nodes", "kfd"),
        ("etc", "vulkan-icds"),
        ("etc/vulkan/icd.d", "vulkan-icds"),
    ];
    for (dir, check) in cases {
        for how in [SpoilDir::Fifo, SpoilDir::File, SpoilDir::Loop] {
            let tmp = tempfile::tempdir().unwrap();
            copy_tree(&tree("phoenix-apu"), tmp.path());
            spoil_dir(&tmp.path().join(dir), how);
            let root = Root::sysroot(tmp.path()).unwrap();
            let r = Probe::new(&root).run().into_report(Vec::new());
            let what = format!("{dir} as {how:?}");
            assert!(
                r.notes.iter().any(|n| n.starts_with(&format!("{dir}: "))),
                "{what}: no note names it: {:?}",
                r.notes
            );
            let line = r.checks.iter().find(|c| c.id == check).unwrap();
            assert_ne!(line.status, CheckStatus::Pass, "{what}: {line:?}");
            assert!(
                !ids(&r).contains(&"kfd.missing"),
                "{what}: false kfd.missing: {:?}",
                ids(&r)
            );
            assert_ne!(r.summary.exit_code, 0, "{what}: {:?}", ids(&r));
            if r.summary.fail == 0 {
                assert_eq!(r.summary.exit_code, 2, "{what}");
            }
        }
    }
}

/// `.greta` unreadable: every device node is unknown (never absent), and
/// with nothing failing the run is undecided.
#[test]
fn an_unreadable_greta_directory_leaves_the_nodes_unknown() {
    for how in [SpoilDir::Fifo, SpoilDir::File, SpoilDir::Loop] {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&tree("phoenix-apu"), tmp.path());
        spoil_dir(&tmp.path().join(".greta"), how);
        let root = Root::sysroot(tmp.path()).unwrap();
        let r = Probe::new(&root).run().into_report(Vec::new());
        let line = r.checks.iter().find(|c| c.id == "device-nodes").unwrap();
        assert!(
            line.summary.contains("/dev/kfd unknown"),
            "{how:?}: {line:?}"
        );
        assert!(!r.facts.scanned.iter().any(|s| s == "device-nodes"));
        // phoenix-apu's one fail is kfd.permission, drawn from the nodes.
        assert_eq!(r.summary.fail, 0, "{how:?}: {:?}", ids(&r));
        assert_eq!(r.summary.exit_code, 2, "{how:?}");
    }
}

/// A directory that is simply absent is an answer, not a note.
#[test]
fn an_absent_directory_is_no_note() {
    for dir in ["etc/vulkan/icd.d", "sys/class/kfd"] {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&tree("phoenix-apu"), tmp.path());
        std::fs::remove_dir_all(tmp.path().join(dir)).unwrap();
        let root = Root::sysroot(tmp.path()).unwrap();
        let r = Probe::new(&root).run().into_report(Vec::new());
        assert!(r.notes.is_empty(), "{dir}: {:?}", r.notes);
    }
}

/// A tree spoiled in thousands of places: one note per place up to a
/// bound, then one line counting the rest.
#[test]
fn thousands_of_unreadable_pci_devices_give_bounded_notes() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&tree("phoenix-apu"), tmp.path());
    let devices = tmp.path().join("sys/bus/pci/devices");
    for i in 0..2000 {
        std::fs::write(
            devices.join(format!("0000:{:02x}:{:02x}.0", i / 256, i % 256)),
            "x",
        )
        .unwrap();
    }
    let root = Root::sysroot(tmp.path()).unwrap();
    let r = Probe::new(&root).run().into_report(Vec::new());
    assert!(r.notes.len() <= 40, "{}", r.notes.len());
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("more paths could not be read")),
        "{:?}",
        r.notes
    );
    let line = r.checks.iter().find(|c| c.id == "pci").unwrap();
    assert_ne!(line.status, CheckStatus::Pass, "{line:?}");
}
