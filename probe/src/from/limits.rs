//! How much of a machine one paste may claim. A reader turns lines into
//! facts, and a short line can claim a whole GPU: a 16 MiB paste of
//! `Name: gfx942` once became 1.2 million GPUs, 1.3 GB of memory and
//! 638 MB of JSON. The largest real node lists 64 (eight MI300X, each in
//! CPX mode as eight logical GPUs; `amd-smi partition` and rocminfo show
//! each), so a paste may claim twice that in any list; what it claims
//! beyond is counted, not kept, and the report says so.

use crate::facts::Facts;

/// The longest list of one kind (GPUs, Vulkan devices, ICD manifests,
/// ROCm installs, ...) one paste or captured output may fill.
pub const MAX_LISTED: usize = 128;

/// Keeps the first [`MAX_LISTED`] entries of every list in `f` and records
/// in `f.cut` the length each longer one claimed. Run on each reader's
/// facts before they are merged, so nothing after a reader (the merge,
/// the rules, the report, the JSON) grows with what a paste claims.
pub(crate) fn cap_lists(f: &mut Facts) {
    let mut cut = std::mem::take(&mut f.cut);
    let mut cap = |what: &'static str, len: usize| -> bool {
        if len <= MAX_LISTED {
            return false;
        }
        let at = cut.entry(what).or_insert(len);
        *at = (*at).max(len);
        true
    };
    macro_rules! cap {
        ($what:literal, $list:expr) => {
            if cap($what, $list.len()) {
                $list.truncate(MAX_LISTED);
            }
        };
    }
    cap!("GPUs", f.gpus);
    cap!("kernel drivers", f.drivers);
    cap!("device nodes", f.device_nodes);
    cap!("Vulkan ICD manifests", f.vulkan.icds);
    cap!("Vulkan devices", f.vulkan.devices);
    cap!("Vulkan driver kinds", f.vulkan.drivers);
    cap!("Vulkan variables", f.vulkan.env);
    cap!("Vulkan layers", f.vulkan.implicit_layers);
    cap!("ROCm installs", f.rocm.installs);
    cap!(
        "ROCm directories on LD_LIBRARY_PATH",
        f.rocm.ld_library_path_rocm
    );
    cap!("GPU agent targets", f.rocm.agent_gfx);
    cap!("HIP libraries", f.rocm.hip_libraries);
    cap!("device selection variables", f.rocm.visible_devices);
    cap!("Python interpreters", f.python.interpreters);
    cap!("Python frameworks", f.python.frameworks);
    f.cut = cut;
}

/// Adds `g` to `f.gpus` while there is room (the recognisers that add to
/// facts already merged); beyond [`MAX_LISTED`] it is only counted.
pub(crate) fn push_gpu(f: &mut Facts, g: crate::facts::Gpu) {
    if f.gpus.len() < MAX_LISTED {
        f.gpus.push(g);
    } else {
        *f.cut.entry("GPUs").or_insert(MAX_LISTED) += 1;
    }
}

/// What a reader collects by the name the text gives it (a device index,
/// an id), in the order first named: lookups by hash, so a paste naming a
/// million distinct devices stays linear; at most [`MAX_LISTED`] kept.
/// Keys beyond are counted, and what the reader writes for them goes to a
/// spill item that is dropped.
pub(crate) struct Keyed<K, T> {
    items: Vec<T>,
    at: std::collections::HashMap<K, usize>,
    beyond: std::collections::HashSet<K>,
    spill: Option<T>,
}

impl<K: std::hash::Hash + Eq, T> Default for Keyed<K, T> {
    fn default() -> Self {
        Keyed {
            items: Vec::new(),
            at: Default::default(),
            beyond: Default::default(),
            spill: None,
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone, T> Keyed<K, T> {
    /// The item named `key`, made by `new` the first time it is named.
    pub fn entry(&mut self, key: K, new: impl FnOnce() -> T) -> &mut T {
        if let Some(&i) = self.at.get(&key) {
            return &mut self.items[i];
        }
        if self.items.len() < MAX_LISTED {
            self.at.insert(key, self.items.len());
            self.items.push(new());
            let last = self.items.len() - 1;
            return &mut self.items[last];
        }
        self.beyond.insert(key);
        self.spill.insert(new())
    }

    /// The items kept, in order; in `cut` under `what`, how many were
    /// named in all when that is more than were kept.
    pub fn finish(
        self,
        what: &'static str,
        cut: &mut std::collections::BTreeMap<&'static str, usize>,
    ) -> Vec<T> {
        if !self.beyond.is_empty() {
            let named = self.items.len() + self.beyond.len();
            let at = cut.entry(what).or_insert(named);
            *at = (*at).max(named);
        }
        self.items
    }
}

/// The note for what `f.cut` says a paste claimed: "this paste claims
/// 1200000 GPUs; greta read the first 128".
pub(crate) fn cut_note(f: &Facts, what_claims: &str) -> Option<String> {
    if f.cut.is_empty() {
        return None;
    }
    let claims: Vec<String> = f
        .cut
        .iter()
        .map(|(what, n)| format!("{n} {what}"))
        .collect();
    let each = if claims.len() > 1 { " of each" } else { "" };
    Some(format!(
        "{what_claims} claims {}; greta read the first {MAX_LISTED}{each}",
        claims.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{Gpu, VulkanDevice};

    #[test]
    fn keyed_items_beyond_the_limit_are_counted_once_and_dropped() {
        let mut k: Keyed<u32, u32> = Keyed::default();
        for _ in 0..3 {
            for i in 0..1000u32 {
                *k.entry(i, || 0) += 1;
            }
        }
        let mut cut = Default::default();
        let items = k.finish("GPUs", &mut cut);
        assert_eq!(items, vec![3; MAX_LISTED]);
        assert_eq!(cut.get("GPUs"), Some(&1000));
        let mut small: Keyed<u32, ()> = Keyed::default();
        small.entry(1, || ());
        let mut cut = Default::default();
        assert_eq!(small.finish("GPUs", &mut cut).len(), 1);
        assert!(cut.is_empty());
    }

    #[test]
    fn long_lists_are_cut_and_counted_short_ones_kept() {
        let mut f = Facts {
            gpus: vec![Gpu::default(); 1000],
            ..Facts::default()
        };
        f.vulkan.devices = vec![VulkanDevice::default(); MAX_LISTED];
        cap_lists(&mut f);
        assert_eq!(f.gpus.len(), MAX_LISTED);
        assert_eq!(f.vulkan.devices.len(), MAX_LISTED);
        assert_eq!(f.cut.get("GPUs"), Some(&1000));
        assert_eq!(f.cut.len(), 1);
        assert_eq!(
            cut_note(&f, "this paste").as_deref(),
            Some("this paste claims 1000 GPUs; greta read the first 128")
        );
        // Cut again (after a merge): the longest claim stays.
        f.gpus = vec![Gpu::default(); 300];
        cap_lists(&mut f);
        assert_eq!(f.cut.get("GPUs"), Some(&1000));
        assert!(cut_note(&Facts::default(), "x").is_none());
    }
}
