//! ollama server logs (`ollama serve`, `journalctl -u ollama`, `server.log`):
//! Go `logfmt` lines, `time=... level=WARN source=amd_linux.go:376 msg="..." key=value`.
//! They name the GPUs ollama's discovery saw and what it decided about them:
//! `amdgpu is not supported (supported types:[...]) gpu_type=gfx906 gpu=0`,
//! the older `amdgpu [0] gfx1103 is not supported by DIR [...]`,
//! `detected amdgpu versions [gfx1103]` and `inference compute ... library=rocm
//! compute=gfx1100 ... description="AMD Radeon RX 7900 XTX" pci_id=03:00.0`.
//! The decision lines themselves are signals (signals.toml); the override
//! ollama prints is read by [`super::env_dump::override_mention`].

use super::amd::{self, find_gfx};
use super::limits::Keyed;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, Vendor};

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "ollama",
    label: "ollama log",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&["level=", INFERENCE_COMPUTE, DROPPING_IGPU]],
};

pub fn recognise(text: &str) -> bool {
    lines_of(text).any(|l| {
        (l.contains("level=") && l.contains("msg=") && (l.contains("time=") || l.contains("source=")))
            // Discovery lines pasted with the logfmt prefix trimmed.
            || l.contains(INFERENCE_COMPUTE)
            || l.contains(DROPPING_IGPU)
    })
}

const INFERENCE_COMPUTE: &str = "msg=\"inference compute\"";
/// ollama 0.30+ drops integrated GPUs unless OLLAMA_IGPU_ENABLE=1 (and on
/// Windows hybrid laptops has misread the NVIDIA dGPU as integrated).
const DROPPING_IGPU: &str = "msg=\"dropping integrated GPU";

/// `key=value` pairs of one logfmt line; values may be "quoted" (with `\"`).
pub fn pairs(line: &str) -> Vec<(&str, String)> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // key: [A-Za-z_][A-Za-z0-9_.]* directly followed by '='
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
            i += 1;
        }
        if i == start || i >= b.len() || b[i] != b'=' {
            i = if i == start { i + 1 } else { i };
            continue;
        }
        let key = &line[start..i];
        i += 1;
        let mut val = String::new();
        if i < b.len() && b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                // Push whole UTF-8 characters, never split one.
                let ch_len = line[i..].chars().next().map_or(1, char::len_utf8);
                val.push_str(&line[i..i + ch_len]);
                i += ch_len;
            }
            i += 1;
        } else {
            let vs = i;
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += 1;
            }
            val.push_str(&line[vs..i]);
        }
        out.push((key, val));
    }
    out
}

fn get<'a>(p: &'a [(&str, String)], k: &str) -> Option<&'a str> {
    p.iter().find(|(x, _)| *x == k).map(|(_, v)| v.as_str())
}

/// Finds the GPU ollama calls `id` (its own index or UUID), or adds it.
fn slot<'a>(gpus: &'a mut Keyed<String, Gpu>, id: &str) -> &'a mut Gpu {
    gpus.entry(id.to_string(), || Gpu {
        vendor: Vendor::Amd,
        seen_by: vec!["ollama".into()],
        ..Gpu::default()
    })
}

/// The device selection ollama gives its runner, which its DEBUG log
/// prints: `msg=subprocess environment="[PATH=... HIP_VISIBLE_DEVICES=1
/// ROCR_VISIBLE_DEVICES=GPU-7685bd29c5086f3d ...]"` (ollama#10421). The
/// runner is the process that opens the GPU, so its variables are the
/// selection in force. (The server's `env="map[...]"` lists its own, most
/// of them unset.)
fn runner_selection(line: &str, f: &mut Facts) {
    let Some(p) = line.find("environment=\"[") else {
        return;
    };
    let list = line[p + "environment=\"[".len()..]
        .split(']')
        .next()
        .unwrap_or("");
    for entry in list.split_whitespace() {
        let Some((k, v)) = entry.split_once('=') else {
            continue;
        };
        if crate::hip_order::SELECTION_VARS.contains(&k)
            && !f.rocm.visible_devices.iter().any(|(x, _)| x == k)
        {
            f.rocm.visible_devices.push((k.to_string(), v.to_string()));
        }
    }
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut gpus: Keyed<String, Gpu> = Keyed::default();
    for line in lines_of(text) {
        if !line.contains("msg=") {
            continue;
        }
        let p = pairs(line);
        let msg = get(&p, "msg").unwrap_or("");
        if msg == "subprocess" {
            runner_selection(line, &mut f);
        }
        if msg.starts_with("amdgpu is not supported") {
            let id = get(&p, "gpu").unwrap_or("0").to_string();
            if let Some(g) = get(&p, "gpu_type").and_then(find_gfx) {
                slot(&mut gpus, &id).gfx = Some(g);
            }
        } else if let Some(rest) = msg.strip_prefix("amdgpu [") {
            // "amdgpu [0] gfx1103 is not supported by DIR [targets]"
            if let Some((id, rest)) = rest.split_once(']') {
                if let Some(g) = rest.split_whitespace().next().and_then(find_gfx) {
                    slot(&mut gpus, id.trim()).gfx = Some(g);
                }
            }
        } else if let Some(rest) = msg.strip_prefix("detected amdgpu versions [") {
            for (i, tok) in rest.trim_end_matches(']').split_whitespace().enumerate() {
                if let Some(g) = find_gfx(tok) {
                    let s = slot(&mut gpus, &i.to_string());
                    if s.gfx.is_none() {
                        s.gfx = Some(g);
                    }
                }
            }
        } else if msg == "inference compute" || msg.starts_with("dropping integrated GPU") {
            let library = get(&p, "library").unwrap_or("").to_ascii_lowercase();
            if library.is_empty() || library == "cpu" {
                continue;
            }
            let kept = msg == "inference compute";
            // Newer releases print no id= on kept GPUs but a per-library
            // name= ("Vulkan0", "CUDA0").
            let id = get(&p, "id")
                .or_else(|| get(&p, "name"))
                .unwrap_or("0")
                .to_string();
            let g = slot(&mut gpus, &id);
            let name = get(&p, "description")
                .or_else(|| get(&p, "name"))
                .unwrap_or("")
                .to_string();
            // Older releases print the PCI ids as the name ("1002:73bf").
            if let Some((v, d)) = name
                .split_once(':')
                .filter(|(v, d)| v.len() == 4 && d.len() == 4 && u16::from_str_radix(v, 16).is_ok())
            {
                g.vendor_id = u16::from_str_radix(v, 16).ok();
                g.device_id = u16::from_str_radix(d, 16).ok();
            } else if !name.is_empty()
                && !["ROCm", "CUDA", "Vulkan"]
                    .iter()
                    .any(|l| name.starts_with(l))
            {
                g.name = name.clone();
            }
            g.vendor = match (library.as_str(), g.vendor_id) {
                (_, Some(amd::NVIDIA)) => Vendor::Nvidia,
                (_, Some(amd::AMD)) => Vendor::Amd,
                ("cuda", _) => Vendor::Nvidia,
                ("rocm", _) => Vendor::Amd,
                _ => super::vulkaninfo::vendor_from_name(&name),
            };
            if g.vendor == Vendor::Amd {
                if let Some(c) = get(&p, "compute").and_then(find_gfx) {
                    g.gfx = Some(c);
                }
                if kept {
                    f.rocm.runtime_sees_gpu = Some(true);
                }
            }
            if let Some(pci) = get(&p, "pci_id").and_then(super::amd::pci_address) {
                g.pci_address = Some(pci);
            }
        }
    }
    f.gpus = gpus.finish("GPUs", &mut f.cut);
    for g in &mut f.gpus {
        g.vf = amd::is_vf(&g.name, g.vendor_id, g.device_id);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ollama#10421: the runner's ROCR selection keeps one GPU (by UUID),
    /// which HIP numbers 0, and its HIP_VISIBLE_DEVICES=1 names none.
    #[test]
    fn the_runner_environment_is_the_selection_in_force() {
        let l = r#"time=2025-04-26T15:49:32.368Z level=DEBUG source=server.go:423 msg=subprocess environment="[PATH=/usr/bin LD_LIBRARY_PATH=/usr/lib/ollama/rocm HIP_VISIBLE_DEVICES=1 ROCR_VISIBLE_DEVICES=GPU-7685bd29c5086f3d ROCM_VISIBLE_DEVICES=1 HSA_OVERRIDE_GFX_VERSION=10.3.0]""#;
        let f = parse(&format!("{l}\n"));
        assert_eq!(
            f.rocm.visible_devices,
            [
                ("HIP_VISIBLE_DEVICES".to_string(), "1".to_string()),
                (
                    "ROCR_VISIBLE_DEVICES".to_string(),
                    "GPU-7685bd29c5086f3d".to_string()
                )
            ]
        );
        assert!(crate::hip_order::hides_every_device(&f.rocm.visible_devices).is_some());
        // The server's own map of (mostly unset) variables is no selection.
        let server = r#"time=2025-01-30T20:47:41.671Z level=INFO source=routes.go:1187 msg="server config" env="map[CUDA_VISIBLE_DEVICES: HIP_VISIBLE_DEVICES: ROCR_VISIBLE_DEVICES:]""#;
        assert!(parse(&format!("{server}\n"))
            .rocm
            .visible_devices
            .is_empty());
    }

    #[test]
    fn logfmt_pairs_keep_quoted_values() {
        let p = pairs(
            r#"time=x level=WARN source=amd_linux.go:376 msg="amdgpu is not supported (supported types:[gfx1030 gfx942])" gpu_type=gfx906 gpu=0 name="Ünï \"q\"""#,
        );
        assert_eq!(
            get(&p, "msg"),
            Some("amdgpu is not supported (supported types:[gfx1030 gfx942])")
        );
        assert_eq!(get(&p, "gpu_type"), Some("gfx906"));
        assert_eq!(get(&p, "name"), Some("Ünï \"q\""));
    }

    #[test]
    fn the_gpu_is_gpu_type_not_the_supported_list() {
        let f = parse(
            r#"level=WARN source=amd_linux.go:376 msg="amdgpu is not supported (supported types:[gfx1030 gfx942])" gpu_type=gfx906 gpu=GP>"#,
        );
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx906"));
    }

    /// ollama 0.30+ names each device it discovered in `description=`, both
    /// on the GPUs it keeps ("inference compute") and on those it drops by
    /// policy ("dropping integrated GPU; to enable, set
    /// OLLAMA_IGPU_ENABLE=1"). Pasted with the logfmt prefix trimmed
    /// (ollama/ollama#16667: "runner.go:396 msg=...") or whole
    /// (ollama/ollama#17222: "level=INFO source=runner.go:405 msg=...").
    #[test]
    fn discovery_lines_name_kept_and_dropped_gpus_by_description() {
        let trimmed = concat!(
            r#"runner.go:396 msg="dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1" id=1 library=Vulkan compute=0.0 name=Vulkan1 description="NVIDIA GeForce RTX 5070 Laptop GPU" pci_id="""#,
            "\n",
            r#"types.go:32 msg="inference compute" library=Vulkan name=Vulkan0 description="Intel(R) RaptorLake-S Mobile Graphics Controller" type=discrete total="15.9 GiB" available="15.1 GiB""#,
        );
        assert!(recognise(trimmed));
        let f = parse(trimmed);
        let got: Vec<(Vendor, &str)> = f.gpus.iter().map(|g| (g.vendor, g.name.as_str())).collect();
        assert_eq!(
            got,
            [
                (Vendor::Nvidia, "NVIDIA GeForce RTX 5070 Laptop GPU"),
                (
                    Vendor::Intel,
                    "Intel(R) RaptorLake-S Mobile Graphics Controller"
                ),
            ]
        );
        // A dropped GPU is one the machine has, not one a runtime uses.
        assert_eq!(f.rocm.runtime_sees_gpu, None);
        let whole = r#"level=INFO source=runner.go:405 msg="dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1" id=0 library=Vulkan compute=0.0 name=Vulkan0 description="Intel(R) Iris(R) Xe Graphics" pci_id="""#;
        assert!(recognise(whole));
        let f = parse(whole);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].vendor, Vendor::Intel);
        assert_eq!(f.gpus[0].name, "Intel(R) Iris(R) Xe Graphics");
    }

    #[test]
    fn cpu_inference_is_no_gpu() {
        let f = parse(
            r#"time=t level=INFO source=types.go:130 msg="inference compute" id=0 library=cpu variant="" compute="" driver=0.0 name="" total="127.1 GiB""#,
        );
        assert!(f.gpus.is_empty());
    }
}
