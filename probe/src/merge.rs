//! Folding partial [`Facts`] from several sources into one machine.
//!
//! The same GPU seen by amd-smi (PCI address, name), rocminfo (gfx target,
//! BDFID, chip id) and Vulkan (name, device id) must end up as ONE GPU, while
//! eight identical MI300X in one rocm-smi table stay eight. So: two entries
//! merge only when no source saw both (disjoint `seen_by`), nothing they know
//! contradicts (address, ids, gfx, vendor), and they share an identity key;
//! among candidates the strongest key wins (address > device id > gfx > name).

use std::collections::{BTreeMap, BTreeSet};

use crate::facts::{Facts, Gpu, Vendor};
use crate::from::amd;
use greta_vocab::VkFamily;

pub fn merge(parts: Vec<Facts>) -> Facts {
    let mut out = Facts::default();
    let mut gpus = GpuList::default();
    for mut p in parts {
        gpus.part += 1;
        for g in std::mem::take(&mut p.gpus) {
            gpus.add(g);
        }
        absorb(&mut out, p);
    }
    out.gpus = gpus.gpus;
    finish(&mut out);
    out
}

/// The GPUs merged so far, with their indices grouped by the set of
/// sources that saw them. A GPU merges only into one that none of its own
/// sources saw, so a whole group is skipped at once: one rocminfo of N
/// agents (N GPUs all seen by `rocminfo`) costs N steps, not the N²/2
/// comparisons of a scan of every GPU per GPU (95,000 agents
/// took two minutes).
#[derive(Default)]
struct GpuList {
    gpus: Vec<Gpu>,
    /// Sorted `seen_by` -> indices into `gpus`, in order.
    groups: BTreeMap<Vec<String>, BTreeSet<usize>>,
    /// Normalised PCI address -> the GPU at it. One address is one GPU
    /// whichever sources saw it: two kernel logs of one machine (both
    /// `dmesg`) naming 0000:c6:00.0 are one GPU, which the rule "one source
    /// never merges with itself" alone would keep apart.
    by_address: std::collections::HashMap<String, usize>,
    /// The part (one source's facts) each GPU first came from, and the
    /// part being added: within one part two GPUs at one address are what
    /// that source listed (partitions), never merged.
    origin: Vec<usize>,
    part: usize,
}

fn sources_key(seen_by: &[String]) -> Vec<String> {
    let mut k = seen_by.to_vec();
    k.sort();
    k.dedup();
    k
}

impl GpuList {
    /// Adds `g`, merging it into the best matching GPU already known: the
    /// highest score among those no source of `g` saw and nothing
    /// contradicts, the earliest on a tie.
    fn add(&mut self, g: Gpu) {
        if let Some(&i) = g
            .pci_address
            .as_deref()
            .and_then(|a| self.by_address.get(&norm_bdf(a)))
        {
            if self.origin[i] != self.part && !conflict(&self.gpus[i], &g) {
                self.merge_at(i, g);
                return;
            }
        }
        let mut best: Option<(u32, usize)> = None;
        for (key, members) in &self.groups {
            if key.iter().any(|s| g.seen_by.contains(s)) {
                continue;
            }
            for &i in members {
                let m = &self.gpus[i];
                if conflict(m, &g) {
                    continue;
                }
                let s = score(m, &g);
                let better = match best {
                    None => true,
                    Some((b, j)) => s > b || (s == b && i < j),
                };
                if s > 0 && better {
                    best = Some((s, i));
                }
            }
        }
        match best {
            None => {
                let i = self.gpus.len();
                self.groups
                    .entry(sources_key(&g.seen_by))
                    .or_default()
                    .insert(i);
                if let Some(a) = &g.pci_address {
                    self.by_address.entry(norm_bdf(a)).or_insert(i);
                }
                self.origin.push(self.part);
                self.gpus.push(g);
            }
            Some((_, i)) => self.merge_at(i, g),
        }
    }

    /// Folds `g` into GPU `i`, keeping the indices up to date.
    fn merge_at(&mut self, i: usize, g: Gpu) {
        let old = sources_key(&self.gpus[i].seen_by);
        merge_into(&mut self.gpus[i], g);
        let new = sources_key(&self.gpus[i].seen_by);
        if old != new {
            if let Some(m) = self.groups.get_mut(&old) {
                m.remove(&i);
                if m.is_empty() {
                    self.groups.remove(&old);
                }
            }
            self.groups.entry(new).or_default().insert(i);
        }
        if let Some(a) = &self.gpus[i].pci_address {
            self.by_address.entry(norm_bdf(a)).or_insert(i);
        }
    }
}

fn first<T>(slot: &mut Option<T>, v: Option<T>) {
    if slot.is_none() {
        *slot = v;
    }
}

fn union<T: PartialEq>(into: &mut Vec<T>, from: Vec<T>) {
    for x in from {
        if !into.contains(&x) {
            into.push(x);
        }
    }
}

/// Exhaustive destructuring: a field added to the model later is a compile
/// error here until merging says what to do with it, never silently dropped.
fn absorb(out: &mut Facts, p: Facts) {
    let Facts {
        kernel_version,
        kernel_driver_version,
        gpus,
        drivers,
        device_nodes,
        vulkan,
        rocm,
        python,
        signals,
        container,
        sources,
        scanned,
        wsl,
        text_scan,
        cut,
    } = p;
    union(&mut out.text_scan, text_scan);
    first(&mut out.kernel_version, kernel_version);
    first(&mut out.kernel_driver_version, kernel_driver_version);
    // Merged by `merge` through its GpuList before this is called.
    debug_assert!(gpus.is_empty());
    for d in drivers {
        match out.drivers.iter_mut().find(|x| x.name == d.name) {
            Some(x) => {
                x.loaded |= d.loaded;
                first(&mut x.version, d.version);
            }
            None => out.drivers.push(d),
        }
    }
    // Nodes by path, so a capture of many nodes costs one lookup per node,
    // not a scan of the list (200,000 render nodes took minutes).
    let mut at: std::collections::HashMap<String, usize> = out
        .device_nodes
        .iter()
        .enumerate()
        .map(|(i, x)| (x.path.clone(), i))
        .collect();
    for n in device_nodes {
        match at.get(&n.path).map(|&i| &mut out.device_nodes[i]) {
            Some(x) => {
                let crate::facts::DeviceNode {
                    path: _,
                    exists,
                    mode,
                    group,
                    openable,
                    missing_groups,
                    open_error,
                } = n;
                x.exists |= exists;
                first(&mut x.mode, mode);
                first(&mut x.group, group);
                first(&mut x.openable, openable);
                union(&mut x.missing_groups, missing_groups);
                first(&mut x.open_error, open_error);
            }
            None => {
                at.insert(n.path.clone(), out.device_nodes.len());
                out.device_nodes.push(n);
            }
        }
    }
    let crate::facts::Vulkan {
        loader,
        icds,
        devices,
        drivers: vk_drivers,
        env,
        implicit_layers,
    } = vulkan;
    first(&mut out.vulkan.loader, loader);
    for icd in icds {
        if !out.vulkan.icds.iter().any(|x| x.manifest == icd.manifest) {
            out.vulkan.icds.push(icd);
        }
    }
    // A device another source listed already is that one again; one
    // source's own repeats are what it listed (one GPU shown twice).
    let earlier = out.vulkan.devices.len();
    for d in devices {
        if !out.vulkan.devices[..earlier].contains(&d) {
            out.vulkan.devices.push(d);
        }
    }
    union(&mut out.vulkan.drivers, vk_drivers);
    union(&mut out.vulkan.env, env);
    union(&mut out.vulkan.implicit_layers, implicit_layers);
    let crate::facts::Rocm {
        installs,
        version,
        hip_version,
        active_reason,
        hsa_override_gfx_version,
        ld_library_path_rocm,
        runtime_sees_gpu,
        agent_gfx,
        hip_libraries,
        hipconfig,
        visible_devices,
        failed_hip_device,
    } = rocm;
    for i in installs {
        if !out.rocm.installs.iter().any(|x| x.path == i.path) {
            out.rocm.installs.push(i);
        }
    }
    first(&mut out.rocm.version, version);
    first(&mut out.rocm.hip_version, hip_version);
    first(&mut out.rocm.active_reason, active_reason);
    if hsa_override_gfx_version.is_some() {
        out.rocm.hsa_override_gfx_version = hsa_override_gfx_version;
    }
    union(&mut out.rocm.ld_library_path_rocm, ld_library_path_rocm);
    out.rocm.runtime_sees_gpu = match (out.rocm.runtime_sees_gpu, runtime_sees_gpu) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (a, b) => a.or(b),
    };
    union(&mut out.rocm.agent_gfx, agent_gfx);
    union(&mut out.rocm.hip_libraries, hip_libraries);
    first(&mut out.rocm.hipconfig, hipconfig);
    // A later value of a variable replaces an earlier one, as in a shell.
    for (k, v) in visible_devices {
        out.rocm.visible_devices.retain(|(x, _)| *x != k);
        out.rocm.visible_devices.push((k, v));
    }
    first(&mut out.rocm.failed_hip_device, failed_hip_device);
    let crate::facts::Python {
        interpreters,
        frameworks,
    } = python;
    union(&mut out.python.interpreters, interpreters);
    union(&mut out.python.frameworks, frameworks);
    out.signals.extend(signals);
    first(&mut out.container, container);
    union(&mut out.sources, sources);
    union(&mut out.scanned, scanned);
    out.wsl = out.wsl.or(wsl);
    // Two readers of one paste claim the same GPUs: the longest claim.
    for (what, n) in cut {
        let at = out.cut.entry(what).or_insert(n);
        *at = (*at).max(n);
    }
}

/// After all parts: derived driver kinds, pci.ids names, VF flags.
fn finish(out: &mut Facts) {
    let kinds: Vec<VkFamily> = out
        .vulkan
        .icds
        .iter()
        .map(|i| i.kind)
        .chain(out.vulkan.devices.iter().map(|d| d.kind))
        .collect();
    union(&mut out.vulkan.drivers, kinds);
    out.vulkan.drivers.retain(|k| *k != VkFamily::Other);
    for g in &mut out.gpus {
        if g.vendor_id.is_none() && g.device_id.is_some() {
            g.vendor_id = g.vendor.pci_id();
        }
        if g.name.is_empty() {
            if let (Some(v), Some(d)) = (g.vendor_id, g.device_id) {
                if let Some(n) = amd::pci_name(v, d) {
                    g.name = n.to_string();
                }
            }
        }
        g.vf |= amd::is_vf(&g.name, g.vendor_id, g.device_id);
        if g.integrated.is_none()
            && g.vendor == Vendor::Amd
            && g.gfx.as_deref().is_some_and(amd::is_apu_target)
        {
            g.integrated = Some(true);
        }
    }
}

/// "0000:83:00.0" and "83:00.0" name the same function (rocminfo's BDFID
/// carries no PCI domain).
fn norm_bdf(s: &str) -> String {
    match s.parse::<greta_vocab::PciAddress>() {
        Ok(a) => greta_vocab::PciAddress { domain: None, ..a }.to_string(),
        Err(_) => s.trim().to_lowercase(),
    }
}

fn conflict(a: &Gpu, b: &Gpu) -> bool {
    let vend = |v: Vendor| v != Vendor::Other;
    (vend(a.vendor) && vend(b.vendor) && a.vendor != b.vendor)
        || matches!((&a.pci_address, &b.pci_address), (Some(x), Some(y)) if norm_bdf(x) != norm_bdf(y))
        || matches!((a.device_id, b.device_id), (Some(x), Some(y)) if x != y)
        || matches!((&a.gfx, &b.gfx), (Some(x), Some(y)) if x != y)
}

fn norm_name(n: &str) -> String {
    let n = match n.find(" (") {
        Some(p) => &n[..p],
        None => n,
    };
    n.trim().to_lowercase()
}

fn score(a: &Gpu, b: &Gpu) -> u32 {
    let mut s = 0;
    if matches!((&a.pci_address, &b.pci_address), (Some(x), Some(y)) if norm_bdf(x) == norm_bdf(y))
    {
        s += 100;
    }
    if a.device_id.is_some() && a.device_id == b.device_id {
        s += 20;
    }
    if a.gfx.is_some() && a.gfx == b.gfx {
        s += 10;
    }
    let (na, nb) = (norm_name(&a.name), norm_name(&b.name));
    if na.len() >= 6 && nb.len() >= 6 && (na.contains(&nb) || nb.contains(&na)) {
        s += 5;
    }
    if s == 0 && a.vendor == b.vendor && a.vendor != Vendor::Other && (bare(a) || bare(b)) {
        s = 1;
    }
    s
}

/// A GPU a source listed with nothing that tells which it is (no
/// address, id, target or name): old rocm-smi's `GPU[1] : Temperature: 74.0c`.
pub(crate) fn bare(g: &Gpu) -> bool {
    g.pci_address.is_none() && g.device_id.is_none() && g.gfx.is_none() && g.name.is_empty()
}

fn name_rank(name: &str, seen_by: &[String]) -> u32 {
    if name.is_empty() {
        return 0;
    }
    if amd::find_gfx(name).is_some_and(|x| x == name.trim()) {
        return 1;
    }
    let authoritative = ["amd-smi", "rocm-smi", "rocminfo", "pci"];
    if seen_by.iter().any(|s| authoritative.contains(&s.as_str())) {
        3
    } else {
        2
    }
}

/// Folds `g` into `m`, the GPU it was matched with.
pub(crate) fn merge_into(m: &mut Gpu, g: Gpu) {
    let Gpu {
        vendor,
        name,
        pci_address,
        vendor_id,
        device_id,
        revision,
        subsystem_vendor_id,
        subsystem_device_id,
        gfx,
        vf,
        integrated,
        compute_units,
        vram_bytes,
        gtt_bytes,
        kernel_driver,
        render_minor,
        seen_by,
        kfd_node,
        rocr_uuid,
        hip_index,
    } = g;
    if name_rank(&name, &seen_by) > name_rank(&m.name, &m.seen_by) {
        m.name = name;
    }
    if m.vendor == Vendor::Other {
        m.vendor = vendor;
    }
    match (&m.pci_address, pci_address) {
        (Some(a), Some(b)) if b.len() > a.len() => m.pci_address = Some(b),
        (None, Some(b)) => m.pci_address = Some(b),
        _ => {}
    }
    first(&mut m.vendor_id, vendor_id);
    first(&mut m.device_id, device_id);
    first(&mut m.revision, revision);
    first(&mut m.subsystem_vendor_id, subsystem_vendor_id);
    first(&mut m.subsystem_device_id, subsystem_device_id);
    first(&mut m.gfx, gfx);
    m.vf |= vf;
    first(&mut m.integrated, integrated);
    first(&mut m.compute_units, compute_units);
    first(&mut m.vram_bytes, vram_bytes);
    first(&mut m.gtt_bytes, gtt_bytes);
    first(&mut m.kernel_driver, kernel_driver);
    first(&mut m.render_minor, render_minor);
    union(&mut m.seen_by, seen_by);
    first(&mut m.kfd_node, kfd_node);
    first(&mut m.rocr_uuid, rocr_uuid);
    first(&mut m.hip_index, hip_index);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(seen: &str) -> Gpu {
        Gpu {
            vendor: Vendor::Amd,
            seen_by: vec![seen.into()],
            ..Gpu::default()
        }
    }

    #[test]
    fn same_pci_address_merges_across_sources() {
        let mut a = gpu("amd-smi");
        a.pci_address = Some("0000:83:00.0".into());
        a.name = "AMD Instinct MI300X VF".into();
        let mut b = gpu("rocminfo");
        b.pci_address = Some("83:00.0".into());
        b.gfx = Some("gfx942".into());
        b.name = "AMD Instinct MI300X VF".into();
        let mut l = GpuList::default();
        l.add(a);
        l.add(b);
        assert_eq!(l.gpus.len(), 1);
        assert_eq!(l.gpus[0].pci_address.as_deref(), Some("0000:83:00.0"));
        assert_eq!(l.gpus[0].gfx.as_deref(), Some("gfx942"));
    }

    /// One listing that shows a device twice (wslg#1340: Dozen, one
    /// deviceUUID) keeps both entries for the duplicate finding; a second
    /// paste of the same listing adds nothing.
    #[test]
    fn vulkan_devices_repeat_within_a_source_not_across() {
        let d = crate::facts::VulkanDevice {
            name: "Microsoft Direct3D12 (NVIDIA GeForce RTX 3070 Ti)".into(),
            ..Default::default()
        };
        let part = |n: usize| {
            let mut f = Facts::default();
            f.vulkan.devices = vec![d.clone(); n];
            f
        };
        assert_eq!(merge(vec![part(2)]).vulkan.devices.len(), 2);
        assert_eq!(merge(vec![part(1), part(1)]).vulkan.devices.len(), 1);
        assert_eq!(merge(vec![part(2), part(2)]).vulkan.devices.len(), 2);
    }

    #[test]
    fn one_source_never_merges_with_itself() {
        let mut l = GpuList::default();
        for _ in 0..8 {
            let mut g = gpu("rocm-smi");
            g.device_id = Some(0x74a1);
            l.add(g);
        }
        let mut r = gpu("rocminfo");
        r.device_id = Some(0x74a1);
        r.gfx = Some("gfx942".into());
        l.add(r);
        assert_eq!(l.gpus.len(), 8);
        assert_eq!(l.gpus.iter().filter(|g| g.gfx.is_some()).count(), 1);
    }

    #[test]
    fn contradictions_never_merge() {
        let mut l = GpuList::default();
        let mut a = gpu("rocm-smi");
        a.device_id = Some(0x7550);
        let mut b = gpu("rocminfo");
        b.device_id = Some(0x13c0);
        b.name = "x".into();
        l.add(a);
        l.add(b);
        assert_eq!(l.gpus.len(), 2);
        let mut c = gpu("vulkan:radv");
        c.vendor = Vendor::Nvidia;
        c.device_id = Some(0x7550);
        l.add(c);
        assert_eq!(l.gpus.len(), 3);
    }

    #[test]
    fn one_address_is_one_gpu_even_from_one_source() {
        // Two kernel logs of one machine: both `dmesg`, one address.
        let mut l = GpuList::default();
        for _ in 0..2 {
            l.part += 1;
            let mut g = gpu("dmesg");
            g.pci_address = Some("0000:c6:00.0".into());
            l.add(g);
        }
        assert_eq!(l.gpus.len(), 1);
        // Within one source's list, two entries at one address stay two.
        l.part += 1;
        for _ in 0..2 {
            let mut g = gpu("amd-smi");
            g.pci_address = Some("0000:c8:00.0".into());
            l.add(g);
        }
        assert_eq!(l.gpus.len(), 3);
        // Different addresses stay apart.
        let mut g = gpu("dmesg");
        g.pci_address = Some("0000:c7:00.0".into());
        l.add(g);
        assert_eq!(l.gpus.len(), 4);
    }

    #[test]
    fn ties_go_to_the_earliest_gpu_and_regrouped_gpus_still_merge() {
        // Two amd-smi GPUs equally good for a rocminfo one: the first wins,
        // as a scan in list order chose.
        let mut l = GpuList::default();
        for _ in 0..2 {
            let mut g = gpu("amd-smi");
            g.gfx = Some("gfx942".into());
            l.add(g);
        }
        let mut r = gpu("rocminfo");
        r.gfx = Some("gfx942".into());
        r.name = "first".into();
        l.add(r);
        assert_eq!(l.gpus[0].seen_by, ["amd-smi", "rocminfo"]);
        assert_eq!(l.gpus[1].seen_by, ["amd-smi"]);
        // The merged GPU moved group: a vulkan GPU can still join it, and a
        // second rocminfo GPU joins the one rocminfo did not see.
        let mut v = gpu("vulkan:radv");
        v.gfx = Some("gfx942".into());
        l.add(v);
        assert_eq!(l.gpus[0].seen_by, ["amd-smi", "rocminfo", "vulkan:radv"]);
        let mut r2 = gpu("rocminfo");
        r2.gfx = Some("gfx942".into());
        l.add(r2);
        assert_eq!(l.gpus.len(), 2);
        assert_eq!(l.gpus[1].seen_by, ["amd-smi", "rocminfo"]);
    }
}
