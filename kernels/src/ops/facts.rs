//! The facts an op file declares about its op beyond its buffers and
//! maths: its [`Facts`] (`FACTS`: precision, rate unit, what it needs of a
//! device) and, from its shape, the region it writes (`written`, for an
//! op marked `(partial)`: every other op writes its outputs whole) and its
//! tuning class (`shape_class`). Everything that follows from them (the
//! f16 gates' preconditions and deny list, a gate's unit, the prior
//! content of a read-write buffer, the tuning cache's key, a Vulkan
//! device's refusal) reads them through [`super::Op`], never a `match`
//! on the op.

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// An op's constant facts, `pub const FACTS: Facts` in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    pub precision: Precision,
    /// The unit its gates measure it in.
    pub rate: RateUnit,
    pub needs: Needs,
}

impl Facts {
    /// f16 operands (the f16 preconditions and deny list apply);
    /// compute-bound, on the matrix units where the device has them (the
    /// f16 GEMMs).
    pub const MATRIX_F16: Facts = Facts {
        precision: Precision::Fp16,
        rate: RateUnit::TFlops,
        needs: Needs {
            subgroup_arith: false,
            matrix_units: true,
        },
    };

    /// A memory-bound op in `precision` whose Vulkan kernel reduces each
    /// row across a subgroup (the norms, softmax, gemv_f16).
    pub const fn row_reduction(precision: Precision) -> Facts {
        Facts {
            precision,
            rate: RateUnit::GBps,
            needs: Needs {
                subgroup_arith: true,
                matrix_units: false,
            },
        }
    }
}

/// Numeric class of an op: f16 ops have extra preconditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Integer data movement and fp32 math.
    Fp32,
    /// f16 inputs (needs shaderFloat16 + 16-bit storage, clean f32 gates,
    /// and a device not on the f16 deny list).
    Fp16,
}

/// Unit of a gate's rate; the direction of "better" follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RateUnit {
    /// Bytes the op must move (memory-bound ops).
    #[serde(rename = "GB/s")]
    GBps,
    /// Floating-point operations (compute-bound ops).
    #[serde(rename = "TFLOP/s")]
    TFlops,
    /// Time of one dispatch (what a launch costs).
    #[serde(rename = "us/dispatch")]
    UsPerDispatch,
}

impl RateUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            RateUnit::GBps => "GB/s",
            RateUnit::TFlops => "TFLOP/s",
            RateUnit::UsPerDispatch => "us/dispatch",
        }
    }

    /// Bandwidth and throughput: more is better. Dispatch latency: less is.
    pub fn higher_is_better(self) -> bool {
        !matches!(self, RateUnit::UsPerDispatch)
    }
}

/// What an op's kernels need of a device beyond the basics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// Subgroup (wave) arithmetic in compute shaders: its Vulkan kernels
    /// reduce across a subgroup, so a Vulkan device without it refuses the
    /// op (HIP and CUDA always have warp operations).
    pub subgroup_arith: bool,
    /// Its fast kernels run on the matrix units (cooperative matrix on
    /// Vulkan, MFMA/WMMA on AMD, `mma.sync` on NVIDIA) where the device has
    /// them, a tiled kernel otherwise: a gate of it exercises them.
    pub matrix_units: bool,
}

impl Needs {
    /// Nothing beyond a compute queue and storage buffers.
    pub const NOTHING: Needs = Needs {
        subgroup_arith: false,
        matrix_units: false,
    };
}

/// The elements an op writes of its outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Region {
    /// Every element of every output.
    Whole,
    /// Only these element ranges (ascending, disjoint), the same in each
    /// read-write output: everything else there must keep its prior
    /// content. A write-only output beside them (rope_kv_f16's `q`) is
    /// written whole.
    Ranges(Vec<Range<usize>>),
}

/// Power-of-two bucket of a size, for tuning classes: 1000 -> 1024.
pub fn bucket(v: usize) -> usize {
    v.max(1).next_power_of_two()
}

/// The tuning class of a `rows x cols` row op: both sizes bucketed, and
/// whether rows are 16-byte aligned (`a4`), which selects vec4 variants.
pub fn rows_class(rows: usize, cols: usize) -> String {
    format!(
        "rows{},cols{}{}",
        bucket(rows),
        bucket(cols),
        if cols.is_multiple_of(4) { ",a4" } else { "" }
    )
}
