//! "rerun to continue" where a rerun cannot help. A read-only cache and a
//! full envs filesystem are real here: greta runs in its own mount
//! namespace (`unshare -m`, root) over a tmpfs mounted read-only or small,
//! so nothing outside the test sees the mount.

use crate::support::{self, Harness};
use std::path::Path;
use std::process::Command;

/// Whether this machine lets the test mount (root with CAP_SYS_ADMIN).
fn can_mount() -> bool {
    Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `c` run with a fresh tmpfs (`opts`) mounted at `dir` first.
fn under_mount(c: &Command, dir: &Path, opts: &str) -> std::process::Output {
    std::fs::create_dir_all(dir).unwrap();
    let mut u = Command::new("unshare");
    u.args([
        "-m",
        "sh",
        "-c",
        "mount -t tmpfs -o \"$1\" tmpfs \"$2\" && shift 2 && exec \"$@\"",
        "sh",
        opts,
    ])
    .arg(dir)
    .arg(c.get_program())
    .args(c.get_args());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => u.env(k, v),
            None => u.env_remove(k),
        };
    }
    u.output().unwrap()
}

fn last_line(o: &std::process::Output) -> String {
    support::stderr(o)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_read_only_cache_or_a_full_envs_disk_is_not_rerun_material() {
    if !can_mount() {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root); the unit test rerun::tests covers the decision");
        return;
    }
    let h = Harness::new(200_000);
    // The cache on a read-only filesystem.
    let o = under_mount(&h.install_command(&[]), &h.dir.path().join("cache"), "ro");
    assert_ne!(o.status.code(), Some(0), "{}", support::text(&o));
    let last = last_line(&o);
    assert!(!last.contains("rerun to continue"), "{}", support::text(&o));
    assert!(last.contains("read-only"), "{}", support::text(&o));

    // The envs on a full filesystem (the wheels are cached by now? no:
    // fetched into the normal cache first).
    let o = under_mount(
        &h.install_command(&[]),
        &h.dir.path().join("data"),
        "size=16k",
    );
    assert_ne!(o.status.code(), Some(0), "{}", support::text(&o));
    let last = last_line(&o);
    assert!(!last.contains("rerun to continue"), "{}", support::text(&o));
    assert!(last.contains("full"), "{}", support::text(&o));
}

/// A wheel larger than the envs' filesystem: uv fails with ENOSPC and
/// removes what it had written, so the filesystem has room again when
/// greta looks (24 MiB of 40 here, more than the 16 MiB that read as
/// full), and the install ended "rerun to continue", which fails the same
/// way. uv's own words name the errno; greta then says how much to free
/// where, from the wheels' unpacked size and the free space.
#[test]
fn a_wheel_larger_than_the_envs_filesystem_says_how_much_to_free() {
    if !can_mount() {
        eprintln!(
            "SKIPPED: cannot mount a tmpfs here (needs root); rerun::tests covers the decision"
        );
        return;
    }
    support::require_uv();
    let h = Harness::new(48 << 20);
    let o = under_mount(
        &h.install_command(&[]),
        &h.dir.path().join("data"),
        "size=40m",
    );
    let all = support::text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(all.contains("(os error 28)"), "not uv's ENOSPC: {all}");
    let last = last_line(&o);
    assert!(!last.contains("rerun to continue"), "{all}");
    assert!(last.contains("free at least "), "{all}");
    let data = h.dir.path().join("data");
    assert!(
        last.contains(&format!("on the filesystem of {}", data.display())),
        "{all}"
    );
    assert!(
        support::stderr(&o).contains("the wheels unpack to"),
        "{all}"
    );
}
