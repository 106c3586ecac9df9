//! AMD compute topology from KFD (`/sys/class/kfd/kfd/topology/nodes/*/properties`):
//! the gfx target, compute units and render minor of every GPU node, merged
//! into the PCI GPU it belongs to.

use super::gpu;
use super::{scanned, seen};
use crate::facts::{Facts, Gpu, Vendor};
use crate::from::amd;
use crate::from::kfd_props::{parse_kfd_properties, KfdNode};
use crate::root::{Listing, Root};

const NODES: &str = "/sys/class/kfd/kfd/topology/nodes";

/// Merges KFD GPU node number `number` into `gpus`: same render minor,
/// else same vendor/device id not yet seen by KFD, else a new entry.
pub fn merge_node(gpus: &mut Vec<Gpu>, number: u32, node: &KfdNode, source: &str) {
    let minor = node.render_minor();
    let ids = (node.vendor_id(), node.device_id());
    let pos = gpus
        .iter()
        .position(|g| minor.is_some() && g.render_minor == minor)
        .or_else(|| {
            gpus.iter().position(|g| {
                ids.1.is_some()
                    && (g.vendor_id, g.device_id) == ids
                    && !g.seen_by.iter().any(|s| s == source)
            })
        });
    let g = match pos {
        Some(i) => &mut gpus[i],
        None => {
            let mut g = Gpu {
                vendor: ids.0.map(gpu::vendor_of).unwrap_or(Vendor::Other),
                vendor_id: ids.0,
                device_id: ids.1,
                ..Gpu::default()
            };
            if let (Some(v), Some(d)) = ids {
                g.name = gpu::pci_name(v, d).unwrap_or_default();
                g.vf = gpu::is_vf_id(v, d);
            }
            gpus.push(g);
            gpus.last_mut().expect("just pushed")
        }
    };
    if let Some(gfx) = node.gfx() {
        g.gfx = Some(gfx);
    }
    if g.vendor == Vendor::Other && node.gfx().is_some() {
        // Only AMD GPUs have KFD gfx targets.
        g.vendor = Vendor::Amd;
        g.vendor_id.get_or_insert(amd::AMD);
    }
    if g.compute_units.is_none() {
        g.compute_units = node.compute_units();
    }
    if g.render_minor.is_none() {
        g.render_minor = minor;
    }
    g.kfd_node = Some(number);
    if g.rocr_uuid.is_none() {
        g.rocr_uuid = node.rocr_uuid();
    }
    if node.is_combined_apu() || g.gfx.as_deref().is_some_and(amd::is_apu_target) {
        g.integrated = Some(true);
    } else if g.integrated.is_none() && g.gfx.is_some() {
        g.integrated = Some(false);
    }
    if g.name.is_empty() {
        if let Some(gfx) = &g.gfx {
            g.name = format!("AMD GPU {gfx}");
        }
    }
    seen(g, source);
}

pub fn collect(root: &Root, f: &mut Facts) -> String {
    let mut names = match root.list_dir(NODES) {
        Listing::Entries(names) => names,
        Listing::Absent => {
            return "no KFD topology (amdgpu/KFD not loaded or no AMD compute GPU)".into()
        }
        Listing::Unknown => return "KFD topology unknown: it cannot be read".into(),
    };
    scanned(f, "kfd");
    // Numeric order: node 10 after node 9.
    names.sort_by_key(|n| n.parse::<u64>().unwrap_or(u64::MAX));
    let mut gpus = 0;
    let mut cpus = 0;
    let mut gfx = Vec::new();
    for n in names {
        let Ok(text) = root.read(&format!("{NODES}/{n}/properties")) else {
            continue;
        };
        // A node directory is named by its number; another name is no node.
        let Ok(number) = n.parse::<u32>() else {
            continue;
        };
        for node in parse_kfd_properties(&text) {
            if node.is_gpu() {
                gpus += 1;
                if let Some(g) = node.gfx() {
                    gfx.push(g);
                }
                merge_node(&mut f.gpus, number, &node, "kfd");
            } else if node.get("cpu_cores_count").unwrap_or(0) > 0 {
                cpus += 1;
            }
        }
    }
    gfx.dedup();
    format!(
        "{gpus} GPU node(s){}, {cpus} CPU node(s)",
        if gfx.is_empty() {
            String::new()
        } else {
            format!(" ({})", gfx.join(", "))
        }
    )
}
