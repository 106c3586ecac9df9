//! `swiglu_f16`: the SwiGLU activation of a Llama MLP. Each row of `gu`
//! holds `cols` gate values then `cols` up values (the fused gate_up
//! projection's output); `a[r][c] = silu(gate) * up` with
//! `silu(z) = z / (1 + exp(-z))`, in f32, a rounded once to f16.
use super::*;

/// As [`super::gemv_f16`]: one f16 rounding of an f32 result (the f32 exp
/// of a GPU errs by a few f32 ulps, far below it).
pub const TOLERANCE: Tolerance = super::gemv_f16::F16_OUT;
/// Wide enough that silu's negative tail and its linear part both show.
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[("gu", (-6.0, 6.0))];
/// f16; memory-bound, element-wise.
pub const FACTS: Facts = Facts { precision: Precision::Fp16, rate: RateUnit::GBps, needs: Needs::NOTHING };

pub fn inputs(rows: usize, cols: usize) -> Vec<BufferSpec> {
    vec![spec("gu", DType::F16, rows * 2 * cols, Access::Read)]
}
pub fn outputs(rows: usize, cols: usize) -> Vec<BufferSpec> {
    vec![spec("a", DType::F16, rows * cols, Access::Write)]
}
pub fn flops(rows: usize, cols: usize) -> u64 {
    4 * rows as u64 * cols as u64
}
pub use super::rowwise::check;
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize) -> Vec<Vec<f64>> {
    let a = super::rowwise::map_rows(&x[0], rows, 2 * cols, cols, |row, a| {
        let (gate, up) = row.split_at(cols);
        for ((a, g), u) in a.iter_mut().zip(gate).zip(up) {
            *a = g / (1.0 + (-g).exp()) * u;
        }
    });
    vec![a]
}
pub fn shape_class(rows: usize, cols: usize) -> String {
    super::gemv_f16::rows_class8(rows, cols)
}
pub fn example() -> Op {
    Op::SwigluF16 { rows: 3, cols: 75 }
}
