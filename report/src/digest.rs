//! What the history keeps of a run: its time, greta version and host, and
//! per device its identity, driver and each gate's rate. Everything else
//! of a result (notes, reasons, findings, settings, device properties) is
//! dropped as each file is read, so a history of many big results holds
//! a few numbers per gate, not the results (400 copies of a 15 MB result
//! held 5.7 GB).
//!
//! Kept text is interned (one copy per distinct string) and cut to
//! [`TEXT_CAP`] bytes: it labels a chart. What a history keeps in all is
//! capped ([`KEPT_CAP`] devices and gate results, [`NAMES_CAP`] bytes of
//! names); a run that does not fit is not kept, and the reader says so.

use crate::html::{cut, TEXT_CAP};
use crate::load::Run;
use std::collections::HashMap;

/// Most devices and gate results a history keeps: some 40 days of a
/// health check every five minutes on an 8-GPU node, more points than a
/// chart can show. About 32 bytes each.
pub const KEPT_CAP: usize = 1_000_000;
/// Most bytes of distinct names (versions, hosts, devices, drivers, gate
/// ids) a history keeps.
pub const NAMES_CAP: usize = 32 << 20;

/// An interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(u32);

/// Each distinct kept string once.
#[derive(Default)]
pub struct Strings {
    index: HashMap<Box<str>, Sym>,
    all: Vec<Box<str>>,
    bytes: usize,
}

impl Strings {
    pub fn sym(&mut self, s: &str) -> Sym {
        let s = cut(s);
        if let Some(k) = self.index.get(s.as_ref()) {
            return *k;
        }
        // KEPT_CAP bounds the count far below u32::MAX.
        let k = Sym(self.all.len() as u32);
        let b: Box<str> = s.into();
        self.bytes += b.len();
        self.all.push(b.clone());
        self.index.insert(b, k);
        k
    }

    pub fn get(&self, k: Sym) -> &str {
        &self.all[k.0 as usize]
    }
}

pub struct Digest {
    /// Unix seconds of `started_at`.
    pub t: f64,
    /// Order among runs of the same time: the order they were given in
    /// (file names' order for a directory).
    pub seq: usize,
    pub greta: Sym,
    /// The host name, `?` when the result has none.
    pub host: Sym,
    pub devices: Vec<DeviceDigest>,
}

pub struct DeviceDigest {
    pub index: usize,
    pub uuid: Option<[u8; 16]>,
    pub name: Sym,
    /// Driver name, info and version, as one text.
    pub driver: Sym,
    pub gates: Vec<GateDigest>,
}

pub struct GateDigest {
    pub id: Sym,
    pub unit: &'static str,
    /// A finite rate, when one was measured.
    pub rate: Option<f64>,
    pub failed: bool,
}

/// What one history has kept, and its caps.
pub struct Kept {
    pub items: usize,
    pub max_items: usize,
    pub max_names: usize,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            items: 0,
            max_items: KEPT_CAP,
            max_names: NAMES_CAP,
        }
    }
}

impl Kept {
    /// Whether `run` fits what is left, counting every string it could
    /// add as new (an upper bound: most repeat); Err says which cap it
    /// would pass.
    pub fn check(&self, run: &Run, strings: &Strings) -> Result<(), String> {
        let (items, names) = needs(run);
        if self.items.saturating_add(items) > self.max_items {
            return Err(format!(
                "the history keeps at most {} devices and gate results, and has {}",
                self.max_items, self.items
            ));
        }
        if strings.bytes.saturating_add(names) > self.max_names {
            return Err(format!(
                "the history keeps at most {} bytes of names (versions, hosts, devices, gate ids), and has {}",
                self.max_names, strings.bytes
            ));
        }
        Ok(())
    }
}

/// What keeping `run` may cost: its devices and gate results, and the
/// bytes of its names were each one new.
pub fn needs(run: &Run) -> (usize, usize) {
    let r = &run.report;
    let items = r
        .devices
        .iter()
        .map(|d| 1 + d.gates.len())
        .fold(0usize, usize::saturating_add);
    let text = |s: &str| s.len().min(TEXT_CAP + 3);
    let names = text(&r.greta_version)
        + text(r.host.hostname.as_deref().unwrap_or("?"))
        + r.devices
            .iter()
            .map(|d| {
                let i = &d.device;
                text(&i.name)
                    + interpreter(r, d).map_or(0, |p| text(p) + 3)
                    + (i.driver_name.len() + i.driver_info.len() + i.driver_version.len())
                        .min(3 * (TEXT_CAP + 3) + 2)
                    + d.gates.iter().map(|g| text(&g.id)).sum::<usize>()
            })
            .sum::<usize>();
    (items, names)
}

/// The digest of `run`, started at `t`.
pub fn digest(run: &Run, t: f64, seq: usize, strings: &mut Strings, kept: &mut Kept) -> Digest {
    let r = &run.report;
    let devices: Vec<DeviceDigest> = r
        .devices
        .iter()
        .map(|d| {
            let i = &d.device;
            // A framework run's device is a framework in one interpreter:
            // a run against another interpreter is another series (its
            // torch is another torch), never a driver change of this one.
            let python = interpreter(r, d);
            DeviceDigest {
                index: d.index,
                uuid: i.uuid.map(|u| u.0).filter(|_| python.is_none()),
                name: match python {
                    Some(p) => strings.sym(&format!("{} ({p})", i.name)),
                    None => strings.sym(&i.name),
                },
                driver: strings.sym(&driver_text(
                    &i.driver_name,
                    &i.driver_info,
                    &i.driver_version,
                )),
                gates: d
                    .gates
                    .iter()
                    .map(|g| GateDigest {
                        id: strings.sym(&g.id),
                        unit: g.metrics.as_ref().map_or("", |m| m.unit.as_str()),
                        rate: g
                            .metrics
                            .as_ref()
                            .and_then(|m| m.rate)
                            .filter(|v| v.is_finite()),
                        failed: g.status == greta_smoke::results::GateStatus::Fail,
                    })
                    .collect(),
            }
        })
        .collect();
    kept.items += devices.iter().map(|d| 1 + d.gates.len()).sum::<usize>();
    Digest {
        t,
        seq,
        greta: strings.sym(&r.greta_version),
        host: strings.sym(r.host.hostname.as_deref().unwrap_or("?")),
        devices,
    }
}

/// The interpreter a framework run's device ran in, as the frameworks
/// profile records it: the device's first note, `python EXE (VERSION)`.
fn interpreter<'a>(
    r: &greta_smoke::results::Report,
    d: &'a greta_smoke::results::DeviceRun,
) -> Option<&'a str> {
    (r.backend_requested == "frameworks")
        .then(|| d.notes.first())
        .flatten()
        .map(String::as_str)
        .filter(|n| n.starts_with("python "))
}

/// A device's driver as the version changes name it: its name, info and
/// version (cut as one text).
fn driver_text(name: &str, info: &str, version: &str) -> String {
    let cap = |s: &str| cut(s).into_owned();
    format!("{} {} {}", cap(name), cap(info), cap(version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_at_a_character_boundary_and_interned_once() {
        let mut s = Strings::default();
        let long = "é".repeat(TEXT_CAP);
        let a = s.sym(&long);
        let b = s.sym(&long);
        assert_eq!(a, b);
        let kept = s.get(a).to_string();
        assert!(kept.ends_with('…') && kept.len() <= TEXT_CAP + 3, "{kept}");
        assert!(long.starts_with(kept.trim_end_matches('…')));
        let g = s.sym("gpu");
        assert_eq!(s.get(g), "gpu");
        assert_eq!(s.all.len(), 2);
        assert_eq!(s.bytes, kept.len() + 3);
    }
}
