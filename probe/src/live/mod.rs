//! Collectors that read a machine through a [`crate::root::Root`]: one small
//! module per source, in the order an expert checks them. Each one fills
//! part of [`crate::facts::Facts`] and returns a one-line summary; none of
//! them changes the machine, panics on odd input, or waits without a limit.

pub mod gpu;
pub mod icd;
pub mod kfd;
pub mod nodes;
pub mod pci;
pub mod python;
pub mod rocm;
pub mod vkdev;

/// Adds `who` to a GPU's `seen_by` once.
pub(crate) fn seen(g: &mut crate::facts::Gpu, who: &str) {
    if !g.seen_by.iter().any(|s| s == who) {
        g.seen_by.push(who.to_string());
    }
}

/// Marks an area as inspected completely (so its absence is a fact).
pub(crate) fn scanned(f: &mut crate::facts::Facts, area: &str) {
    if !f.scanned.iter().any(|s| s == area) {
        f.scanned.push(area.to_string());
    }
}

/// Adds a signal unless the same id/source/text is already there.
pub(crate) fn signal(f: &mut crate::facts::Facts, id: &str, source: &str, text: &str) {
    if f.signals
        .iter()
        .any(|s| s.id == id && s.source == source && s.text == text)
    {
        return;
    }
    f.signals.push(crate::facts::Signal {
        id: id.to_string(),
        source: source.to_string(),
        line: None,
        text: text.to_string(),
    });
}

/// Parses "0x1002" / "1002" (sysfs ids) as hex.
pub(crate) fn hex_u32(s: &str) -> Option<u32> {
    let s = s.trim();
    u32::from_str_radix(s.strip_prefix("0x").unwrap_or(s), 16).ok()
}
