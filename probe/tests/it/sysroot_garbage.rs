//! No panic and no hang on garbage anywhere: every file of the synthetic
//! machines replaced by fresh random bytes, emptied, or made huge.

use std::path::{Path, PathBuf};

use greta_probe::{CheckRun, Facts, Probe, Root};
use rand::{Rng, RngCore};

use crate::common::copy_tree;

/// The full probe of `root`, as doctor runs it (without the HIP check).
fn collect(root: &Root) -> (Facts, Vec<CheckRun>) {
    let o = Probe::new(root).run();
    (o.facts, o.checks)
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        let ft = std::fs::symlink_metadata(&p).unwrap().file_type();
        if ft.is_dir() {
            files(&p, out);
        } else if ft.is_file() {
            out.push(p);
        }
    }
}

fn trees() -> Vec<PathBuf> {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sysroots");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    assert!(
        v.len() >= 6,
        "synthetic trees missing under {}",
        base.display()
    );
    v
}

#[test]
fn random_bytes_everywhere_never_panic() {
    let mut rng = rand::thread_rng();
    for tree in trees() {
        for round in 0..3 {
            let tmp = tempfile::tempdir().unwrap();
            copy_tree(&tree, tmp.path());
            let mut all = Vec::new();
            files(tmp.path(), &mut all);
            for f in &all {
                let len = match round {
                    0 => 0,
                    1 => rng.gen_range(1..64),
                    _ => rng.gen_range(64..8192),
                };
                let mut bytes = vec![0u8; len];
                rng.fill_bytes(&mut bytes);
                // Sometimes keep a plausible line so parsers get further.
                if rng.gen_bool(0.3) {
                    bytes.extend_from_slice(b"\ngfx_target_version 90402\nsimd_count 9999999999\n");
                }
                std::fs::write(f, &bytes).unwrap();
            }
            let root = Root::sysroot(tmp.path()).unwrap();
            let (facts, checks) = collect(&root);
            assert_eq!(checks.len(), 7, "{}", tree.display());
            // Whatever was concluded must still serialise.
            serde_json::to_string(&facts).unwrap();
        }
    }
}

#[test]
fn huge_and_truncated_files_are_read_capped() {
    let tree = trees()
        .into_iter()
        .find(|t| t.ends_with("mi300x-vf"))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&tree, tmp.path());
    // A 4 GiB sparse KFD properties file.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(
            tmp.path()
                .join("sys/class/kfd/kfd/topology/nodes/1/properties"),
        )
        .unwrap();
    f.set_len(4 << 30).unwrap();
    // And a captured rocminfo that is 2 MiB of one binary "line".
    let mut junk = vec![0u8; 2 << 20];
    rand::thread_rng().fill_bytes(&mut junk);
    junk.retain(|&b| b != b'\n');
    std::fs::write(tmp.path().join(".greta/cmd/rocminfo.txt"), &junk).unwrap();
    let root = Root::sysroot(tmp.path()).unwrap();
    let (facts, _) = collect(&root);
    // PCI still names the GPU; the zero-filled/binary files add no gfx target.
    assert!(facts
        .gpus
        .iter()
        .any(|g| g.name == "AMD Instinct MI300X VF"));
    assert!(
        facts.gpus.iter().all(|g| g.gfx.is_none()),
        "{:#?}",
        facts.gpus
    );
}

fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(made, 0, "{}", p.display());
}

/// `collect` on `root` in a thread; None when it has not returned after
/// `limit` (a hang: the thread is left behind, the test fails).
fn collect_within(root: Root, limit: std::time::Duration) -> Option<usize> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (facts, checks) = collect(&root);
        serde_json::to_string(&facts).unwrap();
        let _ = tx.send(checks.len());
    });
    rx.recv_timeout(limit).ok()
}

/// A FIFO at any path doctor reads (`.greta/env`, `dev-nodes`,
/// captured command output, every sysfs/proc/etc file) hung `doctor
/// --sysroot` for ever. Every regular file of every synthetic machine
/// becomes a FIFO with no writer, then a link to /dev/zero.
#[test]
fn fifos_and_devices_everywhere_never_hang() {
    for tree in trees() {
        for special in ["fifo", "dev-zero"] {
            let tmp = tempfile::tempdir().unwrap();
            copy_tree(&tree, tmp.path());
            let mut all = Vec::new();
            files(tmp.path(), &mut all);
            assert!(all.len() > 5, "{}", tree.display());
            for f in &all {
                std::fs::remove_file(f).unwrap();
                if special == "fifo" {
                    mkfifo(f);
                } else {
                    std::os::unix::fs::symlink("/dev/zero", f).unwrap();
                }
            }
            let root = Root::sysroot(tmp.path()).unwrap();
            // Generous: a normal collect of these trees takes well under a second.
            let checks = collect_within(root, std::time::Duration::from_secs(120));
            assert_eq!(checks, Some(7), "{} with {special}s: hung", tree.display());
        }
    }
}

/// `.greta/dev-nodes` of 40,000 lines took 10 s (a linear search
/// per node, `/etc/group` re-read per node). The whole doctor run on 200,000
/// render nodes, each in a group listed in a large `/etc/group`: the
/// quadratic versions need minutes here (also merging the collectors'
/// facts scanned the node list once per node: 80,000 nodes took 44 s); the
/// indexed ones, seconds.
#[test]
fn a_huge_dev_nodes_capture_is_diagnosed_in_near_linear_time() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sysroots/mi300x-vf"),
        tmp.path(),
    );
    let n = 200_000;
    let mut nodes = String::from("/dev/kfd c 0660 0 109\n");
    for i in 0..n {
        nodes.push_str(&format!(
            "/dev/dri/renderD{i} c 0660 0 {}\n",
            1000 + i % 5000
        ));
    }
    std::fs::write(tmp.path().join(".greta/dev-nodes"), nodes).unwrap();
    let mut group = String::new();
    for g in 0..5000 {
        group.push_str(&format!("g{g}:x:{}:user{g}\n", 1000 + g));
    }
    std::fs::write(tmp.path().join("etc/group"), group).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let root = Root::sysroot(tmp.path()).unwrap();
        assert_eq!(root.list_nodes("/dev/dri", "renderD").len(), n);
        let (facts, _) = collect(&root);
        let _ = tx.send(facts.device_nodes.len());
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(120));
    assert_eq!(
        got.ok(),
        Some(n + 1),
        "200,000 device nodes took over 120 s"
    );
}
