//! Kernel tuning: which knobs a kernel has, and the values a run asks for.
//!
//! A knob is a [`Knob`], not a string: a tuning cache file that names a
//! knob greta does not have fails to parse (and is ignored) instead of
//! reaching a planner, and whether a knob selects a diagnostic variant
//! (wrong results by design) is a property of the knob, checked where
//! tunings are loaded and stored ([`crate::tuning_cache`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// One tuning parameter of the Vulkan kernels (what each kernel family
/// takes is in [`crate::vulkan`]'s module docs) or of the HIP/CUDA kernels
/// (`crate::gpu::tune`: `wg`, `per_cu`, `bm`, `bn`, `stages`, `wgmma`). Declared in the order of
/// their names, so a [`Tuning`] lists them as it always has (sorted by
/// name) in cache files, results and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// GEMM block depth (k slice); `attn_prefill_f16_cm2`: keys per tile.
    Bk,
    /// GEMM block rows.
    Bm,
    /// GEMM block columns.
    Bn,
    /// `attn_decode_f16`: chunks of the KV sequence each workgroup walks
    /// before its partial goes to the head's combine (1 = one workgroup
    /// per chunk, the most workgroups); the planner's choice fills the
    /// device ([`greta_kernels::attn_decode_chunks_per_group`]).
    Chunks,
    /// Which kernel family (Vulkan). gemm_f16: 0 tiled, 1 KHR cooperative
    /// matrix, 2 NV cooperative matrix 2, 3 register-accumulator
    /// cooperative matrix; linear_f16: 0 tiled, 1 cooperative matrix, 2 its
    /// row-major-B `_bt` variant; attn_prefill_f16: 0 f32 FMAs, 1
    /// cooperative matrix, 2 the same with its softmax in the matrices
    /// (VK_NV_cooperative_matrix2's operations).
    Coopmat,
    /// `gemm_f16_cmreg`: load tiles straight from global memory (0/1).
    Direct,
    /// `linear_f16_cm`: how the accumulators reach Y: 0 rounded to f16
    /// accumulator tiles and stored straight to global memory (needs a
    /// 16x16x16 f16-accumulator shape), 1 through a per-subgroup f32 shared
    /// tile, rounded to f16 in pairs (f16 x f16 -> f32 shapes only).
    Epilogue,
    /// `block_decode` (a composite op): 1 (the default) runs the fused decode
    /// graph (the norms in the projections' prologues; RoPE, the KV write,
    /// SwiGLU and the residual adds in their epilogues), 0 every step as a
    /// kernel of its own.
    Fuse,
    /// `gemm_f16_cmreg`: rows of blocks walked together (L2 reuse), 0 off.
    GroupM,
    /// Element-wise ops: most workgroups per dispatch.
    Groups,
    /// HIP/CUDA streaming ops: most blocks per compute unit of the grid.
    PerCu,
    /// `gemm_f16_cmreg` diagnostic: 1 runs a variant that computes wrong
    /// results on purpose (to measure one stage alone). Never cached.
    Probe,
    /// Row ops: the row held in registers (0/1).
    Reg,
    /// `gemm_f16_cmreg`: subgroups along n.
    Sgn,
    /// `gemm_f16_cmreg`: shared-memory pipeline stages (1 or 2).
    Stages,
    /// Tiled GEMM: outputs per invocation along m.
    Tm,
    /// Tiled GEMM: outputs per invocation along n.
    Tn,
    /// `gemm_f16_cm2`: k slices per unrolled trip.
    Uk,
    /// Element-wise ops: vec4s per invocation per loop trip.
    Unroll,
    /// f32 GEMM: the vec4 kernel (0/1).
    V4,
    /// Row ops: vec4 loads (0/1).
    Vec4,
    /// Vulkan: the subgroup size the pipeline requires
    /// (`requiredSubgroupSize`), on devices that offer a range (RADV: 32
    /// or 64). Kernels that count subgroups get one by default.
    Wave,
    /// Workgroup size.
    Wg,
    /// CUDA gemm_f16 and linear_f16 on compute capability 9.0 with the
    /// kernels built for sm_90a: 1 the Hopper kernel (wgmma fed by TMA;
    /// its tile `bn` and `stages`), 0 the `mma.sync` kernels.
    Wgmma,
}

impl Knob {
    pub const ALL: [Knob; 24] = [
        Knob::Bk,
        Knob::Bm,
        Knob::Bn,
        Knob::Chunks,
        Knob::Coopmat,
        Knob::Direct,
        Knob::Epilogue,
        Knob::Fuse,
        Knob::GroupM,
        Knob::Groups,
        Knob::PerCu,
        Knob::Probe,
        Knob::Reg,
        Knob::Sgn,
        Knob::Stages,
        Knob::Tm,
        Knob::Tn,
        Knob::Uk,
        Knob::Unroll,
        Knob::V4,
        Knob::Vec4,
        Knob::Wave,
        Knob::Wg,
        Knob::Wgmma,
    ];

    /// The knob's name, as files and messages carry it (`group_m`).
    pub fn name(self) -> &'static str {
        match self {
            Knob::Bk => "bk",
            Knob::Bm => "bm",
            Knob::Bn => "bn",
            Knob::Chunks => "chunks",
            Knob::Coopmat => "coopmat",
            Knob::Direct => "direct",
            Knob::Epilogue => "epilogue",
            Knob::Fuse => "fuse",
            Knob::GroupM => "group_m",
            Knob::Groups => "groups",
            Knob::PerCu => "per_cu",
            Knob::Probe => "probe",
            Knob::Reg => "reg",
            Knob::Sgn => "sgn",
            Knob::Stages => "stages",
            Knob::Tm => "tm",
            Knob::Tn => "tn",
            Knob::Uk => "uk",
            Knob::Unroll => "unroll",
            Knob::V4 => "v4",
            Knob::Vec4 => "vec4",
            Knob::Wave => "wave",
            Knob::Wg => "wg",
            Knob::Wgmma => "wgmma",
        }
    }

    /// Whether a non-zero value selects a diagnostic variant: honoured when
    /// a run asks for it explicitly, never loaded from or stored in a cache.
    pub fn is_diagnostic(self) -> bool {
        matches!(self, Knob::Probe)
    }
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no [`Knob`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown tuning key {0:?} (known: {known})", known = known_names())]
pub struct UnknownKnob(pub String);

fn known_names() -> String {
    let names: Vec<&str> = Knob::ALL.iter().map(|k| k.name()).collect();
    names.join(", ")
}

impl FromStr for Knob {
    type Err = UnknownKnob;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Knob::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownKnob(s.chars().take(40).collect()))
    }
}

/// Kernel tuning parameters (tile sizes, workgroup size, variant). An
/// empty map means the backend's defaults; a knob the kernel does not take
/// is rejected by `run`. What each backend tries is its
/// `tuning_candidates`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tuning(pub BTreeMap<Knob, u32>);

impl Tuning {
    pub fn get(&self, knob: Knob) -> Option<u32> {
        self.0.get(&knob).copied()
    }

    pub fn with(mut self, knob: Knob, v: u32) -> Self {
        self.0.insert(knob, v);
        self
    }

    /// A tuning of `(knob, value)` pairs.
    pub fn of(pairs: &[(Knob, u32)]) -> Self {
        Tuning(pairs.iter().copied().collect())
    }

    /// Whether it asks for a diagnostic variant (a diagnostic knob set to
    /// anything but 0).
    pub fn is_diagnostic(&self) -> bool {
        self.0.iter().any(|(k, v)| k.is_diagnostic() && *v != 0)
    }
}

impl fmt::Display for Tuning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_unique_and_round_trip() {
        let names: Vec<&str> = Knob::ALL.iter().map(|k| k.name()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        // Declaration order is name order: BTreeMap<Knob, _> lists knobs as
        // BTreeMap<String, _> did, so files and messages keep their bytes.
        assert_eq!(names, sorted);
        for k in Knob::ALL {
            assert_eq!(k.name().parse::<Knob>(), Ok(k));
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
        }
        let err = "tile".parse::<Knob>().unwrap_err();
        assert!(err.to_string().contains("\"tile\"") && err.to_string().contains("group_m"));
    }

    #[test]
    fn a_tuning_reads_and_writes_as_a_map_of_names() {
        let t = Tuning::of(&[(Knob::Wg, 64), (Knob::GroupM, 8), (Knob::Bk, 16)]);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, r#"{"bk":16,"group_m":8,"wg":64}"#);
        assert_eq!(serde_json::from_str::<Tuning>(&json).unwrap(), t);
        assert_eq!(t.to_string(), "bk=16,group_m=8,wg=64");
        assert!(serde_json::from_str::<Tuning>(r#"{"tile":3}"#).is_err());
        assert!(!t.is_diagnostic());
        assert!(!t.clone().with(Knob::Probe, 0).is_diagnostic());
        assert!(t.with(Knob::Probe, 1).is_diagnostic());
    }
}
