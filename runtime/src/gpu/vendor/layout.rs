//! greta's row-major GEMM as a column-major BLAS call.
//!
//! The gates store A (m x k), B (k x n) and C (m x n) row-major. A
//! row-major `r x c` matrix is, byte for byte, its transpose stored
//! column-major with leading dimension `c`. So `C = A B` row-major is
//! `C^T = B^T A^T` column-major: the BLAS call gets B's buffer as its
//! first operand and A's as its second, both untransposed, with m and n
//! swapped. No data moves and no transpose flag is set.

/// Which of the gate's buffers a BLAS operand is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    A,
    B,
}

/// The arguments of a column-major `gemm(N, N, m, n, k, first, lda,
/// second, ldb, C, ldc)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColMajorGemm {
    pub m: i32,
    pub n: i32,
    pub k: i32,
    pub first: Buffer,
    pub lda: i32,
    pub second: Buffer,
    pub ldb: i32,
    pub ldc: i32,
}

/// The column-major call computing the row-major `C (m x n) = A (m x k)
/// B (k x n)`. `Err` when a dimension does not fit the BLAS's 32-bit ints.
pub fn row_major(m: usize, n: usize, k: usize) -> Result<ColMajorGemm, String> {
    let int = |name: &str, v: usize| {
        i32::try_from(v)
            .ok()
            .filter(|&x| x > 0)
            .ok_or_else(|| format!("{name}={v} is not a BLAS dimension (1..=2^31-1)"))
    };
    let (m, n, k) = (int("m", m)?, int("n", n)?, int("k", k)?);
    Ok(ColMajorGemm {
        m: n,
        n: m,
        k,
        first: Buffer::B,
        lda: n,
        second: Buffer::A,
        ldb: k,
        ldc: n,
    })
}

/// The BLAS definition of `C = op1 op2` for untransposed column-major
/// operands, on host slices: what the vendor library computes from
/// `call`'s arguments (the tests hold it to the row-major reference).
#[cfg(test)]
pub fn col_major_reference(call: &ColMajorGemm, first: &[f64], second: &[f64]) -> Vec<f64> {
    let (m, n, k) = (call.m as usize, call.n as usize, call.k as usize);
    let (lda, ldb, ldc) = (call.lda as usize, call.ldb as usize, call.ldc as usize);
    let mut c = vec![0.0; ldc * n];
    for j in 0..n {
        for i in 0..m {
            c[i + j * ldc] = (0..k)
                .map(|p| first[i + p * lda] * second[p + j * ldb])
                .sum();
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use greta_kernels::{HostBuf, Op};
    use rand::{Rng, SeedableRng};

    #[test]
    fn the_col_major_call_computes_the_row_major_gate() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(22);
        for (m, n, k) in [(3, 5, 7), (33, 17, 9), (1, 64, 2), (16, 1, 31), (8, 8, 8)] {
            let a: Vec<f32> = (0..m * k).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let b: Vec<f32> = (0..k * n).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let op = Op::GemmF32 { m, n, k };
            let want = greta_kernels::reference(
                &op,
                &[HostBuf::F32(a.clone()), HostBuf::F32(b.clone())],
                &[],
            )
            .unwrap();
            let call = row_major(m, n, k).unwrap();
            let buf = |which: Buffer| -> Vec<f64> {
                match which {
                    Buffer::A => a.iter().map(|&x| x as f64).collect(),
                    Buffer::B => b.iter().map(|&x| x as f64).collect(),
                }
            };
            let got = col_major_reference(&call, &buf(call.first), &buf(call.second));
            assert_eq!(got.len(), want[0].len(), "{m}x{n}x{k}");
            for (g, w) in got.iter().zip(&want[0]) {
                assert!((g - w).abs() < 1e-9, "{m}x{n}x{k}: {g} vs {w}");
            }
            // Operands in the gate's order (A first) compute B A, not A B:
            // the comparison above would catch that mapping.
            if m == n && m == k && m > 1 {
                let wrong = ColMajorGemm {
                    first: Buffer::A,
                    second: Buffer::B,
                    ..call
                };
                let bad = col_major_reference(&wrong, &buf(wrong.first), &buf(wrong.second));
                assert!(bad.iter().zip(&want[0]).any(|(g, w)| (g - w).abs() > 1e-6));
            }
        }
        assert!(row_major(0, 1, 1).unwrap_err().contains("m=0"));
        assert!(row_major(1, 1usize << 31, 1).unwrap_err().contains("n="));
    }
}
