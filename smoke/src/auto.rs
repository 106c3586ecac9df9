//! `--backend auto`: which backend this machine's gates run on, and the
//! one line that says why. The decision is [`choose`], on a [`Machine`]
//! the caller fills with what it sees of the GPUs and Vulkan (the `greta`
//! binary reads them with its probe) and this crate completes with which
//! HIP/CUDA runtime it would load ([`choose_with`]), so the decision itself
//! is testable on any machine.

use crate::session::{BackendChoice, DeviceChoice};
use greta_runtime::DeviceSelect;

/// What `auto` decided, and the one line that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub backend: BackendChoice,
    pub why: String,
}

/// What the choice looks at: the GPUs and Vulkan devices the caller saw,
/// the runtimes [`Machine::find_runtimes`] found; passed in so the
/// decision itself is testable on any machine.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    /// AMD GPUs as "name (gfxNNN)" with their gfx target when known.
    pub amd_gpus: Vec<(String, Option<String>)>,
    /// Vulkan devices that are not CPU implementations (lavapipe).
    pub vulkan_gpus: Vec<String>,
    /// Vulkan CPU devices (lavapipe/llvmpipe).
    pub vulkan_cpus: Vec<String>,
    /// Why Vulkan lists nothing (no loader, enumeration failed), when it does not.
    pub vulkan_error: Option<String>,
    /// The HIP runtime greta would load (libamdhip64 and why), if any.
    pub rocm: Option<String>,
    /// NVIDIA GPUs by name.
    pub nvidia_gpus: Vec<String>,
    /// The CUDA driver library greta would load, if any.
    pub cuda: Option<String>,
}

/// `--backend auto`: the backend the device's frameworks use where greta's
/// own path through it is the reliable one — HIP on gfx94x (Vulkan is known
/// to fail there), CUDA on NVIDIA GPUs with a CUDA driver (what torch, JAX
/// and Triton run on there); on RDNA and elsewhere Vulkan (RADV) when it
/// sees a GPU, HIP when Vulkan has no GPU to offer and ROCm is present.
pub fn choose(device: &DeviceChoice, m: &Machine) -> Choice {
    let vulkan = |why: String| Choice {
        backend: BackendChoice::Vulkan,
        why,
    };
    let hip = |why: String| Choice {
        backend: BackendChoice::Hip,
        why,
    };
    if is_cpu(device) {
        return vulkan("--device cpu is Vulkan's CPU device (lavapipe)".into());
    }
    let names = |v: &[(String, Option<String>)]| {
        v.iter()
            .map(|(n, g)| match g {
                Some(g) => format!("{n} ({g})"),
                None => n.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let gfx94x: Vec<(String, Option<String>)> = m
        .amd_gpus
        .iter()
        .filter(|(_, g)| is_gfx94x(g.as_deref()))
        .cloned()
        .collect();
    if !gfx94x.is_empty() {
        return hip(format!(
            "{} is an MI300-class GPU (gfx94x), where Vulkan is known to fail",
            names(&gfx94x)
        ));
    }
    if let (false, Some(lib)) = (m.nvidia_gpus.is_empty(), &m.cuda) {
        return Choice {
            backend: BackendChoice::Cuda,
            why: format!(
                "{} is an NVIDIA GPU: CUDA is what its frameworks use ({lib})",
                m.nvidia_gpus.join(", ")
            ),
        };
    }
    if !m.vulkan_gpus.is_empty() {
        return vulkan(format!("Vulkan sees {}", m.vulkan_gpus.join(", ")));
    }
    let vulkan_state = match (&m.vulkan_error, m.vulkan_cpus.is_empty()) {
        (Some(e), _) => format!("Vulkan is unusable ({e})"),
        (None, true) => "Vulkan lists no device".to_string(),
        (None, false) => format!(
            "Vulkan lists only its CPU device ({})",
            m.vulkan_cpus.join(", ")
        ),
    };
    let vulkan_usable = m.vulkan_error.is_none() && !m.vulkan_cpus.is_empty();
    match &m.rocm {
        Some(r) if !vulkan_usable => hip(format!("{vulkan_state} and ROCm is present ({r})")),
        Some(r) if !m.amd_gpus.is_empty() => hip(format!(
            "{vulkan_state}, but the machine has an AMD GPU ({}) and ROCm is present ({r})",
            names(&m.amd_gpus)
        )),
        Some(_) => vulkan(format!("{vulkan_state}, and there is no AMD GPU for HIP")),
        None if vulkan_usable => vulkan(format!("{vulkan_state}; no AMD GPU with ROCm for HIP")),
        None => vulkan(format!(
            "{vulkan_state}, and no ROCm for HIP either (no libamdhip64 found)"
        )),
    }
}

impl Choice {
    /// The backend the run is asked for: HIP and CUDA as chosen (they run
    /// in the device child), Vulkan as `auto` (the report records that
    /// `auto` was asked and each device says which backend ran it).
    pub fn run_as(&self) -> BackendChoice {
        match self.backend {
            BackendChoice::Hip | BackendChoice::Cuda => self.backend,
            BackendChoice::Auto | BackendChoice::Vulkan => BackendChoice::Auto,
        }
    }
}

/// `--device cpu` is Vulkan's CPU device, whatever the machine has.
fn is_cpu(device: &DeviceChoice) -> bool {
    matches!(device, DeviceChoice::One(DeviceSelect::Cpu))
}

impl Machine {
    /// An AMD GPU of the MI300 class (gfx94x), where Vulkan is known to
    /// fail (so its Vulkan side need not even be read).
    pub fn has_gfx94x(&self) -> bool {
        self.amd_gpus.iter().any(|(_, g)| is_gfx94x(g.as_deref()))
    }

    /// Fills in which HIP runtime (always) and CUDA driver (when there is
    /// an NVIDIA GPU) the device child would load. The child is asked:
    /// opening a runtime runs its initialisers, and one that crashes or
    /// hangs must not take this process with it.
    pub fn find_runtimes(&mut self) {
        use crate::gpu_child::{runtime, GpuBackend};
        let shown = |b| {
            runtime(b, &[])
                .ok()
                .and_then(|a| a.runtime)
                .map(|r| r.library.to_string())
        };
        self.rocm = shown(GpuBackend::Hip);
        if !self.nvidia_gpus.is_empty() {
            self.cuda = shown(GpuBackend::Cuda);
        }
    }
}

fn is_gfx94x(gfx: Option<&str>) -> bool {
    gfx.is_some_and(|g| g.starts_with("gfx94"))
}

/// [`choose`] on this machine: `seen` reads its GPUs and Vulkan devices
/// (not called for `--device cpu`, which needs no probing), then the
/// runtimes are found here.
pub fn choose_with(device: &DeviceChoice, seen: impl FnOnce() -> Machine) -> Choice {
    if is_cpu(device) {
        return choose(device, &Machine::default());
    }
    let mut m = seen();
    m.find_runtimes();
    choose(device, &m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amd(name: &str, gfx: &str) -> (String, Option<String>) {
        (name.into(), Some(gfx.into()))
    }

    /// `auto` on `m` picks `backend`, and its reason says each of `because`.
    fn picks(m: &Machine, backend: BackendChoice, because: &[&str]) {
        let c = choose(&DeviceChoice::default(), m);
        assert_eq!(c.backend, backend, "{}", c.why);
        for said in because {
            assert!(c.why.contains(said), "{said:?} not in: {}", c.why);
        }
    }

    #[test]
    fn auto_picks_hip_on_gfx94x_whatever_vulkan_says() {
        let m = Machine {
            amd_gpus: vec![amd("AMD Instinct MI300X VF", "gfx942")],
            vulkan_gpus: vec!["AMD Instinct MI300X (RADV GFX942)".into()],
            ..Machine::default()
        };
        picks(
            &m,
            BackendChoice::Hip,
            &["gfx942", "Vulkan is known to fail"],
        );
    }

    #[test]
    fn auto_keeps_vulkan_where_it_has_a_gpu_or_hip_has_nothing() {
        let radv = Machine {
            amd_gpus: vec![amd("AMD Radeon 760M", "gfx1103")],
            vulkan_gpus: vec!["AMD Radeon 760M (RADV GFX1103_R1)".into()],
            rocm: Some("hipcc /usr/bin/hipcc".into()),
            ..Machine::default()
        };
        picks(&radv, BackendChoice::Vulkan, &["RADV GFX1103"]);
        // Lavapipe only, no AMD GPU: Vulkan's CPU device, even with ROCm installed.
        let lavapipe = Machine {
            vulkan_cpus: vec!["llvmpipe (LLVM 15.0.6, 256 bits)".into()],
            rocm: Some("hipcc /usr/bin/hipcc".into()),
            ..Machine::default()
        };
        picks(
            &lavapipe,
            BackendChoice::Vulkan,
            &["only its CPU device", "no AMD GPU"],
        );
        // No Vulkan and no ROCm: Vulkan, whose own error then says what is missing.
        let bare = Machine {
            vulkan_error: Some("no Vulkan loader, libvulkan.so.1".into()),
            ..Machine::default()
        };
        picks(&bare, BackendChoice::Vulkan, &["no ROCm"]);
        // --device cpu means lavapipe.
        let c = choose(&"cpu".parse().unwrap(), &radv);
        assert_eq!(c.backend, BackendChoice::Vulkan);
    }

    #[test]
    fn auto_picks_hip_when_vulkan_is_unusable_and_rocm_is_there() {
        let m = Machine {
            amd_gpus: vec![amd("AMD Instinct MI210", "gfx90a")],
            vulkan_error: Some("no Vulkan loader, libvulkan.so.1".into()),
            rocm: Some("libamdhip64 /opt/rocm/lib/libamdhip64.so".into()),
            ..Machine::default()
        };
        picks(
            &m,
            BackendChoice::Hip,
            &["Vulkan is unusable", "ROCm is present"],
        );
        // Vulkan has only lavapipe but the AMD GPU is there for HIP.
        let m = Machine {
            vulkan_cpus: vec!["llvmpipe".into()],
            vulkan_error: None,
            ..m
        };
        picks(&m, BackendChoice::Hip, &["MI210 (gfx90a)"]);
    }

    #[test]
    fn auto_picks_cuda_on_nvidia_with_a_driver_and_vulkan_without() {
        let m = Machine {
            nvidia_gpus: vec!["NVIDIA H200".into()],
            vulkan_gpus: vec!["NVIDIA H200".into()],
            cuda: Some("libcuda /usr/lib/libcuda.so.1".into()),
            ..Machine::default()
        };
        picks(&m, BackendChoice::Cuda, &["NVIDIA H200", "libcuda"]);
        picks(&Machine { cuda: None, ..m }, BackendChoice::Vulkan, &[]);
    }

    #[test]
    fn cpu_needs_no_probing_and_vulkan_runs_as_auto() {
        // --device cpu decides without reading the machine at all.
        let c = choose_with(&"cpu".parse().unwrap(), || {
            panic!("--device cpu must not probe the machine")
        });
        assert_eq!(c.backend, BackendChoice::Vulkan);
        // What the run is asked for: the report keeps `auto` for Vulkan,
        // HIP and CUDA go to the device child as chosen.
        let as_run = |backend| {
            Choice {
                backend,
                why: String::new(),
            }
            .run_as()
        };
        assert_eq!(as_run(BackendChoice::Vulkan), BackendChoice::Auto);
        assert_eq!(as_run(BackendChoice::Hip), BackendChoice::Hip);
        assert_eq!(as_run(BackendChoice::Cuda), BackendChoice::Cuda);
    }
}
