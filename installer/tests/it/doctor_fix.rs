//! `greta doctor --fix` for real on copies of a captured machine (the
//! Phoenix APU tree of probe/tests/sysroots, copied into a temporary
//! directory; the checked-in tree is never edited): each remedy changes
//! the files it says, doctor run again shows the finding gone (or says it
//! waits for a login, shell or boot), `--fix --undo` puts the tree back
//! byte for byte, `--dry-run` and a refused question change nothing, and a
//! failure half-way leaves the machine as it was.

use crate::support::greta;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn phoenix() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../probe/tests/sysroots/phoenix-apu")
}

/// A copy of the Phoenix tree (links kept as links).
fn machine() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let m = t.path().join("m");
    copy(&phoenix(), &m);
    (t, m)
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = std::fs::symlink_metadata(&src).unwrap().file_type();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if ft.is_dir() {
            copy(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Every file of a tree and its bytes (links as their target), for
/// "put back byte for byte".
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            let ft = std::fs::symlink_metadata(&p).unwrap().file_type();
            if ft.is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, t.to_string_lossy().into_owned().into_bytes());
            } else if ft.is_dir() {
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The tree without what a fix keeps for its undo (var/lib/greta).
fn machine_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    snapshot(dir)
        .into_iter()
        .filter(|(p, _)| !p.starts_with("var/lib/greta"))
        .collect()
}

fn fix(m: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let o = greta()
        .args(["doctor", "--fix", "--json", "--sysroot"])
        .arg(m)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code(), v, err)
}

fn status_of<'a>(v: &'a Value, finding: &str) -> &'a str {
    v["after"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["finding"] == finding))
        .and_then(|x| x["status"].as_str())
        .unwrap_or("")
}

#[test]
fn fix_applies_shows_the_findings_again_and_undo_puts_everything_back() {
    let (_t, m) = machine();
    let before = snapshot(&m);
    // A dry run changes nothing.
    let (code, v, _) = fix(&m, &["--dry-run"]);
    assert_eq!(code, Some(0));
    assert_eq!(v["outcome"], "dry-run");
    assert_eq!(snapshot(&m), before);
    // Without --yes and with no terminal to ask on: refused, nothing changed.
    let (code, _, err) = fix(&m, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(snapshot(&m), before);

    let (code, v, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(0), "{err} {v}");
    assert_eq!(v["schema"], "greta.doctor-fix/v1");
    assert_eq!(v["outcome"], "applied");
    let group = std::fs::read_to_string(m.join("etc/group")).unwrap();
    assert!(group.lines().any(|l| l == "render:x:105:ann"), "{group}");
    assert!(!m.join("etc/vulkan/icd.d/amd_icd64.json").exists());
    // The manifest moved aside is gone from the loader's path: the finding
    // with it. The group needs a new login, and says so.
    assert_eq!(status_of(&v, "vulkan.amdvlk-left-behind"), "gone", "{v}");
    assert_eq!(status_of(&v, "kfd.permission"), "pending", "{v}");
    let record = v["undo_record"].as_str().unwrap();
    assert!(Path::new(record).is_file(), "{record}");

    let (code, v, err) = fix(&m, &["--undo"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["outcome"], "undone");
    assert_eq!(machine_files(&m), machine_files(&phoenix()));
    // Nothing left to undo.
    let (code, _, err) = fix(&m, &["--undo"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no fix to undo"), "{err}");
}

#[test]
fn an_override_in_a_shell_profile_becomes_a_comment() {
    let (_t, m) = machine();
    let bashrc = m.join("home/ann/.bashrc");
    std::fs::write(
        &bashrc,
        "alias ll='ls -l'\nexport HSA_OVERRIDE_GFX_VERSION=11.0.0\n",
    )
    .unwrap();
    let (code, v, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "alias ll='ls -l'\n# greta doctor --fix: export HSA_OVERRIDE_GFX_VERSION=11.0.0\n"
    );
    // The captured environment still has it: a new shell will not.
    assert_eq!(status_of(&v, "rocm.hsa-override"), "pending", "{v}");
    fix(&m, &["--undo"]);
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "alias ll='ls -l'\nexport HSA_OVERRIDE_GFX_VERSION=11.0.0\n"
    );
}

#[test]
fn a_small_carveout_apu_gets_a_ttm_limit_in_modprobe_d() {
    let (_t, m) = machine();
    let dev = m.join("sys/bus/pci/devices/0000:c5:00.0");
    std::fs::write(dev.join("mem_info_vram_total"), "536870912\n").unwrap();
    std::fs::write(dev.join("mem_info_gtt_total"), "2147483648\n").unwrap();
    std::fs::create_dir_all(m.join("proc")).unwrap();
    std::fs::write(
        m.join("proc/meminfo"),
        "MemTotal:       65536000 kB\nMemFree:        1000 kB\n",
    )
    .unwrap();
    let (code, v, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(0), "{err}");
    let conf = std::fs::read_to_string(m.join("etc/modprobe.d/greta-ttm.conf")).unwrap();
    // Three quarters of 65536000 kB in 4 KiB pages.
    assert!(
        conf.contains("options ttm pages_limit=12288000\n"),
        "{conf}"
    );
    assert_eq!(status_of(&v, "apu.small-vram"), "pending", "{v}");
    fix(&m, &["--undo"]);
    assert!(!m.join("etc/modprobe.d/greta-ttm.conf").exists());
    // The directory the fix made for it goes too (the tree had none).
    assert!(!m.join("etc/modprobe.d").exists());
}

/// `--undo` removes the directories its fix created only while they are
/// empty: a file someone put there since keeps its directory.
#[test]
fn undo_removes_the_directories_the_fix_made_unless_something_else_is_there() {
    use std::os::unix::fs::PermissionsExt;
    let (_t, m) = machine();
    let nodes = "/dev/kfd c 0600 0 0\n/dev/dri/renderD128 c 0660 0 44\n";
    std::fs::write(m.join(".greta/dev-nodes"), nodes).unwrap();
    let (code, _, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(m.join("etc/udev/rules.d/70-greta-gpu.rules").is_file());
    let (code, _, err) = fix(&m, &["--undo"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !m.join("etc/udev").exists(),
        "etc/udev and its rules.d stay"
    );

    std::fs::write(m.join(".greta/dev-nodes"), nodes).unwrap();
    let (code, _, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(0), "{err}");
    let theirs = m.join("etc/udev/rules.d/99-theirs.rules");
    std::fs::write(&theirs, "# someone else's\n").unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, _, err) = fix(&m, &["--undo"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!m.join("etc/udev/rules.d/70-greta-gpu.rules").exists());
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        "# someone else's\n"
    );
}

/// A file the fix rewrites keeps its mode: a 0600 shell profile stays
/// 0600 (written 0644 it would be readable by every user), and so does
/// the undo's rewrite.
#[test]
fn a_0600_file_rewritten_by_the_fix_stays_0600() {
    use std::os::unix::fs::PermissionsExt;
    let (_t, m) = machine();
    let bashrc = m.join("home/ann/.bashrc");
    std::fs::write(&bashrc, "export HSA_OVERRIDE_GFX_VERSION=11.0.0\n").unwrap();
    std::fs::set_permissions(&bashrc, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let (code, _, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(std::fs::read_to_string(&bashrc)
        .unwrap()
        .starts_with("# greta doctor --fix: "));
    assert_eq!(mode(&bashrc), 0o600);
    let (code, _, err) = fix(&m, &["--undo"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "export HSA_OVERRIDE_GFX_VERSION=11.0.0\n"
    );
    assert_eq!(mode(&bashrc), 0o600);
    // /etc/group, 0644 in the tree, stays 0644 (read by every user).
    assert_eq!(mode(&m.join("etc/group")), 0o644);
}

/// A file changed by its user after the fix: `--undo` refuses (exit 2),
/// says which file and that the record is kept, and changes nothing: the
/// user's edit stays, and an undo after they put it back still works.
#[test]
fn undo_after_the_user_changed_the_file_refuses_and_keeps_their_change() {
    let (_t, m) = machine();
    let bashrc = m.join("home/ann/.bashrc");
    std::fs::write(&bashrc, "export HSA_OVERRIDE_GFX_VERSION=11.0.0\n").unwrap();
    let (code, _, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(0), "{err}");
    let fixed = std::fs::read_to_string(&bashrc).unwrap();
    let theirs = format!("{fixed}alias ll='ls -l'\n");
    std::fs::write(&bashrc, &theirs).unwrap();
    let group = std::fs::read(m.join("etc/group")).unwrap();

    let (code, _, err) = fix(&m, &["--undo"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("/home/ann/.bashrc was changed since the fix wrote it")
            && err.contains("nothing was undone")
            && err.contains("kept"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), theirs);
    assert_eq!(std::fs::read(m.join("etc/group")).unwrap(), group);

    // Put back as the fix left it: the undo goes through.
    std::fs::write(&bashrc, &fixed).unwrap();
    let (code, v, err) = fix(&m, &["--undo"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["outcome"], "undone");
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "export HSA_OVERRIDE_GFX_VERSION=11.0.0\n"
    );
    assert_eq!(
        std::fs::read(m.join("etc/group")).unwrap(),
        std::fs::read(phoenix().join("etc/group")).unwrap()
    );
}

#[test]
fn a_root_only_kfd_gets_a_udev_rule() {
    let (_t, m) = machine();
    std::fs::write(
        m.join(".greta/dev-nodes"),
        "/dev/kfd c 0600 0 0\n/dev/dri/renderD128 c 0660 0 44\n",
    )
    .unwrap();
    let (code, v, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(0), "{err}");
    let rule = std::fs::read_to_string(m.join("etc/udev/rules.d/70-greta-gpu.rules")).unwrap();
    assert!(
        rule.contains("KERNEL==\"kfd\", GROUP=\"render\", MODE=\"0660\""),
        "{rule}"
    );
    assert_eq!(status_of(&v, "kfd.permission"), "pending", "{v}");
}

/// A change that cannot be made half-way through: the ones before it are
/// put back, no undo record is left, the error says what and where.
#[test]
fn a_failure_half_way_leaves_the_machine_as_it_was() {
    let (_t, m) = machine();
    // Where the manifest would be moved to is a file, not a directory.
    std::fs::create_dir_all(m.join("var/lib/greta/fix")).unwrap();
    std::fs::write(m.join("var/lib/greta/fix/icd.d"), "in the way").unwrap();
    let before = machine_files(&m);
    let (code, _, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("icd.d"), "{err}");
    assert!(err.contains("put back"), "{err}");
    assert_eq!(machine_files(&m), before);
    let undo = m.join("var/lib/greta/fix/undo");
    let left = std::fs::read_dir(&undo).map(|r| r.count()).unwrap_or(0);
    assert_eq!(left, 0, "an undo record of a fix that did not happen");
}

/// The Phoenix APU with a discrete gfx1201 added as KFD node 2
/// (`dgpu-gfx1201-kfd-node.properties`: node 1's properties with that
/// GPU's target and ids): HIP device 0 is the iGPU.
#[test]
fn hip_device_selection_goes_into_the_env_activation() {
    let (_t, m) = machine();
    let nodes = m.join("sys/class/kfd/kfd/topology/nodes");
    std::fs::create_dir_all(nodes.join("2")).unwrap();
    let dgpu = phoenix().join("../dgpu-gfx1201-kfd-node.properties");
    std::fs::copy(dgpu, nodes.join("2/properties")).unwrap();
    let act = m.join("home/ann/.local/share/greta/envs/rocm6.2/greta-activate");
    std::fs::write(&act, "export GRETA_PROFILE='rocm6.2'\n").unwrap();
    let (code, v, err) = fix(&m, &["--yes"]);
    assert_eq!(code, Some(0), "{err} {v}");
    assert_eq!(
        std::fs::read_to_string(&act).unwrap(),
        "export GRETA_PROFILE='rocm6.2'\n# greta doctor --fix: HIP device 0 is the integrated GPU; select the discrete one.\nexport HIP_VISIBLE_DEVICES=1\n"
    );
    assert_eq!(status_of(&v, "rocm.hip-igpu-first"), "pending", "{v}");
}
