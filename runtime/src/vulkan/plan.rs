//! How each [`Op`] maps onto a shader: specialization constants (tile and
//! workgroup sizes), push constants (shapes), workgroup counts, and the
//! buffer ranges each dispatch binds. Element-wise ops whose buffers exceed
//! the device's `maxStorageBufferRange` are split into several dispatches
//! over aligned sub-ranges; workgroup counts stay <= 65535 per dimension
//! (the Vulkan minimum) and the kernels loop grid-stride over the rest.

use crate::{HostBuf, Op, RuntimeError, Tuning};

/// Workgroups per dimension every Vulkan device supports.
pub const MAX_GROUPS: u32 = 65535;

/// Dispatches per repeat of the noop op (timed together, reported per dispatch).
pub const NOOP_BATCH: usize = 64;

/// Streaming ops (fill, copy, vec_add): default workgroup size and vec4s
/// per invocation per loop iteration.
const STREAM_WG: u32 = 256;
const STREAM_UNROLL: u32 = 4;

/// Most vec4s per invocation the register-resident norm kernels hold.
const NORM_MAX_NPT: u32 = 16;

/// What the planner needs to know about the device.
pub struct Limits {
    pub max_range: u64,
    pub offset_align: u64,
    pub max_invocations: u32,
    pub max_shared: u32,
    pub subgroup_arith: bool,
    pub coop_f16: Option<(u32, u32, u32)>,
    pub f16_storage: bool,
    /// VK_NV_cooperative_matrix2 enabled (workgroup scope, flexible
    /// dimensions, tensor addressing): `gemm_f16_cm2` can run.
    pub coop2: bool,
}

/// One dispatch: push constants, workgroup counts, and per binding the
/// `(offset, range)` in bytes (`None` = whole buffer).
pub struct Dispatch {
    pub push: Vec<u32>,
    pub groups: [u32; 3],
    pub ranges: Vec<Option<(u64, u64)>>,
}

pub struct Plan {
    pub shader: &'static str,
    /// Report the time of one dispatch (a repeat's time over its
    /// dispatches) instead of the repeat's; with a barrier between the
    /// dispatches of a repeat (noop: the cost of a dependent dispatch).
    pub per_dispatch: bool,
    /// Value of specialization constant `i`.
    pub spec: Vec<u32>,
    pub tuning: Tuning,
    /// Extra read-only buffers bound after the op's outputs (e.g. rope's cos/sin table).
    pub aux: Vec<HostBuf>,
    pub dispatches: Vec<Dispatch>,
}

fn bad(msg: String) -> RuntimeError {
    RuntimeError::BadInput(msg)
}

fn groups_for(items: u64, wg: u64) -> u32 {
    items.div_ceil(wg).clamp(1, MAX_GROUPS as u64) as u32
}

/// Known tuning keys per shader family, to reject typos.
fn check_keys(t: &Tuning, allowed: &[&str]) -> Result<(), RuntimeError> {
    for k in t.0.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(bad(format!(
                "unknown tuning key {k:?} (allowed: {})",
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

fn wg_of(t: &Tuning, default: u32, lim: &Limits) -> Result<u32, RuntimeError> {
    let wg = t.get("wg").unwrap_or(default);
    if wg == 0 || wg > lim.max_invocations || !wg.is_power_of_two() {
        return Err(bad(format!(
            "wg={wg}: must be a power of two <= {}",
            lim.max_invocations
        )));
    }
    Ok(wg)
}

/// Element-wise u32/f32 ops over `n` elements with `nbuf` buffers of 4-byte
/// elements, split into chunks that fit the range limit.
fn elementwise(n: usize, nbuf: usize, wg: u32, lim: &Limits, extra_push: &[u32]) -> Vec<Dispatch> {
    let align = lim.offset_align.max(16);
    // Largest chunk in bytes that is a multiple of the offset alignment (and of 16).
    let chunk_bytes = (lim.max_range / align * align).max(align);
    let chunk = (chunk_bytes / 4) as usize;
    let mut out = Vec::new();
    let mut start = 0usize;
    while start < n {
        let count = chunk.min(n - start);
        let whole = start == 0 && count == n;
        let range = if whole {
            None
        } else {
            Some((start as u64 * 4, (count as u64 * 4).next_multiple_of(16)))
        };
        let mut push = vec![count as u32];
        push.extend_from_slice(extra_push);
        out.push(Dispatch {
            push,
            groups: [groups_for((count as u64).div_ceil(4), wg as u64), 1, 1],
            ranges: vec![range; nbuf],
        });
        start += count;
    }
    out
}

/// `gemm_f16_cm2` default block (bm, bn, bk, workgroup size): the fastest
/// of the sweep on the H200 (2026-11-21, driver 580.159.04).
const CM2_DEFAULT: (u32, u32, u32, u32) = (128, 256, 32, 256);

/// `gemm_f16_cm2` k slices per unrolled loop trip.
const CM2_UNROLL_K: u32 = 4;

/// GEMM tile defaults: 64x64 blocks, 16-deep k slices, 4x4 outputs per
/// invocation (256 invocations). Good on NVIDIA, RDNA and lavapipe alike.
const GEMM_DEFAULT: [(&str, u32); 5] = [("bm", 64), ("bn", 64), ("bk", 16), ("tm", 4), ("tn", 4)];

/// For large products (both sides >= 1024): 128x128 blocks, 8x8 outputs per
/// invocation, twice the arithmetic per shared-memory load; used when the
/// device has the invocations and shared memory for it.
const GEMM_LARGE: [(&str, u32); 5] = [("bm", 128), ("bn", 128), ("bk", 8), ("tm", 8), ("tn", 8)];

fn gemm_tiles(
    t: &Tuning,
    lim: &Limits,
    m: usize,
    n: usize,
) -> Result<(Vec<u32>, Tuning), RuntimeError> {
    let large = m >= 1024 && n >= 1024 && lim.max_invocations >= 256 && lim.max_shared >= 8192;
    let defaults = if large && !t.0.keys().any(|k| k != "coopmat") {
        GEMM_LARGE
    } else {
        GEMM_DEFAULT
    };
    let mut eff = Tuning::default();
    for (k, d) in defaults {
        eff.0.insert(k.into(), t.get(k).unwrap_or(d));
    }
    let g = |k: &str| eff.get(k).unwrap();
    let (bm, bn, bk, tm, tn) = (g("bm"), g("bn"), g("bk"), g("tm"), g("tn"));
    if [bm, bn, bk, tm, tn].contains(&0) || bm % tm != 0 || bn % tn != 0 {
        return Err(bad(format!(
            "gemm tiles {eff}: need bm % tm == 0, bn % tn == 0, all > 0"
        )));
    }
    let threads = (bm / tm) * (bn / tn);
    if threads > lim.max_invocations || tm * tn > 64 {
        return Err(bad(format!(
            "gemm tiles {eff}: {threads} invocations (max {}), {} accumulators (max 64)",
            lim.max_invocations,
            tm * tn
        )));
    }
    if (bm + 1 + bn) * bk * 4 > lim.max_shared {
        return Err(bad(format!(
            "gemm tiles {eff}: {} bytes of shared memory (max {})",
            (bm + 1 + bn) * bk * 4,
            lim.max_shared
        )));
    }
    Ok((vec![bm, bn, bk, tm, tn, threads], eff))
}

/// Host-side cos/sin table for rope, `[tokens][head_dim/2]` pairs, computed
/// in f64 and rounded once: the kernel's error is then that of f32 rounding,
/// not of the GPU's trig approximations.
fn rope_table(tokens: usize, head_dim: usize, pos0: u32, theta: f32) -> HostBuf {
    let half = head_dim / 2;
    let mut t = Vec::with_capacity(tokens * half * 2);
    for tok in 0..tokens {
        let p = (pos0 as u64 + tok as u64) as f64;
        for i in 0..half {
            let f = (theta as f64).powf(-2.0 * i as f64 / head_dim as f64);
            let (s, c) = (p * f).sin_cos();
            t.push(c as f32);
            t.push(s as f32);
        }
    }
    HostBuf::F32(t)
}

pub fn plan(op: &Op, tuning: &Tuning, lim: &Limits) -> Result<Plan, RuntimeError> {
    op.validate().map_err(|e| bad(e.to_string()))?;
    let t = tuning;
    let simple = |shader: &'static str, wg: u32, dispatches: Vec<Dispatch>| Plan {
        shader,
        per_dispatch: false,
        spec: vec![wg],
        tuning: Tuning::default().with("wg", wg),
        aux: vec![],
        dispatches,
    };
    let whole = |n: usize| vec![None; n];
    Ok(match *op {
        Op::Noop => {
            check_keys(t, &["wg"])?;
            let wg = wg_of(t, 64, lim)?;
            // A batch of dependent dispatches per repeat, timed together:
            // the per-dispatch cost without one timestamp pair per dispatch.
            let batch = (0..NOOP_BATCH)
                .map(|_| Dispatch {
                    push: vec![],
                    groups: [1, 1, 1],
                    ranges: vec![],
                })
                .collect();
            let mut p = simple("noop", wg, batch);
            p.per_dispatch = true;
            p
        }
        Op::Fill { .. } | Op::Copy { .. } | Op::VecAdd { .. } => {
            check_keys(t, &["wg", "unroll", "groups"])?;
            let wg = wg_of(t, STREAM_WG, lim)?;
            let unroll = t.get("unroll").unwrap_or(STREAM_UNROLL);
            if !(1..=16).contains(&unroll) {
                return Err(bad(format!("unroll={unroll}: must be 1..=16")));
            }
            let max_groups = t.get("groups").unwrap_or(MAX_GROUPS);
            if max_groups == 0 || max_groups > MAX_GROUPS {
                return Err(bad(format!(
                    "groups={max_groups}: must be 1..={MAX_GROUPS}"
                )));
            }
            let (shader, nbuf, extra) = match *op {
                Op::Fill { value, .. } => ("fill", 1, vec![value]),
                Op::Copy { .. } => ("copy", 2, vec![]),
                _ => ("vec_add", 3, vec![]),
            };
            let n = op.outputs()[0].len;
            let mut ds = elementwise(n, nbuf, wg * unroll, lim, &extra);
            for d in &mut ds {
                d.groups[0] = d.groups[0].min(max_groups);
            }
            let mut p = simple(shader, wg, ds);
            p.spec.push(unroll);
            p.tuning = p.tuning.with("unroll", unroll);
            if t.get("groups").is_some() {
                p.tuning = p.tuning.with("groups", max_groups);
            }
            p
        }
        Op::TestBrokenCopy { n } => {
            check_keys(t, &["wg"])?;
            let wg = wg_of(t, 256, lim)?;
            let d = Dispatch {
                push: vec![n as u32],
                groups: [groups_for(n as u64, wg as u64), 1, 1],
                ranges: whole(2),
            };
            simple("broken_copy", wg, vec![d])
        }
        Op::TestSlow { iters } => {
            check_keys(t, &[])?;
            Plan {
                shader: "slow",
                per_dispatch: false,
                spec: vec![],
                tuning: Tuning::default(),
                aux: vec![],
                // Every workgroup runs the same chain and writes the same value:
                // on a GPU they run side by side (time ~ one chain), on a CPU
                // implementation they queue up (time ~ groups x chain), so the
                // kernel is slow everywhere.
                dispatches: vec![Dispatch {
                    push: vec![iters],
                    groups: [groups_for(iters as u64, 1 << 16), 1, 1],
                    ranges: whole(1),
                }],
            }
        }
        Op::GemmF32 { m, n, k } | Op::GemmF16 { m, n, k } => {
            let f16 = matches!(op, Op::GemmF16 { .. });
            let coop_possible = f16 && lim.coop_f16.is_some() && lim.f16_storage;
            let coopmat = t.get("coopmat").unwrap_or(0);
            if coopmat > 2 || (coopmat == 1 && !coop_possible) || (coopmat == 2 && !lim.coop2) {
                return Err(bad(format!(
                    "coopmat={coopmat}: the device has no {}",
                    if coopmat == 2 {
                        "VK_NV_cooperative_matrix2"
                    } else {
                        "f16 x f16 -> f32 cooperative matrix"
                    }
                )));
            }
            let cm2 = f16 && lim.coop2 && t.get("coopmat").is_none_or(|v| v == 2);
            if cm2 {
                check_keys(t, &["bm", "bn", "bk", "wg", "uk", "coopmat"])?;
                let uk = t.get("uk").unwrap_or(CM2_UNROLL_K);
                if !(1..=8).contains(&uk) {
                    return Err(bad(format!("uk={uk}: must be 1..=8")));
                }
                let g = |k: &str, d: u32| t.get(k).unwrap_or(d);
                let (bm, bn, bk, wg) = (
                    g("bm", CM2_DEFAULT.0),
                    g("bn", CM2_DEFAULT.1),
                    g("bk", CM2_DEFAULT.2),
                    g("wg", CM2_DEFAULT.3),
                );
                if [bm, bn, bk].iter().any(|v| *v == 0 || v % 16 != 0)
                    || wg == 0
                    || wg % 32 != 0
                    || wg > lim.max_invocations
                {
                    return Err(bad(format!(
                        "gemm_f16_cm2 tiles bm={bm} bn={bn} bk={bk} wg={wg}: tiles multiples of 16, wg of 32"
                    )));
                }
                let groups = [(n as u32).div_ceil(bn), (m as u32).div_ceil(bm), 1];
                if groups[0] > MAX_GROUPS || groups[1] > MAX_GROUPS {
                    return Err(RuntimeError::Unsupported(format!(
                        "{op}: needs {groups:?} workgroups, over {MAX_GROUPS}"
                    )));
                }
                return Ok(Plan {
                    shader: "gemm_f16_cm2",
                    per_dispatch: false,
                    spec: vec![bm, bn, bk, wg, uk],
                    tuning: Tuning::default()
                        .with("coopmat", 2)
                        .with("uk", uk)
                        .with("bm", bm)
                        .with("bn", bn)
                        .with("bk", bk)
                        .with("wg", wg),
                    aux: vec![],
                    dispatches: vec![Dispatch {
                        push: vec![m as u32, n as u32, k as u32],
                        groups,
                        ranges: whole(3),
                    }],
                });
            }
            check_keys(t, &["bm", "bn", "bk", "tm", "tn", "coopmat"])?;
            // The cooperative-matrix kernel is the default wherever it exists.
            let use_coop = f16 && t.get("coopmat").map_or(coop_possible, |v| v == 1);
            if use_coop {
                let (cm, cn, ck) = lim.coop_f16.unwrap();
                let (bm, bn, bk, wg) = (64u32, 64u32, 32u32, 128u32);
                let shared = bm * bk * 2 + bk * bn * 2 + bm * bn * 4;
                if shared > lim.max_shared || wg > lim.max_invocations {
                    return Err(RuntimeError::Unsupported(format!(
                        "gemm_f16_coopmat needs {shared} bytes of shared memory (max {})",
                        lim.max_shared
                    )));
                }
                let groups = [(n as u32).div_ceil(bn), (m as u32).div_ceil(bm), 1];
                if groups[0] > MAX_GROUPS || groups[1] > MAX_GROUPS {
                    return Err(RuntimeError::Unsupported(format!(
                        "{op}: needs {groups:?} workgroups, over {MAX_GROUPS}"
                    )));
                }
                return Ok(Plan {
                    shader: "gemm_f16_coopmat",
                    per_dispatch: false,
                    spec: vec![bm, bn, bk, cm, cn, wg, ck],
                    tuning: Tuning::default().with("coopmat", 1),
                    aux: vec![],
                    dispatches: vec![Dispatch {
                        push: vec![m as u32, n as u32, k as u32],
                        groups,
                        ranges: whole(3),
                    }],
                });
            }
            let (spec, eff) = gemm_tiles(t, lim, m, n)?;
            let eff = if f16 && coop_possible {
                eff.with("coopmat", 0)
            } else {
                eff
            };
            let groups = [
                (n as u32).div_ceil(spec[1]),
                (m as u32).div_ceil(spec[0]),
                1,
            ];
            if groups[0] > MAX_GROUPS || groups[1] > MAX_GROUPS {
                return Err(RuntimeError::Unsupported(format!(
                    "{op}: needs {groups:?} workgroups, over {MAX_GROUPS}"
                )));
            }
            Plan {
                shader: if f16 { "gemm_f16" } else { "gemm_f32" },
                per_dispatch: false,
                spec,
                tuning: eff,
                aux: vec![],
                dispatches: vec![Dispatch {
                    push: vec![m as u32, n as u32, k as u32],
                    groups,
                    ranges: whole(3),
                }],
            }
        }
        Op::RmsNorm { rows, cols, .. }
        | Op::LayerNorm { rows, cols, .. }
        | Op::Softmax { rows, cols } => {
            check_keys(t, &["wg", "vec4", "reg"])?;
            let wg = wg_of(t, 256, lim)?;
            // vec4 loads whenever rows stay 16-byte aligned (the default).
            let vec4 = match t.get("vec4") {
                None => cols % 4 == 0,
                Some(1) if cols % 4 == 0 => true,
                Some(0) => false,
                Some(v) => {
                    return Err(bad(format!(
                        "vec4={v}: needs cols % 4 == 0 and a value of 0 or 1"
                    )))
                }
            };
            let (shader, nbuf, push) = match *op {
                Op::RmsNorm { eps, .. } => (
                    ["rmsnorm", "rmsnorm_vec4", "rmsnorm_reg"],
                    3,
                    vec![rows as u32, cols as u32, eps.to_bits()],
                ),
                Op::LayerNorm { eps, .. } => (
                    ["layernorm", "layernorm_vec4", "layernorm_reg"],
                    4,
                    vec![rows as u32, cols as u32, eps.to_bits()],
                ),
                _ => (
                    ["softmax", "softmax_vec4", "softmax_reg"],
                    2,
                    vec![rows as u32, cols as u32],
                ),
            };
            let d = Dispatch {
                push,
                groups: [(rows as u32).min(MAX_GROUPS), 1, 1],
                ranges: whole(nbuf),
            };
            // Row in registers (one read of x) when it fits NORM_MAX_NPT
            // vec4s per invocation (the default then).
            let npt = (cols as u32).div_ceil(4).div_ceil(wg);
            let reg_fits = vec4 && npt <= NORM_MAX_NPT;
            let reg = match t.get("reg") {
                None => reg_fits,
                Some(1) if reg_fits => true,
                Some(0) => false,
                Some(v) => {
                    return Err(bad(format!(
                        "reg={v}: needs vec4 and cols <= {} for wg={wg}, and a value of 0 or 1",
                        4 * NORM_MAX_NPT * wg
                    )))
                }
            };
            let name = if reg {
                shader[2]
            } else {
                shader[vec4 as usize]
            };
            let mut p = simple(name, wg, vec![d]);
            if reg {
                p.spec.push(npt);
            }
            p.tuning = p.tuning.with("vec4", vec4 as u32).with("reg", reg as u32);
            p
        }
        Op::Rope {
            tokens,
            heads,
            head_dim,
            pos0,
            theta,
        } => {
            check_keys(t, &["wg"])?;
            let wg = wg_of(t, 256, lim)?;
            let pairs = (tokens * heads * head_dim / 2) as u64;
            let d = Dispatch {
                push: vec![tokens as u32, heads as u32, head_dim as u32],
                groups: [groups_for(pairs, wg as u64), 1, 1],
                ranges: whole(3),
            };
            let mut p = simple("rope", wg, vec![d]);
            p.aux.push(rope_table(tokens, head_dim, pos0, theta));
            p
        }
        Op::KvUpdate {
            layers,
            max_seq,
            heads,
            head_dim,
            pos,
            n_new,
        } => {
            check_keys(t, &["wg"])?;
            let wg = wg_of(t, 256, lim)?;
            let total = (layers * n_new * heads * head_dim) as u64;
            let d = Dispatch {
                push: vec![
                    layers as u32,
                    max_seq as u32,
                    (heads * head_dim) as u32,
                    pos as u32,
                    n_new as u32,
                ],
                groups: [groups_for(total, wg as u64), 1, 1],
                ranges: whole(4),
            };
            simple("kv_update", wg, vec![d])
        }
    })
}

/// Tunings worth sweeping for `op` (the default first), all valid on this device.
pub fn candidates(op: &Op, lim: &Limits) -> Vec<Tuning> {
    let mut out = vec![Tuning::default()];
    let mut push = |t: Tuning| {
        if plan(op, &t, lim).is_ok() && !out.contains(&t) {
            out.push(t);
        }
    };
    match op {
        Op::GemmF32 { .. } | Op::GemmF16 { .. } => {
            if lim.coop2 && matches!(op, Op::GemmF16 { .. }) {
                for (bm, bn, bk, wg, uk) in [
                    (128, 256, 32, 256, 1),
                    (128, 256, 32, 256, 2),
                    (128, 256, 16, 256, 4),
                    (128, 128, 32, 256, 4),
                    (256, 128, 32, 256, 4),
                    (128, 256, 64, 256, 2),
                    (64, 128, 32, 128, 4),
                ] {
                    push(
                        Tuning::default()
                            .with("coopmat", 2)
                            .with("bm", bm)
                            .with("bn", bn)
                            .with("bk", bk)
                            .with("wg", wg)
                            .with("uk", uk),
                    );
                }
            }
            if lim.coop_f16.is_some() && matches!(op, Op::GemmF16 { .. }) {
                push(Tuning::default().with("coopmat", 1));
            }
            for (bm, bn, bk, tm, tn) in [
                (64, 64, 16, 4, 4),
                (128, 128, 8, 8, 8),
                (128, 64, 16, 8, 4),
                (64, 64, 8, 4, 4),
                (32, 32, 16, 2, 2),
            ] {
                let t = Tuning::default()
                    .with("bm", bm)
                    .with("bn", bn)
                    .with("bk", bk)
                    .with("tm", tm)
                    .with("tn", tn);
                push(
                    if lim.coop_f16.is_some() && matches!(op, Op::GemmF16 { .. }) {
                        t.with("coopmat", 0)
                    } else {
                        t
                    },
                );
            }
        }
        Op::TestSlow { .. } => {}
        Op::RmsNorm { .. } | Op::LayerNorm { .. } | Op::Softmax { .. } => {
            for wg in [64, 128, 256, 512, 1024] {
                push(Tuning::default().with("wg", wg));
            }
            push(Tuning::default().with("reg", 0));
            push(Tuning::default().with("vec4", 0));
        }
        Op::Fill { .. } | Op::Copy { .. } | Op::VecAdd { .. } => {
            for (wg, unroll) in [
                (256, 1),
                (256, 2),
                (256, 4),
                (256, 8),
                (128, 4),
                (512, 4),
                (1024, 4),
                (1024, 1),
            ] {
                push(Tuning::default().with("wg", wg).with("unroll", unroll));
            }
            for groups in [1024, 8192] {
                push(Tuning::default().with("groups", groups));
            }
        }
        _ => {
            for wg in [64, 128, 256, 512, 1024] {
                push(Tuning::default().with("wg", wg));
            }
        }
    }
    out
}

/// Most loop iterations any invocation of `plan` executes inside one
/// outermost loop (the unit llvmpipe's infinite-loop guard counts), for the
/// grid-stride and row loops greta's kernels use.
pub fn max_loop_trips(op: &Op, plan: &Plan) -> u64 {
    let wg = plan.spec.first().copied().unwrap_or(1) as u64;
    let groups = |d: &Dispatch| d.groups[0] as u64 * wg;
    match *op {
        Op::RmsNorm { rows, cols, .. }
        | Op::LayerNorm { rows, cols, .. }
        | Op::Softmax { rows, cols } => {
            let rows_per_group = (rows as u64).div_ceil(plan.dispatches[0].groups[0] as u64);
            if plan.shader.ends_with("_reg") {
                return rows_per_group * 3 * plan.spec[1] as u64;
            }
            let per_row = if plan.shader.ends_with("_vec4") {
                cols as u64 / 4
            } else {
                cols as u64
            };
            rows_per_group * 3 * per_row.div_ceil(wg)
        }
        Op::Fill { .. } | Op::Copy { .. } | Op::VecAdd { .. } => {
            let unroll = plan.spec.get(1).copied().unwrap_or(1) as u64;
            plan.dispatches
                .iter()
                .map(|d| (d.push[0] as u64).div_ceil(4).div_ceil(groups(d) * unroll) * unroll)
                .max()
                .unwrap_or(0)
        }
        Op::TestBrokenCopy { n } => (n as u64).div_ceil(groups(&plan.dispatches[0])),
        Op::Rope {
            tokens,
            heads,
            head_dim,
            ..
        } => ((tokens * heads * head_dim / 2) as u64).div_ceil(groups(&plan.dispatches[0])),
        Op::KvUpdate {
            layers,
            heads,
            head_dim,
            n_new,
            ..
        } => ((layers * n_new * heads * head_dim) as u64).div_ceil(groups(&plan.dispatches[0])),
        Op::GemmF32 { k, .. } | Op::GemmF16 { k, .. } => (k as u64).div_ceil(plan.spec[2] as u64),
        Op::Noop | Op::TestSlow { .. } => 0,
    }
}
