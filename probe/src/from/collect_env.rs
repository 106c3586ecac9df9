//! PyTorch's / vLLM's `collect_env` report: the framework build (ROCm, CUDA or
//! CPU) and the GPUs the framework saw, without importing anything.

use super::amd::find_gfx;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Framework, Gpu, Interpreter, Signal, Vendor};

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "collect-env",
    label: "collect_env (PyTorch/vLLM)",
    detect: recognise,
    parse,
    alone: false,
    markers: &[&[
        "Collecting environment information",
        "PyTorch version:",
        "ROCM used to build PyTorch",
        "Is CUDA available:",
    ]],
};

pub fn recognise(text: &str) -> bool {
    [
        "Collecting environment information",
        "PyTorch version:",
        "ROCM used to build PyTorch",
        "Is CUDA available:",
    ]
    .iter()
    .any(|m| text.contains(m))
}

fn known(v: &str) -> Option<&str> {
    let v = v.trim();
    (!v.is_empty() && !matches!(v, "N/A" | "Could not collect" | "None" | "No CUDA")).then_some(v)
}

pub fn parse(text: &str, source: &str) -> Facts {
    let mut f = Facts::default();
    let mut torch: Option<Framework> = None;
    let mut rocm_build: Option<String> = None;
    let mut cuda_build: Option<String> = None;
    let mut hip_runtime: Option<String> = None;
    let mut cuda_available: Option<bool> = None;
    let mut available_line: Option<(usize, String)> = None;
    let mut in_gpus = false;
    for (n, t) in lines_of(text)
        .enumerate()
        .flat_map(|(n, l)| wrapped_segments(l).into_iter().map(move |t| (n, t)))
    {
        if in_gpus {
            // Multi-GPU form: "GPU 0: NVIDIA A100-SXM4-80GB"
            if let Some(rest) = t
                .strip_prefix("GPU ")
                .and_then(|r| r.split_once(": "))
                .map(|x| x.1)
            {
                push_gpu(&mut f, rest);
                continue;
            }
            in_gpus = false;
        }
        let Some((k, v)) = t.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "PyTorch version" => {
                if let Some(v) = known(v) {
                    torch = Some(Framework {
                        env: "pasted".into(),
                        name: "torch".into(),
                        version: v.into(),
                        ..Framework::default()
                    })
                }
            }
            "ROCM used to build PyTorch" => rocm_build = known(v).map(String::from),
            "CUDA used to build PyTorch" => cuda_build = known(v).map(String::from),
            "HIP runtime version" => hip_runtime = known(v).map(String::from),
            "Is CUDA available" => {
                // torch 1.5 and older print Yes/No.
                cuda_available = Some(matches!(v, "True" | "Yes"));
                available_line = Some((n + 1, t.to_string()));
            }
            "Python version" => {
                if let Some(ver) = known(v).and_then(|v| v.split_whitespace().next()) {
                    f.python.interpreters.push(Interpreter {
                        path: "python (collect_env)".into(),
                        version: Some(ver.into()),
                    });
                }
            }
            "Python platform" => {
                if v.contains("microsoft-standard-WSL") || v.contains("-Microsoft-") {
                    f.wsl = Some(true);
                }
                if let Some(rest) = v.strip_prefix("Linux-") {
                    let end = rest
                        .find("-x86_64")
                        .or_else(|| rest.find("-aarch64"))
                        .unwrap_or(rest.len());
                    f.kernel_version = Some(rest[..end].to_string());
                }
            }
            "Nvidia driver version" => {
                if let Some(v) = known(v) {
                    f.kernel_driver_version = Some(v.into());
                }
            }
            "GPU models and configuration" => match known(v) {
                Some(v) => push_gpu(&mut f, v),
                None => in_gpus = v.is_empty(),
            },
            _ => {}
        }
    }
    if let Some(mut t) = torch {
        if let Some(r) = &rocm_build {
            t.backend = Some("rocm".into());
            t.backend_version = Some(r.clone());
        } else if let Some(c) = &cuda_build {
            t.backend = Some("cuda".into());
            t.backend_version = Some(c.clone());
        } else if t.version.contains("+cpu") || (rocm_build.is_none() && cuda_build.is_none()) {
            t.backend = Some("cpu".into());
        }
        f.python.frameworks.push(t);
    }
    if cuda_build.is_some() && rocm_build.is_none() {
        // A CUDA build enumerates NVIDIA devices only, whatever their name
        // says (`GPU 0: TITAN RTX`, pytorch#40682).
        for g in f.gpus.iter_mut().filter(|g| g.vendor == Vendor::Other) {
            g.vendor = Vendor::Nvidia;
        }
    }
    if rocm_build.is_some() {
        // A ROCm build enumerates HIP (AMD) devices only: a name without
        // the brand or only the id (`Device 66a1`, old
        // ROCm builds, which also gives the PCI id) is an AMD GPU.
        for g in f.gpus.iter_mut().filter(|g| g.vendor == Vendor::Other) {
            g.vendor = Vendor::Amd;
            if let Some(id) = g
                .name
                .strip_prefix("Device ")
                .filter(|h| h.len() == 4)
                .and_then(|h| u16::from_str_radix(h, 16).ok())
            {
                g.vendor_id = Some(super::amd::AMD);
                g.device_id = Some(id);
            }
        }
    }
    if let Some(build) = &rocm_build {
        // The ROCm release is the build's (3.7.20315-077bcfa0 is ROCm 3.7);
        // the HIP runtime version says it more precisely only when it is of
        // the same release (HIP 3.18 shipped in ROCm 3.7).
        let release = super::amd::rocm_release(build);
        f.rocm.version = match &hip_runtime {
            Some(h) if super::amd::rocm_release(h).starts_with(&release) => Some(h.clone()),
            _ => Some(release),
        };
        f.rocm.hip_version = hip_runtime;
        f.rocm.runtime_sees_gpu = cuda_available;
        // A ROCm build that sees no device is torch's HIP runtime saying
        // what "No HIP GPUs are available" says (vllm#34573): the same
        // signal, whether or not another paste shows the GPU.
        if let (Some(false), Some((line, t))) = (cuda_available, available_line) {
            f.signals.push(Signal {
                id: "no-rocm-device".into(),
                source: source.to_string(),
                line: Some(line),
                text: format!("{t} (a torch built for ROCm {build}: its HIP runtime found no GPU)"),
            });
        }
    }
    f
}

/// One pasted line as the lines the terminal showed: a wrap copied as a
/// run of 10 or more spaces before the next `Key: value` (pytorch#145670,
/// #148167) starts a line of its own. A run before a value (`Architecture:
/// x86_64`) or before vLLM's `: value` stays inside its line. Trimmed.
fn wrapped_segments(line: &str) -> Vec<&str> {
    let b = line.as_bytes();
    let mut cuts = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b' ' {
            i += 1;
            continue;
        }
        let run = i;
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        if i - run >= 10 && starts_key(&line[i..]) {
            cuts.push((run, i));
        }
    }
    if cuts.is_empty() {
        return vec![line.trim()];
    }
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut from = 0;
    for (run, next) in cuts {
        out.push(line[from..run].trim());
        from = next;
    }
    out.push(line[from..].trim());
    out.retain(|s| !s.is_empty());
    out
}

/// `HIP runtime version: N/A`: a key (a short name, no column padding) and its colon.
fn starts_key(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.split_once(':')
            .is_some_and(|(k, _)| k.len() <= 60 && !k.contains("  "))
}

fn push_gpu(f: &mut Facts, v: &str) {
    let gfx = find_gfx(v);
    let name = match v.rfind(" (") {
        Some(p) if gfx.is_some() => v[..p].trim().to_string(),
        _ => v.trim().to_string(),
    };
    let vendor = if gfx.is_some()
        || name.starts_with("AMD")
        || name.contains("Radeon")
        || name.contains("Instinct")
    {
        Vendor::Amd
    } else if name.contains("NVIDIA") || name.contains("GeForce") || name.contains("Tesla") {
        Vendor::Nvidia
    } else {
        Vendor::Other
    };
    super::limits::push_gpu(
        f,
        Gpu {
            vendor,
            name,
            gfx,
            seen_by: vec!["collect_env".into()],
            ..Gpu::default()
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminal's wrapped lines copied as one line padded with spaces:
    /// pytorch#145670 (`Collecting environment information...` then about
    /// 230 spaces and `PyTorch version: ...`) and pytorch#148167 (`cuDNN
    /// version: Could not collect`, spaces, `HIP runtime version: N/A`, ...).
    #[test]
    fn keys_after_a_wrapped_line_of_spaces_are_read() {
        let pad = " ".repeat(230);
        let t = format!("Collecting environment information...{pad}PyTorch version: 2.7.0.dev20250123+rocm6.3\nROCM used to build PyTorch: 6.3.42131-fa1d09cbd\ncuDNN version: Could not collect{pad}HIP runtime version: 6.3.42131{pad}MIOpen runtime version: 3.3.0\n");
        let f = parse(&t, "t");
        assert_eq!(f.python.frameworks.len(), 1);
        assert_eq!(f.python.frameworks[0].version, "2.7.0.dev20250123+rocm6.3");
        assert_eq!(f.rocm.hip_version.as_deref(), Some("6.3.42131"));
        // Aligned values and vLLM's `Key     : value` stay one line each.
        let v = "PyTorch version                      : 2.5.1+rocm6.2\nArchitecture:                       x86_64\n";
        assert_eq!(parse(v, "v").python.frameworks[0].version, "2.5.1+rocm6.2");
    }

    /// A CUDA build lists only NVIDIA devices, whatever their name says:
    /// torch 1.5 on Windows Server (pytorch#40682) lists `GPU 0: TITAN RTX`,
    /// and Quadro/Tesla-less names such as `A100-SXM4-80GB` exist too; a
    /// ROCm build lists only AMD ones (old builds print `Device 66a1`,
    /// pytorch#44106).
    #[test]
    fn the_build_names_the_vendor_of_unbranded_gpu_names() {
        let cuda = "PyTorch version: 1.5.0+cu101\nIs debug build: No\nCUDA used to build PyTorch: 10.1\nIs CUDA available: Yes\nGPU models and configuration:\nGPU 0: TITAN RTX\nGPU 1: TITAN RTX\n\nNvidia driver version: 442.92\n";
        let f = parse(cuda, "c");
        assert_eq!(f.gpus.len(), 2);
        assert!(
            f.gpus.iter().all(|g| g.vendor == Vendor::Nvidia),
            "{:?}",
            f.gpus
        );
        // Without a build line nothing is guessed.
        let none = "PyTorch version: N/A\nGPU models and configuration: TITAN RTX\n";
        assert_eq!(parse(none, "n").gpus[0].vendor, Vendor::Other);
    }
}
