//! `block_prefill`: one Llama decoder layer on `tokens` new tokens from an
//! empty cache (causal), run as a graph of the f16 ops (a composite op:
//! `crate::block::composite`). Compute-bound: its rate is TFLOP/s of its steps' work (the
//! projections on the matrix units dominate).
use super::*;
use crate::block::composite as c;

/// The layer's bound and input ranges (`crate::block::composite`).
pub const TOLERANCE: Tolerance = c::TOLERANCE;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = c::INPUT_RANGES;
/// f16; compute-bound, on the matrix units; its norms reduce across subgroups.
pub const FACTS: Facts = Facts {
    precision: Precision::Fp16,
    rate: RateUnit::TFlops,
    needs: Needs { subgroup_arith: true, matrix_units: true },
};

pub fn inputs(hidden: usize, heads: usize, head_dim: usize, ffn: usize, tokens: usize) -> Vec<BufferSpec> {
    c::inputs(&c::shape(hidden, heads, head_dim, ffn), tokens, 0)
}
pub fn outputs(hidden: usize, heads: usize, head_dim: usize, ffn: usize, tokens: usize) -> Vec<BufferSpec> {
    c::outputs(&c::shape(hidden, heads, head_dim, ffn), tokens)
}
/// The sum of its steps' work.
pub fn flops(hidden: usize, heads: usize, head_dim: usize, ffn: usize, tokens: usize) -> u64 {
    c::flops(&c::shape(hidden, heads, head_dim, ffn), tokens, 0)
}
pub fn check(hidden: usize, heads: usize, head_dim: usize, ffn: usize, tokens: usize) -> Result<(), String> {
    c::shape(hidden, heads, head_dim, ffn).check()?;
    nonzero("tokens", tokens)
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], hidden: usize, heads: usize, head_dim: usize, ffn: usize, _tokens: usize) -> Vec<Vec<f64>> {
    c::reference(&c::shape(hidden, heads, head_dim, ffn), x)
}
pub fn shape_class(hidden: usize, heads: usize, head_dim: usize, ffn: usize, tokens: usize) -> String {
    format!("d{hidden},f{ffn},h{heads}x{head_dim},tokens{}", bucket(tokens))
}
/// The graph a device runs for it.
pub fn composite(fusion: crate::block::graph::Fusion, hidden: usize, heads: usize, head_dim: usize, ffn: usize, tokens: usize) -> Result<crate::graph::Composite, String> {
    c::composite(&c::shape(hidden, heads, head_dim, ffn), tokens, 0, fusion)
}
/// What its outputs must match (see `Op::expected`).
// The op's fields one by one, as for every op (ops! macro).
#[allow(clippy::too_many_arguments)]
pub fn expected(x: &[Vec<f64>], got: &[HostBuf], seed: u64, hidden: usize, heads: usize, head_dim: usize, ffn: usize, tokens: usize) -> Result<Vec<crate::block::Expected>, String> {
    c::expected_for(&c::shape(hidden, heads, head_dim, ffn), x, got, tokens, seed)
}
pub fn example() -> Op {
    Op::BlockPrefill { hidden: 64, heads: 2, head_dim: 32, ffn: 96, tokens: 7 }
}
