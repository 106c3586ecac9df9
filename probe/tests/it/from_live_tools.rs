//! The `--from` parsers on output the real tools print on this machine
//! (Mesa lavapipe, Debian's rocminfo without a GPU), checked against an
//! independent reference: the same devices enumerated live through ash.
//! CI installs vulkan-tools and rocminfo (scripts/setup.sh --test); a
//! missing tool fails the test rather than skipping it.

use greta_probe::{Probe, Root, Scope, Vendor};
use greta_vocab::VkFamily;
use std::process::Command;

fn tool_output(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd} must be installed (scripts/setup.sh --test): {e}"));
    let mut raw = o.stdout;
    raw.extend_from_slice(&o.stderr);
    greta_probe::decode(&raw).expect("tool output is text")
}

fn check_against_ash(format: &str, args: &[&str]) {
    let text = tool_output("vulkaninfo", args);
    let (formats, facts) = greta_probe::parse_text(&text, "vulkaninfo.txt");
    assert!(formats.iter().any(|f| f.name() == format), "{formats:?}");
    // The live enumeration (ash) as the probe runs it.
    let reference = Probe::new(&Root::live()).scope(Scope::Devices).run().facts;
    assert!(
        reference.scanned.iter().any(|s| s == "vulkan-devices"),
        "ash enumeration failed: {:?}",
        reference.signals
    );
    let reference = reference.vulkan;
    assert_eq!(
        facts.vulkan.devices.len(),
        reference.devices.len(),
        "{:?}",
        facts.vulkan.devices
    );
    for (parsed, live) in facts.vulkan.devices.iter().zip(&reference.devices) {
        assert_eq!(parsed.name, live.name);
        assert_eq!(parsed.kind, live.kind);
        assert_eq!(parsed.vendor_id, live.vendor_id);
        assert_eq!(parsed.device_uuid, live.device_uuid, "{}", parsed.name);
        assert_eq!(parsed.driver_info, live.driver_info);
    }
    // Headless noise (no DISPLAY, XDG_RUNTIME_DIR) is recognised, never an error.
    for s in &facts.signals {
        assert!(s.id.starts_with("noise-"), "unexpected signal {s:?}");
    }
    let findings = greta_probe::diagnose(&facts);
    assert!(
        findings
            .iter()
            .all(|f| f.severity != greta_probe::Severity::Fail),
        "{findings:?}"
    );
    if facts
        .vulkan
        .devices
        .iter()
        .all(|d| d.kind == VkFamily::Lavapipe)
    {
        assert!(findings.iter().any(|f| f.id == "vulkan.cpu-only"));
        assert!(facts.gpus.iter().all(|g| g.vendor == Vendor::Cpu));
    }
}

#[test]
fn vulkaninfo_summary_matches_ash() {
    check_against_ash("vulkaninfo-summary", &["--summary"]);
}

#[test]
fn full_vulkaninfo_matches_ash() {
    check_against_ash("vulkaninfo", &[]);
}

#[test]
fn rocminfo_without_a_gpu_says_rock_not_loaded() {
    // Debian's rocminfo on a machine without amdgpu: coloured
    // "ROCk module is NOT loaded, possibly no GPU devices".
    let text = tool_output("rocminfo", &[]);
    assert!(!text.contains('\u{1b}'), "ANSI codes are stripped");
    let (formats, facts) = greta_probe::parse_text(&text, "rocminfo.txt");
    assert_eq!(formats.first().map(|f| f.name()), Some("rocminfo"));
    assert!(facts.gpus.is_empty());
    assert!(facts
        .signals
        .iter()
        .any(|s| s.id == "rock-not-loaded" && s.line.is_some()));
    assert!(facts
        .drivers
        .iter()
        .any(|d| d.name == "amdgpu" && !d.loaded));
}
