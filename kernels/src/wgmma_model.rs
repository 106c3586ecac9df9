//! A CPU model of hopper_gemm.h (the sm_90a main loop of gemm_f16 and
//! linear_f16), byte for byte where the hardware reads and writes: the
//! tensor copies (TMA) land each box in shared memory 128-byte swizzled,
//! the consumers' wgmma instructions read their operands through the
//! shared-memory descriptors the kernel builds (decoded field by field and
//! walked through the PTX ISA's canonical layouts: K-major, and N-major
//! for gemm_f16's B), the accumulators sit in the registers the ISA's D
//! fragment names, and the epilogue stores them where the kernel's index
//! arithmetic says. The block walk must cover every tile once, and the
//! result must match the op's f64 reference on fresh random inputs. Each
//! of a set of plausible slips (no swizzle, the N-major offsets swapped,
//! the transpose flag off, a k16 step of the wrong size, a consumer a
//! stage ahead, the accumulator rows of the wrong registers, a block walk
//! that skips tiles) must fail it.
//!
//! The producer/consumer protocol is modelled apart ([`protocol`]): the
//! mbarrier phases with the kernel's parity arithmetic, under random
//! interleavings of the producer, the eight consumer warps and the copy
//! engine; a stage may be refilled only once every warp is done reading
//! it, and no warp may read a stage before its tile has landed.
//!
//! What the model cannot show is that the hardware agrees with the ISA as
//! read here; the GPU script (scripts/gpu/hopper-gemm.sh) checks that, each
//! gate against its f64 reference. The kernel text is tied to the model by
//! [`the_kernel_builds_what_the_model_runs`]: the expressions the model
//! encodes must appear in hopper_gemm.h verbatim.

// Thread, register and byte indices are written as the kernel writes them.
#![allow(clippy::needless_range_loop)]

use crate::matrix_model::Rng;
use half::f16;

/// GRETA_HOP_BM, GRETA_HOP_BK, GRETA_HOP_GROUP.
const BM: usize = 128;
const BK: usize = 64;
const GROUP: usize = 8;
/// Bytes of a swizzled row: 64 halves.
const ROW: usize = 128;

/// One instantiation: BN columns a block, STAGES shared stages, and which
/// op (gemm_f16: B N-major, f32 out; linear_f16: W K-major, f16 out).
#[derive(Clone, Copy, Debug)]
struct Tile {
    bn: usize,
    stages: usize,
    gemm: bool,
}

/// The kernel, or a slip the model must catch.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Slip {
    None,
    /// The copies land unswizzled (CU_TENSOR_MAP_SWIZZLE_NONE).
    NoSwizzle,
    /// The N-major B descriptor with its leading and stride offsets swapped.
    OffsetsSwapped,
    /// gemm_f16's B read as K-major (transpose flag 0).
    NotTransposed,
    /// A K-major k16 step of 16 bytes instead of 32.
    HalfKStep,
    /// The consumers read the stage one ahead of the tile they wait for.
    StageAhead,
    /// Accumulator rows taken from the register's low bit, not bit 1.
    EpilogueRows,
    /// The block walk without the group's row count (pid % GROUP).
    GroupWalk,
}

/// Shared memory as halves: each cell the value a copy stored, or none.
struct Smem(Vec<Option<u16>>);

impl Smem {
    fn store(&mut self, addr: usize, v: u16) -> Result<(), String> {
        let c = self
            .0
            .get_mut(addr / 2)
            .ok_or_else(|| format!("a copy stores at byte {addr}, past shared memory"))?;
        *c = Some(v);
        Ok(())
    }
    fn read(&self, addr: usize, what: &str) -> Result<f32, String> {
        match self.0.get(addr / 2) {
            Some(Some(v)) => Ok(f16::from_bits(*v).to_f32()),
            Some(None) => Err(format!(
                "{what} reads byte {addr}, which no copy of this tile wrote"
            )),
            None => Err(format!("{what} reads byte {addr}, past shared memory")),
        }
    }
    fn clear(&mut self, from: usize, bytes: usize) {
        for c in &mut self.0[from / 2..(from + bytes) / 2] {
            *c = None;
        }
    }
}

/// The 128-byte swizzle of TMA and wgmma alike: the 16-byte chunk (address
/// bits 4-6) XOR the row within its 8-row group (bits 7-9).
fn swizzle(addr: usize) -> usize {
    addr ^ (((addr >> 7) & 7) << 4)
}

/// A 2-D box of `box_rows` x 64 halves at element (x, y) of a
/// `rows` x `cols` row-major tensor into shared memory at `dst` (128 bytes
/// a row, swizzled unless the slip says not); zeros past the edges, as
/// TMA fills them. Returns the bytes that land (what the producer's
/// expect_tx counts).
#[allow(clippy::too_many_arguments)]
fn tma_2d(
    smem: &mut Smem,
    dst: usize,
    g: &[u16],
    cols: usize,
    rows: usize,
    x: usize,
    y: usize,
    box_rows: usize,
    slip: Slip,
) -> Result<usize, String> {
    if !dst.is_multiple_of(1024) {
        return Err(format!(
            "a swizzled box lands at {dst}, not on a 1024-byte boundary"
        ));
    }
    for r in 0..box_rows {
        for i in 0..64 {
            let (gy, gx) = (y + r, x + i);
            let v = if gy < rows && gx < cols {
                g[gy * cols + gx]
            } else {
                0
            };
            let at = dst + r * ROW + 2 * i;
            smem.store(
                if slip == Slip::NoSwizzle {
                    at
                } else {
                    swizzle(at)
                },
                v,
            )?;
        }
    }
    Ok(box_rows * ROW)
}

/// The kernel's greta_wgmma_desc: start address, leading and stride byte
/// offsets in 16-byte units, swizzle mode 1 (128 bytes) in bits 62-63.
fn desc(addr: usize, lead: usize, stride: usize) -> u64 {
    (((addr & 0x3ffff) >> 4) as u64)
        | ((((lead >> 4) & 0x3fff) as u64) << 16)
        | ((((stride >> 4) & 0x3fff) as u64) << 32)
        | (1u64 << 62)
}

/// A descriptor's fields as wgmma reads them: (start, leading, stride) in
/// bytes; the swizzle mode must be 128 bytes and the base offset 0.
fn fields(d: u64) -> Result<(usize, usize, usize), String> {
    if d >> 62 != 1 || (d >> 49) & 7 != 0 {
        return Err(format!(
            "descriptor {d:#x}: not a 128-byte swizzle at base offset 0"
        ));
    }
    let f = |shift: u32| (((d >> shift) & 0x3fff) as usize) << 4;
    Ok((f(0), f(16), f(32)))
}

/// The byte of element (i, kk), i along M or N and kk the k within the
/// instruction's 16, of an operand in the canonical 128-byte-swizzled
/// layout (PTX ISA, "Shared Memory Matrix Layout"; CUTLASS's
/// make_gmma_desc spells the same): K-major ((8,m),(8,2)) : ((64,SBO),(1,8))
/// halves, the leading offset unused; N-major ((8,8,m),(8,2)) :
/// ((1,8,LBO),(64,SBO)). The hardware swizzles the whole address.
fn operand_at(d: u64, i: usize, kk: usize, n_major: bool) -> Result<usize, String> {
    let (start, lead, stride) = fields(d)?;
    let plain = if n_major {
        start + (i % 64) * 2 + (i / 64) * lead + (kk % 8) * ROW + (kk / 8) * stride
    } else {
        start + (i % 8) * ROW + (i / 8) * stride + kk * 2
    };
    Ok(swizzle(plain))
}

/// Row and column of the 64 x N tile that register `r` of thread `t` of the
/// warpgroup holds (the f32 D fragment of wgmma .m64nNk16).
fn fragment(t: usize, r: usize) -> (usize, usize) {
    (
        (t / 32) * 16 + (t % 32) / 4 + 8 * ((r % 4) / 2),
        8 * (r / 4) + 2 * (t % 4) + r % 2,
    )
}

/// wgmma.mma_async m64nNk16 f32 += f16 x f16: A K-major by `da`, B by `db`
/// (N-major when `tb`), into 128 threads' registers.
fn wgmma(
    smem: &Smem,
    d: &mut [Vec<f32>],
    n: usize,
    da: u64,
    db: u64,
    tb: bool,
) -> Result<(), String> {
    for t in 0..128 {
        for r in 0..n / 2 {
            let (row, col) = fragment(t, r);
            let mut s = 0f32;
            for kk in 0..16 {
                let a = smem.read(operand_at(da, row, kk, false)?, "A")?;
                let b = smem.read(operand_at(db, col, kk, tb)?, "B")?;
                s += a * b;
            }
            d[t][r] += s;
        }
    }
    Ok(())
}

/// The tile block `pid` computes, as (block row, block column): GROUP
/// block rows walked together, columns within them.
fn walk(pid: usize, tiles_m: usize, tiles_n: usize, slip: Slip) -> (usize, usize) {
    let per_group = GROUP * tiles_n;
    let first = (pid / per_group) * GROUP;
    let rows = (tiles_m - first).min(GROUP);
    let in_group = pid % per_group;
    let rows = if slip == Slip::GroupWalk { GROUP } else { rows };
    (first + in_group % rows, in_group / rows)
}

/// The whole grid on the CPU: C (f32; f16-rounded for linear_f16) of
/// A (m x k) and B (gemm: k x n; linear: W n x k), halves as bits.
fn run(
    tile: Tile,
    slip: Slip,
    m: usize,
    n: usize,
    k: usize,
    a: &[u16],
    b: &[u16],
) -> Result<Vec<f32>, String> {
    let Tile { bn, stages, gemm } = tile;
    let (a_bytes, b_bytes, b_box) = (BM * BK * 2, bn * BK * 2, 64 * BK * 2);
    // The kernel rounds its dynamic base up to 1024; the model's is 1024.
    let base = 1024;
    let (a_s, b_s) = (base, base + stages * a_bytes);
    let mut smem = Smem(vec![None; (b_s + stages * b_bytes) / 2]);
    let (tiles_m, tiles_n) = (m / BM, n / bn);
    let mut out = vec![f32::NAN; m * n];
    let mut seen = vec![false; tiles_m * tiles_n];
    for pid in 0..tiles_m * tiles_n {
        let (tm, tn) = walk(pid, tiles_m, tiles_n, slip);
        let (bm0, bn0) = (tm * BM, tn * bn);
        if tm >= tiles_m || tn >= tiles_n || std::mem::replace(&mut seen[tm * tiles_n + tn], true) {
            return Err(format!(
                "block {pid} computes tile ({bm0}, {bn0}): outside C or twice"
            ));
        }
        let mut d = vec![vec![vec![0f32; bn / 2]; 128]; 2];
        for kt in 0..k / BK {
            // The producer: stage kt % STAGES refilled with tile kt.
            let s = kt % stages;
            smem.clear(a_s + s * a_bytes, a_bytes);
            smem.clear(b_s + s * b_bytes, b_bytes);
            let mut landed = tma_2d(
                &mut smem,
                a_s + s * a_bytes,
                a,
                k,
                m,
                kt * BK,
                bm0,
                BM,
                slip,
            )?;
            if gemm {
                for j in 0..bn / 64 {
                    landed += tma_2d(
                        &mut smem,
                        b_s + s * b_bytes + j * b_box,
                        b,
                        n,
                        k,
                        bn0 + 64 * j,
                        kt * BK,
                        BK,
                        slip,
                    )?;
                }
            } else {
                landed += tma_2d(
                    &mut smem,
                    b_s + s * b_bytes,
                    b,
                    k,
                    n,
                    kt * BK,
                    bn0,
                    bn,
                    slip,
                )?;
            }
            if landed != a_bytes + b_bytes {
                return Err(format!(
                    "{landed} bytes land on a stage whose barrier expects {}",
                    a_bytes + b_bytes
                ));
            }
            // The consumers: warpgroup `half` owns rows 64 half.. of the tile.
            let s = if slip == Slip::StageAhead {
                (kt + 1) % stages
            } else {
                s
            };
            for half in 0..2 {
                for kk in 0..BK / 16 {
                    let step = if slip == Slip::HalfKStep { 16 } else { 32 };
                    let da = desc(a_s + s * a_bytes + half * 64 * 128 + kk * step, 16, 1024);
                    let db = if gemm {
                        if slip == Slip::OffsetsSwapped {
                            desc(b_s + s * b_bytes + kk * 2048, 1024, b_box)
                        } else {
                            desc(b_s + s * b_bytes + kk * 2048, b_box, 1024)
                        }
                    } else {
                        desc(b_s + s * b_bytes + kk * step, 16, 1024)
                    };
                    let tb = gemm && slip != Slip::NotTransposed;
                    wgmma(&smem, &mut d[half], bn, da, db, tb)?;
                }
            }
        }
        // The epilogue: thread t = 32 warp + lane of warpgroup `half`.
        for half in 0..2 {
            for t in 0..128 {
                let (warp, lane) = (t / 32, t % 32);
                let row = bm0 + half * 64 + warp * 16 + lane / 4;
                for j in 0..bn / 8 {
                    let col = bn0 + 8 * j + 2 * (lane % 4);
                    for r in 0..4 {
                        let down = if slip == Slip::EpilogueRows {
                            r % 2
                        } else {
                            r / 2
                        };
                        let (y, x) = (row + 8 * down, col + r % 2);
                        let v = d[half][t][4 * j + r];
                        let c = &mut out[y * n + x];
                        if !c.is_nan() {
                            return Err(format!("C[{y}][{x}] stored twice"));
                        }
                        *c = if gemm { v } else { f16::from_f32(v).to_f32() };
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Fresh f16 inputs, the model's C, and its largest error against the
/// op's f64 reference (relative to the largest reference element).
fn check(tile: Tile, slip: Slip, m: usize, n: usize, k: usize) -> Result<f64, String> {
    let (mut rng, seed) = Rng::fresh();
    let mut halves = |len: usize| -> (Vec<u16>, Vec<f64>) {
        (0..len)
            .map(|_| {
                let v = rng.f16_value();
                (f16::from_f32(v).to_bits(), v as f64)
            })
            .unzip()
    };
    let (a, a64) = halves(m * k);
    let (b, b64) = halves(k * n);
    let got = run(tile, slip, m, n, k, &a, &b).map_err(|e| format!("{e} (seed {seed})"))?;
    let op = if tile.gemm {
        crate::Op::GemmF16 { m, n, k }
    } else {
        crate::Op::LinearF16 {
            tokens: m,
            rows: n,
            cols: k,
        }
    };
    let want = op.reference_of(&[a64, b64], &[]).remove(0);
    let scale = want.iter().fold(0f64, |s, v| s.max(v.abs())).max(1e-30);
    let err = got
        .iter()
        .zip(&want)
        .map(|(g, w)| {
            if g.is_nan() {
                f64::INFINITY
            } else {
                (*g as f64 - w).abs() / scale
            }
        })
        .fold(0f64, f64::max);
    Ok(err)
}

/// Every instantiation (gemm_f16.hip's GRETA_HOP_F16_VARIANT, linear_f16.hip's
/// GRETA_HOP_LIN_VARIANT).
const TILES: [Tile; 4] = [
    Tile {
        bn: 256,
        stages: 4,
        gemm: true,
    },
    Tile {
        bn: 128,
        stages: 6,
        gemm: true,
    },
    Tile {
        bn: 256,
        stages: 4,
        gemm: false,
    },
    Tile {
        bn: 128,
        stages: 6,
        gemm: false,
    },
];

/// Shapes of fewer block rows than a group (the walk's short group: a
/// walk over GROUP rows leaves C), two column tiles, and more k steps than
/// stages (a stage refilled). Larger walks: [`the_block_walk_covers_every_tile_once`].
fn shape(tile: Tile) -> (usize, usize, usize) {
    (BM * 3, tile.bn * 2, BK * (tile.stages + 1))
}

/// The error of an f16 x f16 -> f32 product of these sizes in f32 is far
/// below this; the f16 rounding of linear_f16's output is 2^-11 relative.
const TOLERANCE: f64 = 1e-3;

#[test]
fn every_variant_computes_the_product() {
    for tile in TILES {
        let (m, n, k) = shape(tile);
        let err = check(tile, Slip::None, m, n, k).unwrap_or_else(|e| panic!("{tile:?}: {e}"));
        assert!(err < TOLERANCE, "{tile:?}: max error {err}");
    }
}

/// The block walk (the kernel's, as [`walk`] runs it) gives every tile of
/// C to exactly one block, across whole and short groups.
#[test]
fn the_block_walk_covers_every_tile_once() {
    for tiles_m in 1..=3 * GROUP + 1 {
        for tiles_n in 1..=5 {
            let mut seen = vec![0u32; tiles_m * tiles_n];
            for pid in 0..tiles_m * tiles_n {
                let (tm, tn) = walk(pid, tiles_m, tiles_n, Slip::None);
                assert!(
                    tm < tiles_m && tn < tiles_n,
                    "{tiles_m} x {tiles_n}: block {pid} -> ({tm}, {tn})"
                );
                seen[tm * tiles_n + tn] += 1;
                // A group's blocks share one column strip at a time: the
                // next block is the next row of the group, or the group's
                // first row of the next column.
                if pid + 1 < tiles_m * tiles_n && (pid + 1) % (GROUP * tiles_n) != 0 {
                    let (nm, nn) = walk(pid + 1, tiles_m, tiles_n, Slip::None);
                    assert!(
                        (nn == tn && nm == tm + 1) || (nn == tn + 1 && nm == tm - tm % GROUP),
                        "{tiles_m} x {tiles_n}: block {pid} ({tm}, {tn}) then ({nm}, {nn})"
                    );
                }
            }
            assert!(
                seen.iter().all(|&c| c == 1),
                "{tiles_m} x {tiles_n}: {seen:?}"
            );
        }
    }
}

#[test]
fn each_slip_fails() {
    for (slip, tiles) in [
        (Slip::NoSwizzle, &TILES[..]),
        (Slip::OffsetsSwapped, &TILES[..2]),
        (Slip::NotTransposed, &TILES[..2]),
        (Slip::HalfKStep, &TILES[..]),
        (Slip::StageAhead, &TILES[..]),
        (Slip::EpilogueRows, &TILES[..]),
        (Slip::GroupWalk, &TILES[..]),
    ] {
        for &tile in tiles {
            let (m, n, k) = shape(tile);
            // An error (a read of bytes no copy wrote, a store twice, a
            // tile outside C) fails it as surely as a wrong product.
            if let Ok(err) = check(tile, slip, m, n, k) {
                assert!(err > 0.05, "{slip:?} {tile:?} passed: max error {err}");
            }
        }
    }
}

/// The producer/consumer protocol of hopper_gemm.h: mbarriers with the
/// PTX ISA's phase semantics, the kernel's waits and arrivals, and a
/// random scheduler over the producer thread, the eight consumer warps and
/// the copy engine (whose copies land in any order, any time after issue).
mod protocol {
    use super::Rng;

    /// An mbarrier: `count` arrivals and no outstanding transaction bytes
    /// complete a phase; `completed` phases so far.
    struct Barrier {
        count: u32,
        pending: u32,
        tx: i64,
        completed: u32,
    }

    impl Barrier {
        fn new(count: u32) -> Barrier {
            Barrier {
                count,
                pending: count,
                tx: 0,
                completed: 0,
            }
        }
        fn settle(&mut self) {
            if self.pending == 0 && self.tx == 0 {
                self.completed += 1;
                self.pending = self.count;
            }
        }
        fn arrive(&mut self) -> Result<(), String> {
            self.pending = self
                .pending
                .checked_sub(1)
                .ok_or("an arrival on a barrier with none pending")?;
            self.settle();
            Ok(())
        }
        /// mbarrier.arrive.expect_tx: the bytes first, then the arrival.
        fn expect_tx(&mut self, bytes: i64) -> Result<(), String> {
            self.tx += bytes;
            self.arrive()
        }
        fn complete_tx(&mut self, bytes: i64) {
            self.tx -= bytes;
            self.settle();
        }
        /// mbarrier.try_wait.parity: the phase of parity `p` has completed
        /// once the current phase's parity differs from it.
        fn passed(&self, p: u32) -> bool {
            self.completed % 2 != p
        }
    }

    /// The kernel, or a slip the protocol check must catch.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(super) enum Slip {
        None,
        /// The producer waits on `empty` with the consumers' parity.
        ProducerParity,
        /// A warp releases a stage as soon as its wgmmas are issued.
        ReleaseAtIssue,
        /// `empty` counts one warpgroup's warps, not both.
        HalfTheWarps,
    }

    const WARPS: usize = 8;
    /// The A box and the B boxes of one stage land separately.
    const BOXES: i64 = 3;

    /// One run of `steps` k steps through `stages` stages under a random
    /// schedule drawn from `rng`.
    pub(super) fn run(
        stages: usize,
        steps: usize,
        slip: Slip,
        rng: &mut Rng,
    ) -> Result<(), String> {
        let s_of = |kt: usize| kt % stages;
        let mut full: Vec<Barrier> = (0..stages).map(|_| Barrier::new(1)).collect();
        let empty_count = if slip == Slip::HalfTheWarps {
            WARPS / 2
        } else {
            WARPS
        } as u32;
        let mut empty: Vec<Barrier> = (0..stages).map(|_| Barrier::new(empty_count)).collect();
        // Per stage: the tile last issued into it, and its boxes landed.
        let mut content: Vec<Option<(usize, i64)>> = vec![None; stages];
        let mut in_flight: Vec<(usize, usize)> = Vec::new(); // (stage, tile), one per box
        let mut producer = 0usize;
        // Per warp: its next k step, and the tiles its wgmmas still read.
        let mut warps: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new()); WARPS];
        loop {
            let producer_ready = producer < steps && {
                let kt = producer;
                let parity = if slip == Slip::ProducerParity {
                    ((kt / stages) & 1) as u32
                } else {
                    (((kt / stages) + 1) & 1) as u32
                };
                kt < stages || empty[s_of(kt)].passed(parity)
            };
            let ready: Vec<usize> = (0..WARPS)
                .filter(|&w| {
                    let kt = warps[w].0;
                    kt < steps && full[s_of(kt)].passed(((kt / stages) & 1) as u32)
                })
                .collect();
            let finished =
                producer == steps && in_flight.is_empty() && warps.iter().all(|w| w.0 == steps);
            if finished {
                return Ok(());
            }
            let choices =
                usize::from(producer_ready) + ready.len() + usize::from(!in_flight.is_empty());
            if choices == 0 {
                return Err(format!(
                    "deadlock: producer at step {producer}, warps at {:?}",
                    warps.iter().map(|w| w.0).collect::<Vec<_>>()
                ));
            }
            let mut pick = rng.below(choices);
            if producer_ready {
                if pick == 0 {
                    let (kt, s) = (producer, s_of(producer));
                    for (w, (_, reading)) in warps.iter().enumerate() {
                        if let Some(t) = reading.iter().find(|&&t| s_of(t) == s) {
                            return Err(format!(
                                "stage {s} refilled with tile {kt} while warp {w} reads tile {t}"
                            ));
                        }
                    }
                    full[s].expect_tx(BOXES)?;
                    content[s] = Some((kt, 0));
                    in_flight.extend(std::iter::repeat_n((s, kt), BOXES as usize));
                    producer += 1;
                    continue;
                }
                pick -= 1;
            }
            if pick < ready.len() {
                let w = ready[pick];
                let kt = warps[w].0;
                let s = s_of(kt);
                match content[s] {
                    Some((t, landed)) if t == kt && landed == BOXES => {}
                    other => {
                        return Err(format!(
                            "warp {w} reads stage {s} for tile {kt}, which holds {other:?}"
                        ))
                    }
                }
                let reading = &mut warps[w].1;
                reading.push(kt);
                if kt > 0 {
                    // wait_group 1: step kt - 1's wgmmas are done.
                    reading.retain(|&t| t != kt - 1);
                }
                if slip == Slip::ReleaseAtIssue {
                    empty[s].arrive()?;
                } else if kt > 0 {
                    empty[s_of(kt - 1)].arrive()?;
                }
                warps[w].0 += 1;
                if warps[w].0 == steps {
                    warps[w].1.clear(); // wait_group 0
                }
                continue;
            }
            // The copy engine lands one box.
            let i = rng.below(in_flight.len());
            let (s, kt) = in_flight.swap_remove(i);
            match &mut content[s] {
                Some((t, landed)) if *t == kt => *landed += 1,
                other => {
                    return Err(format!(
                        "a box of tile {kt} lands in stage {s}, now {other:?}"
                    ))
                }
            }
            full[s].complete_tx(1);
        }
    }
}

#[test]
fn the_barrier_protocol_never_races_nor_deadlocks() {
    let (mut rng, seed) = Rng::fresh();
    for (stages, steps) in [(4, 1), (4, 4), (4, 13), (6, 20), (2, 9)] {
        for _ in 0..200 {
            protocol::run(stages, steps, protocol::Slip::None, &mut rng)
                .unwrap_or_else(|e| panic!("{stages} stages, {steps} steps (seed {seed}): {e}"));
        }
    }
    for slip in [
        protocol::Slip::ProducerParity,
        protocol::Slip::ReleaseAtIssue,
        protocol::Slip::HalfTheWarps,
    ] {
        let caught = (0..200).any(|_| protocol::run(4, 13, slip, &mut rng).is_err());
        assert!(caught, "{slip:?} was never caught (seed {seed})");
    }
}

/// The expressions the model runs appear in hopper_gemm.h as written: a
/// change to the kernel's index arithmetic must come with the model's.
#[test]
fn the_kernel_builds_what_the_model_runs() {
    let src = crate::hip_src::SOURCES
        .iter()
        .find(|(n, _)| *n == "hopper_gemm.h")
        .expect("hopper_gemm.h is a kernel source")
        .1;
    for text in [
        "#define GRETA_HOP_BM 128",
        "#define GRETA_HOP_BK 64",
        "#define GRETA_HOP_GROUP 8",
        "(1ull << 62)",
        "greta_mbar_init(full + 8 * s, 1);",
        "greta_mbar_init(empty + 8 * s, 8);",
        "if (kt >= STAGES) greta_mbar_wait(empty + 8 * s, ((kt / STAGES) + 1) & 1);",
        "greta_mbar_expect_tx(bar, A_BYTES + B_BYTES);",
        "greta_tma_2d(a_s + s * A_BYTES, ta, kt * BK, bm0, bar);",
        "greta_tma_2d(b_s + s * B_BYTES + j * B_BOX, tb, bn0 + 64 * j, kt * BK, bar);",
        "greta_tma_2d(b_s + s * B_BYTES, tb, kt * BK, bn0, bar);",
        "greta_mbar_wait(full + 8 * s, (kt / STAGES) & 1);",
        "greta_wgmma_desc(a_s + s * A_BYTES + half * 64 * 128 + kk * 32, 16, 1024)",
        "greta_wgmma_desc(b_s + s * B_BYTES + kk * 2048, B_BOX, 1024)",
        "greta_wgmma_desc(b_s + s * B_BYTES + kk * 32, 16, 1024)",
        "greta_wgmma<BN, N_MAJOR ? 1 : 0>(d, da, db);",
        "greta_wgmma_wait<1>();",
        "if (kt > 0 && lane == 0) greta_mbar_arrive(empty + 8 * ((kt - 1) % STAGES));",
        "const uint32_t bm0 = (first + in_group % rows) * BM, bn0 = (in_group / rows) * BN;",
        "const uint32_t row = bm0 + half * 64 + warp * 16 + lane / 4;",
        "const uint32_t col = bn0 + 8 * j + 2 * (lane % 4);",
        "at1 = (greta_u64)(row + 8) * n + col;",
        "greta_h2_from_f32(d[4 * j], d[4 * j + 1])",
        "hi.x = d[4 * j + 2];",
        "*(float2*)(c + at1) = hi;",
    ] {
        assert!(
            src.contains(text),
            "hopper_gemm.h no longer has `{text}`: update wgmma_model.rs with it"
        );
    }
    let count = |needle: &str| src.matches(needle).count();
    assert_eq!(
        count("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"),
        1
    );
    assert_eq!(
        count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"),
        1
    );
    // Scale-d from the predicate, A and B unscaled, A K-major, B's flag TB.
    assert_eq!(count(", p, 1, 1, 0, %"), 2);
    for t in TILES {
        let v = if t.gemm {
            "GRETA_HOP_F16_VARIANT"
        } else {
            "GRETA_HOP_LIN_VARIANT"
        };
        let file = if t.gemm {
            "gemm_f16.hip"
        } else {
            "linear_f16.hip"
        };
        let text = crate::hip_src::SOURCES
            .iter()
            .find(|(n, _)| *n == file)
            .unwrap()
            .1;
        assert!(
            text.contains(&format!("{v}({}, {})", t.bn, t.stages)),
            "{t:?}"
        );
    }
}
