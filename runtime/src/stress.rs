//! The matrix-unit stress run's shared words: what is asked
//! ([`StressRequest`]), what comes back ([`StressReport`]), the inputs
//! (fresh per interval, from a seed, addressable by index so a checker can
//! rebuild any row or column without the whole matrix) and which output
//! tiles are sampled. The runtime runs the GEMMs and returns the sampled
//! tiles; `greta-smoke` checks them against its CPU reference (the runtime
//! checks nothing itself).

use half::f16;
use serde::{Deserialize, Serialize};
use std::time::Duration;

impl StressRequest {
    /// Whether another interval follows one that ends `elapsed` after the
    /// start, `done` intervals in.
    pub fn more_after(&self, done: usize, elapsed: Duration) -> bool {
        match self.intervals {
            Some(n) => done < n as usize,
            None => elapsed < self.duration,
        }
    }
}

/// One stress run: f16 GEMMs of `m x k` by `k x n` (f32 accumulate and
/// output, row-major, as the `gemm_f16` gate) back to back for `duration`,
/// timed and sampled per `interval`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StressRequest {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub duration: Duration,
    pub interval: Duration,
    /// Exactly this many intervals instead of `duration` (`--repeat`).
    pub intervals: Option<u32>,
    /// Interval `i`'s inputs come from `seed + i`.
    pub seed: u64,
    /// Output tiles read back and handed to the checker per interval.
    pub tiles_per_interval: u32,
    /// Side of a sampled tile (clipped at the matrix edge).
    pub tile: u32,
    /// Limit for any one wait on the device.
    pub timeout: Duration,
}

/// What ran the GEMMs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StressEngine {
    /// `cublasGemmEx`, `rocblas_gemm_ex`, or `greta gemm_f16`.
    pub source: String,
    pub library: Option<String>,
    pub version: Option<String>,
    /// Why greta's own kernel ran instead of the vendor's, when it did.
    pub note: Option<String>,
}

/// One output tile as the device computed it (row-major `rows x cols`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TileSample {
    pub tile: Tile,
    pub values: Vec<f32>,
}

/// One timed interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StressInterval {
    /// The inputs' seed ([`input_f16`]).
    pub seed: u64,
    /// GEMMs run back to back in the interval.
    pub gemms: u32,
    /// Device time of those GEMMs (events around the batch).
    pub device_ns: u64,
    /// The sampled tiles of the last GEMM's output.
    pub tiles: Vec<TileSample>,
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StressReport {
    pub engine: StressEngine,
    pub intervals: Vec<StressInterval>,
}

/// Which operand an input value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    A,
    B,
}

/// Element `index` of operand `which` for `seed`: a value in [-1, 1) with
/// 1/1024 steps (exact in f16, products exact in f32), never 0, from a
/// counter-based hash so any element is computed on its own.
pub fn input_f16(seed: u64, which: Operand, index: u64) -> f16 {
    let salt = match which {
        Operand::A => 0x9e37_79b9_7f4a_7c15u64,
        Operand::B => 0xc2b2_ae3d_27d4_eb4fu64,
    };
    let mut z = seed ^ salt ^ index.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    // 2047 odd steps of 1/1024 in (-1, 1): k/1024 - 1 with k odd is never 0.
    let k = ((z >> 53) | 1) as i32; // 1..=2047, odd
    f16::from_f32((k - 1024) as f32 / 1024.0)
}

/// A `rows x cols` block of the output at (`row`, `col`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tile {
    pub row: u32,
    pub col: u32,
    pub rows: u32,
    pub cols: u32,
}

/// `count` distinct tiles of side `side` on the tile grid of an `m x n`
/// output, chosen from `seed`: the bottom-right one always (edge handling
/// is where a kernel's indexing breaks), the rest spread at random over the
/// grid. Edge tiles are clipped to the matrix. Fewer when the grid has
/// fewer tiles.
pub fn sample_tiles(m: u32, n: u32, side: u32, count: u32, seed: u64) -> Vec<Tile> {
    if m == 0 || n == 0 || count == 0 {
        return Vec::new();
    }
    let side = side.max(1);
    let (gr, gc) = (m.div_ceil(side) as u64, n.div_ceil(side) as u64);
    let cells = gr * gc;
    let tile_at = |cell: u64| {
        let (r, c) = ((cell / gc) as u32 * side, (cell % gc) as u32 * side);
        Tile {
            row: r,
            col: c,
            rows: side.min(m - r),
            cols: side.min(n - c),
        }
    };
    let want = (count as u64).min(cells);
    let mut picked = vec![cells - 1];
    let mut state = seed;
    while (picked.len() as u64) < want {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let cell = (z ^ (z >> 31)) % cells;
        if !picked.contains(&cell) {
            picked.push(cell);
        }
    }
    picked.into_iter().map(tile_at).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_fresh_per_seed_never_zero_and_exact() {
        let a: Vec<f32> = (0..4096)
            .map(|i| input_f16(7, Operand::A, i).to_f32())
            .collect();
        let b: Vec<f32> = (0..4096)
            .map(|i| input_f16(7, Operand::B, i).to_f32())
            .collect();
        let a8: Vec<f32> = (0..4096)
            .map(|i| input_f16(8, Operand::A, i).to_f32())
            .collect();
        assert!(a.iter().all(|&x| x != 0.0 && (-1.0..1.0).contains(&x)));
        assert!(a.iter().all(|&x| (x * 1024.0).fract() == 0.0));
        assert_ne!(a, b);
        assert_ne!(a, a8);
        // Spread over the range, not stuck.
        let mean = a.iter().sum::<f32>() / a.len() as f32;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!(a.iter().any(|&x| x > 0.9) && a.iter().any(|&x| x < -0.9));
        assert_eq!(input_f16(7, Operand::A, 123), input_f16(7, Operand::A, 123));
    }

    #[test]
    fn tiles_are_distinct_in_bounds_include_the_corner_and_follow_the_seed() {
        let t = sample_tiles(1000, 520, 64, 12, 42);
        assert_eq!(t.len(), 12);
        // The bottom-right tile is clipped to the matrix.
        assert_eq!(
            t[0],
            Tile {
                row: 960,
                col: 512,
                rows: 40,
                cols: 8
            }
        );
        for x in &t {
            assert!(x.row % 64 == 0 && x.col % 64 == 0, "{x:?}");
            assert!(x.row + x.rows <= 1000 && x.col + x.cols <= 520, "{x:?}");
            assert!(x.rows > 0 && x.cols > 0);
        }
        let set: std::collections::HashSet<_> = t.iter().collect();
        assert_eq!(set.len(), t.len());
        assert_eq!(t, sample_tiles(1000, 520, 64, 12, 42));
        assert_ne!(t, sample_tiles(1000, 520, 64, 12, 43));
        // Not all in one band: rows and columns both vary.
        assert!(t.iter().any(|x| x.row != t[1].row) && t.iter().any(|x| x.col != t[1].col));
        // A grid smaller than the count gives every tile once.
        let all = sample_tiles(100, 100, 64, 50, 1);
        assert_eq!(all.len(), 4);
        assert!(sample_tiles(0, 5, 4, 3, 1).is_empty());
    }
}
