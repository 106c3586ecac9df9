//! The kernels through NVRTC for NVIDIA targets, where an NVRTC library is
//! at hand (`GRETA_NVRTC_LIB`, e.g. the `nvidia-cuda-nvrtc-cu12` wheel's
//! `libnvrtc.so.12`; NVRTC needs no GPU). Without one the test says so and
//! checks nothing: CI has no CUDA; the GPU machine (scripts/gpu/cuda.sh) compiles the same way.

use crate::cuda::nvrtc::Nvrtc;
use crate::gpu::arch::Arch;
use crate::gpu::compile::{KernelCache, KernelSources};
use crate::gpu::driver::Api;
use crate::gpu::tune::variant_symbols_for_target;
use crate::gpu::{CompilerChoice, CompilerKind};
use crate::locate::Loaded;

#[test]
fn nvrtc_compiles_every_kernel_and_every_tune_variant_for_sm_80_sm_90_and_sm_90a() {
    let var = greta_vocab::EnvVars::GRETA_NVRTC_LIB;
    let Some(lib) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
        eprintln!("{var} is not set: no NVRTC here, nothing compiled");
        return;
    };
    if let Some(p) = std::env::var_os("DUMP_TU") {
        std::fs::write(p, KernelSources::bundled().translation_unit(Api::Cuda)).unwrap();
    }
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = KernelCache::new(cache_dir.path());
    for target in ["sm_80", "sm_90", "sm_90a"] {
        let compiler = Nvrtc(CompilerChoice {
            kind: CompilerKind::Nvrtc,
            library: Loaded {
                what: "NVRTC".into(),
                path: lib.clone().into(),
                why: format!("${var}"),
            },
            version: "test".into(),
            target: Arch::parse(target),
            options: vec![format!("--gpu-architecture={target}")],
        });
        let built = cache
            .get_or_build(&compiler, &KernelSources::bundled(), Api::Cuda)
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        let code = std::fs::read(&built.path).unwrap();
        let variants = variant_symbols_for_target(Api::Cuda, &Arch::parse(target));
        assert!(!variants.is_empty(), "{target}: no tune variants");
        let missing: Vec<String> = greta_kernels::hip_src::kernel_files()
            .map(|(n, _)| format!("greta_{}", n.trim_end_matches(".hip")))
            .chain(variants)
            .filter(|s| !code.windows(s.len()).any(|w| w == s.as_bytes()))
            .collect();
        assert_eq!(missing, Vec::<String>::new(), "{target}: kernels missing");
    }
}
