//! Which GPU each HIP device index is, on a replayed two-GPU machine: the
//! captured Phoenix APU (gfx1103, KFD node 1) with a second KFD node for a
//! discrete gfx1201 added (node 2: `dgpu-gfx1201-kfd-node.properties`, node
//! 1's properties with that card's target, device id (30032), render minor
//! (129) and unique id (4660)), so the KFD
//! collector, the HIP order and the doctor's rules run as on a live box.

use std::path::{Path, PathBuf};

use greta_probe::{hip_devices, OrderFrom, Probe, Root};

use crate::common::{copy_tree, envs_at};

fn phoenix() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sysroots/phoenix-apu")
}

/// The Phoenix capture plus a dGPU node, with `env` lines added to its
/// `.greta/env`.
fn two_gpus(dir: &Path, env: &[&str]) {
    copy_tree(&phoenix(), dir);
    let nodes = dir.join("sys/class/kfd/kfd/topology/nodes");
    std::fs::create_dir_all(nodes.join("2")).unwrap();
    let dgpu = phoenix().join("../dgpu-gfx1201-kfd-node.properties");
    std::fs::copy(dgpu, nodes.join("2/properties")).unwrap();
    let mut e = std::fs::read_to_string(dir.join(".greta/env")).unwrap();
    for l in env {
        e.push_str(l);
        e.push('\n');
    }
    std::fs::write(dir.join(".greta/env"), e).unwrap();
}

/// The doctor report of the machine: its notes and finding ids.
fn doctor(env: &[&str]) -> (greta_probe::Facts, Vec<String>, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    two_gpus(tmp.path(), env);
    let root = Root::sysroot(tmp.path()).unwrap();
    let o = Probe::new(&root).envs_at(envs_at).run();
    let facts = o.facts.clone();
    let r = o.into_report(Vec::new());
    let ids = r.findings.iter().map(|f| f.id.clone()).collect();
    (facts, r.notes, ids)
}

#[test]
fn igpu_on_node_1_is_hip_device_0_and_the_doctor_says_export_1() {
    let (f, notes, ids) = doctor(&[]);
    let d = hip_devices(&f).expect("KFD order");
    assert_eq!(d.from, OrderFrom::Kfd);
    let gfx: Vec<_> = d.gpus.iter().map(|g| g.gfx.as_deref().unwrap()).collect();
    assert_eq!(gfx, ["gfx1103", "gfx1201"]);
    assert!(d.gpus[0].integrated && d.gpus[1].discrete);
    assert_eq!(d.gpus[1].uuid.as_deref(), Some("GPU-0000000000001234"));
    let note = notes
        .iter()
        .find(|n| n.starts_with("HIP devices"))
        .expect("note");
    assert!(
        note.contains("0 = ") && note.contains("(gfx1103), integrated"),
        "{note}"
    );
    assert!(
        note.contains("1 = ") && note.contains("(gfx1201), discrete"),
        "{note}"
    );
    assert!(ids.contains(&"rocm.hip-igpu-first".to_string()), "{ids:?}");
    let r = greta_probe::diagnose(&f);
    let w = r.iter().find(|x| x.id == "rocm.hip-igpu-first").unwrap();
    assert_eq!(w.fix.commands, ["export HIP_VISIBLE_DEVICES=1"]);
    assert!(
        w.message.contains("HIP device 0 is the integrated"),
        "{}",
        w.message
    );
}

#[test]
fn a_selection_is_applied_and_explained() {
    for (env, left, finding) in [
        ("HIP_VISIBLE_DEVICES=1", Some("gfx1201"), None),
        (
            "ROCR_VISIBLE_DEVICES=GPU-0000000000001234",
            Some("gfx1201"),
            None,
        ),
        (
            "HIP_VISIBLE_DEVICES=",
            None,
            Some("rocm.visible-devices-none"),
        ),
        (
            "HIP_VISIBLE_DEVICES=2",
            None,
            Some("rocm.visible-devices-none"),
        ),
        (
            "ROCR_VISIBLE_DEVICES=0,3",
            Some("gfx1103"),
            Some("rocm.visible-devices-missing"),
        ),
    ] {
        let (f, notes, ids) = doctor(&[env]);
        let d = hip_devices(&f).unwrap();
        assert_eq!(d.device(0).and_then(|g| g.gfx.as_deref()), left, "{env}");
        assert_eq!(d.visible.len(), usize::from(left.is_some()), "{env}");
        let note = notes
            .iter()
            .find(|n| n.starts_with("GPUs in KFD"))
            .expect(env);
        assert!(note.contains(env), "{note}");
        assert!(
            !ids.contains(&"rocm.hip-igpu-first".to_string()),
            "{env}: {ids:?}"
        );
        for id in ["rocm.visible-devices-none", "rocm.visible-devices-missing"] {
            assert_eq!(
                ids.iter().any(|x| x == id),
                finding == Some(id),
                "{env}: {ids:?}"
            );
        }
    }
}

/// The notes on real pastes of two-GPU machines: the llama.cpp log of an
/// RX 9070 beside a 740M names each HIP index; a Vulkan listing of an
/// RX 9070 XT beside a Raphael iGPU and a rocm-smi table of an RX 9070 XT
/// beside a Granite Ridge iGPU cannot say which is HIP device 0, and say so.
#[test]
fn real_two_gpu_pastes() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let notes = |files: &[&str]| {
        let paths: Vec<PathBuf> = files.iter().map(|f| fixtures.join(f)).collect();
        greta_probe::from_files(&paths).unwrap().into_report().notes
    };
    let dir = "llamacpp-rocm-rx9070-plus-740m-invalid-device-function-device1";
    let n = notes(&[
        &format!("{dir}/llama-cli-version.txt"),
        &format!("{dir}/llama-server-error.txt"),
    ]);
    assert_eq!(
        n,
        ["HIP devices as the application listed them: 0 = AMD Radeon RX 9070 (gfx1201), discrete; 1 = AMD Radeon 740M Graphics (gfx1103), integrated"]
    );
    for f in [
        "amdvlk-vs-radv-rx9070xt-raphael/device-select-list-amdvlk-then-radv.txt",
        "broken-kfd-access/rocm-smi-rx9070xt-rocm7.2.1.txt",
    ] {
        let n = notes(&[f]);
        assert!(
            n.iter().any(|x| x.starts_with("HIP device order unknown: ")
                && x.contains("(gfx1201)")
                && x.contains("(gfx1036)")),
            "{f}: {n:?}"
        );
    }
}
