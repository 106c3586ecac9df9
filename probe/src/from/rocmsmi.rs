//! `rocm-smi`: the concise table (three layouts seen in the wild: with
//! `IDs (DID, GUID)`, with `[Model : Revision]` plus a name line, and the old
//! one with neither) and the `GPU[n] : Key: value` form of its options.
//! rocm-smi reads sysfs, so a table proves amdgpu is bound, never that HSA works.

use super::amd::{find_gfx, parse_id};
use crate::facts::{Facts, Gpu, KernelDriver, Vendor};
use std::collections::BTreeMap;

pub fn recognise(text: &str) -> bool {
    text.contains("ROCm System Management Interface")
        || text.contains("End of ROCm SMI Log")
        || text.contains("Driver not initialized (amdgpu not found in modules)")
        || text
            .lines()
            .any(|l| l.starts_with("GPU[") && l.contains("] "))
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    if text.contains("amdgpu not found in modules") {
        f.drivers.push(KernelDriver {
            name: "amdgpu".into(),
            loaded: false,
            version: None,
        });
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = 0;
    let mut in_table = false;
    let mut names_follow = false;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim();
        let first = t.split_whitespace().next().unwrap_or("");
        if (first == "Device" || first == "GPU") && t.contains("Temp") {
            // Rows follow, after a "====" rule in newer layouts, directly in old ones.
            in_table = true;
            rows = 0;
            names_follow = lines.get(i + 1).is_some_and(|n| n.contains("Name ("));
        } else if t.starts_with("====") {
            if in_table && rows > 0 {
                in_table = false;
            }
        } else if in_table && !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) {
            let device_id = t
                .split(|c: char| c.is_whitespace() || c == '[' || c == ',')
                .find(|w| w.starts_with("0x") && w.len() == 6)
                .and_then(parse_id)
                .map(|x| x as u16);
            let mut name = String::new();
            if names_follow {
                if let Some(n) = lines.get(i + 1) {
                    let nt = n.trim();
                    let nf = nt.split_whitespace().next().unwrap_or("");
                    if !nt.is_empty()
                        && !nt.starts_with("==")
                        && !nf.bytes().all(|b| b.is_ascii_digit())
                    {
                        name = nt.to_string();
                        i += 1;
                    }
                }
            }
            rows += 1;
            f.gpus.push(Gpu {
                vendor: Vendor::Amd,
                name,
                vendor_id: device_id.map(|_| super::amd::AMD),
                device_id,
                kernel_driver: Some("amdgpu".into()),
                seen_by: vec!["rocm-smi".into()],
                ..Gpu::default()
            });
        }
        i += 1;
    }
    // GPU[n] : Key: value
    let mut keyed: BTreeMap<u32, Gpu> = BTreeMap::new();
    for l in &lines {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("Driver version:") {
            let v = v.trim().to_string();
            f.kernel_driver_version = Some(v.clone());
            f.drivers.push(KernelDriver {
                name: "amdgpu".into(),
                loaded: true,
                version: Some(v),
            });
            continue;
        }
        let Some(rest) = t.strip_prefix("GPU[") else {
            continue;
        };
        let Some((idx, rest)) = rest.split_once(']') else {
            continue;
        };
        let Ok(idx) = idx.parse::<u32>() else {
            continue;
        };
        let rest = rest.trim_start().trim_start_matches(':').trim();
        let Some((k, v)) = rest.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_lowercase(), v.trim());
        let g = keyed.entry(idx).or_insert_with(|| Gpu {
            vendor: Vendor::Amd,
            kernel_driver: Some("amdgpu".into()),
            seen_by: vec!["rocm-smi".into()],
            ..Gpu::default()
        });
        match k.as_str() {
            "card series" | "card model" | "device name" | "market name"
                if g.name.is_empty() && !v.is_empty() =>
            {
                g.name = v.to_string()
            }
            "device id" => g.device_id = parse_id(v).map(|x| x as u16),
            "gfx version" => g.gfx = find_gfx(v),
            "pci bus" => g.pci_address = Some(v.to_lowercase()),
            _ => {}
        }
    }
    if f.gpus.is_empty() {
        f.gpus.extend(keyed.into_values());
    }
    f
}
