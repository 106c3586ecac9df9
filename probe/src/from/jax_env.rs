//! `jax.print_environment_info()`: the versions of jax and jaxlib, the
//! devices jax's default backend uses and the kernel (`platform:
//! uname_result(...)`), without importing anything.
//!
//! ```text
//! jax:    0.4.35
//! jaxlib: 0.4.35
//! device info: AMD Radeon RX 9070 XT-1, 1 local devices"
//! platform: uname_result(system='Linux', ..., release='6.6.87.1-microsoft-standard-WSL2', ...)
//! ```
//! Older jax prints `jax.devices (1 total, 1 local): [CpuDevice(id=0)]`
//! instead of `device info:`, which names no GPU model.

use super::shared_lines::lines_of;
use crate::facts::{Facts, Framework, Gpu};

/// `jaxlib:` beside `jax:` or a device line: jax's own layout.
/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "jax-env",
    label: "jax.print_environment_info()",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&["jaxlib:"]],
};

pub fn recognise(text: &str) -> bool {
    let mut jaxlib = false;
    let mut other = false;
    for l in lines_of(text) {
        let t = l.trim_start();
        jaxlib |= t.starts_with("jaxlib:");
        other |= t.starts_with("jax:")
            || t.starts_with("device info:")
            || t.starts_with("jax.devices (");
    }
    jaxlib && other
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    for l in lines_of(text) {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("jax:").map(str::trim) {
            push_framework(&mut f, "jax", v);
        } else if let Some(v) = t.strip_prefix("jaxlib:").map(str::trim) {
            push_framework(&mut f, "jaxlib", v);
        } else if let Some(d) = t.strip_prefix("device info:") {
            if let Some(name) = device_kind(d) {
                let vendor = super::vulkaninfo::vendor_from_name(name);
                // The default backend's devices: `cpu-1` is jax on the CPU.
                if !name.eq_ignore_ascii_case("cpu") {
                    super::limits::push_gpu(
                        &mut f,
                        Gpu {
                            vendor,
                            name: name.to_string(),
                            seen_by: vec!["jax".into()],
                            ..Gpu::default()
                        },
                    );
                }
            }
        } else if let Some(p) = t.strip_prefix("platform: uname_result(") {
            if let Some(r) = quoted_field(p, "release") {
                f.kernel_version = Some(r.to_string());
            }
        }
    }
    f
}

/// `AMD Radeon RX 9070 XT-1, 1 local devices"` -> `AMD Radeon RX 9070 XT`:
/// jax prints the first device's kind, `-`, the device count.
fn device_kind(d: &str) -> Option<&str> {
    let head = d.split(',').next()?.trim();
    let (name, count) = head.rsplit_once('-')?;
    (!count.is_empty() && count.bytes().all(|b| b.is_ascii_digit()) && !name.trim().is_empty())
        .then(|| name.trim())
}

/// `release='6.6.87.1-microsoft-standard-WSL2'` inside a uname_result.
fn quoted_field<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let p = s.find(&format!("{key}='"))? + key.len() + 2;
    let rest = &s[p..];
    let v = &rest[..rest.find('\'')?];
    (!v.is_empty() && v.len() < 120).then_some(v)
}

fn push_framework(f: &mut Facts, name: &str, v: &str) {
    let v = v.split_whitespace().next().unwrap_or("");
    if !v.starts_with(|c: char| c.is_ascii_digit())
        || f.python.frameworks.iter().any(|x| x.name == name)
    {
        return;
    }
    f.python.frameworks.push(Framework {
        env: "pasted".into(),
        name: name.into(),
        version: v.into(),
        ..Framework::default()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Vendor;

    /// ROCm/jax#468 (RX 9070 XT under WSL2, after jax's NVIDIA notice) and
    /// the CUDA plugin's spelling of the same line (`NVIDIA GeForce RTX
    /// 3090-1, 1 local devices"`, from a jax-cuda12 machine).
    #[test]
    fn the_device_info_line_names_the_gpu() {
        let t = "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to gpu.\njax:    0.4.35\njaxlib: 0.4.35\nnumpy:  2.3.0\ndevice info: AMD Radeon RX 9070 XT-1, 1 local devices\"\nprocess_count: 1\nplatform: uname_result(system='Linux', node='DESKTOP-JOAO', release='6.6.87.1-microsoft-standard-WSL2', version='#1 SMP PREEMPT_DYNAMIC Mon Apr 21 17:08:54 UTC 2025', machine='x86_64')\n";
        assert!(recognise(t));
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].name, "AMD Radeon RX 9070 XT");
        assert_eq!(f.gpus[0].vendor, Vendor::Amd);
        assert_eq!(
            f.kernel_version.as_deref(),
            Some("6.6.87.1-microsoft-standard-WSL2")
        );
        let names: Vec<(&str, &str)> = f
            .python
            .frameworks
            .iter()
            .map(|x| (x.name.as_str(), x.version.as_str()))
            .collect();
        assert_eq!(names, [("jax", "0.4.35"), ("jaxlib", "0.4.35")]);
        let nv = parse("jax:    0.4.36\njaxlib: 0.4.36\ndevice info: NVIDIA GeForce RTX 3090-1, 1 local devices\"\n");
        assert_eq!(nv.gpus[0].name, "NVIDIA GeForce RTX 3090");
        assert_eq!(nv.gpus[0].vendor, Vendor::Nvidia);
    }

    /// jax on the CPU (`device info: cpu-1`) and older jax's
    /// `jax.devices (1 total, 1 local): [CpuDevice(id=0)]` (jax#25856)
    /// name no GPU; a line that only mentions jax is not this format.
    #[test]
    fn a_cpu_backend_lists_no_gpu() {
        let old = "jax:    0.4.31\njaxlib: 0.4.31\nnumpy:  2.2.1\njax.devices (1 total, 1 local): [CpuDevice(id=0)]\nprocess_count: 1\n";
        assert!(recognise(old));
        assert!(parse(old).gpus.is_empty());
        assert!(
            parse("jax:    0.4.30\njaxlib: 0.4.30\ndevice info: cpu-1, 1 local devices\"\n")
                .gpus
                .is_empty()
        );
        assert!(!recognise("pip install jax: done\nnothing else\n"));
        // A device kind without the count suffix is not guessed at.
        assert!(parse("jaxlib: 1\ndevice info: weird, 1 local devices\n")
            .gpus
            .is_empty());
    }

    /// jax's NVIDIA notice is a fallback to the CPU only when it says so:
    /// "... Falling back to cpu." (colabdock, a CPU-only jaxlib) is one;
    /// "... Falling back to gpu." (ROCm/jax#468, jax running on the ROCm
    /// plugin) is noise on an AMD machine.
    #[test]
    fn the_nvidia_notice_counts_only_when_jax_falls_back_to_the_cpu() {
        let id = |l: &str| crate::signals::classify(l).map(|s| s.id.as_str());
        let head = "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to";
        assert_eq!(id(&format!("{head} cpu.")), Some("jax-cuda-jaxlib-missing"));
        assert_eq!(
            id(&format!("WARNING:jax._src.xla_bridge:{head} cpu.")),
            Some("jax-cuda-jaxlib-missing")
        );
        assert_ne!(id(&format!("{head} gpu.")), Some("jax-cuda-jaxlib-missing"));
    }
}
