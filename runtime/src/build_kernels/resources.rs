//! `greta __gpu build-kernels --resource-usage`: the compiler's own account
//! of each kernel it built for a target — registers, LDS, scratch, spills and
//! occupancy — so that a machine with no AMD GPU (CI, the sid chroot of
//! `scripts/sid-chroot.sh`) can record what every kernel costs on every
//! target greta claims (docs/hip.md, "Every target, compiled").
//!
//! The figures are LLVM's AMDGPU `kernel-resource-usage` remarks, which
//! hiprtc writes into its log when given `-Rpass-analysis=kernel-resource-usage`.
//! Occupancy is the compiler's figure (waves per SIMD, from the registers, the
//! LDS and the kernel's maximum work-group size): greta does not recompute
//! it. The remarks come from a second compile with that one option added; its
//! code object must be byte-identical to the one in the cache, or the figures
//! are refused, since they would describe other code.

use crate::compilers;
use crate::gpu::{compile_with_log, CompilerChoice};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The option that makes LLVM's AMDGPU backend print its resource remarks.
pub const REMARK_OPTION: &str = "-Rpass-analysis=kernel-resource-usage";

/// Code objects are far below this (about 40 KiB for greta's kernels).
const OBJECT_CAP: u64 = 64 << 20;

/// One kernel as the compiler accounts for it. A figure the compiler did
/// not print (an older LLVM prints fewer) is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// The kernel's symbol, e.g. `greta_gemm_f16`.
    pub name: String,
    /// `TotalSGPRs` (VCC, flat scratch and XNACK included).
    pub sgprs: Option<u64>,
    /// Architectural VGPRs.
    pub vgprs: Option<u64>,
    /// Accumulation VGPRs (the matrix cores' registers on gfx90a/gfx94x/gfx950).
    pub agprs: Option<u64>,
    pub scratch_bytes_per_lane: Option<u64>,
    pub dynamic_stack: Option<bool>,
    /// Waves per SIMD the compiler says can be resident at once.
    pub occupancy_waves_per_simd: Option<u64>,
    pub sgpr_spills: Option<u64>,
    pub vgpr_spills: Option<u64>,
    /// Static LDS (`__shared__`) per work-group.
    pub lds_bytes_per_block: Option<u64>,
}

/// The per-kernel records in a compile log. A remark line reads
/// `<file>:<line>:<col>: remark: <Key>: <value> [-Rpass-analysis=kernel-resource-usage]`;
/// `Function Name` starts a kernel's record. Other lines (warnings, the
/// source excerpt clang prints under a remark) are ignored.
pub fn parse_remarks(log: &str) -> Vec<KernelResources> {
    let tag = format!("[{REMARK_OPTION}]");
    let mut out: Vec<KernelResources> = Vec::new();
    for line in log.lines() {
        let Some(body) = line
            .split_once("remark:")
            .map(|(_, b)| b)
            .and_then(|b| b.trim_end().strip_suffix(tag.as_str()))
        else {
            continue;
        };
        let Some((key, value)) = body.trim().split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "Function Name" {
            out.push(KernelResources {
                name: value.to_string(),
                ..KernelResources::default()
            });
            continue;
        }
        let Some(k) = out.last_mut() else {
            continue;
        };
        let n = value.parse::<u64>().ok();
        match key {
            "TotalSGPRs" => k.sgprs = n,
            "VGPRs" => k.vgprs = n,
            "AGPRs" => k.agprs = n,
            "ScratchSize [bytes/lane]" => k.scratch_bytes_per_lane = n,
            "Dynamic Stack" => k.dynamic_stack = Some(value.eq_ignore_ascii_case("true")),
            "Occupancy [waves/SIMD]" => k.occupancy_waves_per_simd = n,
            "SGPRs Spill" => k.sgpr_spills = n,
            "VGPRs Spill" => k.vgpr_spills = n,
            "LDS Size [bytes/block]" => k.lds_bytes_per_block = n,
            _ => {}
        }
    }
    out
}

/// Compiles `unit` again with [`REMARK_OPTION`] (through the same compile
/// child), checks that the code equals `object` (the cached code object of
/// the same choice without the option) and returns the compiler's records.
pub fn measure(
    choice: &CompilerChoice,
    unit: &str,
    object: &Path,
) -> Result<Vec<KernelResources>, String> {
    let mut with_remarks = choice.clone();
    with_remarks.options.push(REMARK_OPTION.into());
    let dir = object.parent().unwrap_or(Path::new("."));
    let scratch = tempfile::Builder::new()
        .prefix(".resource-usage-")
        .tempfile_in(dir)
        .map_err(|e| format!("creating a file in {}: {e}", dir.display()))?;
    let with_remarks = compilers::of(with_remarks);
    let log = compile_with_log(&*with_remarks, unit, scratch.path()).map_err(|e| e.to_string())?;
    let read = |p: &Path| {
        greta_fsread::bytes(p, OBJECT_CAP).map_err(|e| format!("reading {}: {e}", p.display()))
    };
    let (cached, again) = (read(object)?, read(scratch.path())?);
    if cached != again {
        return Err(format!(
            "compiled with {REMARK_OPTION}, the compiler produced other code ({} bytes) than the cached object {} \
             ({} bytes); its figures would not describe that object",
            again.len(),
            object.display(),
            cached.len()
        ));
    }
    let kernels = parse_remarks(&log);
    if kernels.is_empty() {
        let head: Vec<&str> = log.lines().take(5).collect();
        return Err(format!(
            "the compiler printed no kernel-resource-usage remarks for {REMARK_OPTION} (its log began: {:?})",
            head.join(" / ")
        ));
    }
    Ok(kernels)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log as ROCm 6.4.3's hiprtc writes it (Debian sid, gfx942), two
    /// kernels, with clang's source excerpt under the first remark.
    const LOG: &str = "\
/tmp/comgr-eb86d2/input/t.cu:1:1: remark: Function Name: k [-Rpass-analysis=kernel-resource-usage]
    1 | extern \"C\" __global__ void k(float* y){ }
      | ^
/tmp/comgr-eb86d2/input/t.cu:1:1: remark:     TotalSGPRs: 8 [-Rpass-analysis=kernel-resource-usage]
/tmp/comgr-eb86d2/input/t.cu:1:1: remark:     VGPRs: 3 [-Rpass-analysis=kernel-resource-usage]
/tmp/comgr-eb86d2/input/t.cu:1:1: remark:     AGPRs: 0 [-Rpass-analysis=kernel-resource-usage]
/tmp/comgr-eb86d2/input/t.cu:1:1: remark:     ScratchSize [bytes/lane]: 0 [-Rpass-analysis=kernel-resource-usage]
/tmp/comgr-eb86d2/input/t.cu:1:1: remark:     Dynamic Stack: False [-Rpass-analysis=kernel-resource-usage]
/tmp/comgr-eb86d2/input/t.cu:1:1: remark:     Occupancy [waves/SIMD]: 8 [-Rpass-analysis=kernel-resource-usage]
/tmp/comgr-eb86d2/input/t.cu:1:1: remark:     SGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
/tmp/comgr-eb86d2/input/t.cu:1:1: remark:     VGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
/tmp/comgr-eb86d2/input/t.cu:1:1: remark:     LDS Size [bytes/block]: 1024 [-Rpass-analysis=kernel-resource-usage]
t.cu:3:5: warning: unused variable 'x' [-Wunused-variable]
t.cu:4:1: remark: Function Name: greta_gemm_f16 [-Rpass-analysis=kernel-resource-usage]
t.cu:4:1: remark:     VGPRs: 40 [-Rpass-analysis=kernel-resource-usage]
t.cu:4:1: remark:     Dynamic Stack: True [-Rpass-analysis=kernel-resource-usage]
";

    #[test]
    fn remarks_become_one_record_per_kernel() {
        let r = parse_remarks(LOG);
        assert_eq!(
            r,
            [
                KernelResources {
                    name: "k".into(),
                    sgprs: Some(8),
                    vgprs: Some(3),
                    agprs: Some(0),
                    scratch_bytes_per_lane: Some(0),
                    dynamic_stack: Some(false),
                    occupancy_waves_per_simd: Some(8),
                    sgpr_spills: Some(0),
                    vgpr_spills: Some(0),
                    lds_bytes_per_block: Some(1024),
                },
                KernelResources {
                    name: "greta_gemm_f16".into(),
                    vgprs: Some(40),
                    dynamic_stack: Some(true),
                    ..KernelResources::default()
                },
            ]
        );
    }

    #[test]
    fn a_log_without_remarks_or_with_garbage_gives_nothing() {
        assert!(parse_remarks("").is_empty());
        assert!(parse_remarks("t.cu:1:1: warning: x [-Wfoo]\nremark:\n: remark: : [x]").is_empty());
        // A figure before any Function Name has no kernel to go to.
        assert!(
            parse_remarks("a: remark: VGPRs: 3 [-Rpass-analysis=kernel-resource-usage]").is_empty()
        );
        // An unreadable number is absent, not zero.
        let r = parse_remarks(
            "a: remark: Function Name: k [-Rpass-analysis=kernel-resource-usage]\n\
             a: remark: VGPRs: lots [-Rpass-analysis=kernel-resource-usage]",
        );
        assert_eq!(r[0].vgprs, None);
    }
}
