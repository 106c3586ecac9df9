//! `block_decode`: one Llama decoder layer on one new token after `len`
//! cached positions, run as a graph of the f16 ops (a composite op:
//! `crate::block::composite`). Memory-bound: its rate is GB/s of the bytes
//! it must read (weights, cached K/V) and write, the decode roofline.
use super::*;
use crate::block::composite as c;

/// The layer's bound and input ranges (`crate::block::composite`).
pub const TOLERANCE: Tolerance = c::TOLERANCE;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = c::INPUT_RANGES;
/// f16; memory-bound; its norms and GEMVs reduce across subgroups on Vulkan.
pub const FACTS: Facts = Facts {
    precision: Precision::Fp16,
    rate: RateUnit::GBps,
    needs: Needs { subgroup_arith: true, matrix_units: false },
};

pub fn inputs(hidden: usize, heads: usize, head_dim: usize, ffn: usize, len: usize) -> Vec<BufferSpec> {
    c::inputs(&c::shape(hidden, heads, head_dim, ffn), 1, len)
}
pub fn outputs(hidden: usize, heads: usize, head_dim: usize, ffn: usize, _len: usize) -> Vec<BufferSpec> {
    c::outputs(&c::shape(hidden, heads, head_dim, ffn), 1)
}
/// The sum of its steps' work.
pub fn flops(hidden: usize, heads: usize, head_dim: usize, ffn: usize, len: usize) -> u64 {
    c::flops(&c::shape(hidden, heads, head_dim, ffn), 1, len)
}
pub fn check(hidden: usize, heads: usize, head_dim: usize, ffn: usize, len: usize) -> Result<(), String> {
    c::shape(hidden, heads, head_dim, ffn).check()?;
    nonzero("len", len)
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], hidden: usize, heads: usize, head_dim: usize, ffn: usize, _len: usize) -> Vec<Vec<f64>> {
    c::reference(&c::shape(hidden, heads, head_dim, ffn), x)
}
pub fn shape_class(hidden: usize, heads: usize, head_dim: usize, ffn: usize, len: usize) -> String {
    format!("d{hidden},f{ffn},h{heads}x{head_dim},len{}", bucket(len))
}
/// The graph a device runs for it.
pub fn composite(fusion: crate::block::graph::Fusion, hidden: usize, heads: usize, head_dim: usize, ffn: usize, len: usize) -> Result<crate::graph::Composite, String> {
    c::composite(&c::shape(hidden, heads, head_dim, ffn), 1, len, fusion)
}
/// What its outputs must match (see `Op::expected`).
// The op's fields one by one, as for every op (ops! macro).
#[allow(clippy::too_many_arguments)]
pub fn expected(x: &[Vec<f64>], _got: &[HostBuf], _seed: u64, hidden: usize, heads: usize, head_dim: usize, ffn: usize, _len: usize) -> Result<Vec<crate::block::Expected>, String> {
    c::expected(&c::shape(hidden, heads, head_dim, ffn), x).map(Vec::from)
}
pub fn example() -> Op {
    Op::BlockDecode { hidden: 64, heads: 2, head_dim: 32, ffn: 96, len: 5 }
}
