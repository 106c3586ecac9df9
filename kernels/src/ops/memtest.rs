//! `memtest`: a memory test of one slice of device memory (its scratch,
//! `words` u32), with patterns that find what a bandwidth test cannot:
//! stuck bits in either polarity, bits that couple to a neighbour, address
//! lines that alias (a word that reads another's value).
//!
//! Each selected pattern runs three passes, each a dispatch (launch) of its
//! own behind a barrier, so every read comes from memory written by an
//! earlier pass, not from a thread's registers:
//! 1. write `v(i)` to every word;
//! 2. read every word, check it is `v(i)`, write `!v(i)` (moving inversions:
//!    every bit is tested holding 1 and holding 0);
//! 3. read every word, check it is `!v(i)`.
//!
//! A pass before them clears the error record (the `errors` output). A
//! mismatch adds 1 to its count, ORs `expected ^ actual` into its bit mask
//! and, while slots remain, records where: the word, what was expected,
//! what was read, and the pattern and pass. One flipped word gives one
//! error per check, and the passes run in order, so the slots fill
//! deterministically (the reference predicts them).
//!
//! `flip_mask` (with `flip_word`) is error injection: both writes of that
//! word store their value XOR the mask, as a stuck or flipping cell would;
//! 0 injects nothing (every gate of the catalogue). It is how tests prove
//! that each pattern's checks catch a wrong bit and report it right.
use super::*;

pub const TOLERANCE: Tolerance = EXACT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Memory-bound: measured in the bytes its passes write and read.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::GBps, needs: Needs::NOTHING };

/// The patterns, by bit of the op's `patterns` mask.
pub const PATTERNS: [&str; 4] = ["walking_ones", "own_address", "checkerboard", "random"];
/// Words of the record before its slots: count, OR of wrong bits, 2 zeros.
pub const HEAD: usize = 4;
/// Words per slot: word index, expected, actual, `pattern * 4 + check`.
pub const SLOT: usize = 4;
/// Slots: with one flipped word, exactly the two checks of every pattern.
pub const SLOTS: usize = 2 * PATTERNS.len();
/// Length of the `errors` output.
pub const RECORD: usize = HEAD + SLOTS * SLOT;

/// The value pattern `p` writes to word `i` on its first write (the same
/// arithmetic as `memtest.comp` and `memtest.hip`, in u32).
pub fn value(p: u32, i: u32, seed: u32) -> u32 {
    match p {
        0 => 1u32 << (i & 31),
        1 => i,
        2 => {
            if i & 1 == 0 {
                0x5555_5555
            } else {
                0xaaaa_aaaa
            }
        }
        // lowbias32 (Chris Wellons' integer hash) of the index mixed with
        // the seed: a different random word everywhere, reproducible.
        _ => {
            let mut x = i ^ seed.wrapping_mul(0x9e37_79b9);
            x ^= x >> 16;
            x = x.wrapping_mul(0x7feb_352d);
            x ^= x >> 15;
            x = x.wrapping_mul(0x846c_a68b);
            x ^ (x >> 16)
        }
    }
}

pub fn inputs(_words: usize, _patterns: u32, _seed: u32, _flip_word: u32, _flip_mask: u32) -> Vec<BufferSpec> {
    vec![]
}
pub fn outputs(_words: usize, _patterns: u32, _seed: u32, _flip_word: u32, _flip_mask: u32) -> Vec<BufferSpec> {
    vec![spec("errors", DType::U32, RECORD, Access::Write)]
}
/// The slice under test: device memory only, never uploaded nor read back.
pub fn scratch(words: usize, _patterns: u32, _seed: u32, _flip_word: u32, _flip_mask: u32) -> Vec<BufferSpec> {
    vec![spec("mem", DType::U32, words, Access::ReadWrite)]
}
/// Per pattern: two writes and two reads of the slice.
pub fn bytes_moved(words: usize, patterns: u32, _seed: u32, _flip_word: u32, _flip_mask: u32) -> u64 {
    4 * 4 * words as u64 * u64::from(patterns.count_ones())
}
pub fn flops(_words: usize, _patterns: u32, _seed: u32, _flip_word: u32, _flip_mask: u32) -> u64 {
    0
}
pub fn check(words: usize, patterns: u32, _seed: u32, flip_word: u32, flip_mask: u32) -> Result<(), String> {
    nonzero("words", words)?;
    if u32::try_from(words).is_err() {
        return Err(format!("words {words}: the kernels index a slice with 32 bits"));
    }
    if patterns == 0 || patterns >> PATTERNS.len() != 0 {
        return Err(format!(
            "patterns {patterns:#x}: a non-empty mask of bits 0..{} ({})",
            PATTERNS.len(),
            PATTERNS.join(", ")
        ));
    }
    if flip_mask != 0 && flip_word as usize >= words {
        return Err(format!("flip_word {flip_word} is outside the slice of {words} words"));
    }
    Ok(())
}
/// What a sound memory leaves in the record: nothing; with a flip
/// injected, the two checks of every selected pattern report that word.
pub fn reference(_x: &[Vec<f64>], _prior: &[HostBuf], _words: usize, patterns: u32, seed: u32, flip_word: u32, flip_mask: u32) -> Vec<Vec<f64>> {
    let mut r = vec![0u32; RECORD];
    if flip_mask != 0 {
        let mut n = 0;
        for p in (0..PATTERNS.len() as u32).filter(|p| patterns >> p & 1 == 1) {
            let v = value(p, flip_word, seed);
            for (check, want) in [(1, v), (2, !v)] {
                let at = HEAD + n * SLOT;
                r[at..at + SLOT].copy_from_slice(&[flip_word, want, want ^ flip_mask, p * 4 + check]);
                n += 1;
            }
        }
        r[0] = n as u32;
        r[1] = flip_mask;
    }
    vec![r.into_iter().map(f64::from).collect()]
}
/// The size bucketed; patterns, seed and injection do not change the work.
pub fn shape_class(words: usize, _patterns: u32, _seed: u32, _flip_word: u32, _flip_mask: u32) -> String {
    format!("n{}", bucket(words))
}
pub fn example() -> Op {
    Op::Memtest {
        words: 1000,
        patterns: 0xf,
        seed: 7,
        flip_word: 0,
        flip_mask: 0,
    }
}

/// One error a memtest recorded, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemError {
    /// Word index in the slice (its byte offset is 4x).
    pub word: u32,
    pub expected: u32,
    pub actual: u32,
    pub pattern: &'static str,
    /// 1: the check after the first write; 2: after the inverted write.
    pub check: u32,
}

/// A memtest's `errors` output, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemReport {
    /// Words that read wrong, over every check.
    pub count: u32,
    /// Every bit that read wrong in any of them.
    pub bits: u32,
    /// The first of them (at most [`SLOTS`]).
    pub errors: Vec<MemError>,
}

impl MemReport {
    /// Decodes a record; `None` when it is not one (wrong length, or a
    /// slot that names no pattern: the kernel did not write it).
    pub fn decode(record: &[u32]) -> Option<MemReport> {
        if record.len() != RECORD {
            return None;
        }
        let count = record[0];
        let errors = record[HEAD..]
            .chunks_exact(SLOT)
            .take((count as usize).min(SLOTS))
            .map(|s| {
                let (p, check) = (s[3] / 4, s[3] % 4);
                Some(MemError {
                    word: s[0],
                    expected: s[1],
                    actual: s[2],
                    pattern: PATTERNS.get(p as usize).copied()?,
                    check: Some(check).filter(|c| (1..=2).contains(c))?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(MemReport {
            count,
            bits: record[1],
            errors,
        })
    }
}

impl std::fmt::Display for MemError {
    /// `word 0x40 (byte 0x100): bit 3 wrong, expected 0x00000008 read 0x00000000 (walking_ones, check after write)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let wrong = self.expected ^ self.actual;
        let bits: Vec<String> = (0..32).filter(|b| wrong >> b & 1 == 1).map(|b| b.to_string()).collect();
        write!(
            f,
            "word {:#x} (byte {:#x} of the slice): bit{} {} wrong, expected {:#010x} read {:#010x} ({}, check after {})",
            self.word,
            u64::from(self.word) * 4,
            if bits.len() == 1 { "" } else { "s" },
            bits.join(","),
            self.expected,
            self.actual,
            self.pattern,
            if self.check == 1 { "write" } else { "inverted write" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record of a sound slice is all zeros; with a flipped word it is
    /// one error per check of every selected pattern, in pattern order,
    /// and it decodes to the word, the bit and the pattern.
    #[test]
    fn the_reference_predicts_an_injected_flip_and_decodes() {
        let op = |patterns, flip_mask| Op::Memtest {
            words: 100,
            patterns,
            seed: 9,
            flip_word: 37,
            flip_mask,
        };
        let record = |op: &Op| -> Vec<u32> {
            op.reference_of(&[], &[])[0].iter().map(|&v| v as u32).collect()
        };
        let clean = record(&op(0xf, 0));
        assert!(clean.iter().all(|&v| v == 0));
        let r = MemReport::decode(&clean).unwrap();
        assert_eq!((r.count, r.bits, r.errors.len()), (0, 0, 0));

        let r = MemReport::decode(&record(&op(0xf, 1 << 5))).unwrap();
        assert_eq!((r.count, r.bits), (8, 1 << 5));
        let seen: Vec<(&str, u32)> = r.errors.iter().map(|e| (e.pattern, e.check)).collect();
        assert_eq!(
            seen,
            [
                ("walking_ones", 1),
                ("walking_ones", 2),
                ("own_address", 1),
                ("own_address", 2),
                ("checkerboard", 1),
                ("checkerboard", 2),
                ("random", 1),
                ("random", 2)
            ]
        );
        for e in &r.errors {
            assert_eq!((e.word, e.expected ^ e.actual), (37, 1 << 5));
        }
        // own_address writes the index: word 37 expects 37.
        assert_eq!((r.errors[2].expected, r.errors[3].expected), (37, !37));
        let shown = r.errors[0].to_string();
        assert!(
            shown.starts_with("word 0x25 (byte 0x94 of the slice): bit 5 wrong, expected 0x00000020 read 0x00000000 (walking_ones, check after write)"),
            "{shown}"
        );

        // One pattern selected: its two checks only.
        let r = MemReport::decode(&record(&op(1 << 3, 0x8000_0001))).unwrap();
        assert_eq!(r.count, 2);
        assert!(r.errors.iter().all(|e| e.pattern == "random"));
        assert!(r.errors[0].to_string().contains("bits 0,31 wrong"));
        // Not a record: wrong length, or a slot no kernel writes.
        assert!(MemReport::decode(&[0; 3]).is_none());
        let mut bad = record(&op(1, 1));
        bad[HEAD + 3] = 4 * 9 + 1;
        assert!(MemReport::decode(&bad).is_none());
    }

    /// The passes of every pattern, run over a model memory with each
    /// fault a bad DRAM cell or address line makes, find it: a bit stuck
    /// at 0 or at 1 (every bit position: moving inversions test each bit
    /// holding both values) and, for the patterns that write a different
    /// value to each word, an address line that aliases two words.
    #[test]
    fn every_pattern_catches_stuck_bits_and_aliasing_catches_where_words_differ() {
        #[derive(Clone, Copy)]
        enum Fault {
            Stuck { word: usize, bit: u32, at: bool },
            /// Every access to word `a` goes to word `b`.
            Alias { a: usize, b: usize },
        }
        // The kernels' three passes over a memory with `fault`, each pass
        // visiting the words in `order` (a GPU visits them in any order);
        // the number of words that read wrong.
        fn run_in(pattern: u32, fault: Option<Fault>, words: usize, rev: bool) -> usize {
            let order: Vec<usize> = if rev {
                (0..words).rev().collect()
            } else {
                (0..words).collect()
            };
            let mut mem = vec![0u32; words];
            let at = |i: usize| match fault {
                Some(Fault::Alias { a, b }) if i == a => b,
                _ => i,
            };
            let store = |mem: &mut Vec<u32>, i: usize, v: u32| {
                let v = match fault {
                    Some(Fault::Stuck { word, bit, at }) if word == i => {
                        if at {
                            v | 1 << bit
                        } else {
                            v & !(1 << bit)
                        }
                    }
                    _ => v,
                };
                mem[at(i)] = v;
            };
            let v = |i: usize| value(pattern, i as u32, 0x1234);
            let mut wrong = 0;
            for &i in &order {
                store(&mut mem, i, v(i));
            }
            for &i in &order {
                wrong += usize::from(mem[at(i)] != v(i));
                store(&mut mem, i, !v(i));
            }
            for &i in &order {
                wrong += usize::from(mem[at(i)] != !v(i));
            }
            wrong
        }
        let run = |p, f, words| run_in(p, Some(f), words, false).min(run_in(p, Some(f), words, true));
        for p in 0..PATTERNS.len() as u32 {
            let name = PATTERNS[p as usize];
            for bit in 0..32 {
                for at in [false, true] {
                    let f = Fault::Stuck { word: 70, bit, at };
                    assert!(run(p, f, 256) > 0, "{name} misses bit {bit} stuck at {}", at as u8);
                }
            }
        }
        // Word 3 aliased onto word 3 + 64 (address bit 6 stuck at 1): the
        // patterns that write the two words different values see it in
        // whatever order the words are visited.
        let alias = Fault::Alias { a: 3, b: 67 };
        for name in ["own_address", "random"] {
            let p = PATTERNS.iter().position(|n| *n == name).unwrap() as u32;
            assert!(run(p, alias, 256) > 0, "{name} misses an aliased address");
        }
        // A sound memory reads right under every pattern in either order.
        for p in 0..PATTERNS.len() as u32 {
            assert_eq!(run_in(p, None, 256, false) + run_in(p, None, 256, true), 0);
        }
    }
}
