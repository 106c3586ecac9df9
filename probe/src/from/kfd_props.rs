//! `/sys/class/kfd/kfd/topology/nodes/N/properties` text, one node or
//! several pasted back to back. The one parser of that format: the live
//! collector ([`crate::live::kfd`]) reads sysfs through it too.
//! A node with SIMDs is a GPU; one with CPU cores as well is an APU.

use super::amd::{self, gfx_from_target_version};
use super::shared_lines::lines_of;
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

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "kfd-properties",
    label: "KFD node properties",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[KEYS, &["gfx_target_version"]],
};

pub fn recognise(text: &str) -> bool {
    let mut known = 0;
    let mut other = 0;
    for l in lines_of(text)
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
        || lines_of(text).any(|l| pair(l.trim()).is_some_and(|(k, _)| k == "gfx_target_version")))
        && other <= known
}

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
            .and_then(gfx_from_target_version)
    }
    /// A node with SIMDs or a gfx target is a GPU (an APU node on old
    /// kernels has both CPU cores and SIMDs).
    pub fn is_gpu(&self) -> bool {
        self.get("simd_count").unwrap_or(0) > 0 || self.gfx().is_some()
    }
    /// ROCr's UUID of a GPU node: `GPU-` and `unique_id` as 16 hex digits
    /// (rocminfo's `Uuid:`); none where the kernel reports no `unique_id`
    /// (old kernels, or 0 on GPUs without one).
    pub fn rocr_uuid(&self) -> Option<String> {
        self.get("unique_id")
            .filter(|&u| u != 0)
            .map(|u| format!("GPU-{u:016x}"))
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
    for line in lines_of(text) {
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

/// The GPU nodes of pasted `properties` text as partial facts.
pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    for n in parse_kfd_properties(text) {
        let simd = n.get("simd_count");
        let gfx = n.gfx();
        // A GPU node has SIMDs; a lone gfx_target_version line (grep) is one too.
        if simd == Some(0) || (simd.is_none() && gfx.is_none()) {
            continue;
        }
        let vendor_id = n.vendor_id();
        let device_id = n.device_id();
        let vendor = if vendor_id == Some(amd::AMD) || gfx.is_some() {
            Vendor::Amd
        } else {
            Vendor::Other
        };
        let integrated = match n.get("cpu_cores_count") {
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
        super::limits::push_gpu(
            &mut f,
            Gpu {
                vendor,
                vf: amd::is_vf(&name, vendor_id, device_id),
                name,
                vendor_id,
                device_id,
                gfx,
                integrated,
                render_minor: n.render_minor(),
                seen_by: vec!["kfd".into()],
                ..Gpu::default()
            },
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
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
    fn pasted_nodes_become_gpus_and_cpu_nodes_do_not() {
        // `grep -h gfx_target_version nodes/*/properties`: one line per node,
        // the CPU node's 0 included.
        let f =
            parse("gfx_target_version 0\ngfx_target_version 90402\ngfx_target_version 110003\n");
        let gfx: Vec<_> = f.gpus.iter().map(|g| g.gfx.as_deref()).collect();
        assert_eq!(gfx, [Some("gfx942"), Some("gfx1103")]);
        assert_eq!(f.gpus[1].integrated, Some(true));
        assert_eq!(f.gpus[0].integrated, None);
    }

    #[test]
    fn garbage_gives_no_nodes_and_no_panic() {
        assert!(parse_kfd_properties("").is_empty());
        assert!(parse_kfd_properties("\u{0}\u{1}ÿ 12 13\n-- --\nkey\n").is_empty());
        let huge = "simd_count 99999999999999999999999\n";
        assert!(parse_kfd_properties(huge).is_empty());
    }
}
