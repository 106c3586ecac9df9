//! The Hopper GEMMs as the runtime plans them: `kernels/hip/hopper_gemm.h`
//! (wgmma fed by TMA bulk tensor copies, warp-specialised, compiled for
//! sm_90a only) behind gemm_f16 and linear_f16. Which variants the code
//! has, which shapes they take (whole tiles only: any other shape runs
//! gemm_f16.hip's and linear_f16.hip's own kernels, never a partial tile
//! here), and the launch: a block of three warpgroups per BM x BN tile of
//! C, its dynamic shared memory, and the two tensor maps (A's and B's)
//! passed by value after the buffer pointers.

use super::driver::{Dims, GpuDevice, TileMapSpec};
use super::launch::{MapArg, Plan};
use crate::tuning::{Knob, Tuning};
use greta_kernels::Op;

/// Rows of C a block computes (GRETA_HOP_BM): two consumer warpgroups of 64.
pub const BM: u32 = 128;
/// k a pipeline stage holds (GRETA_HOP_BK): 64 halves, one 128-byte
/// swizzled row of a tile.
pub const BK: u32 = 64;
/// Threads of a block (GRETA_HOP_THREADS): a producer and two consumer warpgroups.
pub const THREADS: u32 = 384;
/// Most dynamic shared memory a block may opt in to on compute capability
/// 9.0 (CUDA programming guide, "Compute capabilities": 227 KiB).
const SHARED_LIMIT: u32 = 227 << 10;

/// One compiled variant: BN columns of C a block, STAGES pipeline stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HopperVariant {
    pub bn: u32,
    pub stages: u32,
}

/// Every variant gemm_f16.hip (GRETA_HOP_F16_VARIANT) and linear_f16.hip
/// (GRETA_HOP_LIN_VARIANT) instantiate, the default first: 128 x 256 tiles
/// (each consumer a wgmma m64n256k16 over 128 accumulators a thread) four
/// stages deep, then 128 x 128 six deep for widths 256 does not divide.
pub const VARIANTS: &[HopperVariant] = &[
    HopperVariant { bn: 256, stages: 4 },
    HopperVariant { bn: 128, stages: 6 },
];

/// The ops that have Hopper kernels, with (m, n, k) of their product:
/// gemm_f16's, and linear_f16's tokens x rows over cols.
fn mnk(op: &Op) -> Option<(usize, usize, usize)> {
    match *op {
        Op::GemmF16 { m, n, k } => Some((m, n, k)),
        Op::LinearF16 { tokens, rows, cols } => Some((tokens, rows, cols)),
        _ => None,
    }
}

impl HopperVariant {
    /// The kernel of `op` for this variant (`greta_gemm_f16_wgmma_bn256_s4`).
    pub fn symbol(&self, op_name: &str) -> String {
        format!("greta_{op_name}_wgmma_bn{}_s{}", self.bn, self.stages)
    }

    /// GRETA_HOP_SHARED: the stages (A and B tiles), two 8-byte barriers a
    /// stage, and 1 KiB to align the first stage to the swizzle's 1024 bytes.
    pub fn shared_bytes(&self) -> u32 {
        self.stages * (BM + self.bn) * BK * 2 + self.stages * 16 + 1024
    }

    pub fn tuning(&self) -> Tuning {
        Tuning::of(&[
            (Knob::Bn, self.bn),
            (Knob::Stages, self.stages),
            (Knob::Wgmma, 1),
        ])
    }

    /// Whether `op`'s shape is whole tiles of this variant, within what a
    /// tensor map and a one-dimensional grid can describe.
    pub fn fits(&self, op: &Op, dev: &GpuDevice) -> bool {
        let Some((m, n, k)) = mnk(op) else {
            return false;
        };
        let (bm, bn, bk) = (BM as usize, self.bn as usize, BK as usize);
        let tiles = (m / bm).saturating_mul(n / bn);
        m > 0
            && n > 0
            && k > 0
            && m.is_multiple_of(bm)
            && n.is_multiple_of(bn)
            && k.is_multiple_of(bk)
            // Tensor map dimensions are 32-bit, row strides under 2^40 bytes.
            && [m, n, k].iter().all(|&d| d <= u32::MAX as usize)
            && (n.max(k) as u64) * 2 < 1 << 40
            && tiles <= dev.max_grid[0] as usize
            && self.shared_bytes() <= SHARED_LIMIT
    }
}

/// The variant a run of `op` that asks for no tuning takes on `dev`: the
/// first that fits, where the loaded code has the Hopper kernels; `None`
/// (gemm_f16.hip's and linear_f16.hip's kernels) otherwise.
pub fn default_for(op: &Op, dev: &GpuDevice) -> Option<HopperVariant> {
    if !dev.has_hopper_kernels() {
        return None;
    }
    VARIANTS.iter().copied().find(|v| v.fits(op, dev))
}

/// `base` (the op's launch: its scalars) as variant `v`'s launch: a block
/// per tile, and the tensor maps of A and B. gemm_f16's B is `[k][n]`
/// (64-column boxes, read N-major); linear_f16's W is `[n][k]` (BN-row
/// boxes, K-major, as X).
pub fn plan(op: &Op, v: HopperVariant, base: Plan) -> Plan {
    let (m, n, k) = mnk(op).unwrap_or((0, 0, 0));
    let (m, n, k) = (m as u64, n as u64, k as u64);
    let tiles = (m / BM as u64) * (n / v.bn as u64);
    let a = MapArg {
        buffer: 0,
        spec: TileMapSpec {
            cols: k,
            rows: m,
            box_cols: BK,
            box_rows: BM,
        },
    };
    let b = MapArg {
        buffer: 1,
        spec: if matches!(op, Op::GemmF16 { .. }) {
            TileMapSpec {
                cols: n,
                rows: k,
                box_cols: 64,
                box_rows: BK,
            }
        } else {
            TileMapSpec {
                cols: k,
                rows: n,
                box_cols: BK,
                box_rows: v.bn,
            }
        },
    };
    Plan {
        symbol: v.symbol(op.name()),
        dims: Dims {
            shared_bytes: v.shared_bytes(),
            ..Dims::new([tiles as u32, 1, 1], [THREADS, 1, 1])
        },
        maps: vec![a, b],
        ..base
    }
}

/// Every Hopper kernel symbol: what an sm_90a build holds.
pub fn all_symbols() -> Vec<String> {
    ["gemm_f16", "linear_f16"]
        .iter()
        .flat_map(|op| VARIANTS.iter().map(move |v| v.symbol(op)))
        .collect()
}

/// The Hopper kernel symbols `dev`'s code holds.
pub fn symbols(dev: &GpuDevice) -> Vec<String> {
    if dev.has_hopper_kernels() {
        all_symbols()
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::tune::tests::cuda_dev;

    #[test]
    fn the_llama_projections_and_the_square_gemms_take_the_wide_tile() {
        let h200 = cuda_dev("sm_90a");
        for op in [
            Op::LinearF16 {
                tokens: 2048,
                rows: 4096,
                cols: 4096,
            },
            Op::LinearF16 {
                tokens: 2048,
                rows: 11008,
                cols: 4096,
            },
            Op::LinearF16 {
                tokens: 2048,
                rows: 4096,
                cols: 11008,
            },
            Op::LinearF16 {
                tokens: 2048,
                rows: 12288,
                cols: 4096,
            },
            Op::GemmF16 {
                m: 8192,
                n: 8192,
                k: 8192,
            },
            Op::GemmF16 {
                m: 4096,
                n: 4096,
                k: 4096,
            },
        ] {
            assert_eq!(default_for(&op, &h200), Some(VARIANTS[0]), "{op}");
        }
        // 128 columns fit where 256 do not.
        let narrow = Op::GemmF16 {
            m: 256,
            n: 384,
            k: 64,
        };
        assert_eq!(default_for(&narrow, &h200), Some(VARIANTS[1]));
        // Partial tiles, k under one stage, an unaligned row: none.
        for op in [
            Op::GemmF16 {
                m: 8191,
                n: 8192,
                k: 8192,
            },
            Op::GemmF16 {
                m: 8192,
                n: 8192,
                k: 8224,
            },
            Op::GemmF16 {
                m: 128,
                n: 128,
                k: 32,
            },
            Op::LinearF16 {
                tokens: 19,
                rows: 40,
                cols: 72,
            },
        ] {
            assert_eq!(default_for(&op, &h200), None, "{op}");
        }
        // Code built for sm_90 (no sm_90a), or no code yet, or HIP: none.
        let big = Op::GemmF16 {
            m: 8192,
            n: 8192,
            k: 8192,
        };
        for dev in [cuda_dev("sm_90"), cuda_dev("sm_80")] {
            assert_eq!(default_for(&big, &dev), None, "{:?}", dev.kernels_for);
        }
        let unbuilt = GpuDevice {
            kernels_for: None,
            hopper_kernels: false,
            ..h200.clone()
        };
        assert_eq!(default_for(&big, &unbuilt), None);
        let hip = GpuDevice {
            api: crate::gpu::driver::Api::Hip,
            ..h200
        };
        assert_eq!(default_for(&big, &hip), None);
    }

    /// The launch: a block per tile of 384 threads, the shared memory the
    /// kernel's GRETA_HOP_SHARED computes, and A's and B's maps: gemm_f16's
    /// B in 64-column boxes of 64 k rows, linear_f16's W in BN-row boxes.
    #[test]
    fn the_launch_and_its_tensor_maps() {
        let h200 = cuda_dev("sm_90a");
        let gemm = Op::GemmF16 {
            m: 4096,
            n: 2048,
            k: 1024,
        };
        let p = crate::gpu::launch::plan(&gemm, &h200);
        assert_eq!(p.symbol, "greta_gemm_f16_wgmma_bn256_s4");
        assert_eq!(p.dims.grid, [32 * 8, 1, 1]);
        assert_eq!(p.dims.block, [384, 1, 1]);
        assert_eq!(p.dims.shared_bytes, 4 * 384 * 128 + 64 + 1024);
        assert_eq!(
            p.maps,
            vec![
                MapArg {
                    buffer: 0,
                    spec: TileMapSpec {
                        cols: 1024,
                        rows: 4096,
                        box_cols: 64,
                        box_rows: 128
                    }
                },
                MapArg {
                    buffer: 1,
                    spec: TileMapSpec {
                        cols: 2048,
                        rows: 1024,
                        box_cols: 64,
                        box_rows: 64
                    }
                }
            ]
        );
        let lin = Op::LinearF16 {
            tokens: 2048,
            rows: 11008,
            cols: 4096,
        };
        let p = crate::gpu::launch::plan(&lin, &h200);
        assert_eq!(p.symbol, "greta_linear_f16_wgmma_bn256_s4");
        assert_eq!(p.dims.grid, [16 * 43, 1, 1]);
        assert_eq!(
            p.maps[1].spec,
            TileMapSpec {
                cols: 4096,
                rows: 11008,
                box_cols: 64,
                box_rows: 256
            }
        );
        // The scalars stay the op's shape.
        let base = crate::gpu::launch::plan(&lin, &cuda_dev("sm_90"));
        assert_eq!(p.scalars, base.scalars);
        assert!(base.maps.is_empty());
        assert_eq!(base.symbol, "greta_linear_f16");
        for v in VARIANTS {
            assert!(v.shared_bytes() <= SHARED_LIMIT, "{v:?}");
        }
    }

    /// Each variant's kernel is instantiated in the sources, and takes the
    /// op's buffers, the two maps and the op's shape: as many parameters as
    /// a launch passes.
    #[test]
    fn every_variant_is_instantiated_and_takes_what_a_launch_passes() {
        let h200 = cuda_dev("sm_90a");
        for (file, mac, op) in [
            (
                "gemm_f16.hip",
                "GRETA_HOP_F16_VARIANT",
                Op::GemmF16 {
                    m: 1024,
                    n: 1024,
                    k: 1024,
                },
            ),
            (
                "linear_f16.hip",
                "GRETA_HOP_LIN_VARIANT",
                Op::LinearF16 {
                    tokens: 1024,
                    rows: 1024,
                    cols: 1024,
                },
            ),
        ] {
            let text = greta_kernels::hip_src::SOURCES
                .iter()
                .find(|(n, _)| *n == file)
                .unwrap()
                .1;
            for v in VARIANTS {
                assert!(
                    text.contains(&format!("{mac}({}, {})", v.bn, v.stages)),
                    "{file}: {v:?}"
                );
            }
            // The macro's kernel parameters.
            let def = &text[text.find(&format!("#define {mac}(")).unwrap()..];
            let params = &def[def.find("_s##S_(").unwrap() + 7..];
            let params = &params[..params.find(')').unwrap()];
            let p = crate::gpu::launch::plan(&op, &h200);
            let buffers = op.inputs().len() + op.outputs().len() + op.scratch().len();
            assert_eq!(
                params.split(',').count(),
                buffers + p.maps.len() + p.scalars.len(),
                "{file}: {params}"
            );
            assert_eq!(
                params.matches("__grid_constant__ greta_tmap").count(),
                2,
                "{params}"
            );
        }
        assert_eq!(symbols(&h200).len(), 2 * VARIANTS.len());
        assert!(symbols(&cuda_dev("sm_90")).is_empty());
    }
}
