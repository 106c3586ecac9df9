//! `greta doctor -v`: under each check line what it read (as `flutter
//! doctor -v` shows each check's details), from a captured machine.

use crate::support::greta;
use std::path::PathBuf;

fn phoenix() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../probe/tests/sysroots/phoenix-apu")
}

fn doctor(args: &[&str]) -> String {
    let o = greta()
        .arg("doctor")
        .args(args)
        .arg("--sysroot")
        .arg(phoenix())
        .env("NO_COLOR", "1")
        .output()
        .expect("greta runs");
    assert!(matches!(o.status.code(), Some(0 | 1)), "{o:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// The lines under check `title` (up to the next check line).
fn under(out: &str, title: &str) -> Vec<String> {
    out.lines()
        .skip_while(|l| !l.contains(title))
        .skip(1)
        .take_while(|l| l.starts_with("      · "))
        .map(|l| l.trim_start_matches("      · ").to_string())
        .collect()
}

#[test]
fn verbose_shows_what_each_check_read() {
    let plain = doctor(&[]);
    assert!(!plain.contains("      · "), "{plain}");
    let v = doctor(&["-v"]);
    let icds = under(&v, "Vulkan loader and ICD manifests");
    assert!(
        icds.iter()
            .any(|l| l.starts_with("ICD /etc/vulkan/icd.d/amd_icd64.json (amdvlk)")),
        "{icds:?}\n{v}"
    );
    let nodes = under(&v, "Device nodes");
    assert!(
        nodes.iter().any(|l| l.starts_with("/dev/kfd: mode ")),
        "{nodes:?}\n{v}"
    );
    let pci = under(&v, "GPUs on the PCI bus");
    assert!(
        pci.iter()
            .any(|l| l.contains("gfx1103") && l.contains("driver amdgpu")),
        "{pci:?}\n{v}"
    );
    let kfd = under(&v, "AMD compute topology");
    assert!(kfd.iter().any(|l| l.contains("GTT")), "{kfd:?}\n{v}");
    // Every check has its detail.
    let checks = v
        .lines()
        .filter(|l| l.starts_with("  ✓ ") || l.starts_with("  ! ") || l.starts_with("  ✗ "))
        .count();
    assert!(checks >= 7, "{v}");
}
