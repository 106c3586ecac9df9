//! amdgpu's sysfs, per card: `device/gpu_metrics` (decoded by its header),
//! `device/hwmon/hwmon*/` (power in µW, temperature in m°C),
//! `device/pp_dpm_sclk` / `pp_dpm_mclk` (the level marked `*` is current),
//! `device/ras/*_err_count` and `device/ras/gpu_vram_bad_pages`, and the
//! PCI device's `current_link_*` / `max_link_*`. Every read goes through
//! `greta_fsread` (bounded, never blocks on a FIFO) under a root, so a
//! captured tree replays as the machine it came from.

use super::gpu_metrics::{self, GpuMetrics};
use super::pci::{attr, link_of};
use super::{Counter, Link, LinkState, Reading, Source};
use greta_vocab::PciAddress;
use std::path::{Path, PathBuf};

/// `gpu_metrics` is a few hundred bytes to a few KiB.
const METRICS_CAP: u64 = 64 * 1024;
/// The bad-page list: one line per retired page; a card retires a few
/// hundred at most before it is replaced.
const BAD_PAGES_CAP: u64 = 1024 * 1024;

/// One amdgpu card: `sys/class/drm/cardN` and its PCI `device` directory.
#[derive(Clone, Debug)]
pub struct Card {
    pub name: String,
    device: PathBuf,
}

/// The amdgpu cards under `root` (`sys/class/drm/cardN` whose device's
/// vendor is 0x1002), in card order. Connectors (`card0-DP-1`) and render
/// nodes are not cards.
pub fn cards(root: &Path) -> Vec<Card> {
    let dir = root.join("sys/class/drm");
    let mut out: Vec<(u32, Card)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n: u32 = name.strip_prefix("card")?.parse().ok()?;
            let device = e.path().join("device");
            attr(&device.join("vendor"))
                .is_some_and(|v| v.eq_ignore_ascii_case("0x1002"))
                .then_some((n, Card { name, device }))
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out.into_iter().map(|(_, c)| c).collect()
}

/// The cards that are the device at PCI address `bus` (`0000:c1:00.0`, as
/// HIP, CUDA and VK_EXT_pci_bus_info give it; nvidia-smi's eight-digit
/// domain and upper-case hex read alike): the one card there. Every card
/// when `bus` is not known, is not an address, or no card is there, since
/// then nothing says which card the device is.
pub fn cards_of(root: &Path, bus: Option<&str>) -> Vec<Card> {
    let all = cards(root);
    let Some(bus) = bus.and_then(|b| b.parse::<PciAddress>().ok()) else {
        return all;
    };
    let mine: Vec<Card> = all
        .iter()
        .filter(|c| c.bus_id().is_some_and(|at| at.same_function(&bus)))
        .cloned()
        .collect();
    if mine.is_empty() {
        all
    } else {
        mine
    }
}

/// The current level of a `pp_dpm_*` table ("1: 2100Mhz *"), in MHz.
fn dpm_current(text: &str) -> Option<u32> {
    let line = text.lines().find(|l| l.trim_end().ends_with('*'))?;
    let (_, rest) = line.split_once(':')?;
    let mhz = rest.trim().trim_end_matches('*').trim();
    let digits = mhz.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    digits.trim().parse().ok()
}

/// `ue: 3\nce: 17\n` of a RAS `*_err_count` file.
fn ras_counts(text: &str) -> Option<(u64, u64)> {
    let mut ue = None;
    let mut ce = None;
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim().parse::<u64>().ok();
            match k.trim() {
                "ue" => ue = v,
                "ce" => ce = v,
                _ => {}
            }
        }
    }
    Some((ue?, ce?))
}

impl Card {
    /// The card's PCI address: the name its `device` link leads to (a PCI
    /// device directory is named by its address), else `PCI_SLOT_NAME` in
    /// the device's `uevent`; read by the one PCI address parser, so text
    /// that is not an address is none.
    pub fn bus_id(&self) -> Option<PciAddress> {
        let from_link = std::fs::read_link(&self.device)
            .ok()
            .and_then(|t| t.file_name()?.to_str()?.parse().ok());
        from_link.or_else(|| {
            let uevent = attr(&self.device.join("uevent"))?;
            uevent
                .lines()
                .find_map(|l| l.strip_prefix("PCI_SLOT_NAME="))?
                .parse()
                .ok()
        })
    }

    fn hwmon(&self) -> Option<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.device.join("hwmon"))
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        v.sort();
        v.into_iter().next()
    }

    /// `gpu_metrics` decoded, or why not (absent, unreadable, a version
    /// greta does not decode).
    pub fn metrics(&self) -> Result<GpuMetrics, String> {
        let path = self.device.join("gpu_metrics");
        let b = greta_fsread::bytes(&path, METRICS_CAP).map_err(|e| e.to_string())?;
        gpu_metrics::decode(&b).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// One reading: gpu_metrics first (clocks, throttle bits, power and
    /// temperature where its version states units), hwmon and pp_dpm for
    /// what it lacks.
    pub fn reading(&self) -> Reading {
        let m = self.metrics().ok().unwrap_or_default();
        let hw = self.hwmon();
        let hw_f = |name: &str, scale: f64| -> Option<f64> {
            let v: f64 = attr(&hw.as_ref()?.join(name))?.parse().ok()?;
            Some(v / scale)
        };
        let power_w = m
            .socket_power_w
            .or_else(|| hw_f("power1_average", 1e6))
            .or_else(|| hw_f("power1_input", 1e6));
        // temp2 is the junction (hotspot) sensor where the card has one.
        let temp_c = m
            .temp_hotspot_c
            .or_else(|| hw_f("temp2_input", 1e3))
            .or_else(|| hw_f("temp1_input", 1e3));
        let dpm = |f: &str| attr(&self.device.join(f)).as_deref().and_then(dpm_current);
        Reading {
            device: self.name.clone(),
            power_w,
            power_limit_w: hw_f("power1_cap", 1e6),
            temp_c,
            sm_mhz: m.gfxclk_mhz.or_else(|| dpm("pp_dpm_sclk")),
            mem_mhz: m.uclk_mhz.or_else(|| dpm("pp_dpm_mclk")),
            limits: m.limits,
            link: link_of(&self.device).map(|l| l.current).or_else(|| {
                Some(LinkState {
                    gen: gen_of_dgts(m.pcie_speed_dgts?)?,
                    width: m.pcie_width?,
                })
            }),
        }
    }

    /// The PCI link of the card's device.
    pub fn link(&self) -> Option<Link> {
        link_of(&self.device)
    }

    /// The RAS counters (`ras/<block>_err_count`: uncorrectable and
    /// correctable) and the retired VRAM pages (`ras/gpu_vram_bad_pages`,
    /// one `pfn : size : flags` line each). The second list names files that
    /// exist but could not be read or parsed: a counter that cannot be read
    /// after a run must not pass as unchanged.
    pub fn counters(&self) -> (Vec<Counter>, Vec<String>) {
        let ras = self.device.join("ras");
        let mut out = Vec::new();
        let mut bad = Vec::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&ras)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        files.sort();
        let counter = |block: &str, kind: &str, value| Counter {
            device: self.name.clone(),
            block: block.to_string(),
            kind: kind.to_string(),
            value,
        };
        for f in files {
            let name = f
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            if let Some(block) = name.strip_suffix("_err_count") {
                match attr(&f).as_deref().and_then(ras_counts) {
                    Some((ue, ce)) => {
                        out.push(counter(block, "uncorrectable", ue));
                        out.push(counter(block, "correctable", ce));
                    }
                    None => bad.push(format!("{}: not a RAS count", f.display())),
                }
            } else if name == "gpu_vram_bad_pages" {
                match greta_fsread::text(&f, BAD_PAGES_CAP) {
                    Ok(t) => {
                        let n = t.lines().filter(|l| l.contains(':')).count() as u64;
                        out.push(counter("vram", "bad pages", n));
                    }
                    Err(e) => bad.push(e.to_string()),
                }
            }
        }
        (out, bad)
    }
}

/// gpu_metrics' link speed in 0.1 GT/s as a generation.
fn gen_of_dgts(d: u32) -> Option<u32> {
    super::gen_of_speed(&format!("{}", f64::from(d) / 10.0))
}

/// Every amdgpu card under a root, as a sampler source.
pub struct SysfsSource {
    cards: Vec<Card>,
}

impl SysfsSource {
    pub fn new(root: &Path) -> SysfsSource {
        SysfsSource { cards: cards(root) }
    }

    /// A source over the given cards only ([`cards_of`]).
    pub fn of(cards: Vec<Card>) -> SysfsSource {
        SysfsSource { cards }
    }
}

impl Source for SysfsSource {
    fn sample(&mut self) -> Vec<Reading> {
        self.cards.iter().map(Card::reading).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn card(root: &Path, n: u32) -> PathBuf {
        let d = root.join(format!("sys/class/drm/card{n}/device"));
        fs::create_dir_all(d.join("hwmon/hwmon3")).unwrap();
        fs::create_dir_all(d.join("ras")).unwrap();
        fs::write(d.join("vendor"), "0x1002\n").unwrap();
        d
    }

    #[test]
    fn dpm_and_ras_text() {
        assert_eq!(
            dpm_current("0: 500Mhz\n1: 1800Mhz *\n2: 2400Mhz\n"),
            Some(1800)
        );
        assert_eq!(dpm_current("0: 96Mhz \n"), None);
        assert_eq!(ras_counts("ue: 2\nce: 15\n"), Some((2, 15)));
        assert_eq!(ras_counts("ue: x\nce: 1\n"), None);
    }

    #[test]
    fn a_card_from_a_tree() {
        let t = tempfile::tempdir().unwrap();
        let d = card(t.path(), 1);
        fs::create_dir_all(t.path().join("sys/class/drm/card1-DP-1")).unwrap();
        let hw = d.join("hwmon/hwmon3");
        fs::write(hw.join("power1_average"), "287000000\n").unwrap();
        fs::write(hw.join("power1_cap"), "300000000\n").unwrap();
        fs::write(hw.join("temp2_input"), "91000\n").unwrap();
        fs::write(d.join("pp_dpm_sclk"), "0: 500Mhz\n1: 2400Mhz *\n").unwrap();
        fs::write(d.join("current_link_speed"), "8.0 GT/s PCIe\n").unwrap();
        fs::write(d.join("current_link_width"), "8\n").unwrap();
        fs::write(d.join("max_link_speed"), "16.0 GT/s PCIe\n").unwrap();
        fs::write(d.join("max_link_width"), "16\n").unwrap();
        fs::write(d.join("ras/umc_err_count"), "ue: 0\nce: 3\n").unwrap();
        fs::write(d.join("ras/gfx_err_count"), "ue: 1\nce: 0\n").unwrap();
        fs::write(
            d.join("ras/gpu_vram_bad_pages"),
            "0x00000001 : 0x00001000 : R\n0x00000002 : 0x00001000 : P\n",
        )
        .unwrap();
        let cs = cards(t.path());
        assert_eq!(cs.len(), 1, "connectors are not cards");
        let r = cs[0].reading();
        assert_eq!(r.power_w, Some(287.0));
        assert_eq!(r.power_limit_w, Some(300.0));
        assert_eq!(r.temp_c, Some(91.0));
        assert_eq!(r.sm_mhz, Some(2400));
        assert_eq!(r.limits, None, "no gpu_metrics: no throttle bits");
        let l = cs[0].link().unwrap();
        assert_eq!((l.current.gen, l.current.width), (3, 8));
        assert_eq!((l.max.gen, l.max.width), (4, 16));
        let (c, bad) = cs[0].counters();
        assert!(bad.is_empty(), "{bad:?}");
        let get = |b: &str, k: &str| {
            c.iter()
                .find(|x| x.block == b && x.kind == k)
                .unwrap()
                .value
        };
        assert_eq!(get("umc", "correctable"), 3);
        assert_eq!(get("gfx", "uncorrectable"), 1);
        assert_eq!(get("vram", "bad pages"), 2);
    }

    #[test]
    fn a_card_without_a_device_link_names_its_bus_from_uevent() {
        let t = tempfile::tempdir().unwrap();
        let d = card(t.path(), 2);
        assert_eq!(cards(t.path())[0].bus_id(), None);
        fs::write(
            d.join("uevent"),
            "DRIVER=amdgpu\nPCI_CLASS=30000\nPCI_SLOT_NAME=0000:0C:00.0\n",
        )
        .unwrap();
        let at = cards(t.path())[0].bus_id().unwrap();
        assert_eq!(at.to_string(), "0000:0c:00.0");
        assert_eq!(cards_of(t.path(), Some("0000:0c:00.0")).len(), 1);
    }

    /// Two cards, each under its PCI directory: the device at an address
    /// is the one card there however a tool spells the address
    /// (nvidia-smi's eight-digit domain, upper case, no domain), and text
    /// that is no address names no card (all are watched, as when the
    /// address is unknown).
    #[test]
    fn the_card_at_an_address_is_found_in_every_spelling() {
        let t = tempfile::tempdir().unwrap();
        for (n, bus) in [(0, "0000:0c:00.0"), (1, "0000:c1:00.0")] {
            let pci = t.path().join("sys/devices/pci0000:00").join(bus);
            fs::create_dir_all(&pci).unwrap();
            fs::write(pci.join("vendor"), "0x1002\n").unwrap();
            let drm = t.path().join(format!("sys/class/drm/card{n}"));
            fs::create_dir_all(&drm).unwrap();
            std::os::unix::fs::symlink(&pci, drm.join("device")).unwrap();
        }
        let names = |bus: Option<&str>| -> Vec<String> {
            cards_of(t.path(), bus)
                .into_iter()
                .map(|c| c.name)
                .collect()
        };
        for spelling in [
            "0000:c1:00.0",
            "00000000:C1:00.0",
            "c1:00.0",
            " 0000:C1:00.0\n",
        ] {
            assert_eq!(names(Some(spelling)), ["card1"], "{spelling:?}");
        }
        assert_eq!(names(Some("0000:0c:00.0")), ["card0"]);
        for unknown in [None, Some("garbage"), Some("0000:0d:00.0")] {
            assert_eq!(names(unknown), ["card0", "card1"], "{unknown:?}");
        }
        assert_eq!(
            cards(t.path())[1]
                .bus_id()
                .map(|a| a.to_string())
                .as_deref(),
            Some("0000:c1:00.0")
        );
    }

    /// A `PCI_SLOT_NAME` that is not an address is no address (it was
    /// taken as one, and matched a caller's garbage of the same text).
    #[test]
    fn a_slot_name_that_is_no_address_is_none() {
        let t = tempfile::tempdir().unwrap();
        let d = card(t.path(), 0);
        fs::write(d.join("uevent"), "PCI_SLOT_NAME=not-an-address\n").unwrap();
        assert_eq!(cards(t.path())[0].bus_id(), None);
    }

    #[test]
    fn unreadable_ras_file_is_named() {
        let t = tempfile::tempdir().unwrap();
        let d = card(t.path(), 0);
        fs::write(d.join("ras/umc_err_count"), "garbage").unwrap();
        let (c, bad) = cards(t.path())[0].counters();
        assert!(c.is_empty());
        assert!(bad[0].contains("umc_err_count"), "{bad:?}");
    }

    #[test]
    fn a_fifo_for_gpu_metrics_is_an_error_not_a_hang() {
        let t = tempfile::tempdir().unwrap();
        let d = card(t.path(), 0);
        let p = std::ffi::CString::new(d.join("gpu_metrics").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path we own.
        assert_eq!(unsafe { libc::mkfifo(p.as_ptr(), 0o600) }, 0);
        let e = cards(t.path())[0].metrics().unwrap_err();
        assert!(e.contains("FIFO"), "{e}");
    }
}
