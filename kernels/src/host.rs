//! Host-side buffers in the element types the kernels use.

use half::f16;
use serde::{Deserialize, Serialize};

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
            DType::F16 => HostBuf::F16(vec![f16::ZERO; len]),
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
        match dtype {
            DType::F32 => HostBuf::F32(vec![f32::from_bits(POISON_F32); len]),
            DType::F16 => HostBuf::F16(vec![f16::from_bits(POISON_F16); len]),
            DType::U32 => HostBuf::U32(vec![POISON_U32; len]),
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

    /// Every element widened to f64.
    pub fn to_f64(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.get_f64(i)).collect()
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
