//! `attn_decode_f16`: one token's attention over the first `len` rows of
//! an f16 KV cache, split across the sequence and combined.
use super::*;

/// Each output element is a weighted mean of V rows computed in f32 and
/// rounded once to f16: at most 2^-10 of its value under either rounding a
/// Vulkan driver may use (see rope_kv_f16), 9.8e-4 in norm. The f32 work
/// before it (a dot of head_dim exact products, exp, a sum of len
/// weights) errs by a few 2^-24 per term, relatively ~1e-6 at the gate's
/// sizes; a kernel on the matrix units that rounds the softmax weights
/// to f16 before multiplying V adds at most 2^-11 of each weight, i.e.
/// at most 4.9e-4 of the output in norm. 2e-3 covers their sum (1.5e-3)
/// with a little room; a mask off by one position moves the output by
/// about 1/sqrt(len) of its norm (1.6e-2 at len 4096), far outside
/// (`attn_tests.rs` proves both for the gates' shapes).
pub const TOLERANCE: Tolerance = Tolerance::RelNorm(2e-3);
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Memory-bound: measured in the K and V rows it reads.
pub const FACTS: Facts = Facts { precision: Precision::Fp16, rate: RateUnit::GBps, needs: Needs::NOTHING };

/// Positions per chunk of the split at `head_dim`: a workgroup (block) per
/// head walks one or more chunks ([`chunks_per_group`]) and writes a
/// partial max, sum and weighted V to the scratch; the last workgroup of a
/// head to finish combines the head's partials. Both backends' kernels are
/// 128 invocations that read a row of head_dim halves as 16-byte vectors
/// with the next power of two >= head_dim/8 lanes and hold 8 rows each: at
/// head_dim 128, 64 rows (K and V, 256 bytes each) give every thread 16
/// loads in flight.
pub fn chunk(head_dim: usize) -> usize {
    8 * (128 / (head_dim / 8).max(1).next_power_of_two())
}

/// Workgroups per compute unit the planners aim for, on both backends
/// where the device says how many units it has (128 invocations each,
/// about 100 registers a thread: four fit an SM of an H200 or a CU of an
/// MI300X at once). On an H200 (2026-11-29, `greta smoke --tune`, len
/// 4096) this split beat twice as many workgroups on Vulkan too: 35.0
/// against 39.9 us.
pub const GROUPS_PER_COMPUTE_UNIT: usize = 4;

/// Most chunks one workgroup walks (the `chunks` tuning key's range).
pub const MAX_CHUNKS_PER_GROUP: usize = 64;

/// Chunks each workgroup walks, the planners' rule on both backends: as
/// few as still give `groups` workgroups in all (a device's worth: a few
/// per compute unit), so that short caches spread over the whole device
/// (at len 512, 8 chunks per head, one each) and long ones do not end in
/// hundreds of partials per head for the last workgroup to combine (at
/// len 4096 on 132 compute units: 4 chunks each, 16 partials per head).
/// At least 1, at most [`MAX_CHUNKS_PER_GROUP`] and the head's chunks.
pub fn chunks_per_group(heads: usize, head_dim: usize, len: usize, groups: usize) -> usize {
    let chunks = len.div_ceil(chunk(head_dim)).max(1);
    let splits = groups.div_ceil(heads.max(1)).max(1);
    chunks
        .div_ceil(splits)
        .clamp(1, MAX_CHUNKS_PER_GROUP.min(chunks))
}

/// Workgroups per head when each walks `per_group` chunks.
pub fn splits(head_dim: usize, len: usize, per_group: usize) -> usize {
    len.div_ceil(chunk(head_dim)).max(1).div_ceil(per_group.max(1))
}

/// Most head_dim the kernels hold in registers (16-byte loads of 8 halves).
pub const MAX_HEAD_DIM: usize = 256;

pub fn inputs(heads: usize, head_dim: usize, _len: usize, max_seq: usize) -> Vec<BufferSpec> {
    let d = heads * head_dim;
    vec![
        spec("q", DType::F16, d, Access::Read),
        spec("k_cache", DType::F16, max_seq * d, Access::Read),
        spec("v_cache", DType::F16, max_seq * d, Access::Read),
    ]
}
pub fn outputs(heads: usize, head_dim: usize, _len: usize, _max_seq: usize) -> Vec<BufferSpec> {
    vec![spec("o", DType::F16, heads * head_dim, Access::Write)]
}
/// The split's scratch, f32, sized for one chunk per workgroup (the most
/// workgroups any plan makes): per head and workgroup `head_dim` weighted
/// V sums, then per head and workgroup its max and sum, then one counter
/// per head (a u32 in an f32's place: how many of the head's workgroups
/// have written their partial). The kernels index it by the splits they
/// run with ([`splits`]); the counters stay where the largest plan puts
/// them. Zeroed before the first launch; the combining workgroup sets its
/// head's counter back to 0, so every launch finds them zero.
pub fn scratch(heads: usize, head_dim: usize, len: usize, _max_seq: usize) -> Vec<BufferSpec> {
    let splits = len.div_ceil(chunk(head_dim));
    vec![spec("partials", DType::F32, heads * splits * (head_dim + 2) + heads, Access::ReadWrite)]
}
/// q and o once, and the first `len` rows of K and V (the rest of the
/// caches is not read).
pub fn bytes_moved(heads: usize, head_dim: usize, len: usize, _max_seq: usize) -> u64 {
    let d = (heads * head_dim) as u64;
    2 * (2 * d + 2 * len as u64 * d)
}
/// Per head and position: the dot (2 per element) and the weighted V sum
/// (2 per element).
pub fn flops(heads: usize, head_dim: usize, len: usize, _max_seq: usize) -> u64 {
    4 * (heads * head_dim) as u64 * len as u64
}
pub fn check(heads: usize, head_dim: usize, len: usize, max_seq: usize) -> Result<(), String> {
    nonzero("heads", heads)?;
    nonzero("len", len)?;
    check_head_dim(head_dim, MAX_HEAD_DIM)?;
    if len > max_seq {
        return Err(format!("len {len} exceeds max_seq {max_seq}"));
    }
    Ok(())
}
/// The attention kernels read a head's row as 16-byte vectors of 8 halves
/// and keep it in registers (or shared memory) up to `most`.
pub(super) fn check_head_dim(head_dim: usize, most: usize) -> Result<(), String> {
    if head_dim == 0 || !head_dim.is_multiple_of(8) || head_dim > most {
        return Err(format!(
            "head_dim must be a multiple of 8 in 8..={most}, got {head_dim}"
        ));
    }
    Ok(())
}
/// Attention of one query row (all heads, `q[heads*head_dim]`) over
/// positions `0..visible` of caches `[pos][heads][head_dim]`, in f64:
/// the reference of both attention ops (and of the tests' perturbed ones).
pub(super) fn attend(q: &[f64], k: &[f64], v: &[f64], heads: usize, head_dim: usize, visible: usize) -> Vec<f64> {
    use rayon::prelude::*;
    let d = heads * head_dim;
    let scale = 1.0 / (head_dim as f64).sqrt();
    let mut o = vec![0.0; d];
    // The heads on every core, each computed as serially.
    o.par_chunks_mut(head_dim).enumerate().for_each(|(h, oh)| {
        let qh = &q[h * head_dim..(h + 1) * head_dim];
        let s: Vec<f64> = (0..visible)
            .map(|p| {
                let kp = &k[p * d + h * head_dim..p * d + (h + 1) * head_dim];
                qh.iter().zip(kp).map(|(a, b)| a * b).sum::<f64>() * scale
            })
            .collect();
        let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
        let sum: f64 = w.iter().sum();
        for (p, wp) in w.iter().enumerate() {
            let vp = &v[p * d + h * head_dim..p * d + (h + 1) * head_dim];
            for (o, x) in oh.iter_mut().zip(vp) {
                *o += wp / sum * x;
            }
        }
    });
    o
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], heads: usize, head_dim: usize, len: usize, _max_seq: usize) -> Vec<Vec<f64>> {
    vec![attend(&x[0], &x[1], &x[2], heads, head_dim, len)]
}
/// The cache's capacity does not change the work.
pub fn shape_class(heads: usize, head_dim: usize, len: usize, _max_seq: usize) -> String {
    format!("h{},d{},len{}", bucket(heads), bucket(head_dim), bucket(len))
}
/// Three chunks, the last one partial; a cache longer than `len`.
pub fn example() -> Op {
    Op::AttnDecodeF16 {
        heads: 3,
        head_dim: 16,
        len: 2 * chunk(16) + 5,
        max_seq: 2 * chunk(16) + 20,
    }
}
