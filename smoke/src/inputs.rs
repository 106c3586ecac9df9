//! Seeded input generation: fresh random data for every repeat, reproducible
//! from the seed recorded in the results, never all zero, and output buffers
//! poisoned so that anything a kernel leaves unwritten fails the check.

use greta_kernels::{Access, DType, HostBuf, Op, Region};
use half::f16;

/// SplitMix64: a tiny, fully specified generator, so a recorded seed
/// reproduces the same inputs with any greta build, and fast enough to fill
/// GiB buffers every repeat (also in unoptimised test builds).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The generator of `seed` after `n` draws (it is a counter), so a
    /// buffer's pieces can be drawn apart with the serial stream's values.
    pub fn after(seed: u64, n: usize) -> Self {
        SplitMix64(seed.wrapping_add(GAMMA.wrapping_mul(n as u64)))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `[lo, hi)` with 24 random bits.
    #[inline]
    pub fn range_f32(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 * (1.0 / 16_777_216.0);
        lo + (hi - lo) * u
    }

    /// Uniform in `[lo, hi)` with 53 random bits.
    #[inline]
    pub fn range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0);
        lo + (hi - lo) * u
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant here).
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The seed of a gate: the run's base seed mixed with the gate id, so gates
/// get independent streams and adding a gate does not shift the others.
pub fn gate_seed(base: u64, gate_id: &str) -> u64 {
    // FNV-1a over the id, then a splitmix64 finalizer with the base.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in gate_id.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = base ^ h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What one repeat of a gate runs: the op (fill gets a fresh value), its
/// inputs, and the output buffers as uploaded (poison, or for read-write
/// buffers such as the KV caches random prior content with the region the
/// op writes poisoned).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub op: Op,
    pub inputs: Vec<HostBuf>,
    pub outputs: Vec<HostBuf>,
}

impl Prepared {
    /// The buffers to hand the backend. The prior content is kept only
    /// where the reference needs it (read-write outputs); write-only
    /// outputs are moved out, so a GiB output is not held twice.
    pub fn take_outputs(&mut self) -> Vec<HostBuf> {
        let read_write = self
            .op
            .outputs()
            .iter()
            .any(|s| s.access == Access::ReadWrite);
        if read_write {
            self.outputs.iter().map(HostBuf::par_clone).collect()
        } else {
            std::mem::take(&mut self.outputs)
        }
    }
}

/// Values a fill never uses: zero (indistinguishable from fresh memory) and
/// the u32 poison (indistinguishable from "never written").
fn fill_value(rng: &mut SplitMix64) -> u32 {
    let poison = match HostBuf::poisoned(DType::U32, 1) {
        HostBuf::U32(v) => v[0],
        _ => unreachable!("u32 poison is u32"),
    };
    loop {
        let v = rng.next_u32();
        if v != 0 && v != poison {
            return v;
        }
    }
}

/// Range of each float input: the op's own (kernels/src/ops/), e.g.
/// weights near 1 so norms do not collapse, softmax logits wide enough to
/// exercise the max shift.
fn range(op: &Op, buffer: &str) -> (f32, f32) {
    op.input_range(buffer)
}

/// SplitMix64's state step: the generator is a counter, so element `i` of a
/// buffer is drawn from state `s0 + (i + 1) * GAMMA`, and a buffer can be
/// filled in pieces on several threads with exactly the serial stream.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// Elements per piece of a fill. Piece `c` starts at the generator's state
/// for its first element, so the values are the serial loop's whatever the
/// number of threads (and a recorded seed gives what it always gave).
pub(crate) const PIECE: usize = 1 << 16;

/// `v[i] = draw(rng at element i)`, one `next_u64` per element, in pieces
/// on every core; `rng` ends where the serial loop would have left it.
fn fill_par<T: Send>(
    rng: &mut SplitMix64,
    v: &mut [T],
    draw: impl Fn(&mut SplitMix64) -> T + Sync,
) {
    use rayon::prelude::*;
    let s0 = rng.0;
    if v.len() <= PIECE {
        for x in v.iter_mut() {
            *x = draw(rng);
        }
        return;
    }
    v.par_chunks_mut(PIECE).enumerate().for_each(|(c, part)| {
        let mut r = SplitMix64::after(s0, c * PIECE);
        for x in part.iter_mut() {
            *x = draw(&mut r);
        }
    });
    *rng = SplitMix64::after(s0, v.len());
}

/// A buffer of `dtype` and `len` from the generator: u32 never zero (a
/// zero word is what fresh memory often holds), floats uniform in
/// `[lo, hi)` (f16 rounded from f32), written into `spare` when it is a
/// buffer of that type and length (an earlier repeat's, whose pages are
/// already mapped: a fresh GiB buffer costs its page faults again every
/// repeat), else allocated. The values are the same either way.
fn random_buf_in(
    rng: &mut SplitMix64,
    dtype: DType,
    len: usize,
    (lo, hi): (f32, f32),
    spare: Option<HostBuf>,
) -> HostBuf {
    let mut buf = match spare {
        Some(b) if b.dtype() == dtype && b.len() == len => b,
        _ => HostBuf::zeros(dtype, len),
    };
    match &mut buf {
        HostBuf::U32(v) => fill_par(rng, v, |r| r.next_u32().max(1)),
        HostBuf::F32(v) => fill_par(rng, v, |r| r.range_f32(lo, hi)),
        HostBuf::F16(v) => fill_par(rng, v, |r| f16::from_f32(r.range_f32(lo, hi))),
    }
    buf
}

/// [`HostBuf::poisoned`] written into `spare` where it fits, as [`random_buf_in`].
fn poisoned_in(dtype: DType, len: usize, spare: Option<HostBuf>) -> HostBuf {
    match spare {
        Some(mut b) if b.dtype() == dtype && b.len() == len => {
            b.poison();
            b
        }
        _ => HostBuf::poisoned(dtype, len),
    }
}

#[cfg(test)]
fn random_buf(rng: &mut SplitMix64, dtype: DType, len: usize, range: (f32, f32)) -> HostBuf {
    random_buf_in(rng, dtype, len, range, None)
}

/// Build repeat inputs for `op` from `seed`. `fixed_value` keeps a fill's
/// pattern; otherwise a fill gets a fresh random value. A memtest's random
/// pattern gets a fresh seed every repeat (recorded as the repeat's seed).
pub fn prepare(op: &Op, fixed_value: bool, seed: u64) -> Prepared {
    prepare_in(op, fixed_value, seed, Vec::new(), Vec::new())
}

/// [`prepare`], writing into an earlier repeat's buffers (`inputs`, then
/// `outputs` as the backend gave them back) where each fits: the same
/// values, without allocating and faulting in every buffer again (on a
/// 256 MiB copy gate the page faults cost more host time than the fills).
pub fn prepare_in(
    op: &Op,
    fixed_value: bool,
    seed: u64,
    inputs: Vec<HostBuf>,
    outputs: Vec<HostBuf>,
) -> Prepared {
    let mut rng = SplitMix64::new(seed);
    let op = match *op {
        Op::Fill { n, value } if !fixed_value => Op::Fill {
            n,
            value: {
                let _ = value;
                fill_value(&mut rng)
            },
        },
        Op::Memtest {
            words,
            patterns,
            flip_word,
            flip_mask,
            ..
        } => Op::Memtest {
            words,
            patterns,
            seed: rng.next_u64() as u32,
            flip_word,
            flip_mask,
        },
        ref other => other.clone(),
    };
    let mut spare_in = inputs.into_iter();
    let inputs = op
        .inputs()
        .iter()
        .map(|s| {
            random_buf_in(
                &mut rng,
                s.dtype,
                s.len,
                range(&op, s.name),
                spare_in.next(),
            )
        })
        .collect();
    let mut spare_out = outputs.into_iter();
    let outputs = op
        .outputs()
        .iter()
        .map(|s| match s.access {
            Access::ReadWrite => prior_content(&op, &mut rng, s.dtype, s.len, spare_out.next()),
            Access::Write | Access::Read => poisoned_in(s.dtype, s.len, spare_out.next()),
        })
        .collect();
    Prepared {
        op,
        inputs,
        outputs,
    }
}

/// A read-write buffer's prior content: random everywhere (what the op
/// does not write must survive), poisoned over the region it writes (its
/// `written` fact: that must be written).
fn prior_content(
    op: &Op,
    rng: &mut SplitMix64,
    dtype: DType,
    len: usize,
    spare: Option<HostBuf>,
) -> HostBuf {
    let mut buf = random_buf_in(rng, dtype, len, (-1.0, 1.0), spare);
    let ranges = match op.written() {
        Region::Whole => std::iter::once(0..len).collect(),
        Region::Ranges(r) => r,
    };
    let poison = HostBuf::poisoned(dtype, 1);
    for r in ranges {
        // The catalogue test holds every region inside its buffers; a
        // range past the end is cut, never a panic.
        let r = r.start.min(len)..r.end.min(len);
        match (&mut buf, &poison) {
            (HostBuf::F32(v), HostBuf::F32(p)) => v[r].fill(p[0]),
            (HostBuf::U32(v), HostBuf::U32(p)) => v[r].fill(p[0]),
            (HostBuf::F16(v), HostBuf::F16(p)) => v[r].fill(p[0]),
            _ => unreachable!("poison has the buffer's type"),
        }
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeat prepared into the last repeat's buffers holds exactly what
    /// a fresh one would (every op, small and threaded lengths, buffers of
    /// another seed or of the wrong size given), and a buffer that fits is
    /// the same allocation, not a new one.
    #[test]
    fn preparing_into_spare_buffers_gives_the_fresh_values_in_the_same_memory() {
        let mut ops = Op::catalogue();
        ops.push(Op::Copy { n: 3 * PIECE + 3 });
        ops.push(Op::Fill { n: 77, value: 5 });
        for op in ops {
            for fixed in [false, true] {
                let fresh = prepare(&op, fixed, 42);
                let mut old = prepare(&op, fixed, 7);
                let old_out = old.take_outputs();
                let ptrs: Vec<*const u8> = old
                    .inputs
                    .iter()
                    .chain(&old_out)
                    .map(|b| b.as_bytes().as_ptr())
                    .collect();
                let mut again = prepare_in(&op, fixed, 42, old.inputs, old_out);
                let again_out = again.take_outputs();
                // Bytes, not values: the f32 and f16 poisons are NaNs.
                let bytes = |v: &[HostBuf]| -> Vec<Vec<u8>> {
                    v.iter().map(|b| b.as_bytes().to_vec()).collect()
                };
                assert_eq!(again.op, fresh.op, "{op}");
                assert_eq!(bytes(&again.inputs), bytes(&fresh.inputs), "{op}");
                let mut fresh2 = fresh.clone();
                assert_eq!(bytes(&again_out), bytes(&fresh2.take_outputs()), "{op}");
                let now: Vec<*const u8> = again
                    .inputs
                    .iter()
                    .chain(&again_out)
                    .map(|b| b.as_bytes().as_ptr())
                    .collect();
                // (Read-write outputs are handed out as copies: the
                // reference keeps their prior content.)
                let rw = op.outputs().iter().any(|s| s.access == Access::ReadWrite);
                let n = if rw { op.inputs().len() } else { now.len() };
                assert_eq!(now[..n], ptrs[..n], "{op}: the same buffers");
                // Spare buffers that do not fit are left for new ones.
                let wrong = vec![HostBuf::U32(vec![1; 3]), HostBuf::F16(vec![f16::ONE; 2])];
                let p = prepare_in(&op, fixed, 42, wrong.clone(), wrong);
                assert_eq!(bytes(&p.inputs), bytes(&fresh.inputs), "{op}");
                assert_eq!(bytes(&p.outputs), bytes(&fresh.outputs), "{op}");
            }
        }
    }

    /// `f` run on a pool of `threads` threads (rayon's work in it too).
    fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(f)
    }

    /// A buffer filled in pieces on 1, 2, 3 or 8 threads holds exactly the
    /// serial stream, element by element (so a recorded seed gives the
    /// inputs it always gave), and the generator goes on where the serial
    /// loop would.
    #[test]
    fn threaded_fill_draws_exactly_the_serial_stream_for_any_thread_count() {
        let len = 3 * PIECE + 12_345;
        for dtype in [DType::U32, DType::F32, DType::F16] {
            // The serial definition, element by element.
            let mut b = SplitMix64::new(99);
            let ser = match dtype {
                DType::U32 => HostBuf::U32((0..len).map(|_| b.next_u32().max(1)).collect()),
                DType::F32 => HostBuf::F32((0..len).map(|_| b.range_f32(-1.0, 1.0)).collect()),
                DType::F16 => HostBuf::F16(
                    (0..len)
                        .map(|_| f16::from_f32(b.range_f32(-1.0, 1.0)))
                        .collect(),
                ),
            };
            let next = b.next_u64();
            for threads in [1, 2, 3, 8] {
                let (par, after) = on_threads(threads, || {
                    let mut a = SplitMix64::new(99);
                    let buf = random_buf(&mut a, dtype, len, (-1.0, 1.0));
                    (buf, a.next_u64())
                });
                assert!(
                    par.as_bytes() == ser.as_bytes(),
                    "{dtype:?}, {threads} threads"
                );
                assert_eq!(after, next, "{dtype:?}, {threads} threads");
            }
        }
    }

    /// Whole repeats of gates with several buffers over many pieces (the
    /// copy, the KV cache's random prior with its poisoned rows, the f16
    /// GEMM) are the same bytes on 1, 2, 3 and 8 threads.
    #[test]
    fn prepared_repeats_are_the_same_for_any_thread_count() {
        let ops = [
            Op::Copy { n: 5 * PIECE + 7 },
            Op::KvUpdate {
                layers: 3,
                max_seq: 700,
                heads: 4,
                head_dim: 32,
                pos: 300,
                n_new: 9,
            },
            Op::GemmF16 {
                m: 300,
                n: 400,
                k: 500,
            },
        ];
        let bytes = |p: &Prepared| -> Vec<Vec<u8>> {
            p.inputs
                .iter()
                .chain(&p.outputs)
                .map(|b| b.as_bytes().to_vec())
                .collect()
        };
        for op in ops {
            let one = on_threads(1, || bytes(&prepare(&op, false, 1234)));
            for threads in [2, 3, 8] {
                let many = on_threads(threads, || bytes(&prepare(&op, false, 1234)));
                assert!(one == many, "{op}: {threads} threads");
            }
        }
    }

    #[test]
    fn generator_is_splitmix64_and_ranges_hold() {
        // Reference values of SplitMix64 seeded with 0 (Vigna's splitmix64.c).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut r = SplitMix64::new(9);
        for _ in 0..10_000 {
            let x = r.range_f32(-2.0, 2.0);
            assert!((-2.0..=2.0).contains(&x));
            assert!(r.below(7) < 7);
        }
    }

    #[test]
    fn seeds_are_reproducible_and_distinct() {
        let op = Op::VecAdd { n: 1000 };
        let a = prepare(&op, false, 7);
        let b = prepare(&op, false, 7);
        let c = prepare(&op, false, 8);
        assert_eq!(a.inputs, b.inputs);
        assert_ne!(a.inputs, c.inputs);
        assert_ne!(a.inputs[0], a.inputs[1]);
        assert_ne!(gate_seed(1, "copy.16m"), gate_seed(1, "copy.256m"));
        assert_ne!(gate_seed(1, "copy.16m"), gate_seed(2, "copy.16m"));
        assert_eq!(gate_seed(1, "copy.16m"), gate_seed(1, "copy.16m"));
    }

    #[test]
    fn inputs_are_never_all_zero_and_outputs_are_poisoned() {
        for op in [
            Op::Copy { n: 64 },
            Op::VecAdd { n: 64 },
            Op::GemmF16 { m: 4, n: 4, k: 4 },
            Op::LayerNorm {
                rows: 2,
                cols: 8,
                eps: 1e-5,
            },
        ] {
            let p = prepare(&op, false, 1);
            for b in &p.inputs {
                assert!(b.to_f64().iter().any(|&x| x != 0.0), "{op}");
                assert!(b.to_f64().iter().all(|x| x.is_finite()));
            }
            for b in &p.outputs {
                // Bitwise: the poison is a NaN, which never equals itself.
                assert_eq!(
                    b.as_bytes(),
                    HostBuf::poisoned(b.dtype(), b.len()).as_bytes()
                );
            }
        }
    }

    #[test]
    fn outputs_are_kept_only_when_the_reference_needs_them() {
        let mut p = prepare(&Op::Copy { n: 8 }, false, 1);
        assert_eq!(p.take_outputs().len(), 1);
        assert!(p.outputs.is_empty());
        let kv = Op::KvUpdate {
            layers: 1,
            max_seq: 4,
            heads: 1,
            head_dim: 2,
            pos: 1,
            n_new: 1,
        };
        let mut p = prepare(&kv, false, 1);
        assert_eq!(p.take_outputs().len(), 2);
        assert_eq!(p.outputs.len(), 2);
    }

    #[test]
    fn fill_gets_a_fresh_value_unless_fixed() {
        let op = Op::Fill {
            n: 8,
            value: 0x5555_5555,
        };
        let a = prepare(&op, false, 1).op;
        let b = prepare(&op, false, 2).op;
        assert_ne!(a, b);
        assert_ne!(a, op);
        assert_eq!(prepare(&op, true, 1).op, op);
    }

    #[test]
    fn kv_cache_prior_is_random_with_the_written_rows_poisoned() {
        let op = Op::KvUpdate {
            layers: 2,
            max_seq: 8,
            heads: 2,
            head_dim: 4,
            pos: 3,
            n_new: 2,
        };
        let p = prepare(&op, false, 3);
        let k = p.outputs[0].as_f32().unwrap();
        let row = 8;
        for l in 0..2 {
            for s in 0..8 {
                let r = &k[(l * 8 + s) * row..(l * 8 + s + 1) * row];
                if (3..5).contains(&s) {
                    assert!(r.iter().all(|x| x.is_nan()), "layer {l} pos {s}");
                } else {
                    assert!(r.iter().all(|x| x.is_finite()), "layer {l} pos {s}");
                }
            }
        }
        // The reference overwrites exactly the poisoned rows.
        let want = greta_kernels::reference(&p.op, &p.inputs, &p.outputs).unwrap();
        assert!(want.iter().flatten().all(|x| x.is_finite()));
    }
}
