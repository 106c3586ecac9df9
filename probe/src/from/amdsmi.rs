//! `amd-smi` (the default table, and the `KEY: value` form of `amd-smi
//! static`/`list`): driver and ROCm versions, GPUs by PCI address. SMI output
//! proves the kernel driver, not the HSA runtime (ERRORS.md D5).

use super::amd::{self, find_gfx, parse_id};
use super::kv;
use crate::facts::{Facts, Gpu, KernelDriver};

pub fn recognise(text: &str) -> bool {
    text.contains("AMD-SMI ")
        || text.contains("AMDSMI Tool")
        || (text.contains("GPU-Name") && text.contains("BDF"))
        || text.contains("MARKET_NAME:")
}

fn word_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let p = text.find(key)? + key.len();
    text[p..].split_whitespace().next()
}

fn is_bdf(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && s.chars().filter(|c| c.is_ascii_hexdigit()).count() == 9
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    if let Some(v) = word_after(text, "amdgpu version:").and_then(driver_version) {
        f.kernel_driver_version = Some(v.to_string());
        f.drivers.push(KernelDriver {
            name: "amdgpu".into(),
            loaded: true,
            version: Some(v.into()),
        });
    }
    if let Some(v) = word_after(text, "ROCm version:") {
        f.rocm.version = Some(v.to_string());
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut keyed: Option<Gpu> = None;
    // `amd-smi static --driver`: "DRIVER:" then indented "NAME: amdgpu", "VERSION: 6.18.3".
    let mut section = "";
    let mut section_indent = 0;
    for (i, line) in lines.iter().enumerate() {
        // Table form: "| 0000:83:00.0 AMD Instinct MI300X VF | 0 % ..."
        let cells: Vec<&str> = line.split('|').collect();
        if cells.len() >= 3 {
            let c = cells[1].trim();
            if let Some((bdf, name)) = c.split_once(' ') {
                if is_bdf(bdf) {
                    let vram = lines
                        .get(i + 1)
                        .and_then(|n| total_mb(n))
                        .map(|mb| mb << 20);
                    let name = name.trim().to_string();
                    f.gpus.push(Gpu {
                        vf: amd::is_vf(&name, None, None),
                        name,
                        pci_address: Some(bdf.to_lowercase()),
                        vram_bytes: vram,
                        ..Gpu::amdgpu_seen_by("amd-smi")
                    });
                    continue;
                }
            }
        }
        // Key form: "GPU: 0" starts a device; "MARKET_NAME: ...", "BDF: ...".
        let Some((indent, k, v)) = kv(line) else {
            continue;
        };
        if v.is_empty() {
            section = k;
            section_indent = indent;
            continue;
        }
        if indent <= section_indent {
            section = "";
        }
        if section == "DRIVER" {
            match k {
                "VERSION" => {
                    if let Some(v) = driver_version(v) {
                        f.kernel_driver_version.get_or_insert(v.to_string());
                        f.drivers.push(KernelDriver {
                            name: "amdgpu".into(),
                            loaded: true,
                            version: Some(v.into()),
                        });
                    }
                }
                "OS_KERNEL_VERSION" => {
                    f.kernel_version.get_or_insert(v.to_string());
                }
                _ => {}
            }
            continue;
        }
        match k {
            "GPU" if v.bytes().all(|b| b.is_ascii_digit()) && !v.is_empty() => {
                if let Some(g) = keyed.take() {
                    f.gpus.push(g);
                }
                keyed = Some(Gpu::amdgpu_seen_by("amd-smi"));
            }
            _ => {
                let Some(g) = keyed.as_mut() else { continue };
                match k {
                    "BDF" if is_bdf(v) => g.pci_address = Some(v.to_lowercase()),
                    "MARKET_NAME" | "PRODUCT_NAME" if g.name.is_empty() => g.name = v.to_string(),
                    "DEVICE_ID" => g.device_id = parse_id(v).map(|x| x as u16),
                    "VENDOR_ID" => g.vendor_id = parse_id(v).map(|x| x as u16),
                    "TARGET_GRAPHICS_VERSION" => g.gfx = find_gfx(v),
                    _ => {}
                }
            }
        }
    }
    if let Some(g) = keyed.take() {
        f.gpus.push(g);
    }
    for g in &mut f.gpus {
        g.vf |= amd::is_vf(&g.name, g.vendor_id.or(Some(amd::AMD)), g.device_id);
    }
    f
}

/// The driver version as amd-smi prints it. With the kernel's own (in-tree)
/// amdgpu it prints the kernel's version banner squashed together
/// ("Linuxversion6.8.0-79-generic(buildd@...)..."): that driver's version
/// is the kernel release.
fn driver_version(v: &str) -> Option<&str> {
    let v = match v.strip_prefix("Linuxversion") {
        Some(r) => r.split('(').next().unwrap_or(r),
        None => v,
    };
    (v.starts_with(|c: char| c.is_ascii_digit()) && v != "N/A").then_some(v)
}

/// "0 %        N/A           285/196288 MB" -> 196288.
fn total_mb(line: &str) -> Option<u64> {
    let p = line.find(" MB")?;
    let before = line[..p].split_whitespace().last()?;
    before.split('/').nth(1)?.parse().ok()
}
