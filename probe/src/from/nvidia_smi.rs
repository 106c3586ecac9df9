//! `nvidia-smi` (the default table) and `nvidia-smi -q`: driver version and
//! GPUs by PCI address, for the NVIDIA half of mixed or contrast machines.

use crate::facts::{Facts, Gpu, KernelDriver, Vendor};

pub fn recognise(text: &str) -> bool {
    text.contains("NVIDIA-SMI ")
        || (text.contains("Product Name") && text.contains("Driver Version"))
}

fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let p = text.find(key)? + key.len();
    text[p..]
        .trim_start_matches([' ', ':'])
        .split_whitespace()
        .next()
}

/// "00000000:01:00.0" -> "0000:01:00.0".
fn bdf(s: &str) -> Option<String> {
    let s = s.trim().to_lowercase();
    let parts: Vec<&str> = s.split(':').collect();
    (parts.len() == 3 && parts[2].len() == 4).then(|| {
        let dom = parts[0];
        let dom = &dom[dom.len().saturating_sub(4)..];
        format!("{dom}:{}:{}", parts[1], parts[2])
    })
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    if let Some(v) = after(text, "Driver Version") {
        f.kernel_driver_version = Some(v.to_string());
        f.drivers.push(KernelDriver {
            name: "nvidia".into(),
            loaded: true,
            version: Some(v.into()),
        });
    }
    let gpu = |name: String, addr: Option<String>| Gpu {
        vendor: Vendor::Nvidia,
        name,
        pci_address: addr,
        vendor_id: Some(super::amd::NVIDIA),
        kernel_driver: Some("nvidia".into()),
        seen_by: vec!["nvidia-smi".into()],
        ..Gpu::default()
    };
    // -q form: "Product Name : NVIDIA A100-SXM4-80GB" ... "Bus Id : 00000000:07:00.0"
    let mut pending: Option<Gpu> = None;
    for l in text.lines() {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("Product Name") {
            if let Some(g) = pending.take() {
                f.gpus.push(g);
            }
            pending = Some(gpu(
                v.trim_start_matches([' ', ':']).trim().to_string(),
                None,
            ));
        } else if let (Some(g), Some(v)) = (pending.as_mut(), t.strip_prefix("Bus Id")) {
            g.pci_address = bdf(v.trim_start_matches([' ', ':']));
        }
    }
    if let Some(g) = pending.take() {
        f.gpus.push(g);
    }
    if !f.gpus.is_empty() {
        return f;
    }
    // Table form: "|   0  NVIDIA GeForce RTX 3090     Off |   00000000:01:00.0  On |"
    for l in text.lines() {
        let cells: Vec<&str> = l.split('|').collect();
        if cells.len() < 4 {
            continue;
        }
        let c1 = cells[1].trim();
        let mut words = c1.split_whitespace();
        let Some(idx) = words.next() else { continue };
        if !idx.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(addr) = cells[2].split_whitespace().next().and_then(bdf) else {
            continue;
        };
        let rest: Vec<&str> = words.collect();
        // The persistence/TCC column ("Off", "On", "WDDM") ends the name.
        let name_words = match rest.last() {
            Some(&("Off" | "On" | "WDDM" | "TCC")) => &rest[..rest.len() - 1],
            _ => &rest[..],
        };
        f.gpus.push(gpu(name_words.join(" "), Some(addr)));
    }
    f
}
