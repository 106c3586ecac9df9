//! Host-side copies of whole buffers, on every core.
//!
//! One thread moves a few GB/s between ordinary memory and the memory a
//! device reads from or writes to (a Vulkan staging buffer, a pinned
//! bounce buffer): a GiB input, its poisoned output and the output read
//! back are three such copies a repeat, most of a full-size gate's wall.

use rayon::prelude::*;

/// Pieces handed to one thread at a time: big enough that a piece's copy
/// dwarfs the handing out, small enough to spread a 64 MiB piece.
const PIECE: usize = 1 << 20;

/// Copies `src` into `dst`, which must be as long.
pub fn copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "bulk::copy of unequal lengths");
    if src.len() <= PIECE {
        dst.copy_from_slice(src);
        return;
    }
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn copies_every_byte_at_every_size_around_the_piece() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(rand::random());
        for len in [0, 1, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 17] {
            let src: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let mut dst = vec![0u8; len];
            copy(&mut dst, &src);
            assert!(dst == src, "length {len}");
        }
    }
}
