//! What profile selection knows of a machine: a small summary the caller
//! builds from its own probe. The lock set reads no machine itself, so it
//! builds without the doctor's probe (and its Vulkan enumerator).

/// The machine a profile is chosen for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Host {
    /// The NVIDIA GPU, where the machine has one: the CUDA profile is chosen.
    pub nvidia: Option<Nvidia>,
    /// The AMD side, where the machine has an AMD GPU or a ROCm agent.
    pub amd: Option<Amd>,
    /// Every other GPU, as `name (vendor)` in lower case: said when the
    /// CPU profile is chosen for want of a supported one.
    pub other_gpus: Vec<String>,
}

/// The NVIDIA side of a machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nvidia {
    /// The first NVIDIA GPU's name (may be empty).
    pub name: String,
    /// The NVIDIA kernel driver's version, where known.
    pub driver: Option<String>,
}

/// The AMD side of a machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Amd {
    /// Each GPU target once, lower case, sorted (`gfx942`).
    pub gfx: Vec<String>,
    /// The GPUs' marketing names, each once (may be empty).
    pub names: Vec<String>,
    /// Whether the KFD (the only way ROCm wheels reach the GPU) is there.
    pub kfd: Kfd,
    /// The host's ROCm release, taken as evidence of the kernel driver's
    /// release (amdgpu-install ships both).
    pub rocm: Option<RocmRelease>,
    /// HSA_OVERRIDE_GFX_VERSION as set in the environment.
    pub hsa_override: Option<String>,
    /// amdgpu module version (DKMS builds report one; in-tree drivers do not).
    pub driver_version: Option<String>,
    /// Each AMD GPU's target in ROCr's order (HIP device i with no
    /// selection set), where it is known (the KFD topology); else empty.
    pub hip_order: Vec<Option<String>>,
}

/// What is known of /dev/kfd, with the evidence in words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Kfd {
    Present(String),
    Missing(String),
    #[default]
    Unknown,
}

/// The host's ROCm release and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RocmRelease {
    /// As the host reports it ("7.2.4"); one that does not read as a
    /// version counts as unknown.
    pub version: String,
    /// Where it came from, for the reason line ("ROCm 7.2.4 at /opt/rocm-7.2.4 (ROCM_PATH)").
    pub at: String,
}
