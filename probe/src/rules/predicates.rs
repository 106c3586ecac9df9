//! Named yes/no questions about [`Facts`] that rules (rules.toml) combine.
//!
//! One unit struct per predicate, each beside its unit test, all collected
//! in [`PREDICATES`] (the list the rules engine evaluates, rule loading
//! checks names against, and the docs test walks): adding a predicate is
//! one struct and one line in the list, and nothing else can drift.
//! Each carries its evidence (the fact, or the signal's `source:line`), so a
//! finding can always say what it is based on. Template variables for the
//! messages are computed here too, from the same [`View`].

mod gpu;
mod hip;
mod nodes;
mod python;
mod rocm;
mod vulkan;

use crate::facts::{DeviceNode, Facts, Gpu, Vendor};
use crate::from::amd;
use greta_vocab::VkFamily;
use std::collections::BTreeMap;

/// One named question about the facts.
pub trait Predicate: Sync {
    /// The name rules.toml uses.
    fn name(&self) -> &'static str;
    /// When it is true, in a few words (docs/doctor.md's predicate table).
    #[allow(dead_code, reason = "for readers; the docs test holds the table to it")]
    fn meaning(&self) -> &'static str;
    /// The facts it reads, as paths in the `facts` JSON (`gpus`,
    /// `vulkan.icds`...); a test checks each one exists.
    #[allow(dead_code, reason = "for readers; a test checks each path exists")]
    fn reads(&self) -> &'static [&'static str];
    /// Its evidence lines when it holds; `None` when it does not.
    fn eval(&self, v: &View) -> Option<Vec<String>>;
}

/// The three describing methods of a [`Predicate`] impl, from its name,
/// meaning and the facts it reads: what each predicate says of itself is
/// one line beside its `eval`, not nine lines of accessors.
macro_rules! about {
    ($name:literal, $meaning:literal, [$($read:literal),* $(,)?]) => {
        fn name(&self) -> &'static str {
            $name
        }
        fn meaning(&self) -> &'static str {
            $meaning
        }
        fn reads(&self) -> &'static [&'static str] {
            &[$($read),*]
        }
    };
}
use about;

/// Every predicate a rule may name (besides `signal:<id>`), in the order
/// of docs/doctor.md's table. Each is named by at least one rule (a test
/// checks it).
pub const PREDICATES: &[&dyn Predicate] = &[
    &gpu::NoGpuKnown,
    &gpu::AMD_GPU_PRESENT,
    &gpu::NvidiaGpuNoAmd,
    &PCI_SCANNED,
    &gpu::PciShowsNoAmdGpu,
    &gpu::GPU_VF,
    &gpu::AmdGpuDriverUnbound,
    &gpu::AmdGpuPassedThrough,
    &gpu::AmdgpuNotLoaded,
    &gpu::Wsl,
    &nodes::KfdNodeAbsent,
    &nodes::KfdNotOpenable,
    &nodes::RenderNodeNotOpenable,
    &ROCM_SCANNED,
    &rocm::ROCM_ABSENT,
    &rocm::RocmMultiple,
    &rocm::RocmRuntimeSeesNoGpu,
    &rocm::HsaOverrideSet,
    &rocm::LdLibraryPathRocm,
    &hip::HipIgpuFirst,
    &hip::HipSelectionHidesAll,
    &hip::HipSelectionNamesMissing,
    &hip::HipFailedOnIgpu,
    &vulkan::VULKAN_LOADER_ABSENT,
    &vulkan::VULKAN_NO_ICDS,
    &vulkan::VulkanIcdLibraryMissing,
    &vulkan::VulkanOnlyCpuDevices,
    &vulkan::VulkanRadvInstalled,
    &vulkan::VulkanDuplicateGpu,
    &vulkan::VulkanAmdIcdsBoth,
    &vulkan::VulkanAmdvlkInstalled,
    &vulkan::VulkanIcdChosenByEnv,
    &vulkan::AmdSwitchableLayerPresent,
    &vulkan::AmdSwitchableLayerDisabled,
    &vulkan::VulkanInPlay,
    &gpu::GFX94X_PRESENT,
    &gpu::ApuSmallVram,
    &PYTHON_SCANNED,
    &python::PYTHON_ABSENT,
    &python::FrameworkBackendMismatch,
    &python::TherockDeviceWheelMissing,
];

/// "`area` was inspected completely, so what it lacks is a fact", and
/// (for an absence) "it holds none of what is looked for": the one
/// question behind `pci_scanned`, `rocm_scanned` and `python_scanned`, and
/// `rocm_absent`, `vulkan_loader_absent`, `vulkan_no_icds` and
/// `python_absent` (each a `const` beside its test).
pub struct Scanned {
    name: &'static str,
    meaning: &'static str,
    reads: &'static [&'static str],
    /// The `scanned` entry a source records when it read the area whole.
    area: &'static str,
    /// What must also hold of the facts (`|_| true` for none).
    and: fn(&Facts) -> bool,
    evidence: &'static str,
}

impl Predicate for Scanned {
    fn name(&self) -> &'static str {
        self.name
    }
    fn meaning(&self) -> &'static str {
        self.meaning
    }
    fn reads(&self) -> &'static [&'static str] {
        self.reads
    }
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        when(v.scanned(self.area) && (self.and)(v.facts), || {
            vec![self.evidence.into()]
        })
    }
}

const PCI_SCANNED: Scanned = Scanned {
    name: "pci_scanned",
    meaning: "the PCI bus was read completely (live or sysroot)",
    reads: &["scanned"],
    area: "pci",
    and: |_| true,
    evidence: "PCI bus read",
};

const ROCM_SCANNED: Scanned = Scanned {
    name: "rocm_scanned",
    meaning: "every ROCm install location was inspected",
    reads: &["scanned"],
    area: "rocm",
    and: |_| true,
    evidence: "ROCm install locations read",
};

const PYTHON_SCANNED: Scanned = Scanned {
    name: "python_scanned",
    meaning: "Python interpreters on PATH were looked for",
    reads: &["scanned"],
    area: "python",
    and: |_| true,
    evidence: "PATH searched for Python",
};

/// The predicate called `name`.
pub fn find(name: &str) -> Option<&'static dyn Predicate> {
    PREDICATES.iter().copied().find(|p| p.name() == name)
}

/// `Some(evidence())` when `cond` holds: the shape of every predicate.
fn when(cond: bool, evidence: impl FnOnce() -> Vec<String>) -> Option<Vec<String>> {
    cond.then(evidence)
}

/// The facts with the selections several predicates and the template
/// variables share, computed once per diagnosis.
pub struct View<'f> {
    pub facts: &'f Facts,
    /// GPUs that are not CPU/software devices.
    pub gpus: Vec<&'f Gpu>,
    pub amd: Vec<&'f Gpu>,
    pub nvidia: Vec<&'f Gpu>,
    /// The HIP device order and what the selection leaves.
    pub hip: Option<crate::hip_order::HipDevices>,
}

impl<'f> View<'f> {
    pub fn new(facts: &'f Facts) -> View<'f> {
        let gpus: Vec<&Gpu> = facts
            .gpus
            .iter()
            .filter(|g| g.vendor != Vendor::Cpu)
            .collect();
        let of = |v: Vendor| gpus.iter().copied().filter(|g| g.vendor == v).collect();
        View {
            facts,
            amd: of(Vendor::Amd),
            nvidia: of(Vendor::Nvidia),
            gpus,
            hip: crate::hip_order::hip_devices(facts),
        }
    }

    /// Whether a source inspected `area` completely (so absence is a fact).
    pub fn scanned(&self, area: &str) -> bool {
        self.facts.scanned.iter().any(|s| s == area)
    }

    /// SR-IOV virtual functions.
    pub fn vfs(&self) -> Vec<&'f Gpu> {
        self.gpus.iter().copied().filter(|g| g.vf).collect()
    }

    /// MI300-class AMD GPUs.
    pub fn gfx94x(&self) -> Vec<&'f Gpu> {
        self.amd
            .iter()
            .copied()
            .filter(|g| g.gfx.as_deref().is_some_and(|x| x.starts_with("gfx94")))
            .collect()
    }

    pub fn kfd(&self) -> Option<&'f DeviceNode> {
        self.facts
            .device_nodes
            .iter()
            .find(|n| n.path == "/dev/kfd")
    }

    /// Groups the user lacks for any device node, first-seen order.
    pub fn missing_groups(&self) -> Vec<String> {
        let mut missing: Vec<String> = Vec::new();
        for n in &self.facts.device_nodes {
            for g in &n.missing_groups {
                if !missing.contains(g) {
                    missing.push(g.clone());
                }
            }
        }
        missing
    }

    /// "PATH (VERSION)[, active]" per ROCm install.
    pub fn rocm_installs(&self) -> Vec<String> {
        self.facts
            .rocm
            .installs
            .iter()
            .map(|i| {
                format!(
                    "{} ({}){}",
                    i.path,
                    i.version.as_deref().unwrap_or("version unknown"),
                    if i.active { ", active" } else { "" }
                )
            })
            .collect()
    }

    /// The last value of a Vulkan-related environment variable.
    pub fn vulkan_env(&self, k: &str) -> Option<String> {
        self.facts
            .vulkan
            .env
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, x)| x.clone())
    }

    /// `NAME=value` of the variables that choose the Vulkan driver.
    pub fn vulkan_choice(&self) -> Vec<String> {
        ["AMD_VULKAN_ICD", "VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
            .iter()
            .filter_map(|k| self.vulkan_env(k).map(|x| format!("{k}={x}")))
            .collect()
    }
}

/// "GPU <description>" per GPU: the evidence of the GPU predicates.
fn gpu_lines(l: &[&Gpu]) -> Vec<String> {
    l.iter().map(|g| format!("GPU {}", describe(g))).collect()
}

#[derive(Debug, Default, Clone)]
pub struct Eval {
    /// Predicate name (or `signal:<id>`) -> evidence lines; absent = false.
    pub truths: BTreeMap<String, Vec<String>>,
    /// Template variables for messages.
    pub vars: BTreeMap<&'static str, String>,
}

impl Eval {
    pub fn holds(&self, name: &str) -> bool {
        self.truths.contains_key(name)
    }
    pub fn evidence(&self, name: &str) -> &[String] {
        self.truths.get(name).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Template variables every message may use.
pub const VARS: &[&str] = &[
    "gpus",
    "amd_gpus",
    "vf_gpus",
    "gfx94x_gpus",
    "gfx",
    "rocm_version",
    "rocm_installs",
    "rocm_active",
    "hsa_override",
    "hsa_override_gfx",
    "ld_rocm",
    "vulkan_drivers",
    "vulkan_devices",
    "vulkan_choice",
    "kfd_group",
    "missing_groups",
    "frameworks",
    "vram",
    "gtt",
    "user",
    "override_value",
    "override_note",
    "override_command",
    "hipblaslt_note",
    "hipblaslt_command",
    "install_command",
    "hip_igpu",
    "hip_dgpu",
    "hip_dgpu_index",
    "hip_failed",
    "hip_selection",
    "mesa_install_command",
    "amd_vulkan_icd_command",
    "vk_driver_files_command",
    "selection_unset_command",
];

pub fn describe(g: &Gpu) -> String {
    let mut s = if g.name.is_empty() {
        format!("{} GPU", vendor_name(g.vendor))
    } else {
        g.name.clone()
    };
    let mut extra = Vec::new();
    if let Some(x) = &g.gfx {
        extra.push(x.clone());
    }
    if let (Some(v), Some(d)) = (g.vendor_id, g.device_id) {
        extra.push(format!("{v:04x}:{d:04x}"));
    }
    if let Some(p) = &g.pci_address {
        extra.push(p.clone());
    }
    if !extra.is_empty() {
        s.push_str(&format!(" [{}]", extra.join(", ")));
    }
    if !g.seen_by.is_empty() {
        s.push_str(&format!(" (seen by {})", g.seen_by.join(", ")));
    }
    s
}

/// Name and gfx only, for messages (evidence carries the full description).
pub fn short(g: &Gpu) -> String {
    g.label(|| format!("{} GPU", vendor_name(g.vendor)))
}

fn vendor_name(v: Vendor) -> &'static str {
    match v {
        Vendor::Amd => "AMD",
        Vendor::Nvidia => "NVIDIA",
        Vendor::Intel => "Intel",
        Vendor::Cpu => "CPU",
        Vendor::Other => "unknown-vendor",
    }
}

/// Every predicate and every `signal:<id>` that holds for `f`, with its
/// evidence, and the template variables.
pub fn evaluate(f: &Facts) -> Eval {
    evaluate_for(f, &[])
}

/// [`evaluate`], with the lock profiles a fix may name.
pub fn evaluate_for(f: &Facts, profiles: &[crate::rules::ProfileTargets]) -> Eval {
    let v = View::new(f);
    let mut e = Eval::default();
    for p in PREDICATES {
        if let Some(ev) = p.eval(&v) {
            e.truths.insert(p.name().to_string(), ev);
        }
    }
    for s in &f.signals {
        let ev = format!(
            "{}:{}: {}",
            s.source,
            s.line.map(|l| l.to_string()).unwrap_or_else(|| "?".into()),
            s.text
        );
        e.truths
            .entry(format!("signal:{}", s.id))
            .or_default()
            .push(ev);
    }
    e.vars = vars(&v);
    e.vars
        .insert("install_command", install_command(&v, profiles));
    e
}

/// `greta install --profile NAME` when a text shows the GPU's target and
/// the installed build (a ROCm torch) and a profile carries that target
/// (the first of `profiles`, the caller's order), else `greta install`
/// (which picks one from the machine).
fn install_command(v: &View, profiles: &[crate::rules::ProfileTargets]) -> String {
    let built_for_rocm = v
        .facts
        .python
        .frameworks
        .iter()
        .any(|f| f.backend.as_deref() == Some("rocm"));
    let gfx = v.amd.iter().find_map(|g| g.gfx.as_deref());
    let profile = gfx
        .filter(|_| built_for_rocm)
        .and_then(|g| profiles.iter().find(|p| p.gfx.iter().any(|x| x == g)));
    match profile {
        Some(p) => format!("greta install --profile {}", p.name),
        None => "greta install".into(),
    }
}

/// The template variables ([`VARS`]) for one diagnosis.
fn vars(v: &View) -> BTreeMap<&'static str, String> {
    let f = v.facts;
    let join = |l: Vec<String>| listed(&l, "; ", "none");
    let shorts = |l: &[&Gpu]| join(l.iter().map(|g| short(g)).collect());
    let mut vars = BTreeMap::new();
    vars.insert("gpus", shorts(&v.gpus));
    vars.insert("amd_gpus", shorts(&v.amd));
    vars.insert("vf_gpus", shorts(&v.vfs()));
    vars.insert("gfx94x_gpus", shorts(&v.gfx94x()));
    // The target of the device a GPU error names, where the HIP order
    // says which one it is; else every AMD GPU's.
    let failed = f.rocm.failed_hip_device;
    let failed_gfx = v
        .hip
        .as_ref()
        .zip(failed)
        .and_then(|(d, i)| d.device(i as usize))
        .and_then(|g| g.gfx.clone());
    let gfx: Vec<String> = match failed_gfx {
        Some(x) => vec![x],
        None => {
            let mut x: Vec<String> = v.amd.iter().filter_map(|g| g.gfx.clone()).collect();
            x.dedup();
            x
        }
    };
    vars.extend(hip::vars(v.hip.as_ref(), failed));
    vars.insert("gfx", listed(&gfx, ", ", "unknown"));
    vars.insert(
        "rocm_version",
        f.rocm.version.clone().unwrap_or_else(|| "unknown".into()),
    );
    vars.insert("rocm_installs", join(v.rocm_installs()));
    let active = f.rocm.installs.iter().find(|i| i.active);
    vars.insert(
        "rocm_active",
        match active {
            Some(i) => format!(
                "{} ({})",
                i.path,
                f.rocm
                    .active_reason
                    .as_deref()
                    .unwrap_or("default location")
            ),
            None => "none".into(),
        },
    );
    let (ovr_value, mut ovr_note) = override_hint(&gfx);
    if v.hip.as_ref().is_some_and(|d| d.several_families()) {
        // HSA_OVERRIDE_GFX_VERSION makes every GPU of the process run as
        // one target: beside a GPU of another family it breaks that one.
        ovr_note.push_str(
            " (an override applies to every GPU of the process: with GPUs of several families, hide the others from HIP first)",
        );
    }
    // The override is a command of the fix only where it can help (a
    // stand-in of the family, not the GPU's own target, a target known).
    vars.insert(
        "override_command",
        if override_helps(&gfx) {
            format!("export HSA_OVERRIDE_GFX_VERSION={ovr_value}")
        } else {
            String::new()
        },
    );
    vars.insert("override_value", ovr_value);
    vars.insert("override_note", ovr_note);
    // hipBLASLt's variable only where hipBLASLt is in the evidence.
    let hipblaslt = f.signals.iter().any(|s| s.id.starts_with("hipblaslt"));
    vars.insert(
        "hipblaslt_note",
        if hipblaslt {
            " For the hipBLASLt error set TORCH_BLAS_PREFER_HIPBLASLT=0 (PyTorch then uses hipBLAS).".into()
        } else {
            String::new()
        },
    );
    vars.insert(
        "hipblaslt_command",
        if hipblaslt {
            "export TORCH_BLAS_PREFER_HIPBLASLT=0".into()
        } else {
            String::new()
        },
    );
    let ovr = f.rocm.hsa_override_gfx_version.as_deref();
    vars.insert("hsa_override", ovr.unwrap_or("unset").to_string());
    vars.insert(
        "hsa_override_gfx",
        ovr.and_then(amd::gfx_from_override)
            .unwrap_or_else(|| "an invalid target".into()),
    );
    vars.insert("ld_rocm", join(f.rocm.ld_library_path_rocm.clone()));
    vars.insert(
        "vulkan_drivers",
        join(
            f.vulkan
                .drivers
                .iter()
                .map(|k| k.name().to_string())
                .collect(),
        ),
    );
    vars.insert(
        "vulkan_devices",
        join(
            f.vulkan
                .devices
                .iter()
                .map(|d| format!("{} ({})", d.name, d.kind.name()))
                .collect(),
        ),
    );
    let choice = v.vulkan_choice();
    vars.insert(
        "vulkan_choice",
        if choice.is_empty() {
            "greta keeps RADV when two ICDs expose one GPU".into()
        } else {
            format!("the environment chooses: {}", choice.join(", "))
        },
    );
    vars.insert(
        "kfd_group",
        v.kfd()
            .and_then(|n| n.group.clone())
            .unwrap_or_else(|| "render".into()),
    );
    vars.insert(
        "missing_groups",
        listed(&v.missing_groups(), ",", "render,video"),
    );
    vars.insert(
        "frameworks",
        join(
            f.python
                .frameworks
                .iter()
                .map(|x| {
                    format!(
                        "{} {} ({} {})",
                        x.name,
                        x.version,
                        x.backend.as_deref().unwrap_or("?"),
                        x.backend_version.as_deref().unwrap_or("")
                    )
                })
                .collect(),
        ),
    );
    // "NAME: SIZE" per AMD GPU that reports the memory `bytes` reads.
    let memory = |bytes: fn(&Gpu) -> Option<u64>| {
        join(
            v.amd
                .iter()
                .filter_map(|g| {
                    bytes(g).map(|b| {
                        format!(
                            "{}: {}",
                            if g.name.is_empty() { "GPU" } else { &g.name },
                            greta_vocab::size::memory(b)
                        )
                    })
                })
                .collect(),
        )
    };
    vars.extend(vulkan_commands(v));
    // Unset the device selection variables that are set, not every name.
    let set: Vec<&str> = crate::hip_order::SELECTION_VARS
        .iter()
        .copied()
        .filter(|k| f.rocm.visible_devices.iter().any(|(n, _)| n == k))
        .collect();
    vars.insert(
        "selection_unset_command",
        if set.is_empty() {
            String::new()
        } else {
            format!("unset {}", set.join(" "))
        },
    );
    vars.insert("gtt", memory(|g| g.gtt_bytes));
    vars.insert("vram", memory(|g| g.vram_bytes));
    vars.insert("user", "$USER".into());
    vars
}

/// The Vulkan driver commands of a fix, each only where the facts call for
/// it (empty otherwise, and the engine leaves an empty command out):
/// - `mesa_install_command`: Mesa's drivers, unless RADV (from the same
///   package) is installed and loads; on a machine whose PCI bus shows no
///   GPU, only for lavapipe (the CPU device) and only where lavapipe is
///   missing, and the command says so;
/// - `amd_vulkan_icd_command`: `AMD_VULKAN_ICD=RADV`, which only AMD's
///   own driver packages read, where AMDVLK/AMDGPU-PRO is known beside a
///   GPU;
/// - `vk_driver_files_command`: `VK_DRIVER_FILES` naming the RADV manifest
///   the facts hold (never a guessed path), beside a GPU.
fn vulkan_commands(v: &View) -> [(&'static str, String); 3] {
    let vk = &v.facts.vulkan;
    let loads = |k: VkFamily| -> Option<&str> {
        vk.icds
            .iter()
            .find(|i| i.kind == k && i.library_ok != Some(false) && i.error.is_none())
            .map(|i| i.manifest.as_str())
    };
    let drives = |k: VkFamily| vk.devices.iter().any(|d| d.kind == k);
    let radv = loads(VkFamily::Radv).is_some() || drives(VkFamily::Radv);
    let lavapipe = loads(VkFamily::Lavapipe).is_some() || drives(VkFamily::Lavapipe);
    let no_gpu = v.gpus.is_empty();
    let bus_without_gpu = no_gpu && v.scanned("pci");
    let mesa = if radv || (bus_without_gpu && lavapipe) {
        String::new()
    } else if bus_without_gpu {
        "sudo apt install mesa-vulkan-drivers  # lavapipe: the CPU Vulkan device greta uses without a GPU".into()
    } else {
        "sudo apt install mesa-vulkan-drivers".into()
    };
    let amd_pkg = vk
        .drivers
        .iter()
        .chain(vk.icds.iter().map(|i| &i.kind))
        .any(|k| matches!(k, VkFamily::Amdvlk | VkFamily::AmdgpuPro))
        || drives(VkFamily::Amdvlk)
        || drives(VkFamily::AmdgpuPro);
    let amd_icd = if amd_pkg && !no_gpu {
        "export AMD_VULKAN_ICD=RADV".into()
    } else {
        String::new()
    };
    let files = match loads(VkFamily::Radv) {
        Some(m) if !no_gpu => format!("export VK_DRIVER_FILES={m}"),
        _ => String::new(),
    };
    [
        ("mesa_install_command", mesa),
        ("amd_vulkan_icd_command", amd_icd),
        ("vk_driver_files_command", files),
    ]
}

/// `l` joined by `sep`, or `empty` when there is nothing to list.
fn listed(l: &[String], sep: &str, empty: &str) -> String {
    if l.is_empty() {
        empty.to_string()
    } else {
        l.join(sep)
    }
}

/// Stopgap `HSA_OVERRIDE_GFX_VERSION` per GPU family: run as the nearest
/// target ROCm libraries commonly ship (ERRORS.md C1/C3: 10.3.0 for RDNA2,
/// 11.0.0 for RDNA3; Strix Halo/Point use the gfx1151 kernels, ollama#14855).
/// Phoenix (gfx1103) and Strix are native in ROCm 7.x wheels, so for them
/// the real fix is a newer stack (ERRORS.md C1: forcing 11.0.0 is "actively
/// wrong on the 780M"). Families with no known stand-in get no value.
const OVERRIDE_FAMILIES: &[(&str, &str)] = &[
    ("gfx103", "10.3.0"),
    ("gfx110", "11.0.0"),
    ("gfx115", "11.5.1"),
    ("gfx120", "12.0.1"),
    ("gfx90c", "9.0.0"),
    ("gfx902", "9.0.0"),
    ("gfx909", "9.0.0"),
];

/// (value for `export HSA_OVERRIDE_GFX_VERSION=`, one sentence for the fix).
fn override_hint(gfx: &[String]) -> (String, String) {
    let Some(g) = gfx.first() else {
        return (
            "<major.minor.stepping>".into(),
            "the GPU's target is not known here: look it up with rocminfo before choosing an override".into(),
        );
    };
    match OVERRIDE_FAMILIES.iter().find(|(p, _)| g.starts_with(p)) {
        Some((_, v)) if amd::gfx_from_override(v).as_deref() == Some(g.as_str()) => (
            (*v).into(),
            format!("{g} is itself the target {v} names: an override cannot add kernels, only a stack built for {g} can"),
        ),
        Some((_, v)) => (
            (*v).into(),
            format!("as a stopgap, run {g} as its family's commonly shipped target with HSA_OVERRIDE_GFX_VERSION={v}, and remove it once the stack ships {g}"),
        ),
        None => (
            "<major.minor.stepping>".into(),
            format!("no override stand-in is known for {g}: use a stack (or an older one) built for {g}"),
        ),
    }
}

/// Whether an override stand-in can help the first target of `gfx`: its
/// family has one and the target is not that stand-in itself.
fn override_helps(gfx: &[String]) -> bool {
    gfx.first().is_some_and(|g| {
        OVERRIDE_FAMILIES.iter().any(|(p, v)| {
            g.starts_with(p) && amd::gfx_from_override(v).as_deref() != Some(g.as_str())
        })
    })
}

/// The device node `n` as evidence of a node this user cannot open.
fn node_line(n: &DeviceNode) -> String {
    format!(
        "{}: mode {} group {}, not openable by this user{}",
        n.path,
        n.mode.as_deref().unwrap_or("?"),
        n.group.as_deref().unwrap_or("?"),
        if n.missing_groups.is_empty() {
            String::new()
        } else {
            format!(" (not in: {})", n.missing_groups.join(", "))
        }
    )
}

#[cfg(test)]
mod tests;
