//! The enumerator on this machine's real Vulkan: lavapipe where Mesa's
//! manifest is installed (the test script installs it).

use greta_vocab::{DeviceType, VkDriver};
use std::time::Duration;

#[test]
fn lavapipe_is_described_when_installed() {
    let manifest = std::path::Path::new("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json");
    let e = greta_vkenum::enumerate_with_timeout(c"greta-test", Duration::from_secs(60));
    if !manifest.exists() {
        eprintln!("skipped: no lavapipe manifest at {}", manifest.display());
        return;
    }
    assert_eq!(e.error, None);
    let lvp = e
        .devices
        .iter()
        .find(|d| d.driver == Some(VkDriver::Lavapipe))
        .unwrap_or_else(|| panic!("no lavapipe among {:?}", e.devices));
    assert_eq!(lvp.device_type, DeviceType::Cpu);
    assert!(lvp.name.contains("llvmpipe"), "{}", lvp.name);
    assert!(lvp.uuid.is_some() && lvp.compute_queue_family.is_some());
    assert!(
        lvp.api_version >= ash::vk::API_VERSION_1_2,
        "{}",
        lvp.api_version_text()
    );
    assert!(lvp.subgroup_size.is_some_and(|s| s >= 4) && lvp.subgroup_arith);
    assert_eq!(lvp.shader_f16, Some(true));
    assert!(!lvp.heaps.is_empty() && lvp.max_allocation_size > 0);
    assert!(e.instance_version.is_some());
}
