//! `greta smoke --compile-only`: every gate of every kernel profile (or
//! the `--gate`s asked) planned for the Vulkan device and each of its
//! pipelines created with the driver's statistics captured, through no
//! pipeline cache and with no buffer or submission. What RADV's compiler
//! makes of each kernel for a GPU, even one faked by Mesa's drm-shim
//! (docs/radeon.md).

use crate::gates::{Catalog, Profile};
use greta_runtime::{
    Backend, CacheDir, Compiled, DeviceSelect, Executable, RuntimeError, VulkanDevice,
    VulkanOptions,
};
use serde::{Deserialize, Serialize};

/// The result's schema name.
pub const SCHEMA: &str = "greta.smoke-compile/v1";

/// What a compile-only run found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompileReport {
    pub schema: String,
    pub device: CompiledDevice,
    pub gates: Vec<CompiledGate>,
}

/// The device, as its driver reports it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompiledDevice {
    pub name: String,
    pub driver: String,
    pub driver_info: String,
    pub api_version: String,
    pub min_subgroup_size: u32,
    pub max_subgroup_size: u32,
    pub max_shared_memory: u32,
}

/// One gate: its pipelines, or why it was not planned or built.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompiledGate {
    pub id: String,
    pub op: String,
    pub profiles: Vec<Profile>,
    /// Why the device cannot run it (not planned): `supports`' answer.
    pub unsupported: Option<String>,
    /// A pipeline the driver failed to create, or statistics it failed to give.
    pub error: Option<String>,
    pub pipelines: Vec<Compiled>,
}

impl CompileReport {
    /// Gates whose pipelines could not all be created.
    pub fn failed(&self) -> impl Iterator<Item = &CompiledGate> {
        self.gates.iter().filter(|g| g.error.is_some())
    }
}

/// Opens `select` (Vulkan) for compile-only and builds every gate's
/// pipelines: the gates `selected`, else every non-test gate of a kernel
/// profile. An error is one that prevents the whole run (no device, a
/// device without statistics, an unknown gate).
pub fn compile_only(
    catalog: &Catalog,
    select: &DeviceSelect,
    selected: &[String],
) -> Result<CompileReport, RuntimeError> {
    let gates = gates(catalog, selected).map_err(RuntimeError::BadInput)?;
    let mut dev = VulkanDevice::open_with(&VulkanOptions {
        select: select.clone(),
        cache: CacheDir::Off,
        tuning_cache: CacheDir::Off,
        statistics: true,
        ..VulkanOptions::default()
    })?;
    let info = dev.info().clone();
    let mut out = Vec::with_capacity(gates.len());
    for g in gates {
        let mut row = CompiledGate {
            id: g.id.clone(),
            op: g.op.to_string(),
            profiles: g.profiles.clone(),
            unsupported: None,
            error: None,
            pipelines: Vec::new(),
        };
        match dev.supports(&g.op) {
            Err(why) => row.unsupported = Some(why),
            Ok(()) => match dev.compile_only(&g.op, None) {
                Ok(p) => row.pipelines = p,
                Err(RuntimeError::Unsupported(why)) => row.unsupported = Some(why),
                Err(e) => row.error = Some(e.to_string()),
            },
        }
        out.push(row);
    }
    Ok(CompileReport {
        schema: SCHEMA.into(),
        device: CompiledDevice {
            name: info.name.clone(),
            driver: info.driver_id.to_string(),
            driver_info: info.driver_info.clone(),
            api_version: info.api_version.clone(),
            min_subgroup_size: info.min_subgroup_size,
            max_subgroup_size: info.max_subgroup_size,
            max_shared_memory: info.max_shared_memory,
        },
        gates: out,
    })
}

/// The gates asked (`selected`), else every non-test gate of a profile
/// that runs kernels, each once, in catalogue order.
fn gates(catalog: &Catalog, selected: &[String]) -> Result<Vec<crate::gates::Gate>, String> {
    if !selected.is_empty() {
        return catalog.plan(Profile::Default, selected, false);
    }
    Ok(catalog
        .gates
        .iter()
        .filter(|g| !g.test_only && g.profiles.iter().any(|p| p.runs_kernels()))
        .cloned()
        .collect())
}

/// A dash for what the driver did not say.
fn num(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// One executable's statistics as table cells joined by ` | `: wave (`*`
/// when the driver chose it), VGPRs, SGPRs, spills, scratch, LDS,
/// waves/SIMD, code bytes, matrix instructions. The text table here and
/// docs/radeon.md's rows are both made of it.
pub fn statistics_cells(p: &Compiled, e: &Executable) -> String {
    format!(
        "{}{} | {} | {} | {} | {} | {} | {} | {} | {}",
        e.subgroup_size,
        if p.required_wave.is_some() { "" } else { "*" },
        num(e.vgprs),
        num(e.sgprs),
        num(e.spills()),
        num(e.scratch_bytes),
        num(e.lds_bytes),
        num(e.waves_per_simd),
        num(e.code_bytes),
        e.matrix_instructions.map_or("-".into(), |m| m.to_string()),
    )
}

/// The report as a text table: a row per pipeline.
pub fn render(r: &CompileReport) -> String {
    let d = &r.device;
    let mut s = format!(
        "{} ({} {}), Vulkan {}, subgroups {}..={}, {} bytes of shared memory\n",
        d.name,
        d.driver,
        d.driver_info,
        d.api_version,
        d.min_subgroup_size,
        d.max_subgroup_size,
        d.max_shared_memory
    );
    s += "gate | kernel | wave | VGPRs | SGPRs | spills | scratch | LDS | waves/SIMD | code | matrix\n";
    for g in &r.gates {
        if let Some(why) = &g.unsupported {
            s += &format!("{} | not planned: {why}\n", g.id);
            continue;
        }
        if let Some(e) = &g.error {
            s += &format!("{} | FAILED: {e}\n", g.id);
            continue;
        }
        for p in &g.pipelines {
            for e in &p.executables {
                s += &format!("{} | {} | {}\n", g.id, p.kernel, statistics_cells(p, e));
            }
        }
    }
    s += "wave: the subgroup size compiled for (* the driver's choice, else required by greta)\n";
    s
}
