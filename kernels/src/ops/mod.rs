//! The op catalogue, one file per op. Each file holds everything the
//! kernels crate knows of its op: what it computes (its doc), its buffers,
//! its cost, its tolerance, its facts (precision, rate unit, device needs,
//! the region it writes, its tuning class: [`facts`]), its shape check, its
//! CPU reference, a small example for the tests, and its HIP source. The list below names each op
//! once; the macro generates [`Op`], its methods, [`Op::catalogue`] (the
//! list every test iterates) and the HIP source table from it.
//!
//! Adding an op: a file here with the functions the others have, a line in
//! the list, a GLSL shader in `shaders/` and a HIP file in `hip/`; then the
//! runtime's planner and a gate (docs/extending.md walks through it).

use crate::host::{DType, HostBuf};
use serde::{Deserialize, Serialize};

mod facts;
mod rowwise;
use facts::{bucket, rows_class};
pub use facts::{Facts, Needs, Precision, RateUnit, Region};

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

/// Each field `name=value`, comma-separated: the shape an op shows
/// (`Display`) unless it shows its own.
fn fields(f: &[(&str, &dyn std::fmt::Display)]) -> String {
    f.iter()
        .map(|(name, v)| format!("{name}={v}"))
        .collect::<Vec<_>>()
        .join(",")
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
    (@bytes $m:ident [own_bytes $($rest:ident)*]; $($a:ident),*) => { $m::bytes_moved($($a),*) };
    (@bytes $m:ident [$other:ident $($rest:ident)*]; $($a:ident),*) => { ops!(@bytes $m [$($rest)*]; $($a),*) };
    (@bytes $m:ident []; $($a:ident),*) => { touched($m::inputs($($a),*), $m::outputs($($a),*)) };
    // An op marked `(own_shape)` shows its shape its own way (its file's
    // `shape`: fill's value in hex); every other op's is each field
    // `name=value` in declaration order.
    (@shape $m:ident [own_shape $($rest:ident)*]; $($a:ident),*) => { $m::shape($($a),*) };
    (@shape $m:ident [$other:ident $($rest:ident)*]; $($a:ident),*) => { ops!(@shape $m [$($rest)*]; $($a),*) };
    (@shape $m:ident []; $($a:ident),*) => { fields(&[$( (stringify!($a), &$a as &dyn std::fmt::Display) ),*]) };
    // An op marked `(partial)` writes only part of its read-write outputs
    // (its file's `written`: the rows of a cache); every other op writes
    // each output whole.
    (@written $m:ident [partial $($rest:ident)*]; $($a:ident),*) => { $m::written($($a),*) };
    (@written $m:ident [$other:ident $($rest:ident)*]; $($a:ident),*) => { ops!(@written $m [$($rest)*]; $($a),*) };
    (@written $m:ident []; $($a:ident),*) => {{ $( let _ = $a; )* Region::Whole }};
    // An op marked `(scratch)` declares device memory its kernels use
    // between their passes (its file's `scratch`); the others use none.
    (@scratch $m:ident [scratch $($rest:ident)*]; $($a:ident),*) => { $m::scratch($($a),*) };
    (@scratch $m:ident [$other:ident $($rest:ident)*]; $($a:ident),*) => { ops!(@scratch $m [$($rest)*]; $($a),*) };
    (@scratch $m:ident []; $($a:ident),*) => {{ $( let _ = $a; )* Vec::new() }};
    // An op marked `(composite)` has no kernel of its own: its file's
    // `composite` is the graph of catalogue ops a device runs for it, and
    // its `expected` the per-element error model its outputs are checked
    // against (the transformer block).
    (@composite $m:ident [composite $($rest:ident)*]; $fu:ident; $($a:ident),*) => { Some($m::composite($fu, $($a),*)) };
    (@composite $m:ident [$other:ident $($rest:ident)*]; $fu:ident; $($a:ident),*) => { ops!(@composite $m [$($rest)*]; $fu; $($a),*) };
    (@composite $m:ident []; $fu:ident; $($a:ident),*) => {{ $( let _ = $a; )* let _ = $fu; None }};
    // An op marked `(fused)` does in one kernel what several steps of the
    // unfused block graph do: its file's `PARTS` names them (a fused
    // step's time is reported under those names).
    (@parts $m:ident [fused $($rest:ident)*]) => { $m::PARTS };
    (@parts $m:ident [$other:ident $($rest:ident)*]) => { ops!(@parts $m [$($rest)*]) };
    (@parts $m:ident []) => { &[] };
    (@is_composite [composite $($rest:ident)*]) => { true };
    (@is_composite [$other:ident $($rest:ident)*]) => { ops!(@is_composite [$($rest)*]) };
    (@is_composite []) => { false };
    (@expected $m:ident [composite $($rest:ident)*]; $x:ident, $g:ident, $s:ident; $($a:ident),*) => { Some($m::expected($x, $g, $s, $($a),*)) };
    (@expected $m:ident [$other:ident $($rest:ident)*]; $x:ident, $g:ident, $s:ident; $($a:ident),*) => { ops!(@expected $m [$($rest)*]; $x, $g, $s; $($a),*) };
    (@expected $m:ident []; $x:ident, $g:ident, $s:ident; $($a:ident),*) => {{ $( let _ = $a; )* let _ = ($x, $g, $s); None }};
    ($( $(#[$meta:meta])* $V:ident $({ $($f:ident : $t:ty),* $(,)? })? => $m:ident $(($($flag:ident),+))?, )*) => {
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

        /// The HIP C++ sources: `common.h` first, then `matrix_lanes.h`
        /// (generated by the build script from `matrix_lanes.rs`), then
        /// `hopper_gemm.h` (the sm_90a main loop gemm_f16 and linear_f16
        /// share), then one file per op.
        pub static HIP_SOURCES: &[(&str, &str)] = &[
            ("common.h", include_str!("../../hip/common.h")),
            ("matrix_lanes.h", include_str!(concat!(env!("OUT_DIR"), "/matrix_lanes.h"))),
            ("hopper_gemm.h", include_str!("../../hip/hopper_gemm.h")),
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
                match *self { $( Op::$V $({ $($f),* })? => ops!(@bytes $m [$($($flag)+)?]; $($($f),*)?), )* }
            }

            /// Device memory the op's kernels use between their passes
            /// (partial results of a split reduction), bound after the
            /// outputs: neither read before nor checked after a run; its
            /// content on entry is irrelevant. Empty for most ops.
            pub fn scratch(&self) -> Vec<BufferSpec> {
                match *self { $( Op::$V $({ $($f),* })? => ops!(@scratch $m [$($($flag)+)?]; $($($f),*)?), )* }
            }

            /// True for a composite op (no kernel of its own, marked
            /// `(composite)` in the list): what [`Op::composite`] answers
            /// `Some` for, without building the graph.
            pub fn is_composite(&self) -> bool {
                match self { $( Op::$V { .. } => ops!(@is_composite [$($($flag)+)?]), )* }
            }

            /// For a composite op (no kernel of its own), the graph of
            /// catalogue ops that computes it and where its buffers live
            /// there, its steps fused as
            /// [`crate::block::graph::Fusion::default`] says; `None`
            /// for every op with a kernel.
            pub fn composite(&self) -> Option<Result<crate::graph::Composite, String>> {
                self.composite_as(crate::block::graph::Fusion::default())
            }

            /// [`Op::composite`] with the steps fused or not as `fusion`
            /// says (a plan's choice: the unfused graph stays runnable, to
            /// be compared with the fused one on a device).
            pub fn composite_as(&self, fusion: crate::block::graph::Fusion) -> Option<Result<crate::graph::Composite, String>> {
                match *self { $( Op::$V $({ $($f),* })? => ops!(@composite $m [$($($flag)+)?]; fusion; $($($f),*)?), )* }
            }

            /// For an op marked `(fused)`, the steps of the unfused block
            /// graph its one kernel does (`rmsnorm_f16`, `gemv_f16 (qkv)`,
            /// ...); empty for every other op.
            pub fn parts(&self) -> &'static [&'static str] {
                match self { $( Op::$V { .. } => ops!(@parts $m [$($($flag)+)?]), )* }
            }

            /// For a composite op, what each output must match: exact
            /// values with the standard deviation of a device's error
            /// there, from the inputs (as f64, in binding order), for every
            /// element or (where the f64 reference is too long) for
            /// elements sampled with `seed`, some given the device's own
            /// earlier results `got`; `None` for the ops that
            /// [`Op::tolerance`] bounds.
            pub fn expected(&self, inputs: &[Vec<f64>], got: &[HostBuf], seed: u64) -> Option<Result<Vec<crate::block::Expected>, String>> {
                match *self { $( Op::$V $({ $($f),* })? => ops!(@expected $m [$($($flag)+)?]; inputs, got, seed; $($($f),*)?), )* }
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

            /// The op's constant facts (its file's `FACTS`).
            pub fn facts(&self) -> Facts {
                match self { $( Op::$V { .. } => $m::FACTS, )* }
            }

            /// The facts of the op named `name` (a result file's `op`), if
            /// it is one.
            pub fn facts_named(name: &str) -> Option<Facts> {
                match name { $( stringify!($m) => Some($m::FACTS), )* _ => None }
            }

            /// f16 or f32: decides the f16 preconditions and deny list.
            pub fn precision(&self) -> Precision {
                self.facts().precision
            }

            /// The unit its gates' rate is in.
            pub fn rate_unit(&self) -> RateUnit {
                self.facts().rate
            }

            /// What its kernels need of a device.
            pub fn needs(&self) -> Needs {
                self.facts().needs
            }

            /// The elements it writes of its outputs.
            pub fn written(&self) -> Region {
                match *self { $( Op::$V $({ $($f),* })? => ops!(@written $m [$($($flag)+)?]; $($($f),*)?), )* }
            }

            /// The class its tuning is shared across, the tuning cache's
            /// key: its name, then its sizes bucketed (the op file's
            /// `shape_class`), e.g. `gemm_f32:m4096,n4096,k4096`.
            pub fn shape_class(&self) -> String {
                let dims = match *self { $( Op::$V $({ $($f),* })? => $m::shape_class($($($f),*)?), )* };
                format!("{}:{dims}", self.name())
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
                match *self { $( Op::$V $({ $($f),* })? => ops!(@shape $m [$($($flag)+)?]; $($($f),*)?), )* }
            }
        }
    };
}

ops! {
    /// An empty dispatch (one workgroup); no buffers. Measures dispatch overhead.
    Noop => noop,
    /// `y[i] = value` for `i < n` (u32 elements).
    Fill { n: usize, value: u32 } => fill(own_shape),
    /// `y[i] = x[i]` for `i < n` (u32 elements).
    Copy { n: usize } => copy,
    /// `c[i] = a[i] + b[i]` (f32).
    VecAdd { n: usize } => vec_add,
    /// `C[m][n] = sum_k A[m][k] * B[k][n]`, A `m x k`, B `k x n`, C `m x n`, all f32.
    GemmF32 { m: usize, n: usize, k: usize } => gemm_f32,
    /// As [`Op::GemmF32`] with A and B in f16; products accumulated and stored in f32.
    GemmF16 { m: usize, n: usize, k: usize } => gemm_f16,
    /// `y[o] = sum_i w[o][i] x[i]`: x `cols`, w `rows x cols` (`[out][in]`), y `rows`, all
    /// f16, f32 accumulation (decode projections; memory-bound).
    GemvF16 { rows: usize, cols: usize } => gemv_f16,
    /// `y[t][o] = sum_i x[t][i] w[o][i]` (`X W^T`): x `tokens x cols`, w `rows x cols`,
    /// y `tokens x rows`, all f16, f32 accumulation (prefill projections; matrix units).
    LinearF16 { tokens: usize, rows: usize, cols: usize } => linear_f16,
    /// `y[o] = r[o] + sum_i w[o][i] x[i]`: [`Op::GemvF16`] with a residual `r` (`rows`) added
    /// in its epilogue, y rounded once (the decode graph's output and down projections).
    GemvAddF16 { rows: usize, cols: usize } => gemv_add_f16(fused),
    /// RMSNorm in the prologue, SwiGLU in the epilogue of the gate/up projection at decode:
    /// `n = rmsnorm(x) * g`, `a[j] = silu(W[j] n) * W[rows + j] n`; x, g `cols`, w
    /// `2 rows x cols` (`[w_gate; w_up]`), a `rows`, all f16, f32 arithmetic.
    RmsGemvSwigluF16 { rows: usize, cols: usize, eps: f32 } => rms_gemv_swiglu_f16(fused),
    /// RMSNorm in the prologue, RoPE and the KV-cache write in the epilogue of the QKV
    /// projection of one decode token: `[q; k; v] = W (rmsnorm(x) * g)`, q and k rotated at
    /// `pos0` as [`Op::RopeKvF16`]; q out, k and v into row `pos0` of the caches
    /// (`[max_seq][heads][head_dim]`), whose other rows survive. x, g `heads x head_dim`,
    /// w `3 d x d`, all f16, f32 arithmetic.
    RmsGemvRopeKvF16 { heads: usize, head_dim: usize, pos0: u32, max_seq: usize, theta: f32, eps: f32 } => rms_gemv_rope_kv_f16(own_bytes, partial, fused),
    /// `y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * w[c]`; x, y `rows x cols`, w `cols`.
    RmsNorm { rows: usize, cols: usize, eps: f32 } => rmsnorm,
    /// `y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + eps) * w[c] + b[c]` (biased variance).
    LayerNorm { rows: usize, cols: usize, eps: f32 } => layernorm,
    /// Row-wise `y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r)`.
    Softmax { rows: usize, cols: usize } => softmax,
    /// As [`Op::RmsNorm`] with x, w (here `g`) and y in f16, f32 arithmetic.
    RmsNormF16 { rows: usize, cols: usize, eps: f32 } => rmsnorm_f16,
    /// Fused residual + RMSNorm, f16: `h = x + r` (rounded to f16), `y = rmsnorm(h) * g`
    /// of the rounded h; x, r, h, y `rows x cols`, g `cols`.
    AddRmsNormF16 { rows: usize, cols: usize, eps: f32 } => add_rmsnorm_f16,
    /// SwiGLU, f16: row r of gu is `cols` gate then `cols` up values;
    /// `a[r][c] = silu(gate[c]) * up[c]`, `silu(z) = z / (1 + exp(-z))`.
    SwigluF16 { rows: usize, cols: usize } => swiglu_f16,
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
    KvUpdate { layers: usize, max_seq: usize, heads: usize, head_dim: usize, pos: usize, n_new: usize } => kv_update(own_bytes, partial),
    /// RoPE of a fused QKV projection into the KV cache, f16: `qkv` is
    /// `[tokens][3][heads][head_dim]` (per token q, k, v); `q` (rotated,
    /// `[tokens][heads][head_dim]`) is written whole, and rows
    /// `pos0..pos0+tokens` of the caches (`[max_seq][heads][head_dim]`) get
    /// k rotated and v copied; the rest of the caches must survive. The
    /// rotation is [`Op::Rope`]'s at position `pos0 + t`, in f32.
    RopeKvF16 { tokens: usize, heads: usize, head_dim: usize, pos0: u32, max_seq: usize, theta: f32 } => rope_kv_f16(own_bytes, partial),
    /// One token's attention over the first `len` rows of an f16 KV cache:
    /// per head h, `o_h = sum_{p<len} softmax_p(q_h . k[p][h] / sqrt(head_dim)) v[p][h]`,
    /// f32 arithmetic, f16 out. Split across the sequence (partial max, sum
    /// and weighted V per workgroup, in its scratch), the last workgroup of
    /// each head combining them, in one launch.
    AttnDecodeF16 { heads: usize, head_dim: usize, len: usize, max_seq: usize } => attn_decode_f16(own_bytes, scratch),
    /// Causal attention of `tokens` queries at positions `pos0..pos0+tokens`
    /// over an f16 KV cache (rows `< pos0 + tokens` valid): token t attends
    /// to positions `0..=pos0+t`, scale `1/sqrt(head_dim)`, f32 arithmetic
    /// (online softmax), f16 out.
    AttnPrefillF16 { tokens: usize, heads: usize, head_dim: usize, pos0: u32, max_seq: usize } => attn_prefill_f16,
    /// One Llama decoder layer on one new token after `len` cached
    /// positions (f16 weights and activations, f32 arithmetic; eps 1e-5,
    /// RoPE theta 10000): a composite op, run as the graph of the f16 ops
    /// above (`crate::block::composite`). Buffers: x, g_attn, wqkv
    /// (`[wq; wk; wv]`), wo, g_mlp, w_gateup (`[w_gate; w_up]`), w_down,
    /// k_past, v_past (`[len][heads][head_dim]`); out y, k_new, v_new.
    BlockDecode { hidden: usize, heads: usize, head_dim: usize, ffn: usize, len: usize } => block_decode(composite),
    /// The same layer on `tokens` new tokens from an empty cache (causal
    /// prefill), its projections on the matrix units (`linear_f16`).
    /// Buffers as [`Op::BlockDecode`] without k_past and v_past.
    BlockPrefill { hidden: usize, heads: usize, head_dim: usize, ffn: usize, tokens: usize } => block_prefill(composite),
    /// A memory test of a slice of `words` u32 of device memory (its
    /// scratch): every pattern of the `patterns` mask (bits: walking ones,
    /// own address, checkerboard, random from `seed`) written, checked and
    /// inverted, checked again; the `errors` output records what read
    /// wrong (see [`MemReport`]). `flip_mask` != 0 injects a flipped word
    /// at `flip_word` (tests only).
    Memtest { words: usize, patterns: u32, seed: u32, flip_word: u32, flip_mask: u32 } => memtest(own_bytes, scratch),
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

/// Positions per chunk of attn_decode_f16's split at a head_dim, and how
/// many chunks each workgroup walks (its scratch holds at most one partial
/// per head and chunk): the backends plan its launch with them.
pub use attn_decode_f16::{
    chunk as attn_decode_chunk, chunks_per_group as attn_decode_chunks_per_group,
    splits as attn_decode_splits, GROUPS_PER_COMPUTE_UNIT as ATTN_DECODE_GROUPS_PER_CU,
    MAX_CHUNKS_PER_GROUP as ATTN_DECODE_MAX_CHUNKS,
};
/// A memtest's error record, decoded, and what its patterns write.
pub use memtest::{value as memtest_value, MemError, MemReport, PATTERNS as MEMTEST_PATTERNS};
/// RoPE's cos/sin table, computed on the host in f64.
pub use rope::table as rope_table;

#[cfg(test)]
mod attn_tests;

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
            ops.len() + 3,
            "common.h, matrix_lanes.h, hopper_gemm.h and one file per op"
        );
        for op in &ops {
            op.validate().unwrap_or_else(|e| panic!("{op}: {e}"));
            assert!(op.to_string().starts_with(op.name()));
            assert!(op.bytes_moved() > 0 || matches!(op, Op::Noop), "{op}");
        }
    }

    /// Every op declares its facts in its file (the compiler sees to it)
    /// and they agree with its buffers and its cost: f16 precision exactly
    /// for f16 inputs, a rate unit whose numerator it has, matrix units
    /// only for an f16 TFLOP/s op, a partial region only over read-write
    /// outputs and inside them, a tuning class named for the op.
    #[test]
    fn every_op_declares_facts_that_agree_with_its_buffers() {
        for op in Op::catalogue() {
            let f = op.facts();
            assert_eq!(Op::facts_named(op.name()), Some(f), "{op}");
            let f16_input = op.inputs().iter().any(|s| s.dtype == DType::F16);
            assert_eq!(f.precision == Precision::Fp16, f16_input, "{op}");
            match f.rate {
                RateUnit::TFlops => assert!(op.flops() > 0, "{op}"),
                RateUnit::GBps => assert!(op.bytes_moved() > 0, "{op}"),
                RateUnit::UsPerDispatch => assert_eq!(op.bytes_moved(), 0, "{op}"),
            }
            if f.needs.matrix_units {
                assert_eq!(
                    (f.precision, f.rate),
                    (Precision::Fp16, RateUnit::TFlops),
                    "{op}"
                );
            }
            let outputs = op.outputs();
            match op.written() {
                // An op that updates a buffer in place is marked
                // `(partial)` and says which part it writes.
                Region::Whole => assert!(
                    outputs.iter().all(|s| s.access != Access::ReadWrite),
                    "{op}: a read-write output written whole"
                ),
                Region::Ranges(r) => {
                    assert!(!r.is_empty(), "{op}: an empty region");
                    // The ranges are those of the read-write outputs (the
                    // caches); a write-only output beside them is whole.
                    let rw: Vec<_> = outputs
                        .iter()
                        .filter(|s| s.access == Access::ReadWrite)
                        .collect();
                    assert!(!rw.is_empty(), "{op}: a region without a read-write output");
                    for s in rw {
                        assert!(r.last().is_some_and(|l| l.end <= s.len), "{op}: {}", s.name);
                    }
                    for w in r.windows(2) {
                        assert!(w[0].end <= w[1].start, "{op}: {w:?}");
                    }
                    assert!(r.iter().all(|x| x.start < x.end), "{op}: {r:?}");
                }
            }
            let class = op.shape_class();
            assert!(class.starts_with(&format!("{}:", op.name())), "{class}");
        }
        assert_eq!(Op::facts_named("nope"), None);
        let norm = Op::Softmax { rows: 2, cols: 8 };
        assert!(norm.needs().subgroup_arith);
        assert!(!Op::Copy { n: 8 }.needs().subgroup_arith);
        // kv_update writes rows pos..pos+n_new of each layer: its example's
        // rows 5..8 of 16, 16 elements each, in 2 layers (its fields are
        // pinned in `display_is_the_name_and_each_field`).
        let kv = super::kv_update::example();
        assert_eq!(kv.written(), Region::Ranges(vec![80..128, 336..384]));
    }

    /// The `(composite)` flag answers what building the graph would: the
    /// two block ops, and no op with a kernel.
    #[test]
    fn is_composite_agrees_with_the_graph() {
        for op in Op::catalogue() {
            assert_eq!(op.is_composite(), op.composite().is_some(), "{op}");
        }
        let composites = Op::catalogue().into_iter().filter(Op::is_composite).count();
        assert_eq!(composites, 2);
    }

    /// An op shows as its name and each field `name=value` in declaration
    /// order (fill's value in hex); these texts are in gate lists and
    /// result files.
    #[test]
    fn display_is_the_name_and_each_field() {
        let shown: Vec<String> = Op::catalogue().iter().map(Op::to_string).collect();
        assert_eq!(
            shown,
            [
                "noop()",
                "fill(n=1000,value=0xdeadbeef)",
                "copy(n=1000)",
                "vec_add(n=1000)",
                "gemm_f32(m=33,n=17,k=9)",
                "gemm_f16(m=32,n=48,k=16)",
                "gemv_f16(rows=37,cols=75)",
                "linear_f16(tokens=19,rows=40,cols=72)",
                "gemv_add_f16(rows=37,cols=75)",
                "rms_gemv_swiglu_f16(rows=37,cols=75,eps=0.00001)",
                "rms_gemv_rope_kv_f16(heads=3,head_dim=10,pos0=7,max_seq=12,theta=10000,eps=0.00001)",
                "rmsnorm(rows=3,cols=65,eps=0.000001)",
                "layernorm(rows=3,cols=65,eps=0.00001)",
                "softmax(rows=4,cols=100)",
                "rmsnorm_f16(rows=3,cols=75,eps=0.00001)",
                "add_rmsnorm_f16(rows=3,cols=75,eps=0.00001)",
                "swiglu_f16(rows=3,cols=75)",
                "rope(tokens=5,heads=3,head_dim=16,pos0=7,theta=10000)",
                "kv_update(layers=2,max_seq=16,heads=2,head_dim=8,pos=5,n_new=3)",
                "rope_kv_f16(tokens=5,heads=3,head_dim=16,pos0=7,max_seq=20,theta=10000)",
                "attn_decode_f16(heads=3,head_dim=16,len=1029,max_seq=1044)",
                "attn_prefill_f16(tokens=37,heads=2,head_dim=16,pos0=5,max_seq=50)",
                "block_decode(hidden=64,heads=2,head_dim=32,ffn=96,len=5)",
                "block_prefill(hidden=64,heads=2,head_dim=32,ffn=96,tokens=7)",
                "memtest(words=1000,patterns=15,seed=7,flip_word=0,flip_mask=0)",
                "test_broken_copy(n=64)",
                "test_slow(iters=1000)",
            ]
        );
        let eps = Op::RmsNorm {
            rows: 1,
            cols: 2,
            eps: 1.5e-7,
        };
        assert_eq!(eps.to_string(), "rmsnorm(rows=1,cols=2,eps=0.00000015)");
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
