//! AMD compute topology from KFD (`/sys/class/kfd/kfd/topology/nodes/*/properties`):
//! the gfx target, compute units and render minor of every GPU node, merged
//! into the PCI GPU it belongs to.

use std::collections::BTreeMap;

use super::gpu;
use super::{scanned, seen};
use crate::facts::{Facts, Gpu, Vendor};
use crate::from::amd;
use crate::root::Root;

const NODES: &str = "/sys/class/kfd/kfd/topology/nodes";

/// One KFD topology node: its `key value` properties.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KfdNode {
    pub props: BTreeMap<String, u64>,
}

impl KfdNode {
    pub fn get(&self, key: &str) -> Option<u64> {
        self.props.get(key).copied()
    }
    /// gfx target from `gfx_target_version` (absent on kernels before ~5.x).
    pub fn gfx(&self) -> Option<String> {
        self.get("gfx_target_version")
            .and_then(amd::gfx_from_target_version)
    }
    /// A node with SIMDs or a gfx target is a GPU (an APU node on old
    /// kernels has both CPU cores and SIMDs).
    pub fn is_gpu(&self) -> bool {
        self.get("simd_count").unwrap_or(0) > 0 || self.gfx().is_some()
    }
    /// Old kernels put an APU's CPU cores and SIMDs on one node.
    pub fn is_combined_apu(&self) -> bool {
        self.get("cpu_cores_count").unwrap_or(0) > 0 && self.get("simd_count").unwrap_or(0) > 0
    }
    pub fn vendor_id(&self) -> Option<u16> {
        self.get("vendor_id")
            .filter(|&v| v != 0)
            .and_then(|v| u16::try_from(v).ok())
    }
    pub fn device_id(&self) -> Option<u16> {
        self.get("device_id")
            .filter(|&v| v != 0)
            .and_then(|v| u16::try_from(v).ok())
    }
    /// CUs = simd_count / simd_per_cu (rocminfo's "Compute Unit").
    pub fn compute_units(&self) -> Option<u32> {
        let simd = self.get("simd_count")?;
        let per = self.get("simd_per_cu").filter(|&p| p > 0)?;
        u32::try_from(simd / per).ok().filter(|&c| c > 0)
    }
    /// DRM render minor (128 -> /dev/dri/renderD128); 0 means none.
    pub fn render_minor(&self) -> Option<u32> {
        self.get("drm_render_minor")
            .filter(|&m| m > 0)
            .and_then(|m| u32::try_from(m).ok())
    }
}

/// Parses one `properties` file, or several pasted back to back (a new node
/// starts when a key repeats). Lines that are not `name integer` (shell
/// prompts, `{template}` values, garbage) are skipped.
pub fn parse_kfd_properties(text: &str) -> Vec<KfdNode> {
    let mut nodes = Vec::new();
    let mut cur = KfdNode::default();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(key), Some(val), None) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        if !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || !key.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        {
            continue;
        }
        let Ok(v) = val.parse::<u64>() else {
            continue;
        };
        if cur.props.contains_key(key) {
            nodes.push(std::mem::take(&mut cur));
        }
        cur.props.insert(key.to_string(), v);
    }
    if !cur.props.is_empty() {
        nodes.push(cur);
    }
    nodes
}

/// Merges a KFD GPU node into `gpus`: same render minor, else same
/// vendor/device id not yet seen by KFD, else a new entry.
pub fn merge_node(gpus: &mut Vec<Gpu>, node: &KfdNode, source: &str) {
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
    if !root.is_dir(NODES) {
        return "no KFD topology (amdgpu/KFD not loaded or no AMD compute GPU)".into();
    }
    scanned(f, "kfd");
    let mut names = root.list(NODES);
    // Numeric order: node 10 after node 9.
    names.sort_by_key(|n| n.parse::<u64>().unwrap_or(u64::MAX));
    let mut gpus = 0;
    let mut cpus = 0;
    let mut gfx = Vec::new();
    for n in names {
        let Ok(text) = root.read(&format!("{NODES}/{n}/properties")) else {
            continue;
        };
        for node in parse_kfd_properties(&text) {
            if node.is_gpu() {
                gpus += 1;
                if let Some(g) = node.gfx() {
                    gfx.push(g);
                }
                merge_node(&mut f.gpus, &node, "kfd");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures")
            .join(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn raven_ridge_concatenated_nodes_split_in_two() {
        let nodes = parse_kfd_properties(&fixture(
            "kfd-topology-samples/raven-ridge-apu-plus-fiji-2019-nodes-properties-concatenated.txt",
        ));
        assert_eq!(nodes.len(), 2);
        assert!(nodes[0].is_combined_apu());
        assert_eq!(nodes[0].vendor_id(), Some(0x1002));
        assert_eq!(nodes[0].device_id(), Some(5597));
        assert_eq!(nodes[0].compute_units(), Some(11));
        assert_eq!(nodes[0].render_minor(), Some(129));
        assert!(nodes[1].is_gpu());
        assert_eq!(nodes[1].vendor_id(), None);
        assert_eq!(nodes[1].get("simd_count"), Some(256));
    }

    #[test]
    fn mi300x_grep_line_and_gfx1100_template() {
        let n = parse_kfd_properties(&fixture(
            "kfd-topology-samples/mi300x-grep-gfx-target-version.txt",
        ));
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].gfx().as_deref(), Some("gfx942"));
        let t = parse_kfd_properties(&fixture(
            "rx7900xtx-gfx1100/kfd-node-properties.template.txt",
        ));
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].gfx().as_deref(), Some("gfx1100"));
        assert_eq!(t[0].device_id(), Some(0x744c));
        assert_eq!(t[0].compute_units(), Some(96));
        // `{drm_render_minor}` placeholder is not a number: skipped.
        assert_eq!(t[0].render_minor(), None);
    }

    #[test]
    fn garbage_gives_no_nodes_and_no_panic() {
        assert!(parse_kfd_properties("").is_empty());
        assert!(parse_kfd_properties("\u{0}\u{1}ÿ 12 13\n-- --\nkey\n").is_empty());
        let huge = "simd_count 99999999999999999999999\n";
        assert!(parse_kfd_properties(huge).is_empty());
    }
}
