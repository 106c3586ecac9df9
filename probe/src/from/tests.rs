//! Tests of the paste reader.
use super::*;

#[test]
fn binary_and_empty_are_refused() {
    assert!(decode(b"").is_err());
    assert!(decode(b" \n\t\n").is_err());
    assert!(decode(b"\x7fELF\x02\x01\x01\0\0\0\0").is_err());
    let noise: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 32) as u8).collect();
    assert!(decode(&noise).is_err());
    assert_eq!(
        decode(b"\x1b[31mROCk module is NOT loaded\x1b[0m\r\n").unwrap(),
        "ROCk module is NOT loaded\n"
    );
}

#[test]
fn utf16_with_bom_is_text() {
    let mut raw = vec![0xff, 0xfe];
    for u in "ROCk module is loaded\r\n".encode_utf16() {
        raw.extend_from_slice(&u.to_le_bytes());
    }
    assert_eq!(decode(&raw).unwrap(), "ROCk module is loaded\n");
}

#[test]
fn invalid_utf8_is_replaced_not_fatal() {
    let t = decode(b"Device Name \xff\xfe gfx1103\n").unwrap();
    assert!(t.contains("gfx1103"));
}

#[test]
fn wsl_is_seen_in_any_paste() {
    for t in [
        "Linux PC 5.15.167.4-microsoft-standard-WSL2 #1 SMP x86_64 GNU/Linux\n",
        "crw-rw-rw- 1 root root 10, 125 Jun 1 10:00 /dev/dxg\n",
        "hsa_signal_store_screlease not found - /opt/rocm-7.2.1/lib/librocdxg.so: undefined symbol\n",
    ] {
        assert_eq!(parse_text(t, "x").1.wsl, Some(true), "{t}");
    }
    assert_eq!(parse_text("Linux box 6.8.0-45-generic\n", "x").1.wsl, None);
}

#[test]
fn an_empty_device_list_is_no_vulkan_device() {
    let none = "docker run ... llama.cpp:server-vulkan\n# ./llama-server --list-devices\nAvailable devices:\n";
    assert!(parse_text(none, "x")
        .1
        .signals
        .iter()
        .any(|s| s.id == "vk-app-no-devices"));
    let one = "server-vulkan\nAvailable devices:\nVulkan0: AMD Radeon 780M Graphics (RADV PHOENIX) (29696 MiB, 28598 MiB free)\n";
    assert!(!parse_text(one, "x")
        .1
        .signals
        .iter()
        .any(|s| s.id == "vk-app-no-devices"));
}

#[test]
fn benchmark_clients_name_their_device() {
    let t = "Device ID 0 : AMD Radeon VII gfx906:sramecc+:xnack-\nrocblaslt warning: No paths matched x\n";
    let f = parse_text(t, "x").1;
    assert_eq!(f.gpus.len(), 1);
    assert_eq!(f.gpus[0].name, "AMD Radeon VII");
    assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx906"));
    assert!(parse_text("Device ID 0 : something else\n", "x")
        .1
        .gpus
        .is_empty());
}

#[test]
fn rocminfo_that_segfaults_is_an_hsa_crash() {
    let f = parse_text(
        "$ rocminfo\nROCk module is loaded\nSegmentation fault\n",
        "r.txt",
    )
    .1;
    assert!(f
        .signals
        .iter()
        .any(|s| s.id == "hsa-runtime-crash" && s.line == Some(3)));
    // Not every paste with a segfault: only rocminfo's.
    let g = parse_text("python3 train.py\nSegmentation fault\n", "x").1;
    assert!(!g.signals.iter().any(|s| s.id == "hsa-runtime-crash"));
}

#[test]
fn a_refusal_names_its_gpu() {
    let t = "Error: Cannot install llamacpp:rocm on this system: Unsupported GPU: gfx950\n";
    let f = parse_text(t, "x").1;
    assert_eq!(f.gpus.len(), 1);
    assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx950"));
    let t = "level=WARN msg=\"amdgpu is not supported (supported types:[gfx1103])\" gpu_type=gfx1150 gpu=0\n";
    let f = parse_text(t, "x").1;
    assert_eq!(f.gpus.len(), 1, "{:?}", f.gpus);
    assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1150"));
}

#[test]
fn rocm_version_from_an_install_path() {
    let t = "OSError: /opt/rocm-7.1.1/lib/libamdhip64.so.7: undefined symbol: hsa_x\n";
    assert_eq!(parse_text(t, "x").1.rocm.version.as_deref(), Some("7.1.1"));
    // Two releases: neither is "the" version.
    let two = "/opt/rocm-6.0.0/lib/a.so\n/opt/rocm-5.7.1/lib/b.so\n";
    assert_eq!(rocm_path_version(two), None);
    assert_eq!(rocm_path_version("/opt/rocm-/x /opt/rocm-7"), None);
}

#[test]
fn torch_version_hip_in_a_python_session() {
    let f = parse_text(
        ">>> import torch\n>>> torch.version.hip\n'3.0.19493-36529b1'\n",
        "x",
    )
    .1;
    assert_eq!(f.rocm.version.as_deref(), Some("3.0"));
    assert_eq!(f.rocm.hip_version.as_deref(), Some("3.0.19493-36529b1"));
    let f = parse_text("print(torch.version.hip)\n6.2.41133-dd7f95766\n", "x").1;
    assert_eq!(f.rocm.version.as_deref(), Some("6.2"));
    assert_eq!(
        parse_text(">>> torch.version.hip\n>>> None\n", "x")
            .1
            .rocm
            .version,
        None
    );
}

#[test]
fn unrelated_text_is_not_recognised() {
    assert!(recognise("hello world\nthis is a shopping list\n").is_empty());
    assert!(recognise("{\"not\": \"a manifest\"}").is_empty());
}
