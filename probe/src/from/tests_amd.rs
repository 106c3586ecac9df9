//! AMD machine pastes (the third blind round, docs/doctor.md): the GPU a short torch check
//! script names. Every input line is a real tool's spelling (the source is
//! named beside it).
use super::explain::explain;
use crate::facts::Vendor;

#[test]
fn a_torch_check_script_names_its_device() {
    // legacy-rocm-build#5824: a three-line torch script on Strix Halo.
    let (_, gpus) = explain("/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory\nCUDA available: True\nDevice: AMD Radeon 8060S\nMemory access fault by GPU node-1 (Agent handle: 0x1b376c50) on address 0x7f762a667000. Reason: Page not present or supervisor privilege.\n");
    assert_eq!(gpus, [(Vendor::Amd, "AMD Radeon 8060S".into(), None)]);
    // Other spellings of the same print: a README's CUDA validation block
    // (lower case) and a CLI's info command (`CUDA device:`).
    let (_, gpus) = explain(
        "torch 2.8.0+cu128\ncuda available: True\ndevice: NVIDIA GeForce RTX 5060 Laptop GPU\nCUDA matmul: OK\n",
    );
    assert_eq!(
        gpus,
        [(
            Vendor::Nvidia,
            "NVIDIA GeForce RTX 5060 Laptop GPU".into(),
            None
        )]
    );
    let (_, gpus) = explain("FrustraMPNN v1.0.0\nPython: 3.10.12\nPyTorch: 2.1.0\nCUDA available: True\nCUDA device: NVIDIA GeForce RTX 3090\n");
    assert_eq!(gpus.len(), 1);
    // Without the availability line a `Device:` line proves no device torch
    // uses, but it still names the machine's GPU: the format-agnostic scan
    // reads it (and a name with no GPU vendor adds nothing).
    assert_eq!(explain("Device: AMD Radeon 8060S\n").1.len(), 1);
    assert!(explain("CUDA available: True\nDevice: cpu\n").1.is_empty());
}
