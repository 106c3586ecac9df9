//! Live collection on this machine (Debian 12 CI: Mesa lavapipe + RADV
//! manifests from mesa-vulkan-drivers, libvulkan1, no GPU).

use greta_probe::{Probe, Root, Vendor};
use greta_vocab::VkFamily;

#[test]
fn live_run_finds_lavapipe_through_ash_and_mesa_manifests() {
    let root = Root::live();
    let run = Probe::new(&root).run();
    let (f, checks) = (run.facts, run.checks);
    eprintln!("{}", serde_json::to_string_pretty(&f).unwrap());
    for c in &checks {
        eprintln!(
            "{:>14} {:>8.1} ms  {}",
            c.id,
            c.duration.as_secs_f64() * 1e3,
            c.summary
        );
    }
    assert_eq!(f.sources, vec!["live".to_string()]);
    assert!(f.kernel_version.as_deref().is_some_and(|k| !k.is_empty()));

    // Loader and manifests as installed by libvulkan1 + mesa-vulkan-drivers.
    let loader = f.vulkan.loader.as_deref().expect("libvulkan.so.1 found");
    assert!(loader.ends_with("libvulkan.so.1"), "{loader}");
    let manifest = |file: &str| {
        f.vulkan
            .icds
            .iter()
            .find(|i| i.manifest.ends_with(file))
            .unwrap_or_else(|| panic!("{file} found"))
    };
    let lvp = manifest("lvp_icd.x86_64.json");
    assert_eq!(lvp.kind, VkFamily::Lavapipe);
    assert_eq!(lvp.library_ok, Some(true), "{lvp:?}");
    assert_eq!(lvp.found_in.as_deref(), Some("/usr/share/vulkan/icd.d"));
    let radv = manifest("radeon_icd.x86_64.json");
    assert_eq!(radv.kind, VkFamily::Radv);
    assert_eq!(radv.library_ok, Some(true), "{radv:?}");

    // lavapipe enumerated through ash: a CPU device, driverID -> Lavapipe.
    let dev = f
        .vulkan
        .devices
        .iter()
        .find(|d| d.kind == VkFamily::Lavapipe)
        .expect("lavapipe device through ash");
    assert_eq!(dev.device_type, Some(greta_vocab::DeviceType::Cpu));
    assert!(dev.name.contains("llvmpipe"), "{}", dev.name);
    assert_eq!(dev.driver_name.as_deref(), Some("llvmpipe"));
    assert!(dev
        .api_version
        .as_deref()
        .is_some_and(|v| v.starts_with("1.")));
    assert!(dev.device_uuid.is_some_and(|u| u.to_string().len() == 36));
    assert!(dev.subgroup_size.is_some_and(|s| s >= 4));
    assert!(dev.fp16.is_some());
    assert!(dev.cooperative_matrix.is_some());
    assert!(f.vulkan.drivers.contains(&VkFamily::Lavapipe));
    assert!(f.vulkan.drivers.contains(&VkFamily::Radv));

    // Every real GPU listed comes from the PCI bus; lavapipe is vendor cpu.
    assert!(
        f.gpus
            .iter()
            .all(|g| g.vendor == Vendor::Cpu || g.pci_address.is_some()),
        "{:?}",
        f.gpus
    );
    assert!(f
        .gpus
        .iter()
        .any(|g| g.vendor == Vendor::Cpu && g.name.contains("llvmpipe")));
    // The CI machine has no GPU at all (the GPU machines scripts/gpu runs on do).
    let gpu_less = f.gpus.iter().all(|g| g.vendor == Vendor::Cpu);
    if gpu_less {
        assert!(f
            .device_nodes
            .iter()
            .any(|n| n.path == "/dev/kfd" && !n.exists));
    }
    for area in [
        "pci",
        "device-nodes",
        "vulkan-icds",
        "vulkan-devices",
        "rocm",
        "python",
    ] {
        assert!(f.scanned.iter().any(|s| s == area), "{area} not scanned");
    }
    // The rules on these facts: CPU-only Vulkan is a warning, nothing fails.
    let found = greta_probe::diagnose(&f);
    if gpu_less {
        let ids: Vec<&str> = found.iter().map(|x| x.id.as_str()).collect();
        assert!(ids.contains(&"vulkan.cpu-only"), "{ids:?}");
        assert!(
            found
                .iter()
                .all(|x| x.severity != greta_probe::Severity::Fail),
            "{found:#?}"
        );
    }
    let ids: Vec<&str> = checks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "pci",
            "kfd",
            "device-nodes",
            "vulkan-icds",
            "vulkan-devices",
            "rocm",
            "python"
        ]
    );
}

/// The live checks run beside each other, and the check list keeps its
/// order. The HIP check (a child of greta, here a stand-in that notes when
/// it was started) must start before the checks of this thread are done:
/// run one after another it would start only after all of them, at least
/// their summed time after the run began. The facts are those of a run
/// with no HIP check at all (the stand-in says nothing).
#[test]
fn live_checks_run_beside_each_other_in_a_fixed_order() {
    use greta_probe::{HipRun, CHECKS};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    let root = Root::live();
    let started: Arc<Mutex<Option<Instant>>> = Arc::default();
    let mark = started.clone();
    let t0 = Instant::now();
    let run = Probe::new(&root)
        .hip_check(move || {
            *mark.lock().unwrap() = Some(Instant::now());
            std::thread::sleep(Duration::from_millis(300));
            (HipRun::NotAsked("test stand-in".into()), Duration::ZERO)
        })
        .run();
    let hip_start = started.lock().unwrap().expect("HIP check ran") - t0;
    let ids: Vec<&str> = run.checks.iter().map(|c| c.id.as_str()).collect();
    let want: Vec<&str> = CHECKS.iter().map(|c| c.0).collect();
    assert_eq!(ids, want, "checks in the order of CHECKS");
    // Checks run one after another on the calling thread before HIP would
    // start (Python ran beside them already before).
    let serial: Duration = run
        .checks
        .iter()
        .filter(|c| !matches!(c.id.as_str(), "python" | "hip-runtime"))
        .map(|c| c.duration)
        .sum();
    assert!(
        serial > Duration::from_millis(5),
        "the checks took {serial:?}: too little to tell"
    );
    assert!(
        hip_start < serial,
        "HIP started {hip_start:?} into the run, after the {serial:?} of the other checks"
    );
}
