//! Formats and causes the fixtures lack, written in the exact layouts and
//! message texts the tools print (ERRORS.md quotes): each input is
//! recognised by content and raises exactly the finding its cause deserves.

use greta_probe::{Format, Severity, Vendor};

fn explain(text: &str) -> (Vec<Format>, greta_probe::Facts, Vec<String>) {
    let (formats, facts) = greta_probe::parse_text(text, "pasted.txt");
    let facts = greta_probe::merge(vec![facts]);
    let ids = greta_probe::diagnose(&facts)
        .into_iter()
        .map(|f| f.id)
        .collect();
    (formats, facts, ids)
}

#[test]
fn amdgpu_init_failure_in_dmesg() {
    // ERRORS.md A2 (MI300X, ROCm 6.2.0).
    let t = "[    5.123456] amdgpu 0000:05:00.0: amdgpu: get invalid ip discovery binary signature\n\
             [    5.123460] [drm:amdgpu_discovery_set_ip_blocks [amdgpu]] *ERROR* amdgpu_discovery_init failed\n\
             [    5.123470] amdgpu 0000:05:00.0: amdgpu: Fatal error during GPU init\n\
             [    5.123480] amdgpu: probe of 0000:05:00.0 failed with error -22\n";
    let (formats, facts, ids) = explain(t);
    assert_eq!(names(&formats), ["dmesg"]);
    assert_eq!(facts.gpus.len(), 1);
    assert_eq!(facts.gpus[0].pci_address.as_deref(), Some("0000:05:00.0"));
    assert_eq!(facts.gpus[0].kernel_driver, None, "probe failed: not bound");
    assert_eq!(ids, vec!["driver.amdgpu-not-bound"]);
    let f = &greta_probe::diagnose(&facts)[0];
    assert!(f.title.contains("failed to initialise"), "{}", f.title);
    assert!(f.evidence.iter().any(|e| e.starts_with("pasted.txt:1:")));
}

#[test]
fn ls_cannot_access_dev_kfd_is_kfd_missing() {
    let (formats, facts, ids) =
        explain("ls: cannot access '/dev/kfd': No such file or directory\n");
    assert_eq!(names(&formats), ["device-node-listing"]);
    assert!(!facts.device_nodes[0].exists);
    assert_eq!(ids, vec!["kfd.missing"]);
}

/// A missing /dev/kfd is a failure beside an AMD GPU, and a warning with
/// both readings (no AMD GPU here, or its node not passed in) when nothing
/// shows one: a machine without an AMD GPU has no /dev/kfd either.
#[test]
fn kfd_missing_severity_follows_the_evidence() {
    let severity = |text: &str| {
        let (_, facts, _) = explain(text);
        let f: Vec<_> = greta_probe::diagnose(&facts)
            .into_iter()
            .filter(|f| f.id == "kfd.missing")
            .collect();
        assert_eq!(
            f.len(),
            1,
            "{text}: {:?}",
            f.iter().map(|f| &f.title).collect::<Vec<_>>()
        );
        (f[0].severity, f[0].message.clone())
    };
    let alone = "ls: cannot access '/dev/kfd': No such file or directory\n";
    let (sev, msg) = severity(alone);
    assert_eq!(sev, Severity::Warn);
    assert!(msg.contains("no AMD GPU"), "{msg}");
    let beside_gpu = format!(
        "{alone}03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX] [1002:744c] (rev c8)\n"
    );
    assert_eq!(severity(&beside_gpu).0, Severity::Fail);
    // ollama's "kfd driver not loaded" comes with its own "amdgpu devices detected".
    let ollama = r#"time=2024-10-02T08:34:23.718Z level=ERROR source=amd_linux.go:364 msg="amdgpu devices detected but permission problems block access" error="kfd driver not loaded""#;
    assert_eq!(severity(&format!("{ollama}\n")).0, Severity::Fail);
}

#[test]
fn env_dump_with_override_and_rocm_ld_path() {
    let t = "HOME=/home/ann\nHSA_OVERRIDE_GFX_VERSION=11.0.0\nLD_LIBRARY_PATH=/opt/rocm-6.1.0/lib:/usr/local/lib\nSHELL=/bin/bash\n";
    let (formats, facts, ids) = explain(t);
    assert_eq!(names(&formats), ["env-dump"]);
    assert_eq!(facts.rocm.ld_library_path_rocm, vec!["/opt/rocm-6.1.0/lib"]);
    assert!(
        ids.contains(&"rocm.hsa-override".into()) && ids.contains(&"rocm.ld-library-path".into()),
        "{ids:?}"
    );
    let f = greta_probe::diagnose(&facts)
        .into_iter()
        .find(|f| f.id == "rocm.hsa-override")
        .unwrap();
    assert!(
        f.message.contains("gfx1100"),
        "override decoded: {}",
        f.message
    );
}

#[test]
fn switchable_graphics_layer_manifest_unless_disabled() {
    let layer = r#"{
    "file_format_version" : "1.0.0",
    "layer": {
        "name": "VK_LAYER_AMD_switchable_graphics_64",
        "type": "GLOBAL",
        "library_path": "/usr/lib/x86_64-linux-gnu/amdvlk64.so",
        "api_version": "1.3.280",
        "implementation_version": "1",
        "description": "AMD switchable graphics layer",
        "disable_environment": { "DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1": "1" }
    }
}"#;
    let (formats, _, ids) = explain(layer);
    assert_eq!(names(&formats), ["layer-manifest"]);
    assert_eq!(ids, vec!["vulkan.amd-switchable-layer"]);
    // The same layer with the switch set in the environment hides nothing.
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("amd_icd64.json");
    let b = dir.path().join("env.txt");
    std::fs::write(&a, layer).unwrap();
    std::fs::write(&b, "DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1=1\n").unwrap();
    let run = greta_probe::from_files(&[a, b]).unwrap();
    assert!(greta_probe::diagnose(&run.facts).is_empty());
}

#[test]
fn radv_and_amdvlk_listing_one_gpu_is_a_duplicate() {
    // vulkaninfo --summary with both ICDs active (ERRORS.md E9 / DESIGN).
    let dev = |name: &str, id: &str| {
        format!(
            "GPU{id}:\n\tapiVersion = 1.3.280\n\tvendorID = 0x1002\n\tdeviceID = 0x15bf\n\tdeviceType = PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU\n\tdeviceName = {name}\n\tdriverID = {}\n\tdeviceUUID = 00000000-c400-0000-0000-000000000000\n",
            if name.contains("RADV") { "DRIVER_ID_MESA_RADV" } else { "DRIVER_ID_AMD_OPEN_SOURCE" }
        )
    };
    let t = format!(
        "Devices:\n========\n{}{}",
        dev("AMD Radeon 760M (RADV PHOENIX)", "0"),
        dev("AMD Radeon 760M", "1")
    );
    let (_, facts, ids) = explain(&t);
    assert_eq!(facts.gpus.len(), 1, "one GPU: {:?}", facts.gpus);
    assert_eq!(facts.gpus[0].gfx.as_deref(), Some("gfx1103"));
    assert_eq!(ids, vec!["vulkan.duplicate-gpu"]);
}

#[test]
fn cuda_torch_on_an_amd_machine_is_a_framework_mismatch() {
    let t = "Collecting environment information...\nPyTorch version: 2.4.1+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\nROCM used to build PyTorch: N/A\n\
             Python version: 3.11.9 (main) [GCC 11.2.0] (64-bit runtime)\nIs CUDA available: False\nGPU models and configuration: Could not collect\n";
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("collect_env.txt");
    let b = dir.path().join("rocminfo.txt");
    std::fs::write(&a, t).unwrap();
    std::fs::write(
        &b,
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/rx7900xtx-gfx1100/rocminfo-rocm6.2.2.txt"
        ))
        .unwrap(),
    )
    .unwrap();
    let run = greta_probe::from_files(&[a, b]).unwrap();
    let f = greta_probe::diagnose(&run.facts);
    let m = f
        .iter()
        .find(|x| x.id == "framework.mismatch")
        .expect("mismatch");
    assert_eq!(m.severity, Severity::Fail);
    assert!(m.evidence[0].contains("built for CUDA"), "{:?}", m.evidence);
}

#[test]
fn amd_smi_static_and_rocm_smi_product_forms() {
    let amd_smi = "GPU: 0\n    ASIC:\n        MARKET_NAME: AMD Instinct MI300X\n        VENDOR_ID: 0x1002\n        DEVICE_ID: 0x74a1\n        TARGET_GRAPHICS_VERSION: gfx942\n    BUS:\n        BDF: 0000:05:00.0\n\
                   GPU: 1\n    ASIC:\n        MARKET_NAME: AMD Instinct MI300X\n        DEVICE_ID: 0x74a1\n        TARGET_GRAPHICS_VERSION: gfx942\n    BUS:\n        BDF: 0000:26:00.0\n";
    let (formats, facts, _) = explain(amd_smi);
    assert_eq!(names(&formats), ["amd-smi"]);
    assert_eq!(facts.gpus.len(), 2);
    assert!(facts
        .gpus
        .iter()
        .all(|g| g.gfx.as_deref() == Some("gfx942") && !g.vf));
    let rocm_smi = "========================= ROCm System Management Interface =========================\n\
                    GPU[0]\t\t: Card Series: \t\tAMD Instinct MI300X VF\nGPU[0]\t\t: Device ID: \t\t0x74b5\nGPU[0]\t\t: GFX Version: \t\tgfx942\n\
                    ========================= End of ROCm SMI Log =========================\n";
    let (formats, facts, ids) = explain(rocm_smi);
    assert_eq!(names(&formats), ["rocm-smi"]);
    assert_eq!(facts.gpus.len(), 1);
    assert!(facts.gpus[0].vf);
    assert_eq!(ids, vec!["gpu.sriov-vf"]);
}

#[test]
fn llama_cpp_hip_device_list() {
    let t = "ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no\nggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon Graphics, gfx1103 (0x1103), VMM: no, Wave Size: 32\n";
    let (formats, facts, ids) = explain(t);
    assert_eq!(names(&formats), ["llama-cpp"]);
    assert_eq!(facts.gpus[0].vendor, Vendor::Amd);
    assert_eq!(facts.gpus[0].gfx.as_deref(), Some("gfx1103"));
    assert!(ids.is_empty());
}

#[test]
fn clinfo_nvidia_and_cpu_devices() {
    let t = "Number of platforms                               1\n  Platform Name                                   NVIDIA CUDA\n\
             Number of devices                                 1\n  Device Name                                     NVIDIA GeForce RTX 3090\n  Device Type                                     GPU\n";
    let (formats, facts, _) = explain(t);
    assert_eq!(names(&formats), ["clinfo"]);
    assert_eq!(facts.gpus.len(), 1);
    assert_eq!(facts.gpus[0].vendor, Vendor::Nvidia);
}

#[test]
fn hip_runtime_errors_map_to_their_causes() {
    for (line, id) in [
        ("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", "rocm.gfx-unsupported"),
        // ollama then runs on the CPU: the application-level finding too.
        ("amdgpu [0] gfx1103 is not supported by /tmp/ollama2145067703/rocm [gfx1030 gfx1100]", "rocm.gfx-unsupported app.cpu-fallback"),
        ("rocBLAS error: Could not initialize Tensile host: No devices found", "rocm.runtime-no-device"),
        ("Memory access fault by GPU node-1 (Agent handle: 0x1f829860) on address 0x7a8a4be00000. Reason: Page not present or supervisor privilege.", "rocm.gpu-fault"),
        ("Unable to open /dev/kfd read-write: Operation not permitted", "kfd.rejected"),
        ("Warning: Attempting to use hipBLASLt on an unsupported architecture! Overriding blas backend to hipblas (function operator())", "rocm.hipblaslt-fallback"),
        ("ERROR: [Loader Message] Code 0 : vkCreateInstance: Found no drivers!", "vulkan.no-icd"),
        ("vulkaninfo: error while loading shared libraries: libvulkan.so.1: cannot open shared object file: No such file or directory", "vulkan.loader-missing"),
        ("amdgpu_device_initialize: DRM version is 2.50.0 but this driver is only compatible with 3.x.x.", "driver.amdgpu-not-bound"),
    ] {
        let (formats, _, ids) = explain(&format!("some app starting\n{line}\n"));
        assert!(!formats.is_empty(), "{line}: not recognised");
        let want: Vec<String> = id.split(' ').map(String::from).collect();
        assert_eq!(ids, want, "{line}");
    }
}

#[test]
fn lspci_k_shows_an_unbound_amd_gpu_and_merges_with_rocminfo() {
    let lspci = "03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M] [1002:744c] (rev c8)\n\
                 \tSubsystem: Sapphire Technology Limited Device [1da2:e471]\n\tKernel driver in use: amdgpu\n\tKernel modules: amdgpu\n\
                 0b:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Phoenix1 [1002:15bf] (rev c4)\n\
                 \tSubsystem: Lenovo Device [17aa:3818]\n\tKernel modules: amdgpu\n\
                 0c:00.0 Audio device [0403]: Advanced Micro Devices, Inc. [AMD/ATI] Rembrandt Radeon High Definition Audio Controller [1002:1640]\n";
    let (formats, facts, ids) = explain(lspci);
    assert_eq!(names(&formats), ["lspci"]);
    assert_eq!(facts.gpus.len(), 2, "the audio function is not a GPU");
    assert_eq!(facts.gpus[0].pci_address.as_deref(), Some("0000:03:00.0"));
    assert_eq!(facts.gpus[0].kernel_driver.as_deref(), Some("amdgpu"));
    assert_eq!(facts.gpus[1].device_id, Some(0x15bf));
    assert_eq!(ids, vec!["driver.amdgpu-not-bound"]);
    // With the rx7900 rocminfo (chip 0x744c) the two views of one GPU merge.
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("lspci.txt");
    std::fs::write(&a, lspci.lines().take(4).collect::<Vec<_>>().join("\n")).unwrap();
    let b = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rx7900xtx-gfx1100/rocminfo-rocm6.2.2.txt"
    )
    .into();
    let run = greta_probe::from_files(&[a, b]).unwrap();
    assert_eq!(run.facts.gpus.len(), 1, "{:#?}", run.facts.gpus);
    let g = &run.facts.gpus[0];
    assert_eq!(g.gfx.as_deref(), Some("gfx1100"));
    assert_eq!(g.kernel_driver.as_deref(), Some("amdgpu"));
    assert!(greta_probe::diagnose(&run.facts).is_empty());
}

#[test]
fn nvidia_smi_table_merges_with_vulkaninfo() {
    let smi = "+-----------------------------------------------------------------------------+\n\
               | NVIDIA-SMI 525.125.06   Driver Version: 525.125.06   CUDA Version: 12.0     |\n\
               |-------------------------------+----------------------+----------------------+\n\
               | GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n\
               |===============================+======================+======================|\n\
               |   0  NVIDIA GeForce RTX 2060  Off  | 00000000:01:00.0  On |                  N/A |\n\
               | 30%   40C    P8    12W / 160W |    300MiB /  6144MiB |      2%      Default |\n";
    let (formats, facts, _) = explain(smi);
    assert_eq!(names(&formats), ["nvidia-smi"]);
    assert_eq!(facts.gpus[0].name, "NVIDIA GeForce RTX 2060");
    assert_eq!(facts.gpus[0].pci_address.as_deref(), Some("0000:01:00.0"));
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("smi.txt");
    std::fs::write(&a, smi).unwrap();
    let b = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/nvidia-rtx2060-debian-contrast/vulkaninfo-summary-devices-section.txt"
    )
    .into();
    let run = greta_probe::from_files(&[a, b]).unwrap();
    let nv: Vec<_> = run
        .facts
        .gpus
        .iter()
        .filter(|g| g.vendor == Vendor::Nvidia)
        .collect();
    assert_eq!(nv.len(), 1, "{:#?}", run.facts.gpus);
    assert_eq!(nv[0].device_id, Some(0x1f08));
    assert_eq!(
        run.facts.kernel_driver_version.as_deref(),
        Some("525.125.06")
    );
}

#[test]
fn hipconfig_gives_hip_version_and_rocm_path() {
    let t = "HIP version  : 5.7.31921-d1770ee1b\n\n== hipconfig\nHIP_PATH     : /opt/rocm-5.7.0\nROCM_PATH    : /opt/rocm-5.7.0\nHIP_COMPILER : clang\nHIP_PLATFORM : amd\n";
    let (formats, facts, _) = explain(t);
    assert_eq!(names(&formats), ["hipconfig"]);
    assert_eq!(
        facts.rocm.hip_version.as_deref(),
        Some("5.7.31921-d1770ee1b")
    );
    assert_eq!(facts.rocm.installs[0].path, "/opt/rocm-5.7.0");
}

/// The names of recognised formats (as the JSON spells them).
fn names(f: &[Format]) -> Vec<&'static str> {
    f.iter().map(|x| x.name()).collect()
}
