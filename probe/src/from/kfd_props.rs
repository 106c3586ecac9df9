//! `/sys/class/kfd/kfd/topology/nodes/N/properties` text, one node or
//! several pasted back to back (a new node starts at `cpu_cores_count`).
//! A node with SIMDs is a GPU; one with CPU cores as well is an APU.

use super::amd::{self, gfx_from_target_version};
use crate::facts::{Facts, Gpu, Vendor};
use std::collections::BTreeMap;

const KEYS: &[&str] = &[
    "cpu_cores_count",
    "simd_count",
    "gfx_target_version",
    "vendor_id",
    "device_id",
    "drm_render_minor",
    "local_mem_size",
    "location_id",
    "mem_banks_count",
    "wave_front_size",
];

fn pair(l: &str) -> Option<(&str, &str)> {
    let mut it = l.split_whitespace();
    let k = it.next()?;
    let v = it.next()?;
    if it.next().is_some()
        || !k
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_uppercase())
    {
        return None;
    }
    Some((k, v))
}

pub fn recognise(text: &str) -> bool {
    let mut known = 0;
    let mut other = 0;
    for l in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('$'))
    {
        match pair(l) {
            Some((k, _)) if KEYS.contains(&k) => known += 1,
            Some(_) => {}
            None => other += 1,
        }
    }
    (known >= 3
        || text
            .lines()
            .any(|l| pair(l.trim()).is_some_and(|(k, _)| k == "gfx_target_version")))
        && other <= known
}

pub fn parse(text: &str) -> Facts {
    let mut nodes: Vec<BTreeMap<String, u64>> = Vec::new();
    let mut cur: BTreeMap<String, u64> = BTreeMap::new();
    for l in text.lines() {
        let Some((k, v)) = pair(l.trim()) else {
            continue;
        };
        if k == "cpu_cores_count" && !cur.is_empty() {
            nodes.push(std::mem::take(&mut cur));
        }
        // Placeholders such as "{drm_render_minor}" are skipped, not fatal.
        if let Ok(n) = v.parse::<u64>() {
            cur.insert(k.to_string(), n);
        }
    }
    if !cur.is_empty() {
        nodes.push(cur);
    }
    let mut f = Facts::default();
    for n in nodes {
        let simd = n.get("simd_count").copied();
        let gfx = n
            .get("gfx_target_version")
            .copied()
            .and_then(gfx_from_target_version);
        // A GPU node has SIMDs; a lone gfx_target_version line (grep) is one too.
        if simd == Some(0) || (simd.is_none() && gfx.is_none()) {
            continue;
        }
        let vendor_id = n
            .get("vendor_id")
            .copied()
            .filter(|&v| v != 0)
            .map(|v| v as u16);
        let device_id = n
            .get("device_id")
            .copied()
            .filter(|&v| v != 0)
            .map(|v| v as u16);
        let vendor = if vendor_id == Some(amd::AMD) || gfx.is_some() {
            Vendor::Amd
        } else {
            Vendor::Other
        };
        let cpu_cores = n.get("cpu_cores_count").copied();
        let integrated = match cpu_cores {
            Some(c) if c > 0 => Some(true),
            _ => gfx
                .as_deref()
                .filter(|g| amd::is_apu_target(g))
                .map(|_| true),
        };
        let name = match (vendor_id, device_id) {
            (Some(v), Some(d)) => amd::pci_name(v, d).unwrap_or("").to_string(),
            _ => String::new(),
        };
        f.gpus.push(Gpu {
            vendor,
            vf: amd::is_vf(&name, vendor_id, device_id),
            name,
            vendor_id,
            device_id,
            gfx,
            integrated,
            render_minor: n
                .get("drm_render_minor")
                .copied()
                .filter(|&m| m != 0)
                .map(|m| m as u32),
            seen_by: vec!["kfd".into()],
            ..Gpu::default()
        });
    }
    f
}
