//! The HIP kernels compiled by the node's own hiprtc — here Debian 12's ROCm
//! 5.2, where hiprtc lives inside libamdhip64.so.5 — through the same cache
//! and compile code the node uses (in this process: library tests register
//! no helper child; the `greta` binary's tests cover the child).

use crate::gpu::compile::{KernelCache, KernelSources};
use crate::gpu::driver::Api;
use crate::gpu::tune::variant_symbols_for_target;
use crate::gpu::{CompilerKind, Driver};
use crate::hip::{self, Hip};

fn hip() -> Hip {
    Hip::open().unwrap_or_else(|e| panic!("Debian's libamdhip64.so.5 must open here: {e}"))
}

fn symbols_in(code: &[u8]) -> Vec<String> {
    greta_kernels::hip_src::kernel_files()
        .map(|(n, _)| format!("greta_{}", n.trim_end_matches(".hip")))
        .filter(|s| !code.windows(s.len()).any(|w| w == s.as_bytes()))
        .collect()
}

#[test]
fn hiprtc_compiles_every_kernel_for_gfx90a_and_gfx1030_and_the_cache_works() {
    let hip = hip();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = KernelCache::new(cache_dir.path());
    let sources = KernelSources::bundled();
    for target in ["gfx90a", "gfx1030"] {
        let compiler = hip::compiler_for_target(&hip, target).unwrap();
        let choice = compiler.choice();
        assert_eq!(choice.kind, CompilerKind::Hiprtc, "{choice:?}");
        assert_eq!(
            choice.library.why, "inside libamdhip64 (ROCm 5)",
            "{choice:?}"
        );
        let built = cache
            .get_or_build(&*compiler, &sources, Api::Hip)
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        assert!(built.compiled, "{target}: first build must compile");
        let code = std::fs::read(&built.path).unwrap();
        assert!(
            code.starts_with(b"\x7fELF") || code.starts_with(b"__CLANG_OFFLOAD_BUNDLE__"),
            "{target}: not a code object"
        );
        assert_eq!(
            symbols_in(&code),
            Vec::<String>::new(),
            "{target}: kernels missing"
        );
        // The memtest's passes are kernels of their own (the launch plan
        // names them greta_memtest_pP_PHASE), each in the object.
        let passes: Vec<String> = (0..greta_kernels::MEMTEST_PATTERNS.len())
            .flat_map(|p| (1..=3).map(move |ph| format!("greta_memtest_p{p}_{ph}")))
            .filter(|s| !code.windows(s.len()).any(|w| w == s.as_bytes()))
            .collect();
        assert!(
            passes.is_empty(),
            "{target}: memtest passes missing: {passes:?}"
        );
        // Every kernel a tune candidate launches on this target is in the
        // object too (today the HIP candidates are launch-time knobs and
        // the ops' own kernels).
        let variants = variant_symbols_for_target(Api::Hip, &choice.target);
        let absent: Vec<&String> = variants
            .iter()
            .filter(|s| !code.windows(s.len()).any(|w| w == s.as_bytes()))
            .collect();
        assert!(
            absent.is_empty(),
            "{target}: tune variants missing: {absent:?}"
        );
        // A second run compiles nothing.
        let again = cache.get_or_build(&*compiler, &sources, Api::Hip).unwrap();
        assert!(!again.compiled && again.path == built.path, "{again:?}");
    }
    // A changed source recompiles, into a new entry.
    let compiler = hip::compiler_for_target(&hip, "gfx90a").unwrap();
    let mut files = sources.files().to_vec();
    files
        .iter_mut()
        .find(|(n, _)| n == "fill.hip")
        .unwrap()
        .1
        .push_str("\n// changed\n");
    let changed = cache
        .get_or_build(&*compiler, &KernelSources::new(files), Api::Hip)
        .unwrap();
    assert!(changed.compiled, "{changed:?}");
    let entries = std::fs::read_dir(cache_dir.path()).unwrap().count();
    assert_eq!(entries, 3, "one object per (sources, target); no leftovers");
}

#[test]
fn a_compile_error_names_the_file_and_line() {
    let hip = hip();
    let cache_dir = tempfile::tempdir().unwrap();
    let compiler = hip::compiler_for_target(&hip, "gfx90a").unwrap();
    let broken = KernelSources::new(vec![(
        "broken.hip".into(),
        "extern \"C\" __global__ void greta_broken(flot* y) { y[0] = 1; }\n".into(),
    )]);
    let e = KernelCache::new(cache_dir.path())
        .get_or_build(&*compiler, &broken, Api::Hip)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("could not compile greta's kernels for gfx90a"),
        "{e}"
    );
    assert!(e.contains("broken.hip:1"), "{e}");
    // Nothing half-written stays in the cache.
    let left: Vec<_> = std::fs::read_dir(cache_dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = hip.library();
}
