//! `greta __gpu build-kernels --resource-usage`: the compiler's own account
//! of each kernel it built for a target — registers, LDS or shared memory,
//! scratch or stack, spills, and on AMD occupancy — so that a machine with no
//! GPU (CI, the sid chroot of `scripts/sid-chroot.sh`, NVRTC unpacked from
//! Debian's package by `scripts/sid-nvrtc.sh`) can record what every kernel
//! costs on every target greta claims (docs/hip.md, "Every target,
//! compiled" and "Every CUDA architecture, compiled").
//!
//! On AMD the figures are LLVM's AMDGPU `kernel-resource-usage` remarks,
//! which hiprtc writes into its log when given `-Rpass-analysis=kernel-resource-usage`.
//! Occupancy is the compiler's figure (waves per SIMD, from the registers, the
//! LDS and the kernel's maximum work-group size): greta does not recompute
//! it. On NVIDIA the registers, stack frame and shared memory are read from
//! the CUBIN itself ([`super::cubin`]), and the spills from ptxas's
//! statistics (`--ptxas-options=-v`), whose registers and stack frame must
//! equal the CUBIN's. Either way the log comes from a second compile with
//! that one option added; its code must be byte-identical to the one in the
//! cache, or the figures are refused, since they would describe other code.

use super::cubin;
use crate::compilers;
use crate::gpu::compile::compile_with_log;
use crate::gpu::compiler::{CompilerChoice, CompilerKind};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The option that makes LLVM's AMDGPU backend print its resource remarks.
pub const REMARK_OPTION: &str = "-Rpass-analysis=kernel-resource-usage";

/// The option that makes NVRTC's ptxas print each kernel's statistics.
pub const PTXAS_OPTION: &str = "--ptxas-options=-v";

/// Code objects are far below this (about 40 KiB for greta's kernels on
/// AMD, 600 KiB as a CUBIN).
const OBJECT_CAP: u64 = 64 << 20;

/// One kernel as the compiler accounts for it. A figure the compiler did
/// not give (an older LLVM prints fewer; NVIDIA has no SGPRs) is `None`.
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
    /// AMD: scratch per lane. NVIDIA: the stack frame per thread (local
    /// memory: spill slots and local arrays).
    pub scratch_bytes_per_lane: Option<u64>,
    pub dynamic_stack: Option<bool>,
    /// Waves per SIMD the compiler says can be resident at once.
    pub occupancy_waves_per_simd: Option<u64>,
    pub sgpr_spills: Option<u64>,
    pub vgpr_spills: Option<u64>,
    /// Static LDS (`__shared__`) per work-group; NVIDIA: the static shared
    /// memory per block as the CUBIN declares it.
    pub lds_bytes_per_block: Option<u64>,
    /// NVIDIA: registers per thread (EIATTR_REGCOUNT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers: Option<u64>,
    /// NVIDIA: bytes ptxas spilled to and reloaded from local memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill_store_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill_load_bytes: Option<u64>,
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

/// One kernel as ptxas's statistics (`--ptxas-options=-v`) describe it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PtxasKernel {
    pub name: String,
    pub registers: Option<u64>,
    pub stack_frame_bytes: Option<u64>,
    pub spill_store_bytes: Option<u64>,
    pub spill_load_bytes: Option<u64>,
}

/// The kernels in NVRTC's log of a compile with `--ptxas-options=-v`:
/// `Compiling entry function 'K' for 'sm_90'` starts a kernel, `Function
/// properties for F` is followed by `N bytes stack frame, S bytes spill
/// stores, L bytes spill loads` (F may be a device function, whose figures
/// are not a kernel's), and `Used N registers` ends the kernel's record.
pub fn parse_ptxas(log: &str) -> Vec<PtxasKernel> {
    let mut out: Vec<PtxasKernel> = Vec::new();
    let mut properties_of: Option<String> = None;
    // `N word` pairs of a line (`0 bytes stack frame, 8 bytes spill stores`).
    let figure = |text: &str, what: &str| -> Option<u64> {
        let at = text.find(what)?;
        text[..at]
            .split([',', ':'])
            .next_back()?
            .trim()
            .parse()
            .ok()
    };
    for line in log.lines() {
        let Some(body) = line.strip_prefix("ptxas") else {
            continue;
        };
        let body = body.trim_start_matches([' ', '\t', '.']).trim_start();
        let body = body
            .strip_prefix("info")
            .map_or(body, |b| b.trim_start().trim_start_matches(':').trim());
        if let Some(rest) = body.strip_prefix("Compiling entry function '") {
            if let Some((name, _)) = rest.split_once('\'') {
                out.push(PtxasKernel {
                    name: name.to_string(),
                    ..PtxasKernel::default()
                });
            }
            properties_of = None;
        } else if let Some(name) = body.strip_prefix("Function properties for ") {
            properties_of = Some(name.trim().to_string());
        } else if body.contains("bytes stack frame") {
            let Some(k) = out
                .last_mut()
                .filter(|k| properties_of.as_deref() == Some(&k.name))
            else {
                continue;
            };
            k.stack_frame_bytes = figure(body, "bytes stack frame");
            k.spill_store_bytes = figure(body, "bytes spill stores");
            k.spill_load_bytes = figure(body, "bytes spill loads");
        } else if let Some(rest) = body.strip_prefix("Used ") {
            if let Some(k) = out.last_mut() {
                k.registers = figure(&format!(": {rest}"), "registers");
            }
            properties_of = None;
        }
    }
    out
}

/// How a cached code object and its rebuild differ, if they do (`None`:
/// the same code), or why they cannot be compared.
type Differ = fn(&[u8], &[u8]) -> Result<Option<String>, String>;

/// Compiles `unit` again with `option` (through the same compile child),
/// checks that the code equals `object` (the cached code object of the same
/// choice without the option: by `same`) and returns that code and the
/// compiler's log.
fn log_of_the_same_code(
    choice: &CompilerChoice,
    option: &str,
    unit: &str,
    object: &Path,
    differ: Differ,
) -> Result<(Vec<u8>, String), String> {
    let mut with_option = choice.clone();
    with_option.options.push(option.into());
    let dir = object.parent().unwrap_or(Path::new("."));
    let scratch = tempfile::Builder::new()
        .prefix(".resource-usage-")
        .tempfile_in(dir)
        .map_err(|e| format!("creating a file in {}: {e}", dir.display()))?;
    let with_option = compilers::of(with_option);
    let log = compile_with_log(&*with_option, unit, scratch.path()).map_err(|e| e.to_string())?;
    let read = |p: &Path| {
        greta_fsread::bytes(p, OBJECT_CAP).map_err(|e| format!("reading {}: {e}", p.display()))
    };
    let (cached, again) = (read(object)?, read(scratch.path())?);
    if let Some(how) = differ(&cached, &again)? {
        return Err(format!(
            "compiled with {option}, the compiler produced other code than the cached object {} \
             ({how}); its figures would not describe that object",
            object.display()
        ));
    }
    Ok((cached, log))
}

/// The compiler's figures for each kernel of `object`, the cached code of
/// `choice` for `unit` (hiprtc's remarks, or the CUBIN and ptxas's
/// statistics).
pub fn measure(
    choice: &CompilerChoice,
    unit: &str,
    object: &Path,
) -> Result<Vec<KernelResources>, String> {
    match choice.kind {
        CompilerKind::Nvrtc => measure_cubin(choice, unit, object),
        CompilerKind::Hiprtc | CompilerKind::Hipcc => measure_remarks(choice, unit, object),
    }
}

fn measure_remarks(
    choice: &CompilerChoice,
    unit: &str,
    object: &Path,
) -> Result<Vec<KernelResources>, String> {
    let (_, log) = log_of_the_same_code(choice, REMARK_OPTION, unit, object, other_bytes)?;
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

fn measure_cubin(
    choice: &CompilerChoice,
    unit: &str,
    object: &Path,
) -> Result<Vec<KernelResources>, String> {
    let (code, log) = log_of_the_same_code(choice, PTXAS_OPTION, unit, object, other_kernels)?;
    let stats = parse_ptxas(&log);
    combine(
        cubin::kernels(&code).map_err(|e| format!("{}: {e}", object.display()))?,
        &stats,
    )
}

/// How two code objects differ, byte for byte (hiprtc's: the same options
/// give the same bytes).
fn other_bytes(cached: &[u8], again: &[u8]) -> Result<Option<String>, String> {
    Ok((cached != again).then(|| format!("{} bytes against {}", again.len(), cached.len())))
}

/// How two CUBINs differ in their kernels: the kernels they hold, each
/// one's machine code, or its resource attributes (`cubin::kernels`).
/// What else differs (NVRTC 13 notes its options in the CUBIN) is no
/// difference in the code the figures describe.
fn other_kernels(cached: &[u8], again: &[u8]) -> Result<Option<String>, String> {
    let (a, b) = (cubin::code(cached)?, cubin::code(again)?);
    if a.keys().ne(b.keys()) {
        return Ok(Some(format!(
            "kernels {:?} against {:?}",
            b.keys().collect::<Vec<_>>(),
            a.keys().collect::<Vec<_>>()
        )));
    }
    if let Some(k) = a
        .iter()
        .find(|(k, code)| b.get(*k) != Some(*code))
        .map(|(k, _)| k)
    {
        return Ok(Some(format!("the machine code of {k} differs")));
    }
    let (ka, kb) = (cubin::kernels(cached)?, cubin::kernels(again)?);
    Ok(ka
        .iter()
        .zip(&kb)
        .find(|(x, y)| x != y)
        .map(|(x, _)| format!("the resource attributes of {} differ", x.name)))
}

/// The CUBIN's figures with ptxas's spills. Where ptxas printed a kernel's
/// statistics, its registers and stack frame must be the CUBIN's: else one
/// of the two readings is wrong and neither is given. A kernel ptxas said
/// nothing about (a newer NVRTC may print no statistics) has no spill
/// figures.
fn combine(
    kernels: Vec<cubin::CubinKernel>,
    stats: &[PtxasKernel],
) -> Result<Vec<KernelResources>, String> {
    let mut out = Vec::new();
    for k in kernels {
        let s = stats.iter().find(|s| s.name == k.name);
        if let Some(s) = s {
            if s.registers != k.registers || s.stack_frame_bytes != k.frame_bytes {
                return Err(format!(
                    "{}: ptxas says {:?} registers and a {:?}-byte stack frame, the CUBIN {:?} and {:?}",
                    k.name, s.registers, s.stack_frame_bytes, k.registers, k.frame_bytes
                ));
            }
        }
        out.push(KernelResources {
            name: k.name,
            registers: k.registers,
            scratch_bytes_per_lane: k.frame_bytes,
            lds_bytes_per_block: Some(k.shared_bytes),
            spill_store_bytes: s.and_then(|s| s.spill_store_bytes),
            spill_load_bytes: s.and_then(|s| s.spill_load_bytes),
            ..KernelResources::default()
        });
    }
    Ok(out)
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
                    ..KernelResources::default()
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

    /// NVRTC 12.4's log of `--ptxas-options=-v` (sm_90): a kernel without
    /// and one with spills, a device function that was not inlined (its
    /// figures are not the kernel's), and a warning between.
    const PTXAS_LOG: &str = "\
ptxas info    : 144 bytes gmem
ptxas info    : Compiling entry function 'greta_noop' for 'sm_90'
ptxas info    : Function properties for greta_noop
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 4 registers
ptxas info    : Function properties for helper
ptxas         .     64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Compiling entry function 'spill' for 'sm_90'
ptxas info    : Function properties for spill
ptxas         .     1080 bytes stack frame, 1068 bytes spill stores, 2104 bytes spill loads
ptxas warning : Registers are spilled to local memory in function 'spill', 1068 bytes spill stores, 2104 bytes spill loads
ptxas info    : Used 64 registers, 1080 bytes cumulative stack size, 37888 bytes smem, 388 bytes cmem[0]
";

    #[test]
    fn ptxas_statistics_become_one_record_per_kernel() {
        assert_eq!(
            parse_ptxas(PTXAS_LOG),
            [
                PtxasKernel {
                    name: "greta_noop".into(),
                    registers: Some(4),
                    stack_frame_bytes: Some(0),
                    spill_store_bytes: Some(0),
                    spill_load_bytes: Some(0),
                },
                PtxasKernel {
                    name: "spill".into(),
                    registers: Some(64),
                    stack_frame_bytes: Some(1080),
                    spill_store_bytes: Some(1068),
                    spill_load_bytes: Some(2104),
                },
            ]
        );
        // NVRTC 13's log without statistics, garbage: nothing, no panic.
        assert!(parse_ptxas("").is_empty());
        assert!(parse_ptxas("ptxas\nptxas info : Used\nptxas . bytes stack frame").is_empty());
        let k = &parse_ptxas("ptxas info : Compiling entry function 'k' for 'sm_80'\nptxas info : Used lots registers")[0];
        assert_eq!((k.name.as_str(), k.registers), ("k", None));
    }

    #[test]
    fn the_cubin_and_ptxas_must_agree_or_no_figures_are_given() {
        let cubin = |name: &str, registers, frame| cubin::CubinKernel {
            name: name.into(),
            registers: Some(registers),
            frame_bytes: Some(frame),
            shared_bytes: 38912,
        };
        let stats = parse_ptxas(PTXAS_LOG);
        let r = combine(
            vec![cubin("greta_noop", 4, 0), cubin("spill", 64, 1080)],
            &stats,
        )
        .unwrap();
        assert_eq!(
            r[1],
            KernelResources {
                name: "spill".into(),
                registers: Some(64),
                scratch_bytes_per_lane: Some(1080),
                lds_bytes_per_block: Some(38912),
                spill_store_bytes: Some(1068),
                spill_load_bytes: Some(2104),
                ..KernelResources::default()
            }
        );
        // No statistics for a kernel: its CUBIN figures, no spill figures.
        let r = combine(vec![cubin("other", 30, 0)], &stats).unwrap();
        assert_eq!((r[0].registers, r[0].spill_store_bytes), (Some(30), None));
        // Disagreement on registers or on the frame: refused.
        for bad in [cubin("spill", 65, 1080), cubin("spill", 64, 1072)] {
            let e = combine(vec![bad], &stats).unwrap_err();
            assert!(e.starts_with("spill: ptxas says Some(64) registers"), "{e}");
        }
        // The AMD fields stay absent from the JSON of a CUDA kernel and the
        // NVIDIA ones from an AMD kernel's.
        let json =
            serde_json::to_value(&combine(vec![cubin("greta_noop", 4, 0)], &stats).unwrap()[0])
                .unwrap();
        assert_eq!(json["registers"], 4);
        assert_eq!(json["spill_store_bytes"], 0);
        let amd = serde_json::to_value(KernelResources::default()).unwrap();
        assert!(
            amd.get("registers").is_none() && amd.get("spill_load_bytes").is_none(),
            "{amd}"
        );
    }
}
