//! Verdicts over what the GPUs say about themselves
//! (`greta_runtime`'s telemetry readers): pure functions of injected facts, so
//! every verdict is tested without the fault it catches.
//!
//! - [`summarize`] + [`describe`]: a gate's samples as "sustained 612
//!   TFLOP/s, power-capped 38% of the time at 700 W"; [`shortfall_reason`]
//!   names what held the clocks when a gate is under its floor.
//! - [`counters_rose`]: error counters read before and after a run; a rise
//!   fails the run and names the block.
//! - [`link_check`]: a link trained below what the card can do fails
//!   ("PCIe Gen5 x16 card trained at Gen4 x8").
//! - [`census_check`]: fewer GPUs in the backend than on the PCI bus, in
//!   KFD or in NVML fails ("GPU count mismatch: 8 on the bus, 7 in HIP").
//!
//! How to call them around a gate, in order:
//! 1. before: `counters` of every device (amdgpu `Card::counters`, NVML
//!    `Nvml::counters`), and [`census_check`] once per run;
//! 2. `Sampler::start(source, SAMPLE_PERIOD)` just before the gate's work;
//! 3. `Sampler::stop()` after it; [`summarize`] per device; [`describe`]
//!    into the gate's result, [`shortfall_reason`] into a floor failure;
//! 4. after: `counters` again, [`counters_rose`]; the best link seen under
//!    load against the device's maximum: [`link_check`].

use crate::inject::TelemetryFaults;
use greta_runtime::{Counter, Link, Timed};
// Part of a gate's telemetry summary (`best_link`), so of the results schema.
pub use greta_runtime::LinkState;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How often the sampler reads during a gate.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// Power at or above this fraction of the limit counts as held by the
/// power cap when the source gives no throttle reasons (amdgpu without the
/// ASIC-independent bits).
pub const NEAR_CAP: f64 = 0.97;

/// One device's samples during one gate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub device: String,
    pub samples: usize,
    /// Fractions (0-1) of samples in which each limit held the clocks.
    pub power_capped: f64,
    pub thermal: f64,
    pub current: f64,
    pub other: f64,
    /// Whether `power_capped` came from the power reading against the
    /// limit (no throttle reasons from the source).
    pub power_inferred: bool,
    pub mean_power_w: Option<f64>,
    pub max_power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub max_temp_c: Option<f64>,
    pub mean_sm_mhz: Option<f64>,
    /// The widest and fastest link seen while the gate ran.
    pub best_link: Option<LinkState>,
    /// The readings over the gate's time, at most [`SERIES_CAP`] points
    /// ([`series`] says how samples merge into a point): what the report
    /// page draws under the figures above. Empty in files written before it
    /// was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Point>,
}

/// At most this many points of one device's telemetry per gate go into
/// the results: a minute at [`SAMPLE_PERIOD`] point for point, a longer
/// gate (the whole-memory test) in stretches of several samples, so a
/// 15-minute gate on 8 GPUs adds some 2 MB, not 30, to the file.
pub const SERIES_CAP: usize = 600;

/// A limit that held the clocks down, as a point of a series names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Held {
    Power,
    Thermal,
    Current,
    Other,
}

/// One stretch of a gate's telemetry: the samples from `t_s` on, merged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Seconds from the start of the gate's sampling to the stretch's first sample.
    pub t_s: f64,
    /// Mean shader clock of the stretch, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_mhz: Option<f64>,
    /// Mean power, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    /// Hottest reading, °C (heat matters at its peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_c: Option<f64>,
    /// The limits that held the clocks in any sample of the stretch (a
    /// short cap is not averaged away), in [`Held`]'s order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<Held>,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn max(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::max)
}

/// The samples of `device` during a gate, summarised; `None` when it was
/// never read.
pub fn summarize(samples: &[Timed], device: &str) -> Option<Summary> {
    let rs: Vec<_> = samples
        .iter()
        .flat_map(|t| t.readings.iter())
        .filter(|r| r.device == device)
        .collect();
    if rs.is_empty() {
        return None;
    }
    let n = rs.len() as f64;
    let frac =
        |f: &dyn Fn(&greta_runtime::Reading) -> bool| rs.iter().filter(|r| f(r)).count() as f64 / n;
    let inferred = rs.iter().all(|r| r.limits.is_none());
    let power_capped = frac(&power_held);
    let lim =
        |f: fn(&greta_runtime::ClockLimits) -> bool| frac(&|r| r.limits.as_ref().is_some_and(f));
    let power: Vec<f64> = rs.iter().filter_map(|r| r.power_w).collect();
    let temps: Vec<f64> = rs.iter().filter_map(|r| r.temp_c).collect();
    let clocks: Vec<f64> = rs.iter().filter_map(|r| r.sm_mhz).map(f64::from).collect();
    let limits: Vec<f64> = rs.iter().filter_map(|r| r.power_limit_w).collect();
    let best_link = rs.iter().filter_map(|r| r.link).reduce(|a, b| LinkState {
        gen: a.gen.max(b.gen),
        width: a.width.max(b.width),
    });
    Some(Summary {
        device: device.to_string(),
        samples: rs.len(),
        power_capped,
        thermal: lim(|l| l.thermal),
        current: lim(|l| l.current),
        other: lim(|l| l.other),
        power_inferred: inferred,
        mean_power_w: mean(&power),
        max_power_w: max(&power),
        power_limit_w: max(&limits),
        max_temp_c: max(&temps),
        mean_sm_mhz: mean(&clocks),
        best_link,
        series: series(samples, device, SERIES_CAP),
    })
}

/// Whether the power cap held the clocks in `r`: its throttle reasons
/// say so, or, from a source with none, power at [`NEAR_CAP`] of the limit.
fn power_held(r: &greta_runtime::Reading) -> bool {
    match r.limits {
        Some(l) => l.power,
        None => {
            matches!((r.power_w, r.power_limit_w), (Some(p), Some(c)) if c > 0.0 && p >= NEAR_CAP * c)
        }
    }
}

/// `device`'s readings in `samples` as at most `cap` points: every sample
/// its own point while they fit, else runs of `ceil(n / cap)` consecutive
/// samples merged (clock and power their mean, temperature its maximum,
/// the limits any sample saw).
pub fn series(samples: &[Timed], device: &str, cap: usize) -> Vec<Point> {
    let rs: Vec<(Duration, &greta_runtime::Reading)> = samples
        .iter()
        .flat_map(|t| t.readings.iter().map(move |r| (t.at, r)))
        .filter(|(_, r)| r.device == device)
        .collect();
    if rs.is_empty() || cap == 0 {
        return Vec::new();
    }
    let per = rs.len().div_ceil(cap);
    rs.chunks(per)
        .map(|run| {
            let vals = |f: &dyn Fn(&greta_runtime::Reading) -> Option<f64>| -> Vec<f64> {
                run.iter().filter_map(|(_, r)| f(r)).collect()
            };
            let any = |f: &dyn Fn(&greta_runtime::Reading) -> bool| run.iter().any(|(_, r)| f(r));
            let lim = |f: fn(&greta_runtime::ClockLimits) -> bool| {
                any(&|r| r.limits.as_ref().is_some_and(f))
            };
            let held = [
                (any(&power_held), Held::Power),
                (lim(|l| l.thermal), Held::Thermal),
                (lim(|l| l.current), Held::Current),
                (lim(|l| l.other), Held::Other),
            ]
            .into_iter()
            .filter_map(|(on, h)| on.then_some(h))
            .collect();
            Point {
                t_s: run[0].0.as_secs_f64(),
                sm_mhz: mean(&vals(&|r| r.sm_mhz.map(f64::from))),
                power_w: mean(&vals(&|r| r.power_w)),
                temp_c: max(&vals(&|r| r.temp_c)),
                held,
            }
        })
        .collect()
}

fn pct(f: f64) -> String {
    format!("{:.0}%", f * 100.0)
}

/// The limits that held the clocks at least 1% of the time, worst first,
/// each as a phrase ("power-capped 38% of the time at 700 W").
fn limit_phrases(s: &Summary) -> Vec<(f64, String)> {
    let mut v = Vec::new();
    if s.power_capped >= 0.01 {
        let at = s
            .power_limit_w
            .map(|w| format!(" at {w:.0} W"))
            .unwrap_or_default();
        v.push((
            s.power_capped,
            format!("power-capped {} of the time{at}", pct(s.power_capped)),
        ));
    }
    if s.thermal >= 0.01 {
        let t = s
            .max_temp_c
            .map(|t| format!(" (up to {t:.0} °C)"))
            .unwrap_or_default();
        v.push((
            s.thermal,
            format!("thermally limited {} of the time{t}", pct(s.thermal)),
        ));
    }
    if s.current >= 0.01 {
        v.push((
            s.current,
            format!("current-limited {} of the time", pct(s.current)),
        ));
    }
    if s.other >= 0.01 {
        v.push((
            s.other,
            format!("clocks held by another limit {} of the time", pct(s.other)),
        ));
    }
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    v
}

/// A gate's rate with what held the clocks: "sustained 612 TFLOP/s,
/// power-capped 38% of the time at 700 W".
pub fn describe(rate: &str, s: &Summary) -> String {
    let phrases = limit_phrases(s);
    if phrases.is_empty() {
        return format!(
            "sustained {rate}, no clock limit seen in {} samples",
            s.samples
        );
    }
    let list: Vec<String> = phrases.into_iter().map(|(_, p)| p).collect();
    format!("sustained {rate}, {}", list.join(", "))
}

/// Why a gate under its floor was slow, as far as telemetry says: the
/// limits seen, or that none was (the shortfall is not the clocks').
pub fn shortfall_reason(s: &Summary) -> String {
    let phrases = limit_phrases(s);
    if phrases.is_empty() {
        let clock = s
            .mean_sm_mhz
            .map(|m| format!(", clocks {m:.0} MHz"))
            .unwrap_or_default();
        let power = match (s.mean_power_w, s.power_limit_w) {
            (Some(p), Some(l)) => format!(", {p:.0} W of {l:.0} W"),
            _ => String::new(),
        };
        return format!(
            "{}: no throttling seen in {} samples{power}{clock}",
            s.device, s.samples
        );
    }
    let list: Vec<String> = phrases.into_iter().map(|(_, p)| p).collect();
    format!("{}: {}", s.device, list.join(", "))
}

/// The share of a gate's samples in which thermal limits may hold the
/// clocks before the gate fails. A power cap under full load is the card
/// doing its job; heat holding the clocks is a cooling fault (DCGM and
/// RVS fail a node for it too). 10% lets one stray sample of a short gate
/// through.
pub const THERMAL_FAIL: f64 = 0.10;

/// A watched gate's verdict on throttling: `Err` names the devices whose
/// clocks heat held for [`THERMAL_FAIL`] of the gate or more.
pub fn throttle_check(sums: &[Summary]) -> Result<(), String> {
    let hot: Vec<&str> = sums
        .iter()
        .filter(|s| s.thermal >= THERMAL_FAIL)
        .map(|s| s.device.as_str())
        .collect();
    if hot.is_empty() {
        return Ok(());
    }
    Err(format!(
        "thermal throttling on {} for {} or more of the gate",
        hot.join(", "),
        pct(THERMAL_FAIL)
    ))
}

/// Appends to a failing gate's reason what its telemetry saw, one clause
/// per watched device; a passing or unwatched gate is left as it is.
pub fn attribute(result: &mut crate::results::GateResult) {
    if result.status != crate::results::GateStatus::Fail {
        return;
    }
    let Some(reason) = result.reason.as_mut() else {
        return;
    };
    for s in &result.in_run.telemetry {
        reason.push_str(&format!("; {}", shortfall_reason(s)));
    }
}

/// Counters that rose between `before` and `after`, and counters read
/// before that could not be read after: each a sentence naming device,
/// block and kind. Empty means the run may pass.
pub fn counters_rose(
    before: &[Counter],
    after: &[Counter],
    unreadable_after: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for b in before {
        let same = |a: &&Counter| a.device == b.device && a.block == b.block && a.kind == b.kind;
        match after.iter().find(same) {
            Some(a) if a.value > b.value => out.push(format!(
                "{} error counter rose on {}: {} {} {} -> {}",
                b.block, b.device, b.block, b.kind, b.value, a.value
            )),
            Some(_) => {}
            None => out.push(format!(
                "{} {} on {} could not be read after the run",
                b.block, b.kind, b.device
            )),
        }
    }
    out.extend(
        unreadable_after
            .iter()
            .map(|e| format!("error counter unreadable after the run: {e}")),
    );
    out
}

/// The link judged on the best state seen (GPUs lower their link when
/// idle, so a reading under load, or the best of a gate's samples, is what
/// counts) against the most the device can train to.
pub fn link_check(device: &str, best: LinkState, link: &Link) -> Result<(), String> {
    let max = link.max;
    if best.gen < max.gen || best.width < max.width {
        return Err(format!(
            "PCIe Gen{} x{} card trained at Gen{} x{} ({device})",
            max.gen, max.width, best.gen, best.width
        ));
    }
    Ok(())
}

/// The most a PCIe link carries each way, GB/s, from its generation and
/// lanes: the line rate after line coding (8b/10b for Gen1-2, 128b/130b
/// for Gen3-5; Gen6's 64 GT/s PAM4 FLITs carry 242 payload bytes of 256),
/// before packet framing. `None` for a generation greta does not know.
pub fn link_gbps(l: LinkState) -> Option<f64> {
    let lane = match l.gen {
        1 => 2.5 * 0.8 / 8.0,
        2 => 5.0 * 0.8 / 8.0,
        3 => 8.0 * 128.0 / 130.0 / 8.0,
        4 => 16.0 * 128.0 / 130.0 / 8.0,
        5 => 32.0 * 128.0 / 130.0 / 8.0,
        6 => 64.0 * 242.0 / 256.0 / 8.0,
        _ => return None,
    };
    (l.width > 0).then(|| lane * f64::from(l.width))
}

/// The share of the link's rate ([`link_gbps`], of the most the card can
/// train to) a pinned host↔device copy must reach each way. Packet framing
/// alone (a 256-byte payload carries some 24 bytes of header, sequence
/// number and CRC, plus flow-control packets) keeps a copy under about 0.9
/// of the line rate; 0.6 leaves room below that for an IOMMU or a GPU on
/// the other socket's root port, and still fails a link that trained at
/// half its lanes or one generation down (at most 0.5 of the rate).
pub const HOST_LINK_FLOOR: f64 = 0.6;

/// GPU counts from the node's own records; `None` where a record is not
/// there (no KFD on an NVIDIA node, no NVML on an AMD one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Census {
    pub bus: Option<usize>,
    pub kfd: Option<usize>,
    pub nvml: Option<usize>,
}

/// The backend (`backend` its name, "HIP") must see every GPU the other
/// records show. Fewer is a failure naming each count, never a pass of the
/// ones seen. `Ok` says what was compared (or that nothing could be).
pub fn census_check(c: &Census, backend: &str, seen: usize) -> Result<String, String> {
    let named = [
        ("on the bus", c.bus),
        ("in KFD", c.kfd),
        ("in NVML", c.nvml),
    ];
    let known: Vec<(&str, usize)> = named
        .iter()
        .filter_map(|(w, n)| Some((*w, (*n)?)))
        .collect();
    if known.is_empty() {
        return Ok(format!(
            "{seen} in {backend}; no other record of the GPUs to compare"
        ));
    }
    let parts: Vec<String> = known.iter().map(|(w, n)| format!("{n} {w}")).collect();
    if known.iter().any(|(_, n)| *n > seen) {
        return Err(format!(
            "GPU count mismatch: {}, {seen} in {backend}",
            parts.join(", ")
        ));
    }
    Ok(format!("{}, {seen} in {backend}", parts.join(", ")))
}

/// A gate under watch: a sampler over the telemetry of the device it runs
/// on. Dropped without [`Watch::finish`] (a gate that failed early), the
/// sampler's thread sees its channel close and ends.
pub struct Watch {
    sampler: greta_runtime::Sampler,
    devices: Vec<String>,
}

/// Starts watching the device `info` describes: NVML for an NVIDIA GPU
/// (matched by UUID), amdgpu sysfs under `/` for an AMD one (the card at
/// the device's PCI address; every card where the address is not known).
/// `None` where there is nothing to read (lavapipe, no NVML, no amdgpu)
/// and no telemetry fault is injected (`faults`, TEST-ONLY).
pub fn watch(info: &greta_runtime::DeviceInfo, faults: &TelemetryFaults) -> Option<Watch> {
    use greta_runtime::{
        amd_cards_of, AmdSysfsSource, Nvml, NvmlSource, TelemetrySource as Source,
    };
    let real: Option<(Box<dyn Source>, Vec<String>)> = match info.vendor_id {
        0x10de => (|| {
            let n = std::sync::Arc::new(Nvml::open().ok()?);
            let index = n.index_of_uuid(&info.uuid.as_ref()?.to_string())?;
            let b: Box<dyn Source> = Box::new(NvmlSource::only(n, index));
            Some((b, vec![format!("nvml:{index}")]))
        })(),
        0x1002 => {
            let cards = amd_cards_of(std::path::Path::new("/"), info.pci_bus_id.as_deref());
            let names: Vec<String> = cards.iter().map(|c| c.name.clone()).collect();
            let b: Box<dyn Source> = Box::new(AmdSysfsSource::of(cards));
            (!names.is_empty()).then_some((b, names))
        }
        _ => None,
    };
    let (source, devices) = if faults.any() {
        let (inner, devices) = match real {
            Some((s, d)) => (Some(s), d),
            None => (None, vec![injected::name(faults.device)]),
        };
        let s: Box<dyn Source> = Box::new(injected::InjectedSource {
            inner,
            faults: faults.clone(),
        });
        (s, devices)
    } else {
        real?
    };
    let sampler = greta_runtime::Sampler::start(source, SAMPLE_PERIOD).ok()?;
    Some(Watch { sampler, devices })
}

impl Watch {
    /// Stops sampling; each watched device's summary, and a line per device
    /// for the run's notes ("nvml:0 during stress: sustained 612 TFLOP/s,
    /// power-capped 38% of the time at 700 W").
    pub fn finish(self, gate: &str, rate: &str) -> (Vec<Summary>, Vec<String>) {
        let samples = self.sampler.stop();
        let sums: Vec<Summary> = self
            .devices
            .iter()
            .filter_map(|d| summarize(&samples, d))
            .collect();
        let notes = sums
            .iter()
            .map(|s| format!("{} during {gate}: {}", s.device, describe(rate, s)))
            .collect();
        (sums, notes)
    }
}

/// What a device's error counters and link are read through, for the
/// checks before and after a device's run.
enum Reader {
    Nvml(std::sync::Arc<greta_runtime::Nvml>, u32),
    Amd(Vec<greta_runtime::AmdCard>),
    /// TEST-ONLY: faults over a real reader, or over none.
    Injected {
        inner: Option<Box<Reader>>,
        faults: TelemetryFaults,
        reads: std::cell::Cell<u32>,
    },
}

impl Reader {
    fn of(info: &greta_runtime::DeviceInfo) -> Option<Reader> {
        use greta_runtime::{amd_cards_of, Nvml};
        match info.vendor_id {
            0x10de => {
                let n = std::sync::Arc::new(Nvml::open().ok()?);
                let i = n.index_of_uuid(&info.uuid.as_ref()?.to_string())?;
                Some(Reader::Nvml(n, i))
            }
            0x1002 => {
                let cards = amd_cards_of(std::path::Path::new("/"), info.pci_bus_id.as_deref());
                (!cards.is_empty()).then_some(Reader::Amd(cards))
            }
            _ => None,
        }
    }

    fn with_faults(real: Option<Reader>, faults: &TelemetryFaults) -> Option<Reader> {
        if !faults.any() {
            return real;
        }
        Some(Reader::Injected {
            inner: real.map(Box::new),
            faults: faults.clone(),
            reads: std::cell::Cell::new(0),
        })
    }

    fn counters(&self) -> (Vec<Counter>, Vec<String>) {
        match self {
            Reader::Injected {
                inner,
                faults,
                reads,
            } => {
                let (c, bad) = inner.as_ref().map(|r| r.counters()).unwrap_or_default();
                let name = inner
                    .as_ref()
                    .and_then(|r| r.links().into_iter().next().map(|(d, _)| d))
                    .or_else(|| c.first().map(|c| c.device.clone()))
                    .unwrap_or_else(|| injected::name(faults.device));
                (injected::counters(faults, reads, c, &name), bad)
            }
            Reader::Nvml(n, i) => n.counters(*i),
            Reader::Amd(cards) => {
                let (mut c, mut bad) = (Vec::new(), Vec::new());
                for card in cards {
                    let (a, b) = card.counters();
                    c.extend(a);
                    bad.extend(b);
                }
                (c, bad)
            }
        }
    }

    fn links(&self) -> Vec<(String, Link)> {
        match self {
            Reader::Injected { inner, faults, .. } => injected::links(
                faults,
                inner.as_ref().map(|r| r.links()).unwrap_or_default(),
            ),
            Reader::Nvml(n, i) => n
                .link(*i)
                .map(|l| (format!("nvml:{i}"), l))
                .into_iter()
                .collect(),
            Reader::Amd(cards) => cards
                .iter()
                .filter_map(|c| Some((c.name.clone(), c.link()?)))
                .collect(),
        }
    }
}

/// A device's error counters read before its gates, to be compared after;
/// its links, for the host-copy gate's floor.
pub struct NodeWatch {
    reader: Reader,
    before: Vec<Counter>,
}

impl NodeWatch {
    /// Reads the counters of the device `info` describes; `None` where there
    /// is nothing to read (see [`watch`]).
    pub fn start(info: &greta_runtime::DeviceInfo, faults: &TelemetryFaults) -> Option<NodeWatch> {
        let reader = Reader::with_faults(Reader::of(info), faults)?;
        let (before, _) = reader.counters();
        Some(NodeWatch { reader, before })
    }

    /// The device's PCIe links as read now (each with the most it can
    /// train to), named by their telemetry device.
    pub fn links(&self) -> Vec<(String, Link)> {
        self.reader.links()
    }

    /// The checks after the run: error counters against the start, and
    /// each link's best state under load (from the gates' `loaded`
    /// summaries) against its maximum. A link with no reading under load is
    /// not judged (GPUs train their links down when idle).
    pub fn finish(self, loaded: &[Summary]) -> Vec<NodeCheck> {
        let (after, bad) = self.reader.counters();
        let rose = counters_rose(&self.before, &after, &bad);
        let mut checks = vec![NodeCheck {
            check: "error_counters".into(),
            pass: rose.is_empty(),
            detail: if rose.is_empty() {
                format!("{} counters unchanged", self.before.len())
            } else {
                rose.join("; ")
            },
        }];
        for (dev, link) in self.reader.links() {
            let best = loaded
                .iter()
                .filter(|s| s.device == dev)
                .filter_map(|s| s.best_link)
                .reduce(|a, b| LinkState {
                    gen: a.gen.max(b.gen),
                    width: a.width.max(b.width),
                });
            let Some(best) = best else { continue };
            let best = LinkState {
                gen: best.gen.max(link.current.gen),
                width: best.width.max(link.current.width),
            };
            let r = link_check(&dev, best, &link);
            checks.push(NodeCheck {
                check: "pcie_link".into(),
                pass: r.is_ok(),
                detail: r.err().unwrap_or_else(|| {
                    format!(
                        "{dev}: PCIe Gen{} x{} as the card allows",
                        link.max.gen, link.max.width
                    )
                }),
            });
        }
        checks
    }
}

/// The run's GPU count check: `seen` devices of backend `kind` against the
/// PCI bus, KFD (AMD) and NVML (NVIDIA). `None` for a backend whose
/// devices are not one per GPU (Vulkan lists a GPU once per driver and
/// lavapipe besides).
pub fn census(kind: greta_runtime::BackendKind, seen: usize) -> Option<NodeCheck> {
    use greta_runtime::BackendKind;
    use greta_runtime::{bus_gpu_count, kfd_gpu_count, Nvml};
    let root = std::path::Path::new("/");
    let (name, c) = match kind {
        BackendKind::Hip => (
            "HIP",
            Census {
                bus: bus_gpu_count(root, 0x1002),
                kfd: kfd_gpu_count(root),
                nvml: None,
            },
        ),
        BackendKind::Cuda => (
            "CUDA",
            Census {
                bus: bus_gpu_count(root, 0x10de),
                kfd: None,
                nvml: Nvml::open()
                    .ok()
                    .and_then(|n| n.count().ok())
                    .map(|n| n as usize),
            },
        ),
        BackendKind::Vulkan => return None,
    };
    let r = census_check(&c, name, seen);
    Some(NodeCheck {
        check: "gpu_count".into(),
        pass: r.is_ok(),
        detail: r.unwrap_or_else(|e| e),
    })
}

/// The backend's devices counted before and after the run: one that fell
/// off the bus meanwhile (an NVIDIA "fell off the bus", an amdgpu reset
/// that did not come back) fails the run, whatever its gates said.
pub fn recount(backend: &str, before: usize, after: usize) -> NodeCheck {
    let pass = after >= before;
    NodeCheck {
        check: "gpu_count_stable".into(),
        pass,
        detail: if pass {
            format!("{before} {backend} device(s) before the run, {after} after")
        } else {
            format!(
                "GPU count fell during the run: {before} {backend} device(s) before, {after} after: {} vanished",
                before - after
            )
        },
    }
}

/// One node-level check as it goes into the results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeCheck {
    /// "gpu_count", "gpu_count_stable", "pcie_link", "error_counters".
    pub check: String,
    pub pass: bool,
    pub detail: String,
}

/// Telemetry of a run for the results file: per gate, each device's
/// summary; and the node checks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunTelemetry {
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub gates: std::collections::BTreeMap<String, Vec<Summary>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<NodeCheck>,
}

mod injected;

#[cfg(test)]
mod tests;
