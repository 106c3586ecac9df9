//! The NVIDIA kernel driver's lines in a kernel log (`NVRM: ...`,
//! `nvidia 0000:07:00.0: ...`): which NVIDIA GPUs it names and which module
//! version is loaded. The failures themselves (API mismatch, RmInitAdapter,
//! fallen off the bus) are signals (probe/signals.toml); this reads the
//! facts under them, so a pasted log shows the GPU and the version whatever
//! else is wrong.

use super::amd;
use crate::facts::{Gpu, Vendor};

/// A dotted version ("570.158.01", "367.35.") without a trailing full stop.
fn version_word(w: &str) -> Option<String> {
    let v = w.trim_end_matches('.');
    let ok = v.split('.').count() >= 2
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    ok.then(|| v.to_string())
}

/// The module version of NVRM's load banner or `/proc/driver/nvidia/version`:
/// "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.148.06  Mon May  5
/// ...", "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01
/// Release Build ...", "NVRM version: NVIDIA UNIX Open Kernel Module for
/// x86_64  515.57  Release Build ...": the first version after "Kernel
/// Module" (never "for" or "x86_64").
pub(super) fn banner_version(s: &str) -> Option<String> {
    if !s.starts_with("NVRM") {
        return None;
    }
    let p = s.find("Kernel Module")? + "Kernel Module".len();
    s[p..].split_whitespace().take(4).find_map(version_word)
}

/// The loaded module's version in an API-mismatch message, whose words
/// journald/dmesg wrap over `NVRM:` continuation lines ("... this kernel
/// module has the version 367.35.  Please", "... but this kernel module has
/// / NVRM: the version 595.80.  Please"). `message` is the message with its
/// continuation lines joined.
pub(super) fn mismatch_module_version(message: &str) -> Option<String> {
    let p = message.find("kernel module has")? + "kernel module has".len();
    let mut words = message[p..].split_whitespace().filter(|w| *w != "NVRM:");
    (words.next()? == "the" && words.next()? == "version")
        .then(|| words.next().and_then(version_word))
        .flatten()
}

/// A PCI address as NVRM writes it: "0000:07:00.0", "0000:07:00.0:", and
/// the Xid form "(PCI:0000:44:00):" / "PCI:0000:06:00:" without a function
/// (function 0: the GPU's own).
fn address(w: &str) -> Option<String> {
    let t = w
        .trim_start_matches('(')
        .trim_start_matches("PCI:")
        .trim_end_matches([':', ',', '.', ')']);
    let t = t.trim_end_matches([':', ')']);
    let b = t.as_bytes();
    let hex = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_hexdigit);
    if b.len() == 12 && b[4] == b':' && b[7] == b':' && b[10] == b'.' {
        return (hex(0..4) && hex(5..7) && hex(8..10) && b[11].is_ascii_digit())
            .then(|| t.to_ascii_lowercase());
    }
    if b.len() == 10 && b[4] == b':' && b[7] == b':' && hex(0..4) && hex(5..7) && hex(8..10) {
        return Some(format!("{}.0", t.to_ascii_lowercase()));
    }
    None
}

/// The NVIDIA GPUs a kernel log names, by PCI address, in order: at most
/// [`super::MAX_LISTED`], the addresses beyond counted.
#[derive(Default)]
pub(super) struct NvidiaGpus {
    pub gpus: Vec<Gpu>,
    last: Option<usize>,
    at: std::collections::HashMap<String, usize>,
    beyond: std::collections::HashSet<String>,
}

impl NvidiaGpus {
    /// One kernel message (stamp already stripped).
    pub fn line(&mut self, s: &str) {
        let words: Vec<&str> = if let Some(rest) = s.strip_prefix("nvidia ") {
            // "nvidia 0000:07:00.0: Direct firmware load for ...": the device
            // is the first word, nothing after it.
            rest.split_whitespace().take(1).collect()
        } else if s.starts_with("NVRM") {
            s.split_whitespace().collect()
        } else {
            return;
        };
        if let Some(a) = words.iter().find_map(|w| address(w)) {
            self.last = match self.at.get(&a) {
                Some(&i) => Some(i),
                None if self.gpus.len() >= super::MAX_LISTED => {
                    // Counted, not kept; its continuation lines go nowhere.
                    self.beyond.insert(a);
                    None
                }
                None => {
                    self.at.insert(a.clone(), self.gpus.len());
                    self.gpus.push(Gpu {
                        vendor: Vendor::Nvidia,
                        vendor_id: Some(amd::NVIDIA),
                        pci_address: Some(a),
                        seen_by: vec!["dmesg".into()],
                        ..Gpu::default()
                    });
                    Some(self.gpus.len() - 1)
                }
            };
        }
        // "NVRM: (PCI ID: 10de:26b5) installed in this system has": the
        // continuation of the message that named the GPU just before.
        if let (Some(i), Some(p)) = (self.last, s.find("(PCI ID: ")) {
            let ids = s[p + 9..].split(')').next().unwrap_or("");
            let hex = |x: &str| u16::from_str_radix(x.trim(), 16).ok();
            if let Some((v, d)) = ids.split_once(':') {
                if hex(v) == Some(amd::NVIDIA) {
                    if let Some(d) = hex(d) {
                        let g = &mut self.gpus[i];
                        g.device_id = Some(d);
                        if g.name.is_empty() {
                            g.name = amd::pci_name(amd::NVIDIA, d).unwrap_or("").to_string();
                        }
                    }
                }
            }
        }
    }

    /// The GPUs, and how many the log named in all.
    pub fn finish(self) -> (Vec<Gpu>, usize) {
        let named = self.gpus.len() + self.beyond.len();
        (self.gpus, named)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_version_skips_words_before_the_number() {
        // NVSentinel#155 (open module) and nvidiavgpuarchive/index#1 (proprietary).
        assert_eq!(
            banner_version("NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025").as_deref(),
            Some("570.158.01")
        );
        assert_eq!(
            banner_version("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.148.06  Mon May  5 11:36:21 UTC 2025").as_deref(),
            Some("570.148.06")
        );
        assert_eq!(
            banner_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  515.57  Release Build Mi 20. Jul 11:53:35 CEST 2022").as_deref(),
            Some("515.57")
        );
        assert_eq!(
            banner_version("NVRM: Kernel Module for x86_64 Release"),
            None
        );
        assert_eq!(banner_version("amdgpu: Kernel Module 1.2"), None);
    }

    #[test]
    fn mismatch_names_the_loaded_module_in_both_wrappings() {
        // The classic wrapping (nvidia-docker#182) and the newer one that
        // names the client (Frogging-Family/nvidia-all#394).
        let old = "NVRM: API mismatch: the client has the version 367.44, but NVRM: this kernel module has the version 367.35.  Please NVRM: make sure";
        assert_eq!(mismatch_module_version(old).as_deref(), Some("367.35"));
        let new = "NVRM: API mismatch: the client 'kwin_wayland' (pid 1005) NVRM: has the version 595.84, but this kernel module has NVRM: the version 595.80.  Please make sure";
        assert_eq!(mismatch_module_version(new).as_deref(), Some("595.80"));
        assert_eq!(
            mismatch_module_version("NVRM: API mismatch: the client has"),
            None
        );
        assert_eq!(
            mismatch_module_version("this kernel module has the version soon"),
            None
        );
    }

    #[test]
    fn gpus_by_every_address_spelling() {
        let mut n = NvidiaGpus::default();
        for l in [
            "nvidia 0000:07:00.0: Direct firmware load for nvidia/570.144/gsp_ga10x.bin failed with error -2",
            "NVRM: GPU 0000:07:00.0: RmInitAdapter failed! (0x61:0x56:1770)",
            "NVRM: The NVIDIA GPU 0000:b3:00.0",
            "NVRM: (PCI ID: 10de:26b5) installed in this system has",
            "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
            "NVRM: GPU at PCI:0000:44:00: GPU-604d3abb-43d5-088f-f873-9dc453a081a5",
            "NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
            "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01",
            "nvidia-nvlink: Nvlink Core is being initialized, major device number 239",
            "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
        ] {
            n.line(l);
        }
        let addrs: Vec<&str> = n
            .gpus
            .iter()
            .filter_map(|g| g.pci_address.as_deref())
            .collect();
        assert_eq!(
            addrs,
            [
                "0000:07:00.0",
                "0000:b3:00.0",
                "0000:44:00.0",
                "0000:01:00.0"
            ]
        );
        assert_eq!(n.gpus[1].device_id, Some(0x26b5));
        assert!(n.gpus.iter().all(|g| g.vendor == Vendor::Nvidia));
        // A version or a time is no address.
        assert_eq!(address("570.158.01"), None);
        assert_eq!(address("13:13:04"), None);
    }
}
