//! Compile-only: the pipelines an op runs with, created through no
//! pipeline cache with the driver's statistics and code captured
//! (VK_KHR_pipeline_executable_properties), then read and destroyed.
//! Nothing is allocated or submitted, so a driver that never executes (RADV
//! over Mesa's amdgpu drm-shim, docs/radeon.md) reports what its compiler
//! made of every kernel for the GPU it pretends to be.

use super::pipelines::{self, Build};
use super::plan::{Plan, Shader};
use super::Device;
use crate::error::RuntimeError;
use crate::tuning::Tuning;
use ash::vk;
use greta_kernels::Op;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One pipeline as its driver compiled it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Compiled {
    /// The op it runs (a composite's step for the steps of a graph).
    pub op: String,
    pub kernel: String,
    /// The plan's tuning (`wave` where a subgroup size was required).
    pub tuning: String,
    pub spec: Vec<u32>,
    /// The subgroup size the pipeline required (`None`: the driver's choice).
    pub required_wave: Option<u32>,
    /// Whether the kernel multiplies with cooperative matrices.
    pub coopmat: bool,
    /// The driver's executables for it (one compute shader: one, usually).
    pub executables: Vec<Executable>,
}

/// One executable of a pipeline: the statistics its driver gives, the
/// common ones by name (RADV's; `None` where the driver has no such one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Executable {
    pub name: String,
    /// The subgroup size it was compiled for.
    pub subgroup_size: u32,
    pub vgprs: Option<u64>,
    pub sgprs: Option<u64>,
    pub spilled_vgprs: Option<u64>,
    pub spilled_sgprs: Option<u64>,
    /// Scratch (private) memory, bytes per subgroup.
    pub scratch_bytes: Option<u64>,
    pub lds_bytes: Option<u64>,
    /// Subgroups (waves) per SIMD its registers and LDS allow.
    pub waves_per_simd: Option<u64>,
    pub code_bytes: Option<u64>,
    /// Matrix instructions in its disassembly (`v_wmma*`, `v_swmmac*`,
    /// `v_mfma*`, `v_smfmac*`); `None` where the driver gave no assembly.
    pub matrix_instructions: Option<u32>,
    /// Every statistic, by the driver's name.
    pub stats: BTreeMap<String, f64>,
}

impl Executable {
    /// Spilled registers of either kind, where the driver counts them.
    pub fn spills(&self) -> Option<u64> {
        match (self.spilled_vgprs, self.spilled_sgprs) {
            (None, None) => None,
            (v, s) => Some(v.unwrap_or(0) + s.unwrap_or(0)),
        }
    }
}

/// Whether `s` multiplies with cooperative matrices.
pub fn is_coopmat(s: Shader) -> bool {
    matches!(
        s,
        Shader::GemmF16Coopmat
            | Shader::GemmF16Cm2
            | Shader::GemmF16Cmreg
            | Shader::LinearF16Cm
            | Shader::LinearF16CmCs
            | Shader::LinearF16CmBt
            | Shader::LinearF16CmBtCs
            | Shader::LinearF16Cm2
            | Shader::AttnPrefillF16Cm
            | Shader::AttnPrefillF16Cm2
    )
}

/// Whether one line of disassembly is a matrix instruction.
fn is_matrix_line(line: &str) -> bool {
    let op = line.split_whitespace().next().unwrap_or("");
    ["v_wmma", "v_swmmac", "v_mfma", "v_smfmac"]
        .iter()
        .any(|p| op.starts_with(p))
}

/// Counts the matrix instructions in a disassembly.
pub fn count_matrix(text: &str) -> u32 {
    text.lines().filter(|l| is_matrix_line(l)).count() as u32
}

impl Device {
    /// Compile-only: every pipeline `op` runs with (for a composite op,
    /// those of its graph's steps, planned as a graph run plans them),
    /// each created with statistics capture and read back. The device must
    /// have been opened with [`super::OpenOptions::statistics`].
    pub fn compile_only(
        &mut self,
        op: &Op,
        tuning: Option<&Tuning>,
    ) -> Result<Vec<Compiled>, RuntimeError> {
        if !self.statistics {
            return Err(RuntimeError::Unsupported(
                "compile-only needs the device opened with statistics capture".into(),
            ));
        }
        let steps: Vec<(Op, Plan, u32)> = match op.composite() {
            Some(c) => {
                let c = c.map_err(RuntimeError::BadInput)?;
                c.graph
                    .steps
                    .iter()
                    .map(|st| {
                        let plan = self.plan_for(&st.op, None)?;
                        let nbind = (st.bind.len() + plan.aux.len()) as u32;
                        Ok((st.op.clone(), plan, nbind))
                    })
                    .collect::<Result<_, RuntimeError>>()?
            }
            None => {
                let plan = self.plan_for(op, tuning)?;
                let nbind = (op.inputs().len() + op.outputs().len() + plan.aux.len()) as u32;
                vec![(op.clone(), plan, nbind)]
            }
        };
        let mut out = Vec::new();
        for (step, plan, nbind) in &steps {
            let passes = std::iter::once((plan.shader, &plan.spec))
                .chain(plan.then.iter().map(|p| (p.shader, &p.spec)));
            for (shader, spec) in passes {
                let seen = out
                    .iter()
                    .any(|c: &Compiled| c.kernel == shader.name() && &c.spec == spec);
                if seen {
                    continue;
                }
                let how = Build {
                    shader,
                    spec,
                    bindings: *nbind,
                    wave: plan.wave,
                    capture: true,
                };
                let p = pipelines::create(&self.inner.device, vk::PipelineCache::null(), &how)?;
                let executables = executables(self, p.raw.raw())
                    .map_err(|e| RuntimeError::api("vkGetPipelineExecutable*KHR", e))?;
                out.push(Compiled {
                    op: step.to_string(),
                    kernel: shader.name().to_string(),
                    tuning: plan.tuning.to_string(),
                    spec: spec.clone(),
                    required_wave: plan.wave.map(|w| w.size),
                    coopmat: is_coopmat(shader),
                    executables,
                });
            }
        }
        Ok(out)
    }
}

/// What the driver says of each executable of `pipeline`.
fn executables(dev: &Device, pipeline: vk::Pipeline) -> Result<Vec<Executable>, vk::Result> {
    let ext = ash::khr::pipeline_executable_properties::Device::new(
        &dev.inner.device.instance().raw,
        &dev.inner.device.raw,
    );
    let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
    // SAFETY: a live pipeline of this device, which was created with the
    // extension and its feature enabled (`OpenOptions::statistics`).
    let props = unsafe { ext.get_pipeline_executable_properties(&info) }?;
    let mut out = Vec::with_capacity(props.len());
    for (i, p) in props.iter().enumerate() {
        let which = vk::PipelineExecutableInfoKHR::default()
            .pipeline(pipeline)
            .executable_index(i as u32);
        // SAFETY: as above; `i` is below the count the driver returned.
        let stats = unsafe { ext.get_pipeline_executable_statistics(&which) }?;
        let matrix = assembly(&ext, &which)?.map(|text| count_matrix(&text));
        let stats: BTreeMap<String, f64> = stats
            .iter()
            .map(|s| {
                let name = s.name_as_c_str().map(|n| n.to_string_lossy().into_owned());
                (name.unwrap_or_default(), stat_value(s))
            })
            .collect();
        let get = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| stats.get(*n))
                .map(|v| v.max(0.0) as u64)
        };
        out.push(Executable {
            name: p
                .name_as_c_str()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            subgroup_size: p.subgroup_size,
            vgprs: get(&["VGPRs"]),
            sgprs: get(&["SGPRs"]),
            spilled_vgprs: get(&["Spilled VGPRs"]),
            spilled_sgprs: get(&["Spilled SGPRs"]),
            scratch_bytes: get(&["Scratch size", "Scratch Memory Size"]),
            lds_bytes: get(&["LDS size", "LDS Memory Size"]),
            waves_per_simd: get(&["Subgroups per SIMD"]),
            code_bytes: get(&["Code size", "Code Size"]),
            matrix_instructions: matrix,
            stats,
        });
    }
    Ok(out)
}

/// A statistic's value as a number.
fn stat_value(s: &vk::PipelineExecutableStatisticKHR<'_>) -> f64 {
    // SAFETY: the union member read is the one `format` names.
    unsafe {
        match s.format {
            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32 as f64,
            vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64 as f64,
            vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64 as f64,
            vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => s.value.f64,
            _ => f64::NAN,
        }
    }
}

/// Most bytes of one internal representation read (a kernel's assembly is
/// tens of KiB; a driver's figure is not trusted for an allocation).
const MAX_REPR_BYTES: usize = 16 << 20;

/// The executable's disassembly, where the driver gives one (RADV: the
/// representation named "Assembly").
fn assembly(
    ext: &ash::khr::pipeline_executable_properties::Device,
    which: &vk::PipelineExecutableInfoKHR<'_>,
) -> Result<Option<String>, vk::Result> {
    // SAFETY: a live pipeline's executable (the caller's); ash asks the
    // count, then the names and sizes, with no data pointers.
    let mut reprs = unsafe { ext.get_pipeline_executable_internal_representations(which) }?;
    let Some(at) = reprs.iter().position(|r| {
        r.name_as_c_str()
            .is_ok_and(|n| n.to_string_lossy().to_lowercase().contains("assembly"))
    }) else {
        return Ok(None);
    };
    let mut bufs: Vec<Vec<u8>> = reprs
        .iter()
        .map(|r| vec![0u8; r.data_size.min(MAX_REPR_BYTES)])
        .collect();
    for (r, b) in reprs.iter_mut().zip(bufs.iter_mut()) {
        r.data_size = b.len();
        r.p_data = b.as_mut_ptr().cast();
    }
    let mut count = reprs.len() as u32;
    // SAFETY: `count` structures as the driver listed them, each pointing
    // at a live buffer of its `data_size` bytes; all outlive the call. A
    // buffer cut to MAX_REPR_BYTES is filled as far as it goes (INCOMPLETE).
    let res = unsafe {
        (ext.fp()
            .get_pipeline_executable_internal_representations_khr)(
            ext.device(),
            which,
            &mut count,
            reprs.as_mut_ptr(),
        )
    };
    if res != vk::Result::SUCCESS && res != vk::Result::INCOMPLETE {
        return Err(res);
    }
    let b = &bufs[at];
    let n = reprs[at].data_size.min(b.len());
    let end = b[..n].iter().position(|&c| c == 0).unwrap_or(n);
    Ok(Some(String::from_utf8_lossy(&b[..end]).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_instructions_are_counted_by_mnemonic() {
        let text = "\
  v_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7] ; comment
  v_mov_b32 v1, v2 ; v_wmma in a comment is not one
  v_wmma_f16_16x16x16_f16 v[0:3], v[8:15], v[16:23], v[0:3]
  s_endpgm
  v_mfma_f32_16x16x16_f16 a[0:3], v[0:1], v[2:3], a[0:3]
";
        assert_eq!(count_matrix(text), 3);
        assert_eq!(count_matrix(""), 0);
    }
}
