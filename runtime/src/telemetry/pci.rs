//! The PCI bus and KFD as the kernel shows them in sysfs, under a root
//! directory (`/` on a live machine, a captured tree under `--sysroot`).

use super::{Link, LinkState};
use std::path::Path;

/// Small sysfs attribute files; anything larger is not one.
const ATTR_CAP: u64 = 4096;

pub(crate) fn attr(path: &Path) -> Option<String> {
    greta_fsread::text(path, ATTR_CAP)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The PCIe generation of a sysfs link speed ("16.0 GT/s PCIe", "8 GT/s",
/// "2.5 GT/s"): 1 for 2.5 GT/s up to 6 for 64 GT/s; `None` for anything
/// else ("Unknown", empty).
pub fn gen_of_speed(text: &str) -> Option<u32> {
    let num = text.split_whitespace().next()?;
    let gts: f64 = num.parse().ok()?;
    [2.5, 5.0, 8.0, 16.0, 32.0, 64.0]
        .iter()
        .position(|&g| (gts - g).abs() < 0.01)
        .map(|i| i as u32 + 1)
}

/// The link of the PCI device directory `dev` (`current_link_speed`,
/// `current_link_width`, `max_link_speed`, `max_link_width`).
pub(crate) fn link_of(dev: &Path) -> Option<Link> {
    let state = |speed: &str, width: &str| -> Option<LinkState> {
        Some(LinkState {
            gen: gen_of_speed(&attr(&dev.join(speed))?)?,
            width: attr(&dev.join(width))?.parse().ok()?,
        })
    };
    Some(Link {
        current: state("current_link_speed", "current_link_width")?,
        max: state("max_link_speed", "max_link_width")?,
    })
}

/// GPUs of `vendor` (0x1002 AMD, 0x10de NVIDIA) on the PCI bus: devices of
/// class 0x03xxxx (display controllers: VGA 0x0300, 3D 0x0302, other
/// 0x0380). `None` when the bus cannot be listed at all.
pub fn bus_gpu_count(root: &Path, vendor: u16) -> Option<usize> {
    let dir = root.join("sys/bus/pci/devices");
    let entries = std::fs::read_dir(&dir).ok()?;
    let want = format!("0x{vendor:04x}");
    Some(
        entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                let p = e.path();
                attr(&p.join("vendor")).is_some_and(|v| v.eq_ignore_ascii_case(&want))
                    && attr(&p.join("class")).is_some_and(|c| c.starts_with("0x03"))
            })
            .count(),
    )
}

/// GPU nodes in KFD's topology (`/sys/class/kfd/kfd/topology/nodes/N`):
/// a node whose `gpu_id` is not 0 (CPU nodes have 0). `None` without KFD.
pub fn kfd_gpu_count(root: &Path) -> Option<usize> {
    let dir = root.join("sys/class/kfd/kfd/topology/nodes");
    let entries = std::fs::read_dir(&dir).ok()?;
    Some(
        entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                attr(&e.path().join("gpu_id"))
                    .and_then(|v| v.parse::<u64>().ok())
                    .is_some_and(|id| id != 0)
            })
            .count(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn speeds_old_and_new_spellings() {
        assert_eq!(gen_of_speed("32.0 GT/s PCIe"), Some(5));
        assert_eq!(gen_of_speed("16.0 GT/s PCIe"), Some(4));
        assert_eq!(gen_of_speed("8 GT/s"), Some(3));
        assert_eq!(gen_of_speed("2.5 GT/s PCIe"), Some(1));
        assert_eq!(gen_of_speed("Unknown"), None);
        assert_eq!(gen_of_speed(""), None);
    }

    #[test]
    fn bus_and_kfd_counts_from_a_tree() {
        let t = tempfile::tempdir().unwrap();
        let dev = |name: &str, vendor: &str, class: &str| {
            let d = t.path().join("sys/bus/pci/devices").join(name);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("vendor"), format!("{vendor}\n")).unwrap();
            fs::write(d.join("class"), format!("{class}\n")).unwrap();
        };
        dev("0000:03:00.0", "0x1002", "0x038000");
        dev("0000:04:00.0", "0x1002", "0x030000");
        dev("0000:04:00.1", "0x1002", "0x040300"); // its HDMI audio
        dev("0000:05:00.0", "0x10de", "0x030200");
        dev("0000:00:01.0", "0x1022", "0x060400"); // a bridge
        assert_eq!(bus_gpu_count(t.path(), 0x1002), Some(2));
        assert_eq!(bus_gpu_count(t.path(), 0x10de), Some(1));
        for (n, id) in [("0", "0"), ("1", "12345"), ("2", "54321")] {
            let d = t.path().join("sys/class/kfd/kfd/topology/nodes").join(n);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("gpu_id"), id).unwrap();
        }
        assert_eq!(kfd_gpu_count(t.path()), Some(2));
        assert_eq!(kfd_gpu_count(&t.path().join("nothing")), None);
    }
}
