//! Application logs and tracebacks (the first blind round, docs/doctor.md): which GPU a framework's
//! own warning names, and which finding each family of messages raises
//! once the GPUs' vendor is known. Every input line is a real tool's
//! spelling (the source is named beside it); the cases are whole pastes
//! reduced to the lines that decide.
use super::explain::explain;
use crate::facts::Vendor;

#[test]
fn torch_capability_warnings_name_the_gpu_with_its_vendor() {
    // Behind a journal prefix (Janrupf/stable-diffusion-webui-nix#9).
    let (_, gpus) = explain(
        "Oct 04 13:19:39 llm sd-webui-forge-start[394]: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n",
    );
    assert_eq!(
        gpus,
        [(Vendor::Nvidia, "NVIDIA GeForce RTX 5090".into(), None)]
    );
    // The older spelling, on one line (AUTOMATIC1111/stable-diffusion-webui#3003).
    let (_, gpus) = explain(
        "Found GPU0 NVIDIA GTX TITAN Black which is of cuda capability 3.5. PyTorch no longer supports this GPU because it is too old. The minimum cuda capability supported by this library is 3.7.\n",
    );
    assert_eq!(
        gpus,
        [(Vendor::Nvidia, "NVIDIA GTX TITAN Black".into(), None)]
    );
    // Old ROCm builds print it for AMD GPUs (ROCm/legacy-rocm-build#1113):
    // the vendor comes from the name.
    let (_, gpus) =
        explain("    Found GPU0 Vega 10 XT [Radeon RX Vega 64] which is of cuda capability 3.0.\n");
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0].0, Vendor::Amd);
    assert_eq!(gpus[0].1, "Vega 10 XT [Radeon RX Vega 64]");
    // A name that shows no vendor adds no GPU (constructed input).
    let (_, gpus) = explain("Found GPU0 Device 687f which is of cuda capability 3.0.\n");
    assert!(gpus.is_empty());
}

#[test]
fn no_code_for_the_gpu_is_a_cuda_build_problem_on_nvidia_only() {
    let no_image =
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n";
    // NVIDIA (alievk/avatarify-python#58): the wheel lacks the architecture.
    let (ids, _) = explain(&format!(
        "    Found GPU0 GeForce GTX 660 Ti which is of cuda capability 3.0.\n    PyTorch no longer supports this GPU because it is too old.\n{no_image}"
    ));
    assert_eq!(ids, ["framework.mismatch"]);
    // The same error beside an AMD GPU stays ROCm's (ggml's HIP device line,
    // lemonade-sdk/lemonade#2186).
    let (ids, _) = explain(&format!(
        "  Device 0: AMD Radeon 860M Graphics, gfx1152 (0x1152), VMM: no, Wave Size: 32\n{no_image}"
    ));
    assert_eq!(ids, ["rocm.gfx-unsupported"]);
    // ROCm torch's old-GPU warning alone is harmless (ROCm/pytorch#627).
    let (ids, _) = explain(
        "    Found GPU0 Ellesmere [Radeon RX 470/480/570/570X/580/580X] which is of cuda capability 3.0.\n    PyTorch no longer supports this GPU because it is too old.\ntensor([9], device='cuda:0')\n",
    );
    assert!(ids.is_empty(), "{ids:?}");
    // ggml's "no device code", NVIDIA (LostRuins/koboldcpp#1362).
    let (ids, _) = explain(
        "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: Quadro GP100, compute capability 6.0, VMM: yes\n\
         d:\\a\\koboldcpp\\koboldcpp\\ggml\\src\\ggml-cuda\\mmv.cu:51: ERROR: CUDA kernel mul_mat_vec has no device code compatible with CUDA arch 520. ggml-cuda.cu was compiled for: __CUDA_ARCH_LIST__\n",
    );
    assert_eq!(ids, ["framework.mismatch"]);
}

#[test]
fn a_compiler_that_does_not_know_the_target() {
    // Julia's LLVM in AMDGPU.jl (JuliaGPU/AMDGPU.jl#522): the target is the GPU's.
    let (ids, gpus) =
        explain("'gfx1100' is not a recognized processor for this target (ignoring processor)\n");
    assert_eq!(ids, ["rocm.gfx-unsupported"]);
    assert_eq!(gpus, [(Vendor::Amd, String::new(), Some("gfx1100".into()))]);
    // Triton's for Blackwell (woct0rdho/triton-windows#93): NVIDIA, no GPU named.
    let (ids, gpus) =
        explain("'sm_120' is not a recognized processor for this target (ignoring processor)\n");
    assert_eq!(ids, ["framework.mismatch"]);
    assert!(gpus.is_empty());
}

#[test]
fn an_nvidia_driver_older_than_the_cuda_runtime() {
    for line in [
        // ollama's CUDA 13 backend (ollama/ollama#15400).
        "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version",
        // bladebit (Chia-Network/bladebit#431).
        " CUDA error: 35 (0x23) cudaErrorInsufficientDriver : CUDA driver version is insufficient for CUDA runtime version",
        // Lua Torch (ankurhanda/gvnn#19).
        "THCudaCheck FAIL file=/home/puren/torch/extra/cutorch/lib/THC/THCGeneral.c line=70 error=35 : CUDA driver version is insufficient for CUDA runtime version",
    ] {
        let (ids, _) = explain(&format!("{line}\n"));
        assert_eq!(ids, ["driver.nvidia-too-old"], "{line}");
    }
}

#[test]
fn a_cpu_only_torch_or_an_application_on_the_cpu() {
    // ComfyUI (AIGODLIKE/ComfyUI-ToonCrafter#15): a +cpu wheel.
    let (ids, _) = explain("AssertionError: Torch not compiled with CUDA enabled\n");
    assert_eq!(ids, ["framework.mismatch"]);
    // An application choosing the CPU counts only when an AMD GPU is known
    // (here from amd-smi static, as in invoke-ai/launcher#11): InvokeAI's
    // line and AUTOMATIC1111's own check.
    let gpu = "GPU: 0\n    ASIC:\n        MARKET_NAME: Navi 22 [Radeon RX 6700/6700 XT/6750 XT / 6800M/6850M XT]\n        VENDOR_ID: 0x1002\n        DEVICE_ID: 0x73df\n";
    for line in [
        "[2024-12-19 13:27:10,911]::[InvokeAI]::INFO --> Using torch device: CPU",
        "RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to disable this check",
    ] {
        let (ids, _) = explain(&format!("{gpu}{line}\n"));
        assert_eq!(ids, ["app.cpu-fallback"], "{line}");
        let (ids, _) = explain(&format!("{line}\n"));
        assert!(ids.is_empty(), "{line}: {ids:?}");
    }
}

#[test]
fn ollama_without_kfd_or_without_its_rocm_libraries() {
    // "kfd driver not loaded" is a missing /dev/kfd, whatever heading ollama
    // prints it under (home-assistant/operating-system#3608; the container
    // spelling is ollama/ollama#6736's).
    for line in [
        r#"time=2024-10-02T08:34:23.718Z level=ERROR source=amd_linux.go:364 msg="amdgpu devices detected but permission problems block access" error="kfd driver not loaded""#,
        r#"time=2024-09-10T21:59:54.408Z level=ERROR source=amd_linux.go:364 msg="amdgpu devices detected but permission problems block access" error="kfd driver not loaded.  If running in a container, remember to include '--device /dev/kfd --device /dev/dri'""#,
    ] {
        let (ids, _) = explain(&format!("{line}\n"));
        assert_eq!(ids, ["kfd.missing"], "{line}");
    }
    // The same heading over a real permission error stays kfd.permission
    // (ollama/ollama#7723).
    let (ids, _) = explain(
        "level=ERROR source=amd_linux.go:404 msg=\"amdgpu devices detected but permission problems block access: permissions not set up properly.  Either run ollama as root, or add you user account to the render group. open /dev/kfd: permission denied\"\n",
    );
    assert_eq!(ids, ["kfd.permission"]);
    // ollama without its ROCm runtime (likelovewant/ollama-for-amd#33).
    let (ids, _) = explain(
        "time=2024-12-03T15:24:29.436Z level=WARN source=amd_linux.go:440 msg=\"amdgpu detected, but no compatible rocm library found.  Either install rocm v6, or follow manual install instructions at https://github.com/ollama/ollama/blob/main/docs/linux.md#manual-install\"\n",
    );
    assert_eq!(ids, ["app.cpu-fallback"]);
}

#[test]
fn ollama_running_a_model_on_the_cpu_beside_an_amd_gpu() {
    // `ollama ps` (ollama/ollama#16690) with the GPU from Mesa's renderer
    // string in inxi -G of the same report.
    let inxi = "  API: OpenGL v: 4.6 compat-v: 4.5 vendor: amd mesa\n    v: 25.2.8-0ubuntu0.24.04.1 renderer: AMD Radeon 890M Graphics (radeonsi\n    gfx1150 LLVM 20.1.2 DRM 3.64 6.17.0-29-generic)\n";
    let ps = "gemma4:e4b    c6eb396dbd59    9.5 GB    100% CPU     4096       4 minutes from now\n";
    let (ids, gpus) = explain(&format!("{inxi}{ps}"));
    assert_eq!(ids, ["app.cpu-fallback"]);
    assert_eq!(
        gpus,
        [(
            Vendor::Amd,
            "AMD Radeon 890M Graphics".into(),
            Some("gfx1150".into())
        )]
    );
    // The same model on the GPU is no finding.
    let (ids, _) = explain(&format!(
        "{inxi}gemma4:e4b    c6eb396dbd59    11 GB    100% GPU     32768      4 minutes from now\n"
    ));
    assert!(ids.is_empty(), "{ids:?}");
    // ollama 0.30's iGPU filter line alone (as Crosstalk-Solutions/
    // project-nomad#1074 quotes it) is no finding: beside a discrete GPU
    // ollama drops the iGPU and runs on the dGPU (ollama/ollama#16701), so
    // only where the model then runs (ollama ps, inference compute) counts.
    let (ids, _) = explain(
        r#"msg="dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1" library=ROCm compute=gfx1100 name=ROCm0 description="AMD Radeon 890M Graphics""#,
    );
    assert!(ids.is_empty(), "{ids:?}");
}

#[test]
fn a_cpu_only_jax_on_an_nvidia_machine() {
    for line in [
        // JeffSHF/ColabDock#28.
        "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
        // Behind jax's logger prefix (sashakolpakov/dire-jax#14).
        "WARNING:2025-05-27 20:22:28,949:jax._src.xla_bridge:791: An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
    ] {
        let (ids, _) = explain(&format!("{line}\n"));
        assert_eq!(ids, ["framework.mismatch"], "{line}");
    }
}

#[test]
fn a_launcher_that_found_the_rocm_agent_then_chose_a_cpu_torch() {
    // stable-diffusion-webui-amdgpu-forge (lshqqytiger/...-amdgpu-forge#95).
    let t = "ROCm: agents=['gfx1100']\nROCm: version=6.2, using agent gfx1100\nZLUDA support: experimental\nUsing CPU-only torch\n";
    let (ids, gpus) = explain(t);
    assert_eq!(ids, ["app.cpu-fallback"]);
    assert_eq!(gpus, [(Vendor::Amd, String::new(), Some("gfx1100".into()))]);
    // SD.Next's line as vladmandic/sdnext#4141 quotes it: the agent alone.
    let (ids, gpus) = explain("ROCm: version=6.4, using agent gfx1201\n");
    assert!(ids.is_empty(), "{ids:?}");
    assert_eq!(gpus, [(Vendor::Amd, String::new(), Some("gfx1201".into()))]);
}

#[test]
fn an_application_that_turns_the_gpu_off_for_want_of_avx() {
    for line in [
        // ollama 0.3 (ollama/ollama#6827), and as ollama/ollama#7585's
        // maintainer quoted it from a full log line.
        r#"WARN source=gpu.go:222 msg="CPU does not have minimum vector extensions, GPU inference disabled" required=avx detected="no vector extensions""#,
        r#"time=2024-11-09T18:44:42.976+08:00 level=WARN source=gpu.go:252 msg="CPU does not have minimum vector extensions, GPU inference disabled. Required:avx Detected:no vector extensions""#,
        // ollama 0.1 (ollama/ollama#5035).
        r#"level=WARN source=gpu.go:177 msg="CPU does not have AVX or AVX2, disabling GPU support.""#,
    ] {
        let (ids, _) = explain(&format!("{line}\n"));
        assert_eq!(ids, ["app.cpu-fallback"], "{line}");
    }
}
