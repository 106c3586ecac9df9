//! `clinfo` (the modern `Key   value` layout and AMD's older `Key:  value`
//! one). Only GPU devices on a known platform become GPUs; zero OpenCL
//! devices is not proof that the machine has none.

use super::amd::find_gfx;
use crate::facts::{Facts, Gpu, Vendor};

pub fn recognise(text: &str) -> bool {
    [
        "Number of platforms",
        "ICD loader Name",
        "Platform Name",
        "Number of devices",
    ]
    .iter()
    .any(|m| text.contains(m))
}

fn field<'a>(t: &'a str, key: &str) -> Option<&'a str> {
    let rest = t.strip_prefix(key)?;
    if !(rest.starts_with(':') || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    Some(rest.trim_start_matches(':').trim())
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut platform_vendor = Vendor::Other;
    let mut device_type_gpu: Option<bool> = None;
    let mut pending: Option<Gpu> = None;
    let flush = |f: &mut Facts, p: &mut Option<Gpu>| {
        if let Some(g) = p.take() {
            if g.vendor != Vendor::Cpu {
                f.gpus.push(g);
            }
        }
    };
    for l in text.lines() {
        let t = l.trim();
        if let Some(v) = field(t, "Platform Name").or_else(|| field(t, "Platform Vendor")) {
            platform_vendor = if v.contains("AMD") || v.contains("Advanced Micro Devices") {
                Vendor::Amd
            } else if v.contains("NVIDIA") {
                Vendor::Nvidia
            } else if v.contains("Intel") {
                Vendor::Intel
            } else {
                platform_vendor
            };
            continue;
        }
        if let Some(v) = field(t, "Device Type") {
            device_type_gpu = Some(v.contains("GPU"));
            continue;
        }
        if let Some(v) = field(t, "Board name").or_else(|| field(t, "Device Board Name (AMD)")) {
            if let Some(g) = pending.as_mut() {
                if !v.is_empty() {
                    g.name = v.to_string();
                }
            }
            continue;
        }
        let name = field(t, "Device Name").or_else(|| {
            if platform_vendor == Vendor::Amd {
                field(t, "Name")
            } else {
                None
            }
        });
        if let Some(v) = name {
            flush(&mut f, &mut pending);
            let gfx = find_gfx(v);
            if device_type_gpu == Some(false) && gfx.is_none() {
                continue;
            }
            let vendor = if gfx.is_some() {
                Vendor::Amd
            } else {
                platform_vendor
            };
            if vendor == Vendor::Other && device_type_gpu != Some(true) {
                continue;
            }
            pending = Some(Gpu {
                vendor,
                name: v.to_string(),
                gfx,
                seen_by: vec!["clinfo".into()],
                ..Gpu::default()
            });
            device_type_gpu = None;
        }
    }
    flush(&mut f, &mut pending);
    f
}
