//! Python framework pastes (the second blind round, docs/doctor.md): the GPU an application's
//! start-up lines or jax's environment info name, and which finding a
//! framework's own error raises. Every input line is a real tool's
//! spelling (the source is named beside it).
use super::explain::explain;
use crate::facts::Vendor;

#[test]
fn comfyui_names_the_device_torch_picked() {
    // A ROCm torch (utensils/comfyui-nix#46): the target from `AMD arch:`.
    let (_, gpus) = explain("pytorch version: 2.10.0+rocm7.1\nAMD arch: gfx1100\nROCm version: (7, 1)\nSet vram state to: NORMAL_VRAM\nDevice: cuda:0 AMD Radeon RX 7900 XTX : native\n");
    assert_eq!(
        gpus,
        [(
            Vendor::Amd,
            "AMD Radeon RX 7900 XTX".into(),
            Some("gfx1100".into())
        )]
    );
    // A CUDA torch behind a timestamp (a ComfyUI worker's log, as pasted
    // in a public deployment guide): no `AMD arch`, no target.
    let (_, gpus) = explain("[00:50:45] pytorch version: 2.9.0+cu128\n[00:50:45] Set vram state to: NORMAL_VRAM\n[00:50:45] Device: cuda:0 NVIDIA GeForce RTX 4090 : cudaMallocAsync\n");
    assert_eq!(
        gpus,
        [(Vendor::Nvidia, "NVIDIA GeForce RTX 4090".into(), None)]
    );
    // ComfyUI on the CPU names no GPU.
    let (_, gpus) = explain("Set vram state to: DISABLED\nDevice: cpu\n");
    assert!(gpus.is_empty(), "{gpus:?}");
}

#[test]
fn torchvision_without_its_operators_is_a_framework_mismatch() {
    // The end of the traceback as utensils/comfyui-nix#46 and
    // pytorch/vision#8985 show it: only the RuntimeError line counts; the
    // source line naming the operator is no error.
    let t = "  File \".../torchvision/_meta_registrations.py\", line 163, in <module>\n    @torch.library.register_fake(\"torchvision::nms\")\n  ...\nRuntimeError: operator torchvision::nms does not exist\n";
    let (ids, _) = explain(t);
    assert_eq!(ids, ["framework.mismatch"]);
    let (ids, _) = explain("    @torch.library.register_fake(\"torchvision::nms\")\n");
    assert!(ids.is_empty(), "{ids:?}");
}

#[test]
fn jax_on_the_rocm_plugin_is_no_fallback() {
    // ROCm/jax#468: the NVIDIA notice ends "Falling back to gpu." and the
    // device line names the AMD GPU jax runs on.
    let t = "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to gpu.\njax:    0.4.35\njaxlib: 0.4.35\ndevice info: AMD Radeon RX 9070 XT-1, 1 local devices\"\nprocess_count: 1\nplatform: uname_result(system='Linux', node='DESKTOP-JOAO', release='6.6.87.1-microsoft-standard-WSL2', version='#1 SMP PREEMPT_DYNAMIC Mon Apr 21 17:08:54 UTC 2025', machine='x86_64')\n";
    let (ids, gpus) = explain(t);
    assert!(ids.is_empty(), "{ids:?}");
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0].0, Vendor::Amd);
    assert_eq!(gpus[0].1, "AMD Radeon RX 9070 XT");
}

#[test]
fn a_rocm_torch_that_sees_no_gpu_is_the_runtime_finding_none() {
    // vllm-project/vllm#34573 (ROCm 7.0 torch, Ubuntu 22.04 kernel 6.18)
    // and ROCm/legacy-rocm-build#4864 (ROCm 6.4 nightly under WSL2): torch's
    // HIP runtime enumerated no device, what "No HIP GPUs are available" says.
    let native = "Collecting environment information...\nPyTorch version: 2.9.0a0+git1c57644\nCUDA used to build PyTorch: N/A\nROCM used to build PyTorch: 7.0.51831-a3e329ad8\nPython platform: Linux-6.18.7-061807-generic-x86_64-with-glibc2.35\nIs CUDA available: False\nGPU models and configuration: No CUDA\nHIP runtime version: N/A\n";
    let wsl = "PyTorch version: 2.8.0.dev20250529+rocm6.4\nCUDA used to build PyTorch: N/A\nROCM used to build PyTorch: 6.4.43482-0f2d60242\nPython platform: Linux-6.6.87.1-microsoft-standard-WSL2-x86_64-with-glibc2.39\nIs CUDA available: False\n";
    for t in [native, wsl] {
        let (ids, gpus) = explain(t);
        assert_eq!(ids, ["rocm.runtime-no-device"], "{t}");
        assert!(gpus.is_empty());
    }
    // A CUDA torch that sees no GPU is no ROCm finding (constructed from
    // the same keys), nor is a ROCm torch that sees one (pytorch#152941).
    let (ids, _) = explain("PyTorch version: 1.8.1+cu102\nCUDA used to build PyTorch: 10.2\nROCM used to build PyTorch: N/A\nIs CUDA available: False\n");
    assert!(
        !ids.iter().any(|i| i == "rocm.runtime-no-device"),
        "{ids:?}"
    );
    let (ids, _) = explain("PyTorch version: 2.7.0+rocm6.3\nROCM used to build PyTorch: 6.3.42131-fa1d09cbd\nIs CUDA available: True\nGPU models and configuration: AMD Instinct MI100 (gfx908:sramecc+:xnack-)\n");
    assert!(ids.is_empty(), "{ids:?}");
}

#[test]
fn jax_installed_without_its_gpu_plugin_is_a_framework_mismatch() {
    for line in [
        // jax-ml/jax#25856: `pip install jax[rocm]` on jax 0.4.31.
        "WARNING: jax 0.4.31 does not provide the extra 'rocm'",
        // The CUDA spellings: jax 0.4.25's `cuda12-pip` (a conda env's
        // install log) and jax 0.6.2's `cuda13` (an install note).
        "WARNING: jax 0.4.25 does not provide the extra 'cuda12-pip'",
        "WARNING: jax 0.6.2 does not provide the extra 'cuda13'",
    ] {
        let (ids, _) = explain(&format!("{line}\n"));
        assert_eq!(ids, ["framework.mismatch"], "{line}");
    }
    // Another package's missing extra is not jax's GPU backend (spaCy's
    // `cuda102`, quoted in a README).
    let (ids, _) = explain("WARNING: spacy 2.2.4 does not provide the extra 'cuda102'\n");
    assert!(ids.is_empty(), "{ids:?}");
}

#[test]
fn a_cuda_build_without_the_cuda_runtime_is_a_framework_mismatch() {
    for line in [
        // vLLM's PyPI (CUDA) wheel on a ROCm host (ROCm/legacy-rocm-build#5668).
        "WARNING 11-20 18:08:11 [_custom_ops.py:20] Failed to import from vllm._C with ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')",
        // A build for CUDA 11 where CUDA 12 is installed (vllm-project/vllm#1369).
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",
    ] {
        let (ids, _) = explain(&format!("{line}\n"));
        assert_eq!(ids, ["framework.mismatch"], "{line}");
    }
    // vLLM's own extension not built yet (vllm-project/vllm#8004) is no
    // CUDA build.
    let (ids, _) = explain("WARNING 08-29 12:39:01 _custom_ops.py:18] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")\n");
    assert!(ids.is_empty(), "{ids:?}");
}

#[test]
fn bitsandbytes_without_a_library_for_torchs_backend_version_is_a_framework_mismatch() {
    for line in [
        // Built against the system ROCm, not torch's 6.3 (ROCm/bitsandbytes#82).
        "Could not find the bitsandbytes ROCm binary at PosixPath('/home/USER/ROCm/Almalinux/bitsandbytes/bitsandbytes/libbitsandbytes_rocm63.so')",
        // The older naming on a ROCm docker image (ROCm/bitsandbytes#30).
        "Could not find the bitsandbytes CUDA binary at PosixPath('/opt/conda/envs/diff/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_hip_nohipblaslt.so')",
        // The newer loader's wording (ROCm/bitsandbytes#91, rocm80 on ROCm 7.1).
        "bitsandbytes library load error: Configured ROCm binary not found at /home/jerry/Desktop/bitsandbytes/bitsandbytes/libbitsandbytes_rocm80.so",
    ] {
        let (ids, _) = explain(&format!("{line}\n"));
        assert_eq!(ids, ["framework.mismatch"], "{line}");
    }
}
