//! `rocm-smi`: the concise table (three layouts seen in the wild: with
//! `IDs (DID, GUID)`, with `[Model : Revision]` plus a name line, and the old
//! one with neither) and the `GPU[n] : Key: value` form of its options.
//! rocm-smi reads sysfs, so a table proves amdgpu is bound, never that HSA works.

use super::amd::{find_gfx, parse_id};
use crate::facts::{Facts, Gpu, KernelDriver};
use std::collections::BTreeMap;

pub fn recognise(text: &str) -> bool {
    text.contains("ROCm System Management Interface")
        || text.contains("End of ROCm SMI Log")
        || text.contains("Driver not initialized (amdgpu not found in modules)")
        || text
            .lines()
            .any(|l| (l.starts_with("GPU[") && l.contains("] ")) || is_id_row(l))
        || (text.contains("\"card0\"") && text.contains("\"Device ID\""))
}

/// A concise-table row with its IDs column, recognisable without the header
/// (pastes of long tables are often cut): `15  17  0x74a1,  48427  42.0°C ...`
/// — device index, KFD node, `0xDDDD,` device id.
fn is_id_row(l: &str) -> bool {
    let mut w = l.split_whitespace();
    let num =
        |x: Option<&str>| x.is_some_and(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()));
    num(w.next())
        && num(w.next())
        && w.next().is_some_and(|x| {
            x.len() == 7
                && x.starts_with("0x")
                && x.ends_with(',')
                && u16::from_str_radix(&x[2..6], 16).is_ok()
        })
}

/// `rocm-smi --json` (also cut): `"card0": {` blocks with `"Device Name"`,
/// `"Device ID"`, `"PCI Bus"`, `"GFX Version"`, read line by line.
fn parse_json_lines(text: &str, f: &mut Facts) {
    let mut cur: Option<Gpu> = None;
    for l in text.lines() {
        let t = l.trim().trim_end_matches(',');
        if t.starts_with("\"card") && t.ends_with('{') {
            if let Some(g) = cur.take() {
                f.gpus.push(g);
            }
            cur = Some(Gpu::amdgpu_seen_by("rocm-smi"));
            continue;
        }
        let Some(g) = cur.as_mut() else { continue };
        let Some((k, v)) = t.split_once("\": ") else {
            continue;
        };
        let (k, v) = (k.trim_matches('"'), v.trim_matches('"'));
        match k {
            "Device Name" | "Card Series" | "Card series" if g.name.is_empty() => {
                g.name = v.to_string()
            }
            "Device ID" | "GPU ID" => g.device_id = parse_id(v).map(|x| x as u16),
            "PCI Bus" => g.pci_address = Some(v.to_lowercase()),
            "GFX Version" => g.gfx = find_gfx(v),
            _ => {}
        }
    }
    if let Some(g) = cur.take() {
        f.gpus.push(g);
    }
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
        } else if (in_table && !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()))
            || is_id_row(l)
        {
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
                name,
                vendor_id: device_id.map(|_| super::amd::AMD),
                device_id,
                ..Gpu::amdgpu_seen_by("rocm-smi")
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
        let g = keyed
            .entry(idx)
            .or_insert_with(|| Gpu::amdgpu_seen_by("rocm-smi"));
        match k.as_str() {
            "card series" | "card model" | "device name" | "market name"
                if g.name.is_empty() && !v.is_empty() =>
            {
                g.name = v.to_string()
            }
            "device id" | "gpu id" => g.device_id = parse_id(v).map(|x| x as u16),
            "gfx version" => g.gfx = find_gfx(v),
            "pci bus" => g.pci_address = Some(v.to_lowercase()),
            _ => {}
        }
    }
    if f.gpus.is_empty() {
        f.gpus.extend(keyed.into_values());
    }
    if f.gpus.is_empty() {
        parse_json_lines(text, &mut f);
    }
    f
}
