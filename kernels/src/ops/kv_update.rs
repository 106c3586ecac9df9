//! `kv_update`: new K and V rows written into a preallocated cache; the
//! rest of the cache must survive.
use super::*;

pub const TOLERANCE: Tolerance = EXACT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Memory-bound: measured in the rows it moves.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::GBps, needs: Needs::NOTHING };

pub fn inputs(layers: usize, _max_seq: usize, heads: usize, head_dim: usize, _pos: usize, n_new: usize) -> Vec<BufferSpec> {
    let len = layers * n_new * heads * head_dim;
    vec![
        spec("k_new", DType::F32, len, Access::Read),
        spec("v_new", DType::F32, len, Access::Read),
    ]
}
pub fn outputs(layers: usize, max_seq: usize, heads: usize, head_dim: usize, _pos: usize, _n_new: usize) -> Vec<BufferSpec> {
    let len = layers * max_seq * heads * head_dim;
    vec![
        spec("k_cache", DType::F32, len, Access::ReadWrite),
        spec("v_cache", DType::F32, len, Access::ReadWrite),
    ]
}
/// Only the written rows of the cache move, read once and written once.
pub fn bytes_moved(layers: usize, _max_seq: usize, heads: usize, head_dim: usize, _pos: usize, n_new: usize) -> u64 {
    2 * 2 * (layers * n_new * heads * head_dim * 4) as u64
}
pub fn flops(_layers: usize, _max_seq: usize, _heads: usize, _head_dim: usize, _pos: usize, _n_new: usize) -> u64 {
    0
}
pub fn check(layers: usize, max_seq: usize, heads: usize, head_dim: usize, pos: usize, n_new: usize) -> Result<(), String> {
    nonzero("layers", layers)?;
    nonzero("max_seq", max_seq)?;
    nonzero("heads", heads)?;
    nonzero("head_dim", head_dim)?;
    nonzero("n_new", n_new)?;
    if pos + n_new > max_seq {
        return Err(format!("pos {pos} + n_new {n_new} exceeds max_seq {max_seq}"));
    }
    Ok(())
}
// The six fields of the op, passed one by one as for every op (ops! macro).
#[allow(clippy::too_many_arguments)]
pub fn reference(
    x: &[Vec<f64>],
    prior: &[HostBuf],
    layers: usize,
    max_seq: usize,
    heads: usize,
    head_dim: usize,
    pos: usize,
    n_new: usize,
) -> Vec<Vec<f64>> {
    let row = heads * head_dim;
    let mut k = prior[0].to_f64();
    let mut v = prior[1].to_f64();
    for l in 0..layers {
        for j in 0..n_new {
            let src = (l * n_new + j) * row;
            let dst = (l * max_seq + pos + j) * row;
            k[dst..dst + row].copy_from_slice(&x[0][src..src + row]);
            v[dst..dst + row].copy_from_slice(&x[1][src..src + row]);
        }
    }
    vec![k, v]
}
/// Rows `pos..pos+n_new` of every layer, in both caches; the rest of each
/// cache must survive.
pub fn written(layers: usize, max_seq: usize, heads: usize, head_dim: usize, pos: usize, n_new: usize) -> Region {
    let row = heads * head_dim;
    Region::Ranges(
        (0..layers)
            .map(|l| {
                let start = (l * max_seq + pos) * row;
                start..start + n_new * row
            })
            .collect(),
    )
}
/// The cache's length and the position do not change the work.
pub fn shape_class(layers: usize, _max_seq: usize, heads: usize, head_dim: usize, _pos: usize, n_new: usize) -> String {
    format!("l{},new{},row{}", bucket(layers), bucket(n_new), bucket(heads * head_dim))
}
pub fn example() -> Op {
    Op::KvUpdate {
        layers: 2,
        max_seq: 16,
        heads: 2,
        head_dim: 8,
        pos: 5,
        n_new: 3,
    }
}
