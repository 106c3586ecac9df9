//! What a GPU says about itself while greta works it: power, temperature,
//! clocks and why the clocks are held down (sampled during a gate), its
//! error counters (read before and after a run), its PCIe link (current
//! against the most it can train to) and how many GPUs the node's own
//! records show (the PCI bus, KFD, NVML).
//!
//! NVIDIA through NVML, opened at run time like every vendor library greta
//! uses ([`nvml`]); AMD from the amdgpu driver's sysfs ([`amd`]), read under
//! a root directory so a captured machine (`--sysroot`) replays exactly.
//! Nothing here judges: the verdicts are `greta-smoke`'s, over these facts.

pub mod amd;
mod gpu_metrics;
pub mod nvml;
mod pci;
mod sampler;

pub use pci::{bus_gpu_count, gen_of_speed, kfd_gpu_count};
pub use sampler::{Sampler, Source, Timed};

use serde::{Deserialize, Serialize};

/// What held the clocks down at one instant, by family. Vendor bits are
/// folded into these four so NVML and amdgpu read alike; `other` covers
/// a hardware slowdown signal, sync boost, application clocks and the like.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub power: bool,
    pub thermal: bool,
    pub current: bool,
    pub other: bool,
}

impl Limits {
    pub fn any(&self) -> bool {
        self.power || self.thermal || self.current || self.other
    }
}

/// One reading of one GPU. A field the device or driver does not offer is
/// `None` (never a zero that would read as a fact).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// The device as its source names it ("nvml:0", "card1").
    pub device: String,
    pub power_w: Option<f64>,
    /// The power limit in force (NVML's enforced limit, hwmon's cap).
    pub power_limit_w: Option<f64>,
    pub temp_c: Option<f64>,
    /// Shader/graphics clock.
    pub sm_mhz: Option<u32>,
    pub mem_mhz: Option<u32>,
    /// `None` when the source has no throttle reasons at all.
    pub limits: Option<Limits>,
    /// The PCIe link as trained at this instant (GPUs lower it when idle,
    /// so the link is judged on the best seen under load).
    pub link: Option<LinkState>,
}

/// A PCIe link: generation (1 = 2.5 GT/s ... 5 = 32 GT/s) and lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkState {
    pub gen: u32,
    pub width: u32,
}

/// A device's link now and the most it can train to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub current: LinkState,
    pub max: LinkState,
}

/// One error counter of one device: `block` names where it counts (an
/// amdgpu RAS block such as `umc`, or NVML's "ECC"), `kind` what
/// ("uncorrectable", "correctable (volatile)", "bad pages", ...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counter {
    pub device: String,
    pub block: String,
    pub kind: String,
    pub value: u64,
}
