//! A CPU model of attn_prefill_f16.hip's MFMA path (CDNA: gfx90a, gfx94x,
//! gfx950), lane for lane: the same loader roles filling the same shared
//! tiles (K key-major, V transposed), the same operand gathers through
//! MFMA16's layouts of [`crate::matrix_lanes`] (32-bit pairs, as the kernel
//! reads them), each MFMA executed by [`crate::matrix_model`]'s instruction
//! model, the accumulator of S^T handed to O^T = V^T P^T as its B operand
//! register for register, the online softmax per query column with the
//! kernel's two shuffles (lanes 16 and 32 apart), and the output stores.
//! The result is checked against the op's f64 reference on fresh random
//! inputs. The shared memory is modelled per half: a read must find a
//! value stored in the same key tile, and no half is stored twice in one;
//! the barrier schedule each wave runs (waves past their last query skip
//! the math but not the barriers) is checked for races by
//! [`check_wave_schedules`], the same check gemm_f16's stages pass. A
//! wrong operand element, pitch, loader role or a missing barrier fails.
//! Timing is not modelled.

// Lane and element indices are written as the kernel writes them.
#![allow(clippy::needless_range_loop)]

use crate::matrix_lanes::{AttnTiling, MatrixInstr, ATTN_MFMA16};
use crate::matrix_model::{check_wave_schedules, h, instr_model, Event, Prefill, Rng};
use crate::{HostBuf, Op};
use half::f16;

/// Threads of a block (GRETA_PRE_THREADS) and its query rows (GRETA_PRE_BQ).
const THREADS: usize = 128;
const BQ: usize = 64;

/// Row pitches in halves: K rows head_dim + 4 (GRETA_PRE_MF_KP), V^T rows
/// keys + 4 (GRETA_PRE_MF_VP): 8-byte aligned rows for the pair reads,
/// and the 16 rows an operand read touches start in distinct bank pairs.
fn k_pitch(hd: usize) -> usize {
    hd + 4
}
fn v_pitch(keys: usize) -> usize {
    keys + 4
}

/// Per-lane registers, `[lane][element]`.
type Regs = Vec<Vec<f32>>;

/// The kernel, or a broken variant of it that the model must catch.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Variant {
    Kernel,
    /// P^T's B elements 1 and 2 exchanged (a register order unlike the
    /// accumulator's).
    PElementsSwapped,
    /// No barrier after the math: the next tile's stores race the reads.
    NoTrailingBarrier,
}

/// One shared tile, per half: its value and the key tile that stored it.
struct Lds {
    what: &'static str,
    cells: Vec<(f32, Option<usize>)>,
}

impl Lds {
    fn new(what: &'static str, halves: usize) -> Lds {
        Lds {
            what,
            cells: vec![(f32::NAN, None); halves],
        }
    }

    fn store(&mut self, at: usize, v: f32, tile: usize) -> Result<(), String> {
        let what = self.what;
        let c = self
            .cells
            .get_mut(at)
            .ok_or_else(|| format!("{what}: store at half {at} past the tile"))?;
        if c.1 == Some(tile) {
            return Err(format!("{what}: half {at} stored twice in key tile {tile}"));
        }
        *c = (v, Some(tile));
        Ok(())
    }

    /// The 32-bit word at half `at` (even), as the kernel reads operand pairs.
    fn word(&self, at: usize, tile: usize) -> Result<(f32, f32), String> {
        let what = self.what;
        if !at.is_multiple_of(2) {
            return Err(format!("{what}: a 32-bit read at odd half {at}"));
        }
        let get = |i: usize| -> Result<f32, String> {
            match self.cells.get(i) {
                Some(&(v, Some(t))) if t == tile => Ok(v),
                Some(&(_, t)) => Err(format!(
                    "{what}: half {i} read in key tile {tile} holds tile {t:?}"
                )),
                None => Err(format!("{what}: read at half {i} past the tile")),
            }
        };
        Ok((get(at)?, get(at + 1)?))
    }
}

/// Each lane's A registers of instruction tile (row tile `j`, k step
/// `kk`), read in pairs from `lds` (row pitch `pitch`, stage of tile `kt`)
/// as the kernel reads them: the K tile for S, the transposed V tile for O.
fn a_operand(
    ins: &MatrixInstr,
    lds: &Lds,
    pitch: usize,
    (j, kk): (usize, usize),
    kt: usize,
) -> Result<Vec<Vec<f32>>, String> {
    let (im, ik) = (ins.m as usize, ins.k as usize);
    let mut a = vec![vec![0f32; ins.a_elems as usize]; ins.wave as usize];
    for (l, al) in a.iter_mut().enumerate() {
        for e in 0..ins.a_elems as usize / 2 {
            let row = j * im + ins.a_row.eval(l as u32, 2 * e as u32) as usize;
            let col = kk * ik + ins.a_k.eval(l as u32, 2 * e as u32) as usize;
            (al[2 * e], al[2 * e + 1]) = lds.word(row * pitch + col, kt)?;
        }
    }
    Ok(a)
}

/// One (head, query block) through the path: writes its rows of `o`,
/// returns each wave's shared-memory events.
fn block(
    at: &AttnTiling,
    p: &mut Prefill,
    q0: usize,
    hh: usize,
    variant: Variant,
) -> Result<Vec<Vec<Event>>, String> {
    let (hd, tokens, heads, pos0) = (p.head_dim, p.tokens, p.heads, p.pos0 as usize);
    let [q, k, v] = [&p.qkv[0], &p.qkv[1], &p.qkv[2]];
    let o = &mut p.out;
    let ins = &at.instr;
    let (im, inn, ik) = (ins.m as usize, ins.n as usize, ins.k as usize);
    let wave = ins.wave as usize;
    let waves = THREADS / wave;
    let (keys, qw) = (at.keys as usize, at.queries as usize);
    let (qtn, ktn, dtn) = (qw / inn, keys / im, hd / ik);
    let (kp, vp, ch) = (k_pitch(hd), v_pitch(keys), hd / 8);
    let loads = keys * ch / THREADS;
    assert_eq!(loads * THREADS, keys * ch, "whole chunks per thread");
    assert_eq!(waves * qw, BQ, "the waves cover the block's rows");
    let d = heads * hd;
    let lane_u = |l: usize| l as u32;
    // The 32-bit word holding `dim` of token `row` (both halves).
    let word = |src: &[f32], row: usize, dim: usize| -> (f32, f32) {
        let base = row * d + hh * hd + 2 * (dim / 2);
        (src[base], src[base + 1])
    };
    let sl2 = std::f32::consts::LOG2_E / (hd as f32).sqrt();
    let last = (q0 + BQ).min(tokens) - 1;
    let nkeys = pos0 + last + 1;
    let steps = nkeys.div_ceil(keys);
    let zero: Regs = vec![vec![0.0; ins.c_elems as usize]; wave];

    // Per wave: Q^T operands, O^T accumulators, running max and sum.
    let mut qf: Vec<Vec<Vec<Regs>>> = Vec::new();
    let mut acc: Vec<Vec<Vec<Regs>>> = vec![vec![vec![zero.clone(); dtn]; qtn]; waves];
    let mut m = vec![vec![vec![f32::NEG_INFINITY; wave]; qtn]; waves];
    let mut lsum = vec![vec![vec![0f32; wave]; qtn]; waves];
    let mut wave_last = Vec::new();
    for w in 0..waves {
        let wq0 = q0 + w * qw;
        let mut per_qt = Vec::new();
        for qt in 0..qtn {
            let mut per_kk = Vec::new();
            for kk in 0..dtn {
                let mut b = vec![vec![0f32; ins.b_elems as usize]; wave];
                for l in 0..wave {
                    for e in 0..ins.b_elems as usize / 2 {
                        let row = wq0 + qt * inn + ins.b_col.eval(lane_u(l), 2 * e as u32) as usize;
                        let dim = kk * ik + ins.b_k.eval(lane_u(l), 2 * e as u32) as usize;
                        let (x0, x1) = if row < tokens {
                            word(q, row, dim)
                        } else {
                            (0.0, 0.0)
                        };
                        b[l][2 * e] = x0;
                        b[l][2 * e + 1] = x1;
                    }
                }
                per_kk.push(b);
            }
            per_qt.push(per_kk);
        }
        qf.push(per_qt);
        wave_last.push(pos0 + (wq0 + qw - 1).min(tokens - 1));
    }
    let qpos = |w: usize, qt: usize, l: usize| {
        pos0 + q0 + w * qw + qt * inn + ins.c_col.eval(lane_u(l), 0) as usize
    };

    let mut ks = Lds::new("K tile", keys * kp);
    let mut vt = Lds::new("V^T tile", hd * vp);
    let mut events: Vec<Vec<Event>> = vec![Vec::new(); waves];
    for kt in 0..steps {
        let k0 = kt * keys;
        // Every thread stores its chunks of tile kt (loaded last step).
        for t in 0..THREADS {
            for i in 0..loads {
                let c = t + i * THREADS;
                let (kr, vr) = (k0 + c / ch, k0 + c % keys);
                let (kc, vd) = ((c % ch) * 8, (c / keys) * 8);
                for e in 0..8 {
                    let kx = if kr < nkeys {
                        k[kr * d + hh * hd + kc + e]
                    } else {
                        0.0
                    };
                    ks.store((c / ch) * kp + kc + e, kx, kt)?;
                    let vx = if vr < nkeys {
                        v[vr * d + hh * hd + vd + e]
                    } else {
                        0.0
                    };
                    vt.store((vd + e) * vp + c % keys, vx, kt)?;
                }
            }
        }
        for ev in events.iter_mut() {
            ev.push(Event::Store {
                slot: 0,
                tile: kt as u32,
            });
            ev.push(Event::Barrier);
        }
        for w in 0..waves {
            if k0 > wave_last[w] {
                continue;
            }
            events[w].push(Event::Read {
                slot: 0,
                tile: kt as u32,
            });
            // S^T = K Q^T.
            let mut s = vec![vec![zero.clone(); qtn]; ktn];
            for kk in 0..dtn {
                for j in 0..ktn {
                    let a = a_operand(ins, &ks, kp, (j, kk), kt)?;
                    for qt in 0..qtn {
                        s[j][qt] = instr_model(ins, &a, &qf[w][qt][kk], &s[j][qt])?;
                    }
                }
            }
            // Mask, scale, online softmax per query column; P^T in f16.
            let mut p = vec![vec![Regs::new(); qtn]; ktn];
            for qt in 0..qtn {
                let mut mx = m[w][qt].clone();
                for l in 0..wave {
                    for j in 0..ktn {
                        for r in 0..ins.c_elems as usize {
                            let key = k0 + j * im + ins.c_row.eval(lane_u(l), r as u32) as usize;
                            let x = if key <= qpos(w, qt, l) && key < nkeys {
                                s[j][qt][l][r] * sl2
                            } else {
                                f32::NEG_INFINITY
                            };
                            s[j][qt][l][r] = x;
                            mx[l] = mx[l].max(x);
                        }
                    }
                }
                // The shuffles with lanes l ^ 16, then l ^ 32.
                let mx: Vec<f32> = (0..wave).map(|l| mx[l].max(mx[l ^ 16])).collect();
                let mx: Vec<f32> = (0..wave).map(|l| mx[l].max(mx[l ^ 32])).collect();
                let mut alpha = vec![0f32; wave];
                for l in 0..wave {
                    let old = m[w][qt][l];
                    alpha[l] = if old == f32::NEG_INFINITY {
                        0.0
                    } else {
                        (old - mx[l]).exp2()
                    };
                    m[w][qt][l] = mx[l];
                    lsum[w][qt][l] *= alpha[l];
                }
                for j in 0..ktn {
                    let mut b = vec![vec![0f32; ins.b_elems as usize]; wave];
                    for l in 0..wave {
                        let mut pe = [0f32; 4];
                        for r in 0..4 {
                            let sv = s[j][qt][l][r];
                            pe[r] = if sv == f32::NEG_INFINITY {
                                0.0
                            } else {
                                (sv - mx[l]).exp2()
                            };
                            lsum[w][qt][l] += pe[r];
                        }
                        // Accumulator element r becomes B element r.
                        let order = match variant {
                            Variant::PElementsSwapped => [0, 2, 1, 3],
                            _ => [0, 1, 2, 3],
                        };
                        for (e, &r) in order.iter().enumerate() {
                            b[l][e] = h(pe[r]);
                        }
                    }
                    p[j][qt] = b;
                }
                for aj in acc[w][qt].iter_mut() {
                    for (l, al) in aj.iter_mut().enumerate() {
                        for x in al.iter_mut() {
                            *x *= alpha[l];
                        }
                    }
                }
            }
            // O^T += V^T P^T.
            for kk in 0..ktn {
                for j in 0..dtn {
                    let a = a_operand(ins, &vt, vp, (j, kk), kt)?;
                    for qt in 0..qtn {
                        acc[w][qt][j] = instr_model(ins, &a, &p[kk][qt], &acc[w][qt][j])?;
                    }
                }
            }
        }
        if variant != Variant::NoTrailingBarrier {
            for ev in events.iter_mut() {
                ev.push(Event::Barrier);
            }
        }
    }
    // The column sums over lanes 16 and 32 apart, then the stores.
    for w in 0..waves {
        for qt in 0..qtn {
            let ls = &lsum[w][qt];
            let l1: Vec<f32> = (0..wave).map(|l| ls[l] + ls[l ^ 16]).collect();
            let l2: Vec<f32> = (0..wave).map(|l| l1[l] + l1[l ^ 32]).collect();
            for l in 0..wave {
                let row = q0 + w * qw + qt * inn + ins.c_col.eval(lane_u(l), 0) as usize;
                if row >= tokens {
                    continue;
                }
                let inv = 1.0 / l2[l];
                for j in 0..dtn {
                    for e in 0..ins.c_elems as usize / 2 {
                        let dim = j * im + ins.c_row.eval(lane_u(l), 2 * e as u32) as usize;
                        let base = row * d + hh * hd + 2 * (dim / 2);
                        o[base] = h(acc[w][qt][j][l][2 * e] * inv);
                        o[base + 1] = h(acc[w][qt][j][l][2 * e + 1] * inv);
                    }
                }
            }
        }
    }
    Ok(events)
}

/// The whole op through the model: its output, and the first schedule
/// problem of any block.
fn model(
    op: &Op,
    x: &[HostBuf],
    variant: Variant,
) -> Result<(Vec<f32>, Result<(), String>), String> {
    let mut p = Prefill::of(op, x);
    let mut schedule = Ok(());
    for (hh, q0) in p.blocks(BQ) {
        let ev = block(&ATTN_MFMA16, &mut p, q0, hh, variant)?;
        if schedule.is_ok() {
            schedule =
                check_wave_schedules(&ev).map_err(|e| format!("head {hh}, query block {q0}: {e}"));
        }
    }
    Ok((p.out, schedule))
}

/// Fresh f16 inputs of `op` in -1..1.
fn inputs(op: &Op, rng: &mut Rng) -> Vec<HostBuf> {
    op.inputs()
        .iter()
        .map(|s| HostBuf::F16((0..s.len).map(|_| f16::from_f32(rng.f16_value())).collect()))
        .collect()
}

fn prefill(head_dim: usize, tokens: usize, pos0: u32) -> Op {
    Op::AttnPrefillF16 {
        tokens,
        heads: 2,
        head_dim,
        pos0,
        max_seq: tokens + pos0 as usize,
    }
}

/// Both head sizes the path serves, with a cached prefix, partial tiles, a
/// single token, and a block whose first wave skips a key tile its second
/// wave needs: the reference within the op's tolerance, every shared read
/// finding its tile, and a race-free barrier schedule.
#[test]
fn the_mfma_prefill_path_reproduces_the_reference_on_fresh_inputs() {
    let (mut rng, seed) = Rng::fresh();
    for &hd in ATTN_MFMA16.head_dims {
        for (tokens, pos0) in [(70usize, 5u32), (40, 29), (100, 0), (1, 0)] {
            let op = prefill(hd as usize, tokens, pos0);
            let x = inputs(&op, &mut rng);
            let want = crate::reference(&op, &x, &[]).unwrap();
            let (got, schedule) = model(&op, &x, Variant::Kernel)
                .unwrap_or_else(|e| panic!("{op} (seed {seed}): {e}"));
            schedule.unwrap_or_else(|e| panic!("{op}: {e}"));
            let c = crate::check::check_f32(&got, &want[0], op.tolerance());
            assert!(c.pass, "{op} (seed {seed}): {c:?}");
        }
    }
}

/// The model is not blind: P^T's elements in another order than the
/// accumulator's give a wrong result, and without the barrier after the
/// math the next tile's stores race this tile's reads.
#[test]
fn a_wrong_p_operand_or_a_missing_barrier_fails_the_model() {
    let (mut rng, seed) = Rng::fresh();
    let op = prefill(64, 70, 5);
    let x = inputs(&op, &mut rng);
    let want = crate::reference(&op, &x, &[]).unwrap();
    let (bad, _) = model(&op, &x, Variant::PElementsSwapped).unwrap();
    let c = crate::check::check_f32(&bad, &want[0], op.tolerance());
    assert!(!c.pass, "seed {seed}: a wrong P^T passes ({})", c.rel_err);
    let (_, schedule) = model(&op, &x, Variant::NoTrailingBarrier).unwrap();
    let e = schedule.unwrap_err();
    assert!(e.contains("is stored while k step 0 is read"), "{e}");
}

/// What the kernel relies on in MFMA16's layouts, from the table: S^T's
/// accumulator is P^T's B operand element for element; a lane's query
/// column is the same in all its accumulator elements, and the other
/// lanes of that column are those 16, 32 and 48 apart (the two
/// shuffles); accumulator elements (2e, 2e+1) are adjacent rows (one
/// 32-bit store of two dims). And the budget it is built for: its tiles
/// at head_dim 128 under a third of a CDNA 2/3 compute unit's 64 KiB
/// (three blocks, two waves per SIMD), the pitches those of the kernel.
#[test]
fn the_layout_facts_and_the_budget_the_mfma_path_relies_on() {
    let ins = &ATTN_MFMA16.instr;
    for l in 0..ins.wave {
        for e in 0..ins.c_elems {
            assert_eq!(
                ins.c_row.eval(l, e),
                ins.b_k.eval(l, e),
                "lane {l} elem {e}"
            );
            assert_eq!(
                ins.c_col.eval(l, e),
                ins.b_col.eval(l, e),
                "lane {l} elem {e}"
            );
            assert_eq!(
                ins.c_col.eval(l, e),
                ins.c_col.eval(l, 0),
                "lane {l} elem {e}"
            );
        }
        for e in (0..ins.c_elems).step_by(2) {
            assert_eq!(ins.c_row.eval(l, e + 1), ins.c_row.eval(l, e) + 1);
            assert_eq!(ins.c_row.eval(l, e) % 2, 0);
        }
        let column: Vec<u32> = (0..ins.wave)
            .filter(|&o| ins.c_col.eval(o, 0) == ins.c_col.eval(l, 0))
            .collect();
        let mut want = vec![l, l ^ 16, l ^ 32, l ^ 48];
        want.sort();
        assert_eq!(column, want, "lane {l}");
    }
    let (keys, hd) = (ATTN_MFMA16.keys as usize, 128);
    let bytes = 2 * (keys * k_pitch(hd) + hd * v_pitch(keys));
    assert_eq!(bytes, 17_664);
    assert!(bytes <= 65_536 / 3, "{bytes}");
    let src = crate::hip_src::SOURCES
        .iter()
        .find(|(n, _)| *n == "attn_prefill_f16.hip")
        .unwrap()
        .1;
    for def in [
        "#define GRETA_PRE_MF_KP(hd) ((hd) + 4)",
        "#define GRETA_PRE_MF_VP (GRETA_ATTN_MFMA16_KEYS + 4)",
    ] {
        assert!(src.contains(def), "{def}");
    }
    // One key tile per head size: S^T and O^T, 2 x 2 x head_dim/16 each.
    assert_eq!(ATTN_MFMA16.instrs_per_tile(128), 64);
    assert_eq!(ATTN_MFMA16.instrs_per_tile(64), 32);
    assert_eq!(ATTN_MFMA16.instrs_in_code(), 96);
    assert_eq!(crate::matrix_lanes::instrs_in_code("ATTN_MFMA16"), Some(96));
    assert_eq!(crate::matrix_lanes::instrs_in_code("MFMA16"), Some(32));
}
