//! The HIP C++ twins of the GLSL kernels (`kernels/hip/*.hip`), embedded as
//! text: they are compiled on the target machine by its own `hipcc` for its
//! gfx target (see `greta-runtime`'s `hip` feature), never at greta's build
//! time, so the default build needs no ROCm.
//!
//! Every kernel is `extern "C" greta_<op name>` and takes its buffers in
//! the order of [`crate::Op::inputs`] then [`crate::Op::outputs`], then the
//! shape as 32-bit scalars — the same contract as the GLSL shaders.

/// `(file name, source)`; `common.h` first, then one file per op.
pub static SOURCES: &[(&str, &str)] = &[
    ("common.h", include_str!("../hip/common.h")),
    ("noop.hip", include_str!("../hip/noop.hip")),
    ("fill.hip", include_str!("../hip/fill.hip")),
    ("copy.hip", include_str!("../hip/copy.hip")),
    ("vec_add.hip", include_str!("../hip/vec_add.hip")),
    ("gemm_f32.hip", include_str!("../hip/gemm_f32.hip")),
    ("gemm_f16.hip", include_str!("../hip/gemm_f16.hip")),
    ("rmsnorm.hip", include_str!("../hip/rmsnorm.hip")),
    ("layernorm.hip", include_str!("../hip/layernorm.hip")),
    ("softmax.hip", include_str!("../hip/softmax.hip")),
    ("rope.hip", include_str!("../hip/rope.hip")),
    ("kv_update.hip", include_str!("../hip/kv_update.hip")),
    (
        "test_broken_copy.hip",
        include_str!("../hip/test_broken_copy.hip"),
    ),
    ("test_slow.hip", include_str!("../hip/test_slow.hip")),
];

/// The kernel symbol of an op name (`gemm_f32` → `greta_gemm_f32`).
pub fn kernel_symbol(op_name: &str) -> String {
    format!("greta_{op_name}")
}

/// The `.hip` files, i.e. the sources that define kernels (not headers).
pub fn kernel_files() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    SOURCES.iter().filter(|(n, _)| n.ends_with(".hip"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    /// Every op of the catalogue has a HIP file defining `greta_<name>`.
    #[test]
    fn every_op_has_a_hip_kernel() {
        let ops = [
            Op::Noop,
            Op::Fill { n: 1, value: 0 },
            Op::Copy { n: 1 },
            Op::VecAdd { n: 1 },
            Op::GemmF32 { m: 1, n: 1, k: 1 },
            Op::GemmF16 { m: 1, n: 1, k: 1 },
            Op::RmsNorm {
                rows: 1,
                cols: 1,
                eps: 0.0,
            },
            Op::LayerNorm {
                rows: 1,
                cols: 1,
                eps: 0.0,
            },
            Op::Softmax { rows: 1, cols: 1 },
            Op::Rope {
                tokens: 1,
                heads: 1,
                head_dim: 2,
                pos0: 0,
                theta: 1e4,
            },
            Op::KvUpdate {
                layers: 1,
                max_seq: 1,
                heads: 1,
                head_dim: 1,
                pos: 0,
                n_new: 1,
            },
            Op::TestBrokenCopy { n: 1 },
            Op::TestSlow { iters: 1 },
        ];
        for op in ops {
            let file = format!("{}.hip", op.name());
            let (_, text) = SOURCES
                .iter()
                .find(|(n, _)| *n == file)
                .unwrap_or_else(|| panic!("no {file}"));
            let sym = format!("extern \"C\" __global__ void {}(", kernel_symbol(op.name()));
            let sym2 = format!("\n{}(", kernel_symbol(op.name()));
            assert!(
                text.contains(&sym) || text.contains(&sym2),
                "{file} does not define {}",
                kernel_symbol(op.name())
            );
        }
        assert_eq!(kernel_files().count(), 13);
    }
}
