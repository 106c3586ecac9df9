//! The op catalogue, one file per op. Each file holds everything the
//! kernels crate knows of its op: what it computes (its doc), its buffers,
//! its cost, its tolerance, its shape check, its CPU reference, a small
//! example for the tests, and its HIP source. The list below names each op
//! once; the macro generates [`Op`], its methods, [`Op::catalogue`] (the
//! list every test iterates) and the HIP source table from it.
//!
//! Adding an op: a file here with the functions the others have, a line in
//! the list, a GLSL shader in `shaders/` and a HIP file in `hip/`; then the
//! runtime's planner and a gate (docs/extending.md walks through it).

use crate::host::{DType, HostBuf};
use serde::{Deserialize, Serialize};

/// How a kernel uses a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    /// Written; its prior content is irrelevant (callers poison it).
    Write,
    /// Updated in place; prior content outside the written region must survive.
    ReadWrite,
}

/// One buffer of an op's contract.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferSpec {
    pub name: &'static str,
    pub dtype: DType,
    /// Number of elements.
    pub len: usize,
    pub access: Access,
}

pub use crate::check::Tolerance;

/// Bit-exact (integer and data-movement ops).
const EXACT: Tolerance = Tolerance::Exact;
/// f32 arithmetic.
const F32: Tolerance = Tolerance::FP32;

/// One scalar kernel argument. The HIP/CUDA kernels take the op's shape
/// after the buffers, each field in declaration order as a 32-bit value
/// ([`Op::shape_scalars`]), the contract `hip_src` states.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    U32(u32),
    F32(f32),
}

/// A shape field as a kernel argument. Sizes are `usize` in an [`Op`] and
/// 32-bit in the kernels; [`Op::validate`] refuses what does not fit.
trait ToScalar {
    fn to_scalar(self) -> Scalar;
}

impl ToScalar for usize {
    fn to_scalar(self) -> Scalar {
        Scalar::U32(self as u32)
    }
}

impl ToScalar for u32 {
    fn to_scalar(self) -> Scalar {
        Scalar::U32(self)
    }
}

impl ToScalar for f32 {
    fn to_scalar(self) -> Scalar {
        Scalar::F32(self)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op}: {msg}")]
pub struct OpError {
    pub op: &'static str,
    pub msg: String,
}

fn spec(name: &'static str, dtype: DType, len: usize, access: Access) -> BufferSpec {
    BufferSpec {
        name,
        dtype,
        len,
        access,
    }
}

/// Bytes of every buffer touched once: the usual minimum traffic.
fn touched(inputs: Vec<BufferSpec>, outputs: Vec<BufferSpec>) -> u64 {
    inputs
        .iter()
        .chain(&outputs)
        .map(|s| (s.len * s.dtype.size()) as u64)
        .sum()
}

fn nonzero(what: &str, v: usize) -> Result<(), String> {
    if v == 0 {
        Err(format!("{what} must be > 0"))
    } else {
        Ok(())
    }
}

macro_rules! ops {
    // An op marked `(own_bytes)` counts its own traffic (it touches part of
    // a buffer); every other op touches each buffer once.
    (@bytes $m:ident own_bytes; $($a:ident),*) => { $m::bytes_moved($($a),*) };
    (@bytes $m:ident; $($a:ident),*) => { touched($m::inputs($($a),*), $m::outputs($($a),*)) };
    ($( $(#[$meta:meta])* $V:ident $({ $($f:ident : $t:ty),* $(,)? })? => $m:ident $(($own:ident))?, )*) => {
        $( mod $m; )*

        /// What to compute, with its shape. Backends map an `Op` onto a kernel;
        /// [`crate::reference()`] computes the same thing on the CPU in f64.
        ///
        /// Layouts are row-major (see the crate docs). Variants named `Test*` are
        /// **test-only**: deliberately wrong or slow kernels that prove the checker
        /// and the timeout path work. They are public so that `greta-smoke` tests can
        /// use them; no user-facing gate may.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "op", rename_all = "snake_case")]
        pub enum Op {
            $( $(#[$meta])* $V $({ $($f: $t),* })?, )*
        }

        /// The HIP C++ sources: `common.h` first, then one file per op.
        pub static HIP_SOURCES: &[(&str, &str)] = &[
            ("common.h", include_str!("../../hip/common.h")),
            $( (
                concat!(stringify!($m), ".hip"),
                include_str!(concat!("../../hip/", stringify!($m), ".hip")),
            ), )*
        ];

        impl Op {
            /// Stable short name (used in gate ids, result files, shader names):
            /// the name of the op's file.
            pub fn name(&self) -> &'static str {
                match self { $( Op::$V { .. } => stringify!($m), )* }
            }

            /// True for the deliberately broken/slow ops that exist only to
            /// test the checker: those whose name starts with `test_`.
            pub fn is_test_only(&self) -> bool {
                self.name().starts_with("test_")
            }

            /// Buffers the op only reads, in binding order.
            pub fn inputs(&self) -> Vec<BufferSpec> {
                match *self { $( Op::$V $({ $($f),* })? => $m::inputs($($($f),*)?), )* }
            }

            /// Buffers the op writes, in binding order (after the inputs).
            pub fn outputs(&self) -> Vec<BufferSpec> {
                match *self { $( Op::$V $({ $($f),* })? => $m::outputs($($($f),*)?), )* }
            }

            /// Bytes the op must read plus write at minimum (each buffer element
            /// touched once), the numerator of a GB/s rate.
            pub fn bytes_moved(&self) -> u64 {
                match *self { $( Op::$V $({ $($f),* })? => ops!(@bytes $m $($own)?; $($($f),*)?), )* }
            }

            /// Floating-point operations (a multiply-add counts 2), the numerator
            /// of a FLOP/s rate. Approximate for the norms: per element a norm
            /// counts its arithmetic once (square+add, scale, weight).
            pub fn flops(&self) -> u64 {
                match *self { $( Op::$V $({ $($f),* })? => $m::flops($($($f),*)?), )* }
            }

            /// The default correctness bound of the op's outputs.
            pub fn tolerance(&self) -> Tolerance {
                match self { $( Op::$V { .. } => $m::TOLERANCE, )* }
            }

            /// Checks the shape: non-zero sizes, even head_dim, rows that fit the
            /// cache, every buffer addressable with 32-bit element indices.
            pub fn validate(&self) -> Result<(), OpError> {
                let own = match *self { $( Op::$V $({ $($f),* })? => $m::check($($($f),*)?), )* };
                own.and_then(|()| {
                    for s in self.inputs().iter().chain(self.outputs().iter()) {
                        if s.len > u32::MAX as usize {
                            return Err(format!(
                                "buffer {} has {} elements; the kernels index with 32 bits",
                                s.name, s.len
                            ));
                        }
                    }
                    Ok(())
                })
                .map_err(|msg| OpError { op: self.name(), msg })
            }

            /// The range fresh random values of float input `buffer` are drawn
            /// from (the op's own `INPUT_RANGES`, else `-1..1`).
            pub fn input_range(&self, buffer: &str) -> (f32, f32) {
                let ranges = match self { $( Op::$V { .. } => $m::INPUT_RANGES, )* };
                ranges
                    .iter()
                    .find(|(b, _)| *b == buffer)
                    .map_or((-1.0, 1.0), |(_, r)| *r)
            }

            /// One small valid instance of every op, in catalogue order: the
            /// list every test of "each op" iterates.
            pub fn catalogue() -> Vec<Op> {
                vec![ $( $m::example(), )* ]
            }

            /// The expected outputs from inputs already checked against the
            /// op's buffers (see [`crate::reference()`]).
            pub(crate) fn reference_of(&self, x: &[Vec<f64>], prior: &[HostBuf]) -> Vec<Vec<f64>> {
                match *self { $( Op::$V $({ $($f),* })? => $m::reference(x, prior, $($($f),*)?), )* }
            }

            /// The shape as the kernels take it after the buffers: every
            /// field, in declaration order, as a 32-bit scalar.
            pub fn shape_scalars(&self) -> Vec<Scalar> {
                match *self { $( Op::$V $({ $($f),* })? => vec![$($($f.to_scalar()),*)?], )* }
            }

            fn shape(&self) -> String {
                match *self { $( Op::$V $({ $($f),* })? => $m::shape($($($f),*)?), )* }
            }
        }
    };
}

ops! {
    /// An empty dispatch (one workgroup); no buffers. Measures dispatch overhead.
    Noop => noop,
    /// `y[i] = value` for `i < n` (u32 elements).
    Fill { n: usize, value: u32 } => fill,
    /// `y[i] = x[i]` for `i < n` (u32 elements).
    Copy { n: usize } => copy,
    /// `c[i] = a[i] + b[i]` (f32).
    VecAdd { n: usize } => vec_add,
    /// `C[m][n] = sum_k A[m][k] * B[k][n]`, A `m x k`, B `k x n`, C `m x n`, all f32.
    GemmF32 { m: usize, n: usize, k: usize } => gemm_f32,
    /// As [`Op::GemmF32`] with A and B in f16; products accumulated and stored in f32.
    GemmF16 { m: usize, n: usize, k: usize } => gemm_f16,
    /// `y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * w[c]`; x, y `rows x cols`, w `cols`.
    RmsNorm { rows: usize, cols: usize, eps: f32 } => rmsnorm,
    /// `y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + eps) * w[c] + b[c]` (biased variance).
    LayerNorm { rows: usize, cols: usize, eps: f32 } => layernorm,
    /// Row-wise `y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r)`.
    Softmax { rows: usize, cols: usize } => softmax,
    /// Rotary embedding, "rotate half" (GPT-NeoX / Hugging Face Llama) form.
    /// x, y are `[tokens][heads][head_dim]`; for token t, `p = pos0 + t`, and
    /// `i < head_dim/2`, `f = theta^(-2i/head_dim)`, `a = p*f`:
    /// `y[i] = x[i]cos a - x[i+h]sin a`, `y[i+h] = x[i]sin a + x[i+h]cos a`
    /// with `h = head_dim/2`. head_dim must be even.
    Rope { tokens: usize, heads: usize, head_dim: usize, pos0: u32, theta: f32 } => rope,
    /// Writes `n_new` new K and V rows at position `pos` of a preallocated
    /// cache: `cache[l][pos+j][h][d] = new[l][j][h][d]`. Caches are
    /// `[layers][max_seq][heads][head_dim]`, new rows `[layers][n_new][heads][head_dim]`.
    /// The caches are read-write: everything outside the written rows must
    /// keep its prior content (callers pass meaningful prior contents).
    KvUpdate { layers: usize, max_seq: usize, heads: usize, head_dim: usize, pos: usize, n_new: usize } => kv_update(own_bytes),
    /// TEST-ONLY: a copy with a wrong index: `y[n/2]` receives `x[(n/2+1) % n]`.
    /// Needs `n >= 2` (and inputs that differ there). Must be caught by comparison.
    TestBrokenCopy { n: usize } => test_broken_copy,
    /// TEST-ONLY: spins `iters` xorshift32 steps (a serial dependency chain)
    /// and writes the result to `y[0]` (see [`crate::slow_hash`]); long enough
    /// to trip a submission timeout. Backends may run the same chain in many
    /// workgroups at once so that it is slow on CPU implementations too.
    /// The result is only checkable for `iters < 65536` everywhere: llvmpipe
    /// cuts longer loops short (by design of its infinite-loop guard).
    TestSlow { iters: u32 } => test_slow,
}

impl std::fmt::Display for Op {
    /// `name(shape)`, e.g. `gemm_f32(m=64,n=64,k=64)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name(), self.shape())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalogue holds every op once, each example is valid, and names
    /// are unique (they key gates, result files and kernels).
    #[test]
    fn catalogue_is_complete_and_valid() {
        let ops = Op::catalogue();
        let mut names: Vec<_> = ops.iter().map(Op::name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ops.len(), "two ops share a name");
        assert_eq!(
            HIP_SOURCES.len(),
            ops.len() + 1,
            "common.h plus one file per op"
        );
        for op in &ops {
            op.validate().unwrap_or_else(|e| panic!("{op}: {e}"));
            assert!(op.to_string().starts_with(op.name()));
            assert!(op.bytes_moved() > 0 || matches!(op, Op::Noop), "{op}");
        }
    }

    /// The kernels' scalar arguments are the shape's fields in declaration
    /// order, each 32-bit (the HIP/CUDA launch passes exactly these).
    #[test]
    fn shape_scalars_are_the_fields_in_order() {
        let rope = Op::Rope {
            tokens: 5,
            heads: 3,
            head_dim: 64,
            pos0: 11,
            theta: 1e4,
        };
        assert_eq!(
            rope.shape_scalars(),
            [
                Scalar::U32(5),
                Scalar::U32(3),
                Scalar::U32(64),
                Scalar::U32(11),
                Scalar::F32(1e4)
            ]
        );
        assert!(Op::Noop.shape_scalars().is_empty());
        for op in Op::catalogue() {
            let shown = op.to_string();
            let fields = shown.matches('=').count();
            assert_eq!(op.shape_scalars().len(), fields, "{shown}");
        }
    }

    /// A range names a real float input of its op (a typo would silently
    /// fall back to -1..1).
    #[test]
    fn input_ranges_name_real_float_inputs() {
        for op in Op::catalogue() {
            let inputs = op.inputs();
            for buffer in ["x", "w", "b", "a"] {
                let r = op.input_range(buffer);
                if r != (-1.0, 1.0) {
                    let s = inputs.iter().find(|s| s.name == buffer);
                    assert!(
                        s.is_some_and(|s| matches!(s.dtype, DType::F32 | DType::F16)),
                        "{op}: range for {buffer}, which is not a float input"
                    );
                    assert!(r.0 < r.1, "{op}: {buffer} {r:?}");
                }
            }
        }
        let norm = Op::RmsNorm {
            rows: 1,
            cols: 1,
            eps: 0.0,
        };
        assert_eq!(norm.input_range("w"), (0.5, 1.5));
    }
}
