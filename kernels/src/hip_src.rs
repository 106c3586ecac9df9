//! The HIP C++ twins of the GLSL kernels (`kernels/hip/*.hip`), embedded as
//! text: they are compiled on the node, at run time, by hiprtc for the AMD
//! GPU's gfx target or by NVRTC for an NVIDIA GPU (the CUDA twin of the HIP
//! backend), never at greta's build time, so no build needs ROCm or CUDA.
//! The same files serve both compilers; [`PRELUDE_HIP`] / [`PRELUDE_CUDA`]
//! define the few names that differ and go first in the translation unit.
//!
//! Every kernel is `extern "C" greta_<op name>` and takes its buffers in
//! the order of [`crate::Op::inputs`] then [`crate::Op::outputs`], then the
//! shape as 32-bit scalars — the same contract as the GLSL shaders.

/// `(file name, source)`; `common.h` first, then one file per op (each
/// op's file names its own, see `ops/`).
pub static SOURCES: &[(&str, &str)] = crate::ops::HIP_SOURCES;

/// Prepended to the sources when compiling for HIP (hiprtc, or hipcc).
pub static PRELUDE_HIP: &str = include_str!("../hip/prelude_hip.h");
/// Prepended to the sources when compiling for CUDA (NVRTC).
pub static PRELUDE_CUDA: &str = include_str!("../hip/prelude_cuda.h");

/// The kernel symbol of an op name (`gemm_f32` → `greta_gemm_f32`).
pub fn kernel_symbol(op_name: &str) -> String {
    format!("greta_{op_name}")
}

/// The `.hip` files that define kernels: not the headers, nor a composite
/// op's file (it only says that the op runs as a graph of others).
pub fn kernel_files() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    SOURCES
        .iter()
        .filter(|(n, text)| n.ends_with(".hip") && text.contains("__global__"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    /// Every op of the catalogue has a HIP file defining `greta_<name>`,
    /// except the composite ops, whose file defines no kernel at all.
    #[test]
    fn every_op_has_a_hip_kernel() {
        let ops = Op::catalogue();
        for op in &ops {
            let file = format!("{}.hip", op.name());
            let (_, text) = SOURCES
                .iter()
                .find(|(n, _)| *n == file)
                .unwrap_or_else(|| panic!("no {file}"));
            if op.is_composite() {
                assert!(
                    !text.contains("__global__"),
                    "{file}: a composite op has no kernel"
                );
                continue;
            }
            let sym = format!("extern \"C\" __global__ void {}(", kernel_symbol(op.name()));
            let sym2 = format!("\n{}(", kernel_symbol(op.name()));
            assert!(
                text.contains(&sym) || text.contains(&sym2),
                "{file} does not define {}",
                kernel_symbol(op.name())
            );
        }
        let kernels = ops.iter().filter(|o| !o.is_composite()).count();
        assert_eq!(kernel_files().count(), kernels);
    }

    /// The kernels include no system header (hiprtc on ROCm 5.2 finds
    /// none, NVRTC ships others); the preludes define what they use.
    #[test]
    fn sources_include_only_common_h_and_preludes_define_the_shared_names() {
        for (name, text) in SOURCES {
            for line in text
                .lines()
                .filter(|l| l.trim_start().starts_with("#include"))
            {
                assert_eq!(line.trim(), "#include \"common.h\"", "{name}: {line}");
            }
        }
        for p in [PRELUDE_HIP, PRELUDE_CUDA] {
            for name in ["uint32_t;", "greta_u64;", "greta_f16;", "greta_f16_to_f32("] {
                assert!(p.contains(name), "{name} missing from a prelude");
            }
        }
    }
}
