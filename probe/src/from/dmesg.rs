//! Kernel log (`dmesg`, `journalctl -k`): which GPUs amdgpu/KFD touched and
//! whether they initialised. The failure lines themselves (ip discovery,
//! `kgd2kfd_probe failed`, ...) are signals.

use super::amd::{self, parse_id};
use crate::facts::{Facts, Gpu, KernelDriver, Vendor};

fn strip_stamp(l: &str) -> &str {
    let t = l.trim_start();
    if t.starts_with('[') {
        if let Some(p) = t.find(']') {
            let inner = t[1..p].trim();
            if inner.contains('.') && inner.replace('.', "").bytes().all(|b| b.is_ascii_digit()) {
                return t[p + 1..].trim_start();
            }
        }
    }
    t
}

pub fn recognise(text: &str) -> bool {
    text.lines().any(|l| {
        let s = strip_stamp(l);
        (s.len() != l.trim_start().len())
            && (s.starts_with("kfd ")
                || s.starts_with("amdgpu")
                || s.starts_with("[drm")
                || s.starts_with("NVRM")
                || s.starts_with("Linux version"))
    }) || text
        .lines()
        .any(|l| l.trim_start().starts_with("kfd kfd: "))
}

fn is_bdf(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12 && b[4] == b':' && b[7] == b':' && b[10] == b'.'
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut by_bdf: Vec<Gpu> = Vec::new();
    let mut by_kfd: Vec<Gpu> = Vec::new();
    for l in text.lines() {
        let s = strip_stamp(l);
        if let Some(rest) = s.strip_prefix("Linux version ") {
            f.kernel_version = rest.split_whitespace().next().map(String::from);
        }
        if s.contains("Initialized amdgpu") {
            f.drivers.push(KernelDriver {
                name: "amdgpu".into(),
                loaded: true,
                version: None,
            });
        }
        if let Some(p) = s.find("Kernel Module") {
            if s.starts_with("NVRM") {
                let v = s[p + 13..].split_whitespace().next().map(String::from);
                f.kernel_driver_version = v.clone();
                f.drivers.push(KernelDriver {
                    name: "nvidia".into(),
                    loaded: true,
                    version: v,
                });
            }
        }
        // "kfd kfd: DID 7340 is missing in supported_devices"
        if let Some(rest) = s.strip_prefix("kfd kfd: ") {
            let id = if let Some(r) = rest.strip_prefix("DID ") {
                r.split_whitespace()
                    .next()
                    .and_then(|h| u16::from_str_radix(h, 16).ok())
            } else if let Some(p) = rest.find("added device ") {
                rest[p + 13..]
                    .split_whitespace()
                    .next()
                    .and_then(|ids| ids.split_once(':'))
                    .and_then(|(_, d)| u16::from_str_radix(d, 16).ok())
            } else {
                None
            };
            if let Some(d) = id {
                by_kfd.push(Gpu {
                    vendor: Vendor::Amd,
                    vendor_id: Some(amd::AMD),
                    device_id: Some(d),
                    seen_by: vec!["dmesg:kfd".into()],
                    ..Gpu::default()
                });
            }
            continue;
        }
        // "amdgpu 0000:03:00.0: ..." and "amdgpu: probe of 0000:05:00.0 failed with error -22"
        let bdf = if let Some(rest) = s.strip_prefix("amdgpu ") {
            rest.split(':')
                .take(3)
                .collect::<Vec<_>>()
                .join(":")
                .trim()
                .to_string()
        } else if let Some(p) = s.find("probe of ") {
            s[p + 9..]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string()
        } else {
            continue;
        };
        if !is_bdf(&bdf) {
            continue;
        }
        let failed = s.contains("failed with error");
        match by_bdf
            .iter_mut()
            .find(|g| g.pci_address.as_deref() == Some(bdf.as_str()))
        {
            Some(g) => {
                if failed {
                    g.kernel_driver = None;
                }
            }
            None => by_bdf.push(Gpu {
                vendor: Vendor::Amd,
                vendor_id: Some(amd::AMD),
                pci_address: Some(bdf.clone()),
                kernel_driver: (!failed).then(|| "amdgpu".to_string()),
                seen_by: vec!["dmesg".into()],
                ..Gpu::default()
            }),
        }
        if let Some(p) = s.find("IP DISCOVERY 0x1002:0x") {
            let id = s[p + 20..].split_whitespace().next().and_then(parse_id);
            if let (Some(g), Some(id)) = (by_bdf.last_mut(), id) {
                g.device_id = Some(id as u16);
            }
        }
    }
    // KFD lines name device ids without addresses; when amdgpu lines give the
    // addresses they describe the same GPUs, so only one list is kept.
    f.gpus = if by_bdf.is_empty() { by_kfd } else { by_bdf };
    f
}
