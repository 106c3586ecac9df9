//! `lspci` output (`-nn`, `-k`, `-v` variants): the PCI view users paste
//! most often. GPUs are the VGA/Display/3D controller entries; with `-k` the
//! "Kernel driver in use" line says whether amdgpu (or nvidia) is bound.

use super::amd;
use crate::facts::{Facts, Gpu, Vendor};

const CLASSES: &[&str] = &[
    "VGA compatible controller",
    "Display controller",
    "3D controller",
];

fn slot(s: &str) -> bool {
    // "03:00.0" or "0000:03:00.0"
    let b = s.as_bytes();
    let tail = if b.len() == 12 && b[4] == b':' {
        &s[5..]
    } else {
        s
    };
    let t = tail.as_bytes();
    t.len() == 7
        && t[2] == b':'
        && t[5] == b'.'
        && tail.chars().filter(|c| c.is_ascii_hexdigit()).count() == 5
}

pub fn recognise(text: &str) -> bool {
    text.lines().any(|l| {
        let mut it = l.splitn(2, ' ');
        it.next().is_some_and(slot)
            && it
                .next()
                .is_some_and(|r| CLASSES.iter().any(|c| r.starts_with(c)))
    })
}

/// "[1002:744c]" -> (0x1002, 0x744c): the last bracketed vvvv:dddd pair.
fn ids(s: &str) -> Option<(u16, u16)> {
    let mut found = None;
    let mut rest = s;
    while let Some(a) = rest.find('[') {
        let Some(b) = rest[a..].find(']') else { break };
        let inner = &rest[a + 1..a + b];
        if let Some((v, d)) = inner.split_once(':') {
            if v.len() == 4 && d.len() == 4 {
                if let (Ok(v), Ok(d)) = (u16::from_str_radix(v, 16), u16::from_str_radix(d, 16)) {
                    found = Some((v, d));
                }
            }
        }
        rest = &rest[a + b + 1..];
    }
    found
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut cur: Option<usize> = None;
    let with_k = text.contains("Kernel driver in use:") || text.contains("Kernel modules:");
    for l in text.lines() {
        if !l.starts_with(char::is_whitespace) {
            cur = None;
            let mut it = l.splitn(2, ' ');
            let (Some(s), Some(rest)) = (it.next(), it.next()) else {
                continue;
            };
            if !slot(s) {
                continue;
            }
            let Some(class) = CLASSES.iter().find(|c| rest.starts_with(**c)) else {
                continue;
            };
            let mut desc = rest[class.len()..].trim_start();
            // `-nn` adds the class code: " [0300]: ..."
            if desc.len() > 6 && desc.starts_with('[') && desc.as_bytes()[5] == b']' {
                desc = &desc[6..];
            }
            let desc = desc.trim_start_matches(':').trim();
            let (vid, did) = ids(desc).unzip();
            // The BMC's VGA device (ASPEED, Matrox G200e) is no GPU.
            if amd::is_bmc_display(vid, desc) {
                continue;
            }
            let vendor = match vid {
                Some(amd::AMD) => Vendor::Amd,
                Some(amd::NVIDIA) => Vendor::Nvidia,
                Some(amd::INTEL) => Vendor::Intel,
                _ if desc.contains("AMD") || desc.contains("ATI") => Vendor::Amd,
                _ if desc.contains("NVIDIA") => Vendor::Nvidia,
                _ if desc.contains("Intel") => Vendor::Intel,
                _ => Vendor::Other,
            };
            let name = match (vid, did) {
                (Some(v), Some(d)) => amd::pci_name(v, d).unwrap_or("").to_string(),
                _ => String::new(),
            };
            let name = if name.is_empty() {
                desc.split(" (rev")
                    .next()
                    .unwrap_or(desc)
                    .trim()
                    .to_string()
            } else {
                name
            };
            let addr = if s.len() == 7 {
                format!("0000:{s}")
            } else {
                s.to_string()
            };
            f.gpus.push(Gpu {
                vendor,
                vf: amd::is_vf(&name, vid, did),
                name,
                pci_address: Some(addr.to_lowercase()),
                vendor_id: vid,
                device_id: did,
                seen_by: vec![if with_k {
                    "lspci-k".into()
                } else {
                    "lspci".into()
                }],
                ..Gpu::default()
            });
            cur = Some(f.gpus.len() - 1);
            continue;
        }
        if let (Some(i), Some(d)) = (cur, l.trim().strip_prefix("Kernel driver in use:")) {
            f.gpus[i].kernel_driver = Some(d.trim().to_string());
        }
    }
    f
}
