//! rocminfo hangs on some broken stacks: doctor must kill it after its time
//! limit, keep what it printed, and report the hang as a signal.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use greta_probe::facts::{Facts, Gpu, Vendor};
use greta_probe::root::Root;

fn amd_machine() -> Facts {
    Facts {
        gpus: vec![Gpu {
            vendor: Vendor::Amd,
            name: "AMD Instinct MI300X VF".into(),
            vendor_id: Some(0x1002),
            device_id: Some(0x74b5),
            ..Gpu::default()
        }],
        ..Facts::default()
    }
}

#[test]
fn hanging_rocminfo_is_killed_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("rocminfo");
    // Prints the first line a real rocminfo prints, then hangs like a stuck HSA init.
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'ROCk module version 6.16.13 is loaded'\nexec sleep 600\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut env = BTreeMap::new();
    env.insert("PATH".to_string(), bin.display().to_string());
    let root = Root::live_recording()
        .with_env(env)
        .with_cmd_timeout(Duration::from_millis(500));
    let mut f = amd_machine();
    let t0 = Instant::now();
    let summary =
        greta_probe::live::rocm::collect(&root, &mut f, Some(greta_probe::collect::parse_into));
    // Not a timing measurement: only "did not wait for sleep 600".
    assert!(t0.elapsed() < Duration::from_secs(60));
    assert!(summary.contains("rocminfo timed out"), "{summary}");
    let s = f
        .signals
        .iter()
        .find(|s| s.id == "rocminfo-timeout")
        .expect("timeout signal");
    assert_eq!(s.source, "rocminfo");
    // The partial output was kept and recorded for a capture.
    let rec = root.take_record().unwrap();
    let cmd = rec.cmds.iter().find(|c| c.name == "rocminfo").unwrap();
    assert_eq!(cmd.status, greta_probe::root::CmdStatus::TimedOut);
    assert!(cmd.text.contains("ROCk module version 6.16.13 is loaded"));
    // The rules turn it into a finding.
    let ids: Vec<String> = greta_probe::rules::diagnose(&f)
        .into_iter()
        .map(|x| x.id)
        .collect();
    assert!(!ids.is_empty(), "a hung rocminfo must raise a finding");
}

#[test]
fn replayed_timeout_status_gives_the_same_signal() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sysroots/mi300x-vf");
    let tmp = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", src.display()))
        .arg(tmp.path())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(
        tmp.path().join(".greta/cmd/rocminfo.txt"),
        "ROCk module version 6.16.13 is loaded\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join(".greta/cmd/rocminfo.status"), "timeout\n").unwrap();
    let (f, _) = greta_probe::collect::collect(&Root::sysroot(tmp.path()).unwrap());
    assert!(f.signals.iter().any(|s| s.id == "rocminfo-timeout"));
    // No agents: the runtime did not answer.
    assert!(f.rocm.agent_gfx.is_empty());
}
