//! Kernel log (`dmesg`, `journalctl -k`): which GPUs amdgpu/KFD touched and
//! whether they initialised. The failure lines themselves (ip discovery,
//! `kgd2kfd_probe failed`, ...) are signals.

use super::amd::{self, parse_id};
use crate::facts::{Facts, Gpu, KernelDriver, Vendor};

/// The kernel message of one log line: without dmesg's `[    1.234]`
/// stamp, journald/syslog's `Jun 6 08:00:03 host kernel: ` or a bare
/// `kernel: ` prefix (`/var/log/dmesg`). Lines pasted with `dmesg -t` or
/// `journalctl -o cat` have none of these and are returned as they are.
fn strip_stamp(l: &str) -> &str {
    let mut t = l.trim_start();
    if t.starts_with('[') {
        if let Some(p) = t.find(']') {
            let inner = t[1..p].trim();
            if inner.contains('.') && inner.replace('.', "").bytes().all(|b| b.is_ascii_digit()) {
                t = t[p + 1..].trim_start();
            }
        }
    }
    if let Some(p) = t.find(" kernel: ") {
        // syslog/journal prefix: "Jun 6 08:00:03 host kernel: ..." (no '[' or ':' message before it)
        if !t[..p].contains('[') && matches!(t[..p].matches(':').count(), 0 | 2) {
            t = &t[p + 9..];
        }
    } else if let Some(r) = t.strip_prefix("kernel: ") {
        t = r;
    }
    t
}

/// A kernel message only the GPU drivers print.
fn is_driver_message(s: &str) -> bool {
    s.starts_with("kfd kfd")
        || s.starts_with("[drm] amdgpu ")
        || s.starts_with("[drm] initializing kernel modesetting (")
        || s.starts_with("[drm] Initialized amdgpu")
        || s.starts_with("NVRM")
        || s.starts_with("amdgpu: ")
        || s.strip_prefix("amdgpu ")
            .is_some_and(|r| is_bdf(r.split(": ").next().unwrap_or("")))
}

pub fn recognise(text: &str) -> bool {
    text.lines().any(|l| {
        let s = strip_stamp(l);
        is_driver_message(s)
            || ((s.len() != l.trim_start().len())
                && (s.starts_with("[drm") || s.starts_with("Linux version")))
    })
}

fn is_bdf(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12 && b[4] == b':' && b[7] == b':' && b[10] == b'.'
}

/// What one `initializing kernel modesetting (...)` line says about a GPU.
struct Modeset<'a> {
    /// Chip codename (None for `IP DISCOVERY`).
    code: Option<&'a str>,
    device: u16,
    subsystem: Option<(u16, u16)>,
    revision: Option<u8>,
}

/// "(POLARIS10 0x1002:0x67DF 0x1DA2:0xE366 0xE7)" / "(IP DISCOVERY 0x1002:0x744C ...)".
fn modeset(s: &str) -> Option<Modeset<'_>> {
    let p = s.find("initializing kernel modesetting (")? + 33;
    let inner = s[p..].split(')').next()?;
    let words: Vec<&str> = inner.split_whitespace().collect();
    let ids = words
        .iter()
        .position(|w| w.starts_with("0x") && w.contains(':'))?;
    let pair = |w: &str| -> Option<(u16, u16)> {
        let (a, b) = w.split_once(':')?;
        Some((parse_id(a)? as u16, parse_id(b)? as u16))
    };
    let (v, d) = pair(words[ids])?;
    if v != amd::AMD {
        return None;
    }
    let code = (ids == 1 && words[0] != "IP").then(|| words[0]);
    let sub = words.get(ids + 1).and_then(|w| pair(w));
    let rev = words
        .get(ids + 2)
        .and_then(|w| parse_id(w))
        .map(|r| r as u8);
    Some(Modeset {
        code,
        device: d,
        subsystem: sub,
        revision: rev,
    })
}

/// "VRAM: 1024M 0x0000..." (old `drmn0:` and current `amdgpu BDF: amdgpu:` forms).
fn vram_mib(s: &str) -> Option<u64> {
    let p = s.find("VRAM: ")? + 6;
    let w = s[p..].split_whitespace().next()?;
    w.strip_suffix('M')?.parse().ok()
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut by_bdf: Vec<Gpu> = Vec::new();
    let mut by_kfd: Vec<Gpu> = Vec::new();
    // Index into by_bdf of the GPU the last BDF-less line belongs to.
    let mut last: Option<usize> = None;
    for l in text.lines() {
        let s = strip_stamp(l);
        if let Some(rest) = s.strip_prefix("Linux version ") {
            f.kernel_version = rest.split_whitespace().next().map(String::from);
        }
        if s.contains("Initialized amdgpu")
            || s.starts_with("[drm] amdgpu kernel modesetting enabled")
        {
            f.drivers.push(KernelDriver {
                name: "amdgpu".into(),
                loaded: true,
                version: None,
            });
        }
        // AMD's dkms driver says its version: "[drm] amdgpu version: 6.2.4"
        if let Some(v) = s.strip_prefix("[drm] amdgpu version: ") {
            let v = v.trim().to_string();
            f.kernel_driver_version.get_or_insert(v.clone());
            f.drivers.push(KernelDriver {
                name: "amdgpu".into(),
                loaded: true,
                version: Some(v),
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
            String::new()
        };
        let mut cur = last;
        if is_bdf(&bdf) {
            let failed = s.contains("failed with error");
            let i = match by_bdf
                .iter()
                .position(|g| g.pci_address.as_deref() == Some(bdf.as_str()))
            {
                Some(i) => i,
                // A GPU named by an earlier address-less modesetting line.
                None => match by_bdf.iter().position(|g| g.pci_address.is_none()) {
                    Some(i) => {
                        by_bdf[i].pci_address = Some(bdf.clone());
                        i
                    }
                    None => {
                        by_bdf.push(Gpu {
                            vendor: Vendor::Amd,
                            vendor_id: Some(amd::AMD),
                            pci_address: Some(bdf.clone()),
                            kernel_driver: Some("amdgpu".to_string()),
                            seen_by: vec!["dmesg".into()],
                            ..Gpu::default()
                        });
                        by_bdf.len() - 1
                    }
                },
            };
            if failed {
                by_bdf[i].kernel_driver = None;
            }
            cur = Some(i);
            last = Some(i);
        }
        if let Some(Modeset {
            code,
            device: did,
            subsystem: sub,
            revision: rev,
        }) = modeset(s)
        {
            // A new modesetting line without an address is a new GPU unless
            // the GPU of the last address has no id yet.
            let i = match cur
                .filter(|&i| by_bdf[i].device_id.is_none() || by_bdf[i].device_id == Some(did))
            {
                Some(i) if is_bdf(&bdf) || by_bdf[i].device_id.is_none() => i,
                _ => {
                    by_bdf.push(Gpu {
                        vendor: Vendor::Amd,
                        vendor_id: Some(amd::AMD),
                        kernel_driver: Some("amdgpu".to_string()),
                        seen_by: vec!["dmesg".into()],
                        ..Gpu::default()
                    });
                    by_bdf.len() - 1
                }
            };
            let g = &mut by_bdf[i];
            g.device_id = Some(did);
            if let Some((sv, sd)) = sub.filter(|s| *s != (0, 0)) {
                g.subsystem_vendor_id = Some(sv);
                g.subsystem_device_id = Some(sd);
            }
            g.revision = rev;
            if let Some(gfx) = code.and_then(amd::gfx_from_codename) {
                g.gfx = Some(gfx);
            }
            last = Some(i);
            continue;
        }
        if let (Some(i), Some(mb)) = (cur.or(last), vram_mib(s)) {
            if s.contains("drmn") || s.contains("amdgpu") {
                by_bdf[i].vram_bytes.get_or_insert(mb << 20);
            }
        }
    }
    // KFD lines name device ids without addresses; when amdgpu lines give the
    // addresses they describe the same GPUs, so only one list is kept.
    f.gpus = if by_bdf.is_empty() { by_kfd } else { by_bdf };
    f
}
