//! Host-side buffers in the element types the kernels use.

use half::f16;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Elements per task where host buffers are converted or filled on every
/// core: below this a task costs more to hand out than to do.
pub const PAR_MIN: usize = 1 << 14;

/// Element type of a device buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    /// IEEE binary16.
    F16,
    U32,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::U32 => 4,
            DType::F16 => 2,
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::U32 => "u32",
        })
    }
}

/// A typed host buffer: what callers hand to a backend and get back.
#[derive(Clone, Debug, PartialEq)]
pub enum HostBuf {
    F32(Vec<f32>),
    F16(Vec<f16>),
    U32(Vec<u32>),
}

/// Poison patterns: quiet NaNs with a recognisable payload for floats (so an
/// element a kernel never wrote can never pass a tolerance check) and a
/// value no test pattern uses for u32.
pub const POISON_F32: u32 = 0x7fc0_dead;
pub const POISON_F16: u16 = 0x7e5a;
pub const POISON_U32: u32 = 0xdead_beef;

impl HostBuf {
    pub fn zeros(dtype: DType, len: usize) -> Self {
        match dtype {
            DType::F32 => HostBuf::F32(vec![0.0; len]),
            // Not a zeroed allocation (f16 is no primitive): written on
            // every core, so a GiB buffer's pages are touched there too.
            DType::F16 => HostBuf::F16(
                (0..len)
                    .into_par_iter()
                    .with_min_len(PAR_MIN)
                    .map(|_| f16::ZERO)
                    .collect(),
            ),
            DType::U32 => HostBuf::U32(vec![0; len]),
        }
    }

    /// A buffer filled with the poison pattern of its type (NaN for floats).
    /// `values` stored as `dtype` (rounded to nearest; u32 truncated and
    /// saturated), as a device stores a result.
    pub fn from_f64(dtype: DType, values: &[f64]) -> Self {
        match dtype {
            DType::F32 => HostBuf::F32(values.iter().map(|&v| v as f32).collect()),
            DType::F16 => HostBuf::F16(values.iter().map(|&v| f16::from_f64(v)).collect()),
            DType::U32 => HostBuf::U32(values.iter().map(|&v| v as u32).collect()),
        }
    }

    pub fn poisoned(dtype: DType, len: usize) -> Self {
        // On every core: a GiB output is poisoned before each repeat.
        fn fill<T: Copy + Send + Sync>(len: usize, v: T) -> Vec<T> {
            (0..len)
                .into_par_iter()
                .with_min_len(PAR_MIN)
                .map(|_| v)
                .collect()
        }
        match dtype {
            DType::F32 => HostBuf::F32(fill(len, f32::from_bits(POISON_F32))),
            DType::F16 => HostBuf::F16(fill(len, f16::from_bits(POISON_F16))),
            DType::U32 => HostBuf::U32(fill(len, POISON_U32)),
        }
    }

    /// Every element set to the poison of its type, in place (on every core).
    pub fn poison(&mut self) {
        fn fill<T: Copy + Send + Sync>(v: &mut [T], p: T) {
            v.par_chunks_mut(PAR_MIN).for_each(|c| c.fill(p));
        }
        match self {
            HostBuf::F32(v) => fill(v, f32::from_bits(POISON_F32)),
            HostBuf::F16(v) => fill(v, f16::from_bits(POISON_F16)),
            HostBuf::U32(v) => fill(v, POISON_U32),
        }
    }

    /// A copy made on every core (a GiB KV cache is copied once per repeat).
    pub fn par_clone(&self) -> Self {
        fn copy<T: Copy + Send + Sync>(v: &[T]) -> Vec<T> {
            v.par_iter().with_min_len(PAR_MIN).copied().collect()
        }
        match self {
            HostBuf::F32(v) => HostBuf::F32(copy(v)),
            HostBuf::F16(v) => HostBuf::F16(copy(v)),
            HostBuf::U32(v) => HostBuf::U32(copy(v)),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            HostBuf::F32(_) => DType::F32,
            HostBuf::F16(_) => DType::F16,
            HostBuf::U32(_) => DType::U32,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HostBuf::F32(v) => v.len(),
            HostBuf::F16(v) => v.len(),
            HostBuf::U32(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn byte_len(&self) -> usize {
        self.len() * self.dtype().size()
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            HostBuf::F32(v) => bytemuck::cast_slice(v),
            HostBuf::F16(v) => bytemuck::cast_slice(v),
            HostBuf::U32(v) => bytemuck::cast_slice(v),
        }
    }

    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            HostBuf::F32(v) => bytemuck::cast_slice_mut(v),
            HostBuf::F16(v) => bytemuck::cast_slice_mut(v),
            HostBuf::U32(v) => bytemuck::cast_slice_mut(v),
        }
    }

    /// Element `i` widened to f64 (exact for every type).
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            HostBuf::F32(v) => v[i] as f64,
            HostBuf::F16(v) => v[i].to_f64(),
            HostBuf::U32(v) => v[i] as f64,
        }
    }

    /// Every element widened to f64 (exact; on every core, as the
    /// references of GiB buffers start with it).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            HostBuf::F32(v) => v
                .par_iter()
                .with_min_len(PAR_MIN)
                .map(|&x| x as f64)
                .collect(),
            HostBuf::F16(v) => v
                .par_iter()
                .with_min_len(PAR_MIN)
                .map(|x| x.to_f64())
                .collect(),
            HostBuf::U32(v) => v
                .par_iter()
                .with_min_len(PAR_MIN)
                .map(|&x| x as f64)
                .collect(),
        }
    }

    pub fn as_f32(&self) -> Option<&[f32]> {
        match self {
            HostBuf::F32(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_u32(&self) -> Option<&[u32]> {
        match self {
            HostBuf::U32(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_f16(&self) -> Option<&[f16]> {
        match self {
            HostBuf::F16(v) => Some(v),
            _ => None,
        }
    }
}
