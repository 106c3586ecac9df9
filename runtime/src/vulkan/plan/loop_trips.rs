//! How many loop iterations a plan's invocations run: llvmpipe's
//! infinite-loop guard stops a shader past 65535 of them and returns
//! truncated results, so such shapes are refused there instead.

use super::{attn, f16_block, gemm, Dispatch, Plan, Shader};
use greta_kernels::attn_decode_splits;
use greta_kernels::Op;

/// Most loop iterations any invocation of `plan` executes inside one
/// outermost loop (the unit llvmpipe's infinite-loop guard counts), for the
/// grid-stride and row loops greta's kernels use.
pub fn max_loop_trips(op: &Op, plan: &Plan) -> u64 {
    let wg = plan.spec.first().copied().unwrap_or(1) as u64;
    let groups = |d: &Dispatch| d.groups[0] as u64 * wg;
    match *op {
        Op::BlockDecode { .. } | Op::BlockPrefill { .. } => 0,
        Op::RmsNorm { rows, cols, .. }
        | Op::LayerNorm { rows, cols, .. }
        | Op::Softmax { rows, cols } => {
            let rows_per_group = (rows as u64).div_ceil(plan.dispatches[0].groups[0] as u64);
            use Shader as S;
            if matches!(plan.shader, S::RmsnormReg | S::LayernormReg | S::SoftmaxReg) {
                return rows_per_group * 3 * plan.spec[1] as u64;
            }
            let per_row = if matches!(
                plan.shader,
                S::RmsnormVec4 | S::LayernormVec4 | S::SoftmaxVec4
            ) {
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
        Op::RopeKvF16 {
            tokens,
            heads,
            head_dim,
            ..
        } => ((tokens * heads * head_dim / 4) as u64).div_ceil(groups(&plan.dispatches[0])),
        // A workgroup walks its chunks (push constant 4); the combining
        // one loops over the head's splits, 128 at a time for the max and
        // sum, and per group of head_dim/4 invocations for the weighted V.
        Op::AttnDecodeF16 { head_dim, len, .. } => {
            let per = plan.dispatches[0].push[4].max(1) as usize;
            let splits = attn_decode_splits(head_dim, len, per) as u64;
            let groups_of_v = (128 / (head_dim / 4).max(1)).max(1) as u64;
            (per as u64).max(splits.div_ceil(groups_of_v))
        }
        // The key tiles a workgroup walks; its loops inside are short.
        Op::AttnPrefillF16 { tokens, pos0, .. } => attn::max_loop_trips(tokens, pos0),
        Op::Noop | Op::TestSlow { .. } => 0,
        Op::Memtest { .. } => plan
            .all_dispatches()
            .map(|d| (d.push[0] as u64).div_ceil(groups(d)))
            .max()
            .unwrap_or(0),
        Op::LinearF16 { cols, .. } => gemm::linear::max_loop_trips(cols, plan),
        Op::GemvF16 { .. }
        | Op::GemvAddF16 { .. }
        | Op::RmsGemvSwigluF16 { .. }
        | Op::RmsGemvRopeKvF16 { .. }
        | Op::RmsNormF16 { .. }
        | Op::AddRmsNormF16 { .. }
        | Op::SwigluF16 { .. } => f16_block::max_loop_trips(op, plan),
    }
}
