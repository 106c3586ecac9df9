//! `greta doctor` on this machine, as a user who may not list the
//! directory it looks in for Vulkan ICD manifests (`$XDG_CONFIG_HOME/vulkan`
//! mode 000): the output has a note naming the directory and why, where
//! it used to say nothing and count the directory as empty.
//!
//! Mode 000 does not stop root: run as root (CI), the doctor is started
//! as `nobody` (uid 65534), which it does stop.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;

#[test]
fn doctor_notes_a_directory_this_user_cannot_list() {
    let t = tempfile::tempdir().unwrap();
    // Reachable by the other user; only `vulkan` is closed.
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let vk = t.path().join("cfg/vulkan");
    std::fs::create_dir_all(vk.join("icd.d")).unwrap();
    std::fs::set_permissions(&vk, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = crate::support::greta();
    cmd.args(["doctor", "--color", "never"])
        .env("HOME", t.path())
        .env("XDG_CONFIG_HOME", t.path().join("cfg"))
        .env("PATH", "/usr/local/bin:/usr/bin:/bin");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Opened again for the cleanup.
    std::fs::set_permissions(&vk, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = vk.join("icd.d").display().to_string();
    let note = stdout
        .lines()
        .find(|l| l.contains(&format!("note: {dir}: cannot be listed by")))
        .unwrap_or_else(|| panic!("no note names {dir}:\n{stdout}"));
    assert!(
        note.contains("Permission denied") && note.contains("unknown"),
        "{note}"
    );
    assert_ne!(out.status.code(), Some(0), "{stdout}");
}
