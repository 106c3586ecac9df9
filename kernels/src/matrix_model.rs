//! A CPU model of each matrix instruction in [`crate::matrix_lanes`], and
//! of gemm_f16.hip's tiling around it, checked against a reference GEMM.
//!
//! The instruction model reads its operands the way the hardware does: A,
//! B and C matrices assembled from per-lane registers through the layout
//! (a matrix element held by two lanes must hold the same value in both,
//! as RDNA3's WMMA requires), D written back through the C layout. The
//! kernel model fills shared tiles as the kernel does (A row-major, B
//! transposed, zero past the edges), gathers each wave's operands with the
//! same coordinate functions `matrix_lanes.h` is generated from, and stores
//! C through them. A wrong layout, a wrong wave origin or a wrong fragment
//! offset changes the product and fails the comparison.

use crate::matrix_lanes::{MatrixInstr, BK, BM, BN, HIP_THREADS, INSTRS};
use crate::{HostBuf, Op};
use half::f16;

/// `x` as a kernel stores it: rounded to f16.
pub(crate) fn h(x: f32) -> f32 {
    f16::from_f32(x).to_f32()
}

/// Where each model of an attn_prefill_f16 kernel path starts: the op's
/// shape, its q, k and v as f32, and an output of NaN for the model to
/// fill (a row it never writes stays NaN and fails the comparison).
pub(crate) struct Prefill {
    pub tokens: usize,
    pub heads: usize,
    pub head_dim: usize,
    pub pos0: u32,
    pub qkv: Vec<Vec<f32>>,
    pub out: Vec<f32>,
}

impl Prefill {
    pub(crate) fn of(op: &Op, x: &[HostBuf]) -> Prefill {
        let Op::AttnPrefillF16 {
            tokens,
            heads,
            head_dim,
            pos0,
            ..
        } = *op
        else {
            unreachable!("a prefill op")
        };
        Prefill {
            tokens,
            heads,
            head_dim,
            pos0,
            qkv: x
                .iter()
                .map(|b| b.to_f64().iter().map(|&v| v as f32).collect())
                .collect(),
            out: vec![f32::NAN; tokens * heads * head_dim],
        }
    }

    /// Every (head, first query row) block of `bq` rows, in the order a
    /// model runs them.
    pub(crate) fn blocks(&self, bq: usize) -> Vec<(usize, usize)> {
        (0..self.heads)
            .flat_map(|hh| (0..self.tokens).step_by(bq).map(move |q0| (hh, q0)))
            .collect()
    }
}

/// D = A B + C on one instruction tile; registers are `[lane][elem]`.
pub(crate) fn instr_model(
    ins: &MatrixInstr,
    a: &[Vec<f32>],
    b: &[Vec<f32>],
    c: &[Vec<f32>],
) -> Result<Vec<Vec<f32>>, String> {
    let (m, n, k) = (ins.m as usize, ins.n as usize, ins.k as usize);
    let mut am: Vec<Option<f32>> = vec![None; m * k];
    let mut bm: Vec<Option<f32>> = vec![None; k * n];
    let mut cm: Vec<Option<f32>> = vec![None; m * n];
    for l in 0..ins.wave {
        for e in 0..ins.a_elems {
            let (i, kk) = (ins.a_row.eval(l, e) as usize, ins.a_k.eval(l, e) as usize);
            put(&mut am, i * k + kk, a[l as usize][e as usize], "A", l, e)?;
        }
        for e in 0..ins.b_elems {
            let (j, kk) = (ins.b_col.eval(l, e) as usize, ins.b_k.eval(l, e) as usize);
            put(&mut bm, kk * n + j, b[l as usize][e as usize], "B", l, e)?;
        }
        for r in 0..ins.c_elems {
            let (i, j) = (ins.c_row.eval(l, r) as usize, ins.c_col.eval(l, r) as usize);
            put(&mut cm, i * n + j, c[l as usize][r as usize], "C", l, r)?;
        }
    }
    let get = |v: &[Option<f32>], what: &str| -> Result<Vec<f32>, String> {
        v.iter()
            .enumerate()
            .map(|(p, x)| {
                x.ok_or_else(|| format!("{}: {what} element {p} held by no lane", ins.name))
            })
            .collect()
    };
    let (am, bm, cm) = (get(&am, "A")?, get(&bm, "B")?, get(&cm, "C")?);
    let mut d = vec![vec![0f32; ins.c_elems as usize]; ins.wave as usize];
    for l in 0..ins.wave {
        for r in 0..ins.c_elems {
            let (i, j) = (ins.c_row.eval(l, r) as usize, ins.c_col.eval(l, r) as usize);
            let mut s = cm[i * n + j];
            for kk in 0..k {
                s += am[i * k + kk] * bm[kk * n + j];
            }
            d[l as usize][r as usize] = s;
        }
    }
    Ok(d)
}

fn put(
    mat: &mut [Option<f32>],
    at: usize,
    v: f32,
    what: &str,
    lane: u32,
    elem: u32,
) -> Result<(), String> {
    let slot = mat
        .get_mut(at)
        .ok_or_else(|| format!("{what}: lane {lane} element {elem} lies outside the tile"))?;
    match *slot {
        Some(old) if old.to_bits() != v.to_bits() => Err(format!(
            "{what}: lane {lane} element {elem} disagrees with another lane holding the same element"
        )),
        _ => {
            *slot = Some(v);
            Ok(())
        }
    }
}

/// gemm_f16.hip's matrix-unit path on the CPU: blocks, k steps through
/// shared tiles, waves, instruction tiles, lanes.
fn kernel_model(ins: &MatrixInstr, m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    kernel_model_on(ins, ins, m, n, k, a, b)
}

/// The kernel gathering and storing with `kernel`'s layouts on hardware
/// that executes `hw` (the same in every real use; a test makes them differ
/// to show a kernel that indexes unlike its instruction is caught).
fn kernel_model_on(
    kernel: &MatrixInstr,
    hw: &MatrixInstr,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
) -> Vec<f32> {
    let ins = kernel;
    let (bm, bn, bk) = (BM as usize, BN as usize, BK as usize);
    let (fm, fnn) = ins.frags();
    let waves = ins.threads / ins.wave;
    let mut c = vec![f32::NAN; m * n];
    for by in 0..m.div_ceil(bm) {
        for bx in 0..n.div_ceil(bn) {
            let (bm0, bn0) = (by * bm, bx * bn);
            // acc[wave][fm][fn] = per-lane registers
            let zero = vec![vec![0f32; ins.c_elems as usize]; ins.wave as usize];
            let mut acc = vec![vec![vec![zero; fnn as usize]; fm as usize]; waves as usize];
            for k0 in (0..k).step_by(bk) {
                // Shared tiles: as[row][kk] and bs[col][kk] (B transposed).
                let mut sa = vec![0f32; bm * bk];
                let mut sb = vec![0f32; bn * bk];
                for r in 0..bm {
                    for kk in 0..bk {
                        let (gr, gk) = (bm0 + r, k0 + kk);
                        if gr < m && gk < k {
                            sa[r * bk + kk] = a[gr * k + gk];
                        }
                    }
                }
                for col in 0..bn {
                    for kk in 0..bk {
                        let (gc, gk) = (bn0 + col, k0 + kk);
                        if gc < n && gk < k {
                            sb[col * bk + kk] = b[gk * n + gc];
                        }
                    }
                }
                for w in 0..waves {
                    let (wr, wc) = ins.wave_origin(w);
                    for kk in (0..BK).step_by(ins.k as usize) {
                        for i in 0..fm {
                            for j in 0..fnn {
                                let mut ar =
                                    vec![vec![0f32; ins.a_elems as usize]; ins.wave as usize];
                                let mut br =
                                    vec![vec![0f32; ins.b_elems as usize]; ins.wave as usize];
                                for l in 0..ins.wave {
                                    for e in 0..ins.a_elems {
                                        let row = wr + i * ins.m + ins.a_row.eval(l, e);
                                        let kq = kk + ins.a_k.eval(l, e);
                                        ar[l as usize][e as usize] =
                                            sa[row as usize * bk + kq as usize];
                                    }
                                    for e in 0..ins.b_elems {
                                        let col = wc + j * ins.n + ins.b_col.eval(l, e);
                                        let kq = kk + ins.b_k.eval(l, e);
                                        br[l as usize][e as usize] =
                                            sb[col as usize * bk + kq as usize];
                                    }
                                }
                                let cur = &acc[w as usize][i as usize][j as usize];
                                let d = instr_model(hw, &ar, &br, cur)
                                    .unwrap_or_else(|e| panic!("{}: {e}", ins.name));
                                acc[w as usize][i as usize][j as usize] = d;
                            }
                        }
                    }
                }
            }
            for w in 0..waves {
                let (wr, wc) = ins.wave_origin(w);
                for i in 0..fm {
                    for j in 0..fnn {
                        for l in 0..ins.wave {
                            for r in 0..ins.c_elems {
                                let row = bm0 + (wr + i * ins.m + ins.c_row.eval(l, r)) as usize;
                                let col = bn0 + (wc + j * ins.n + ins.c_col.eval(l, r)) as usize;
                                if row < m && col < n {
                                    c[row * n + col] = acc[w as usize][i as usize][j as usize]
                                        [l as usize][r as usize];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    c
}

/// Fresh inputs per run from a printed seed (rand's seeded generator, as
/// smoke's inputs are drawn), each value an f16 in -1..1 held as f32.
pub(crate) struct Rng(rand::rngs::StdRng);
impl Rng {
    pub(crate) fn fresh() -> (Rng, u64) {
        use rand::SeedableRng;
        let seed: u64 = rand::random();
        (Rng(rand::rngs::StdRng::seed_from_u64(seed)), seed)
    }
    pub(crate) fn f16_value(&mut self) -> f32 {
        use rand::Rng as _;
        f16::from_f32(self.0.gen_range(-1.0f32..1.0)).to_f32()
    }
    /// A uniform index below `n` (> 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        use rand::Rng as _;
        self.0.gen_range(0..n)
    }
}

/// The catalogue's own f64 reference of `gemm_f32` (the one every GEMM gate
/// is checked against), not a second GEMM written for this model.
fn reference(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f64> {
    let wide = |x: &[f32]| x.iter().map(|&v| v as f64).collect::<Vec<f64>>();
    let op = crate::Op::GemmF32 { m, n, k };
    op.reference_of(&[wide(a), wide(b)], &[]).remove(0)
}

fn max_rel_err(got: &[f32], want: &[f64]) -> f64 {
    let scale = want.iter().fold(0f64, |s, v| s.max(v.abs())).max(1e-30);
    got.iter()
        .zip(want)
        .map(|(g, w)| {
            if g.is_nan() {
                f64::INFINITY
            } else {
                (*g as f64 - w).abs() / scale
            }
        })
        .fold(0f64, f64::max)
}

#[test]
fn every_instruction_and_the_kernel_tiling_reproduce_a_reference_gemm() {
    let (mut rng, seed) = Rng::fresh();
    // Full blocks, ragged edges in m, n and k, several k steps.
    for &(m, n, k) in &[(128, 128, 32), (200, 136, 72), (33, 17, 9)] {
        let a: Vec<f32> = (0..m * k).map(|_| rng.f16_value()).collect();
        let b: Vec<f32> = (0..k * n).map(|_| rng.f16_value()).collect();
        let want = reference(m, n, k, &a, &b);
        for ins in INSTRS {
            let got = kernel_model(ins, m, n, k, &a, &b);
            let err = max_rel_err(&got, &want);
            assert!(
                err < 1e-5,
                "{} {m}x{n}x{k} (seed {seed}): max error {err}",
                ins.name
            );
        }
    }
}

/// A kernel that gathers A unlike the instruction's layout is caught: the
/// model is not blind to the indexing (k of A taken as lane/16 + 4 e, a
/// permutation of the right k, so every element is still read once).
#[test]
fn a_kernel_indexing_unlike_its_instruction_fails_the_model() {
    use crate::matrix_lanes::{Coord, Term, Var, MFMA16};
    static WRONG_K: &[Term] = &[
        Term {
            var: Var::Lane,
            div: 16,
            modulo: 0,
            mul: 1,
        },
        Term {
            var: Var::Elem,
            div: 1,
            modulo: 0,
            mul: 4,
        },
    ];
    let wrong = MatrixInstr {
        a_k: Coord(WRONG_K),
        ..MFMA16
    };
    let (mut rng, seed) = Rng::fresh();
    let (m, n, k) = (64, 64, 32);
    let a: Vec<f32> = (0..m * k).map(|_| rng.f16_value()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.f16_value()).collect();
    let want = reference(m, n, k, &a, &b);
    let right = max_rel_err(&kernel_model_on(&MFMA16, &MFMA16, m, n, k, &a, &b), &want);
    assert!(right < 1e-5, "seed {seed}: {right}");
    let err = max_rel_err(&kernel_model_on(&wrong, &MFMA16, m, n, k, &a, &b), &want);
    assert!(
        err > 1e-2,
        "seed {seed}: a mis-indexed A went unnoticed ({err})"
    );
}

/// What the kernel relies on beyond the product: every operand element
/// pair (2i, 2i+1) is one 32-bit read (same row, k and k+1, k even); each
/// block's waves cover the block tile exactly; the instruction tiles fit.
#[test]
fn layouts_allow_pair_reads_and_the_waves_tile_the_block() {
    for ins in INSTRS {
        assert_eq!(
            ins.waves_m * ins.waves_n,
            ins.threads / ins.wave,
            "{}",
            ins.name
        );
        if ins.name != "MMA_SYNC" {
            assert_eq!(
                ins.threads, HIP_THREADS,
                "{}: HIP launches HIP_THREADS",
                ins.name
            );
        }
        let (wm, wn) = ins.wave_tile();
        assert_eq!(wm % ins.m, 0, "{}", ins.name);
        assert_eq!(wn % ins.n, 0, "{}", ins.name);
        assert_eq!(BK % ins.k, 0, "{}", ins.name);
        for l in 0..ins.wave {
            for (what, outer, kc, elems) in [
                ("A", ins.a_row, ins.a_k, ins.a_elems),
                ("B", ins.b_col, ins.b_k, ins.b_elems),
            ] {
                assert_eq!(elems % 2, 0);
                for e in (0..elems).step_by(2) {
                    let k0 = kc.eval(l, e);
                    assert_eq!(k0 % 2, 0, "{} {what} lane {l} elem {e}", ins.name);
                    assert_eq!(
                        kc.eval(l, e + 1),
                        k0 + 1,
                        "{} {what} lane {l} elem {e}",
                        ins.name
                    );
                    assert_eq!(
                        outer.eval(l, e + 1),
                        outer.eval(l, e),
                        "{} {what} lane {l}",
                        ins.name
                    );
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        for w in 0..ins.threads / ins.wave {
            assert!(
                seen.insert(ins.wave_origin(w)),
                "{}: two waves share a tile",
                ins.name
            );
            let (r, c) = ins.wave_origin(w);
            assert!(r + wm <= BM && c + wn <= BN, "{}", ins.name);
        }
    }
}

/// Spot values straight from the sources cited in matrix_lanes.rs (the
/// calculator's element-to-register formulas and PTX's fragment figures),
/// independent of how the table encodes them.
#[test]
fn layouts_match_the_cited_formulas() {
    use crate::matrix_lanes::{MFMA16, MMA_SYNC, WMMA11, WMMA12};
    for l in 0..64 {
        for e in 0..4 {
            // CDNA: A[i][k] in lane 16*floor(k/4)+i, element k%4.
            let (i, k) = (MFMA16.a_row.eval(l, e), MFMA16.a_k.eval(l, e));
            assert_eq!((16 * (k / 4) + i, k % 4), (l, e));
            // D[i][j] in lane 16*floor(i/4)+j, register i%4.
            let (i, j) = (MFMA16.c_row.eval(l, e), MFMA16.c_col.eval(l, e));
            assert_eq!((16 * (i / 4) + j, i % 4), (l, e));
        }
    }
    for l in 0..32 {
        for e in 0..16 {
            // RDNA3: A[i][k] in lanes i and i+16, element k.
            assert_eq!(WMMA11.a_row.eval(l, e), l % 16);
            assert_eq!(WMMA11.a_k.eval(l, e), e);
        }
        for r in 0..8 {
            // RDNA3 f32 D[i][j]: register floor(i/2), lane 16*(i%2)+j.
            let (i, j) = (WMMA11.c_row.eval(l, r), WMMA11.c_col.eval(l, r));
            assert_eq!((i / 2, 16 * (i % 2) + j), (r, l));
            // RDNA4: A[i][k] in lane 16*(floor(k/4)%2)+i, element 4*floor(k/8)+k%4.
            let (i, k) = (WMMA12.a_row.eval(l, r), WMMA12.a_k.eval(l, r));
            assert_eq!((16 * ((k / 4) % 2) + i, 4 * (k / 8) + k % 4), (l, r));
            // RDNA4 D[i][j]: register i%8, lane 16*floor(i/8)+j.
            let (i, j) = (WMMA12.c_row.eval(l, r), WMMA12.c_col.eval(l, r));
            assert_eq!((i % 8, 16 * (i / 8) + j), (r, l));
        }
        // PTX m16n8k16: a2 of lane 5 is row groupID+8 = 9, column 2*1+0 = 2;
        // b3 of lane 6 is row 2*2+1+8 = 13, column 1; c1 of lane 7 is (1, 7).
        assert_eq!((MMA_SYNC.a_row.eval(5, 2), MMA_SYNC.a_k.eval(5, 2)), (9, 2));
        assert_eq!(
            (MMA_SYNC.b_k.eval(6, 3), MMA_SYNC.b_col.eval(6, 3)),
            (13, 1)
        );
        assert_eq!(
            (MMA_SYNC.c_row.eval(7, 1), MMA_SYNC.c_col.eval(7, 1)),
            (1, 7)
        );
    }
}

/// The generated header carries every layout as the same function.
#[test]
fn the_header_defines_each_layout_macro() {
    let h = crate::matrix_lanes::header();
    for ins in INSTRS {
        for name in [
            "A_ROW", "A_K", "B_COL", "B_K", "C_ROW", "C_COL", "WAVE_ROW", "WAVE_COL",
        ] {
            assert!(
                h.contains(&format!("#define GRETA_{}_{name}(", ins.name)),
                "{name}"
            );
        }
    }
    for ins in INSTRS {
        let stages = format!("#define GRETA_{}_STAGES {}\n", ins.name, ins.stages);
        assert!(h.contains(&stages), "{stages}");
    }
    assert!(
        h.contains("#define GRETA_MFMA16_A_K(l, e) (((l) / 16u) * 4u + (e))"),
        "{h}"
    );
    let src = crate::hip_src::SOURCES;
    assert_eq!(src[1].0, "matrix_lanes.h");
    assert_eq!(src[1].1, h);
}

/// One thing a wave does to the shared tiles in gemm_f16.hip's and
/// linear_f16.hip's register-prefetch loop (every HIP matrix path, and the
/// NVIDIA path where rows are not 16-byte aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// The registers holding k step `tile` are stored into stage `slot`.
    Store { slot: u32, tile: u32 },
    /// `__syncthreads()`.
    Barrier,
    /// The matrix instructions of k step `tile` read stage `slot`.
    Read { slot: u32, tile: u32 },
}

/// What every wave of a block does over `steps` k steps with `stages`
/// shared-memory stages, as the kernels write the loop: store this step's
/// tile, barrier, read it (the next step's global loads are in registers
/// meanwhile); then, with one stage, a second barrier before the next
/// store (`trailing_barrier`), with two, the other stage next.
fn loop_schedule(stages: u32, steps: u32, trailing_barrier: bool) -> Vec<Event> {
    let mut out = Vec::new();
    let mut slot = 0;
    for tile in 0..steps {
        out.push(Event::Store { slot, tile });
        out.push(Event::Barrier);
        out.push(Event::Read { slot, tile });
        if trailing_barrier {
            out.push(Event::Barrier);
        }
        slot = (slot + 1) % stages;
    }
    out
}

/// Checks a schedule run by every wave of a block, waves free to run at any
/// speed between barriers: within one barrier interval no stage may be both
/// stored and read (some wave could store before another's read, or after
/// it), and every read must find the tile it wants, stored in an earlier
/// interval and not overwritten since.
fn check_schedule(events: &[Event]) -> Result<(), String> {
    check_wave_schedules(&[events.to_vec()])
}

/// [`check_schedule`] over waves that do different things between the same
/// barriers (attn_prefill_f16's waves skip the tiles past their last
/// query): every wave must pass as many barriers, and a stage stored by
/// any wave in an interval may be read by none in it.
pub(crate) fn check_wave_schedules(waves: &[Vec<Event>]) -> Result<(), String> {
    let parts: Vec<Vec<&[Event]>> = waves
        .iter()
        .map(|w| w.split(|e| *e == Event::Barrier).collect())
        .collect();
    let intervals = parts.first().map_or(0, Vec::len);
    if let Some(w) = parts.iter().position(|p| p.len() != intervals) {
        return Err(format!(
            "wave {w} passes {} barriers, wave 0 {}: the block deadlocks",
            parts[w].len().saturating_sub(1),
            intervals.saturating_sub(1)
        ));
    }
    let mut held: std::collections::HashMap<u32, u32> = Default::default();
    for interval in 0..intervals {
        let all = || parts.iter().flat_map(|p| p[interval].iter());
        let stored: Vec<(u32, u32)> = all()
            .filter_map(|e| match *e {
                Event::Store { slot, tile } => Some((slot, tile)),
                _ => None,
            })
            .collect();
        for e in all() {
            if let Event::Read { slot, tile } = *e {
                if stored.iter().any(|&(s, _)| s == slot) {
                    return Err(format!(
                        "interval {interval}: stage {slot} is stored while k step {tile} is read from it"
                    ));
                }
                if held.get(&slot) != Some(&tile) {
                    return Err(format!(
                        "interval {interval}: k step {tile} read from stage {slot}, which holds {:?}",
                        held.get(&slot)
                    ));
                }
            }
        }
        for &(slot, tile) in &stored {
            if let Some(&(_, other)) = stored.iter().find(|&&(s, t)| s == slot && t != tile) {
                return Err(format!(
                    "interval {interval}: stage {slot} is stored with k steps {tile} and {other} at once"
                ));
            }
            held.insert(slot, tile);
        }
    }
    Ok(())
}

/// Every instruction's stage count is a race-free schedule as the kernels
/// run it (a second barrier exactly when there is one stage), over 1 to 5 k
/// steps; and the model is not blind: one stage without the second barrier
/// is a race, as is a schedule reading a stage it never stored.
#[test]
fn the_shared_memory_stages_of_each_path_are_race_free() {
    for ins in INSTRS {
        assert!(
            (1..=2).contains(&ins.stages),
            "{}: the kernels are written for 1 or 2 stages",
            ins.name
        );
        for steps in 1..=5 {
            let s = loop_schedule(ins.stages, steps, ins.stages == 1);
            check_schedule(&s).unwrap_or_else(|e| panic!("{} over {steps} steps: {e}", ins.name));
        }
    }
    // The NVIDIA cp.async pipeline is written for two stages.
    assert_eq!(crate::matrix_lanes::MMA_SYNC.stages, 2);
    let e = check_schedule(&loop_schedule(1, 2, false)).unwrap_err();
    assert!(e.contains("stored while k step 0 is read"), "{e}");
    assert!(check_schedule(&loop_schedule(2, 3, false)).is_ok());
    let wrong = [
        Event::Store { slot: 0, tile: 0 },
        Event::Barrier,
        Event::Read { slot: 1, tile: 0 },
    ];
    assert!(check_schedule(&wrong).unwrap_err().contains("holds None"));
}

/// The tiling's matrix-instruction count per BK step, which the every-target
/// compile checks against the code (installer/tests/it/hip_targets.rs): the
/// wave tile in instruction tiles times the k sub-steps of a BK step.
#[test]
fn instructions_per_step_follow_from_the_tiles() {
    use crate::matrix_lanes::{MFMA16, MMA_SYNC, WMMA11, WMMA12};
    // 64 x 64 wave tiles of 16 x 16 (x 16 of k), BK 32: 4 x 4 x 2.
    assert_eq!(MFMA16.instrs_per_step(), 32);
    // 64 x 32 of 16 x 16: 4 x 2 x 2.
    assert_eq!(WMMA11.instrs_per_step(), 16);
    assert_eq!(WMMA12.instrs_per_step(), 16);
    // 64 x 64 of 16 x 8: 4 x 8 x 2.
    assert_eq!(MMA_SYNC.instrs_per_step(), 64);
    for ins in INSTRS {
        let (wm, wn) = ins.wave_tile();
        assert_eq!(
            ins.instrs_per_step() * ins.m * ins.n * ins.k,
            wm * wn * BK,
            "{}",
            ins.name
        );
    }
}
