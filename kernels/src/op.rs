//! The op catalogue: what each kernel computes and the buffers it touches.

use crate::host::DType;
use serde::{Deserialize, Serialize};

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
    /// An empty dispatch (one workgroup); no buffers. Measures dispatch overhead.
    Noop,
    /// `y[i] = value` for `i < n` (u32 elements).
    Fill { n: usize, value: u32 },
    /// `y[i] = x[i]` for `i < n` (u32 elements).
    Copy { n: usize },
    /// `c[i] = a[i] + b[i]` (f32).
    VecAdd { n: usize },
    /// `C[m][n] = sum_k A[m][k] * B[k][n]`, A `m x k`, B `k x n`, C `m x n`, all f32.
    GemmF32 { m: usize, n: usize, k: usize },
    /// As [`Op::GemmF32`] with A and B in f16; products accumulated and stored in f32.
    GemmF16 { m: usize, n: usize, k: usize },
    /// `y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * w[c]`; x, y `rows x cols`, w `cols`.
    RmsNorm { rows: usize, cols: usize, eps: f32 },
    /// `y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + eps) * w[c] + b[c]` (biased variance).
    LayerNorm { rows: usize, cols: usize, eps: f32 },
    /// Row-wise `y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r)`.
    Softmax { rows: usize, cols: usize },
    /// Rotary embedding, "rotate half" (GPT-NeoX / Hugging Face Llama) form.
    /// x, y are `[tokens][heads][head_dim]`; for token t, `p = pos0 + t`, and
    /// `i < head_dim/2`, `f = theta^(-2i/head_dim)`, `a = p*f`:
    /// `y[i] = x[i]cos a - x[i+h]sin a`, `y[i+h] = x[i]sin a + x[i+h]cos a`
    /// with `h = head_dim/2`. head_dim must be even.
    Rope {
        tokens: usize,
        heads: usize,
        head_dim: usize,
        pos0: u32,
        theta: f32,
    },
    /// Writes `n_new` new K and V rows at position `pos` of a preallocated
    /// cache: `cache[l][pos+j][h][d] = new[l][j][h][d]`. Caches are
    /// `[layers][max_seq][heads][head_dim]`, new rows `[layers][n_new][heads][head_dim]`.
    /// The caches are read-write: everything outside the written rows must
    /// keep its prior content (callers pass meaningful prior contents).
    KvUpdate {
        layers: usize,
        max_seq: usize,
        heads: usize,
        head_dim: usize,
        pos: usize,
        n_new: usize,
    },
    /// TEST-ONLY: a copy with a wrong index: `y[n/2]` receives `x[(n/2+1) % n]`.
    /// Needs `n >= 2` (and inputs that differ there). Must be caught by comparison.
    TestBrokenCopy { n: usize },
    /// TEST-ONLY: spins `iters` xorshift32 steps (a serial dependency chain)
    /// and writes the result to `y[0]` (see [`crate::slow_hash`]); long enough
    /// to trip a submission timeout. Backends may run the same chain in many
    /// workgroups at once so that it is slow on CPU implementations too.
    /// The result is only checkable for `iters < 65536` everywhere: llvmpipe
    /// cuts longer loops short (by design of its infinite-loop guard).
    TestSlow { iters: u32 },
}

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

/// Correctness bound: `||got - want||_2 / ||want||_2 <= rel_norm` and no
/// non-finite element. `rel_norm == 0` means bit-exact (integer ops).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    pub rel_norm: f64,
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

impl Op {
    /// Stable short name (used in gate ids, result files, shader names).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Noop => "noop",
            Op::Fill { .. } => "fill",
            Op::Copy { .. } => "copy",
            Op::VecAdd { .. } => "vec_add",
            Op::GemmF32 { .. } => "gemm_f32",
            Op::GemmF16 { .. } => "gemm_f16",
            Op::RmsNorm { .. } => "rmsnorm",
            Op::LayerNorm { .. } => "layernorm",
            Op::Softmax { .. } => "softmax",
            Op::Rope { .. } => "rope",
            Op::KvUpdate { .. } => "kv_update",
            Op::TestBrokenCopy { .. } => "test_broken_copy",
            Op::TestSlow { .. } => "test_slow",
        }
    }

    /// True for the deliberately broken/slow ops that exist only to test the checker.
    pub fn is_test_only(&self) -> bool {
        matches!(self, Op::TestBrokenCopy { .. } | Op::TestSlow { .. })
    }

    /// Buffers the op only reads, in binding order.
    pub fn inputs(&self) -> Vec<BufferSpec> {
        use Access::Read;
        use DType::*;
        match *self {
            Op::Noop | Op::Fill { .. } | Op::TestSlow { .. } => vec![],
            Op::Copy { n } | Op::TestBrokenCopy { n } => vec![spec("x", U32, n, Read)],
            Op::VecAdd { n } => vec![spec("a", F32, n, Read), spec("b", F32, n, Read)],
            Op::GemmF32 { m, n, k } => {
                vec![spec("a", F32, m * k, Read), spec("b", F32, k * n, Read)]
            }
            Op::GemmF16 { m, n, k } => {
                vec![spec("a", F16, m * k, Read), spec("b", F16, k * n, Read)]
            }
            Op::RmsNorm { rows, cols, .. } => vec![
                spec("x", F32, rows * cols, Read),
                spec("w", F32, cols, Read),
            ],
            Op::LayerNorm { rows, cols, .. } => vec![
                spec("x", F32, rows * cols, Read),
                spec("w", F32, cols, Read),
                spec("b", F32, cols, Read),
            ],
            Op::Softmax { rows, cols } => vec![spec("x", F32, rows * cols, Read)],
            Op::Rope {
                tokens,
                heads,
                head_dim,
                ..
            } => vec![spec("x", F32, tokens * heads * head_dim, Read)],
            Op::KvUpdate {
                layers,
                heads,
                head_dim,
                n_new,
                ..
            } => {
                let len = layers * n_new * heads * head_dim;
                vec![spec("k_new", F32, len, Read), spec("v_new", F32, len, Read)]
            }
        }
    }

    /// Buffers the op writes, in binding order (after the inputs).
    pub fn outputs(&self) -> Vec<BufferSpec> {
        use Access::*;
        use DType::*;
        match *self {
            Op::Noop => vec![],
            Op::Fill { n, .. } | Op::Copy { n } | Op::TestBrokenCopy { n } => {
                vec![spec("y", U32, n, Write)]
            }
            Op::VecAdd { n } => vec![spec("c", F32, n, Write)],
            Op::GemmF32 { m, n, .. } | Op::GemmF16 { m, n, .. } => {
                vec![spec("c", F32, m * n, Write)]
            }
            Op::RmsNorm { rows, cols, .. }
            | Op::LayerNorm { rows, cols, .. }
            | Op::Softmax { rows, cols } => {
                vec![spec("y", F32, rows * cols, Write)]
            }
            Op::Rope {
                tokens,
                heads,
                head_dim,
                ..
            } => vec![spec("y", F32, tokens * heads * head_dim, Write)],
            Op::KvUpdate {
                layers,
                max_seq,
                heads,
                head_dim,
                ..
            } => {
                let len = layers * max_seq * heads * head_dim;
                vec![
                    spec("k_cache", F32, len, ReadWrite),
                    spec("v_cache", F32, len, ReadWrite),
                ]
            }
            Op::TestSlow { .. } => vec![spec("y", U32, 1, Write)],
        }
    }

    /// Bytes the op must read plus write at minimum (each buffer element
    /// touched once), the numerator of a GB/s rate.
    pub fn bytes_moved(&self) -> u64 {
        let b = |specs: Vec<BufferSpec>| -> u64 {
            specs.iter().map(|s| (s.len * s.dtype.size()) as u64).sum()
        };
        match *self {
            // Only the written rows of the cache move, read once and written once.
            Op::KvUpdate {
                layers,
                heads,
                head_dim,
                n_new,
                ..
            } => 2 * 2 * (layers * n_new * heads * head_dim * 4) as u64,
            Op::TestSlow { .. } => 4,
            _ => b(self.inputs()) + b(self.outputs()),
        }
    }

    /// Floating-point operations (a multiply-add counts 2), the numerator
    /// of a FLOP/s rate. Approximate for the norms: per element a norm
    /// counts its arithmetic once (square+add, scale, weight).
    pub fn flops(&self) -> u64 {
        let x = |v: usize| v as u64;
        match *self {
            Op::GemmF32 { m, n, k } | Op::GemmF16 { m, n, k } => 2 * x(m) * x(n) * x(k),
            Op::VecAdd { n } => x(n),
            Op::RmsNorm { rows, cols, .. } => 4 * x(rows) * x(cols),
            Op::LayerNorm { rows, cols, .. } => 7 * x(rows) * x(cols),
            Op::Softmax { rows, cols } => 4 * x(rows) * x(cols),
            Op::Rope {
                tokens,
                heads,
                head_dim,
                ..
            } => 3 * x(tokens) * x(heads) * x(head_dim),
            _ => 0,
        }
    }

    /// The default correctness bound of the op's outputs.
    pub fn tolerance(&self) -> Tolerance {
        match self {
            Op::Noop
            | Op::Fill { .. }
            | Op::Copy { .. }
            | Op::KvUpdate { .. }
            | Op::TestBrokenCopy { .. }
            | Op::TestSlow { .. } => Tolerance { rel_norm: 0.0 },
            Op::GemmF16 { .. } => Tolerance { rel_norm: 1e-2 },
            _ => Tolerance { rel_norm: 1e-5 },
        }
    }

    /// Checks the shape: non-zero sizes, even head_dim, rows that fit the
    /// cache, every buffer addressable with 32-bit element indices.
    pub fn validate(&self) -> Result<(), OpError> {
        let err = |msg: String| {
            Err(OpError {
                op: self.name(),
                msg,
            })
        };
        let nonzero = |what: &str, v: usize| {
            if v == 0 {
                Err(format!("{what} must be > 0"))
            } else {
                Ok(())
            }
        };
        let check = || -> Result<(), String> {
            match *self {
                Op::Noop => {}
                Op::Fill { n, .. } | Op::Copy { n } | Op::VecAdd { n } => nonzero("n", n)?,
                Op::TestBrokenCopy { n } => {
                    if n < 2 {
                        return Err(format!(
                            "n must be >= 2 for the wrong index to show, got {n}"
                        ));
                    }
                }
                Op::GemmF32 { m, n, k } | Op::GemmF16 { m, n, k } => {
                    nonzero("m", m)?;
                    nonzero("n", n)?;
                    nonzero("k", k)?;
                }
                Op::RmsNorm { rows, cols, eps } | Op::LayerNorm { rows, cols, eps } => {
                    nonzero("rows", rows)?;
                    nonzero("cols", cols)?;
                    if !(eps.is_finite() && eps >= 0.0) {
                        return Err(format!("eps must be finite and >= 0, got {eps}"));
                    }
                }
                Op::Softmax { rows, cols } => {
                    nonzero("rows", rows)?;
                    nonzero("cols", cols)?;
                }
                Op::Rope {
                    tokens,
                    heads,
                    head_dim,
                    theta,
                    ..
                } => {
                    nonzero("tokens", tokens)?;
                    nonzero("heads", heads)?;
                    nonzero("head_dim", head_dim)?;
                    if head_dim % 2 != 0 {
                        return Err(format!("head_dim must be even, got {head_dim}"));
                    }
                    if !(theta.is_finite() && theta > 0.0) {
                        return Err(format!("theta must be finite and > 0, got {theta}"));
                    }
                }
                Op::KvUpdate {
                    layers,
                    max_seq,
                    heads,
                    head_dim,
                    pos,
                    n_new,
                } => {
                    nonzero("layers", layers)?;
                    nonzero("max_seq", max_seq)?;
                    nonzero("heads", heads)?;
                    nonzero("head_dim", head_dim)?;
                    nonzero("n_new", n_new)?;
                    if pos + n_new > max_seq {
                        return Err(format!(
                            "pos {pos} + n_new {n_new} exceeds max_seq {max_seq}"
                        ));
                    }
                }
                Op::TestSlow { .. } => {}
            }
            for s in self.inputs().iter().chain(self.outputs().iter()) {
                if s.len > u32::MAX as usize {
                    return Err(format!(
                        "buffer {} has {} elements; the kernels index with 32 bits",
                        s.name, s.len
                    ));
                }
            }
            Ok(())
        };
        check().or_else(err)
    }
}

impl std::fmt::Display for Op {
    /// `name(shape)`, e.g. `gemm_f32(m=64,n=64,k=64)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shape = match *self {
            Op::Noop => String::new(),
            Op::Fill { n, value } => format!("n={n},value={value:#x}"),
            Op::Copy { n } | Op::VecAdd { n } | Op::TestBrokenCopy { n } => format!("n={n}"),
            Op::GemmF32 { m, n, k } | Op::GemmF16 { m, n, k } => format!("m={m},n={n},k={k}"),
            Op::RmsNorm { rows, cols, eps } | Op::LayerNorm { rows, cols, eps } => {
                format!("rows={rows},cols={cols},eps={eps}")
            }
            Op::Softmax { rows, cols } => format!("rows={rows},cols={cols}"),
            Op::Rope {
                tokens,
                heads,
                head_dim,
                pos0,
                theta,
            } => {
                format!(
                    "tokens={tokens},heads={heads},head_dim={head_dim},pos0={pos0},theta={theta}"
                )
            }
            Op::KvUpdate {
                layers,
                max_seq,
                heads,
                head_dim,
                pos,
                n_new,
            } => {
                format!("layers={layers},max_seq={max_seq},heads={heads},head_dim={head_dim},pos={pos},n_new={n_new}")
            }
            Op::TestSlow { iters } => format!("iters={iters}"),
        };
        write!(f, "{}({shape})", self.name())
    }
}
