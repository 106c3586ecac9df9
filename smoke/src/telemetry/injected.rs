//! TEST-ONLY telemetry faults laid over a device's real telemetry (or over
//! nothing, on a device that has none): the readings, the links and the
//! error counters say what the fault says, and every verdict downstream
//! meets them as it would a real card's.

use crate::inject::TelemetryFaults;
use greta_runtime::{Counter, Link, LinkState, Reading, TelemetrySource as Source};
use std::cell::Cell;

/// The most a device without a link of its own can train to.
pub const MADE_UP_MAX: LinkState = LinkState { gen: 5, width: 16 };

/// The name of the telemetry made up for a device that has none.
pub fn name(device: usize) -> String {
    format!("inject:{device}")
}

/// One reading with the faults applied.
fn apply(f: &TelemetryFaults, r: &mut Reading) {
    if let Some(limit) = f.throttle {
        let mut l = r.limits.unwrap_or_default();
        limit.set(&mut l);
        r.limits = Some(l);
    }
    if let Some(link) = f.link {
        r.link = Some(link);
    }
}

/// A sampler source with the faults applied to every reading.
pub struct InjectedSource {
    pub inner: Option<Box<dyn Source>>,
    pub faults: TelemetryFaults,
}

impl Source for InjectedSource {
    fn sample(&mut self) -> Vec<Reading> {
        let mut rs = match self.inner.as_mut() {
            Some(s) => s.sample(),
            None => vec![Reading {
                device: name(self.faults.device),
                ..Default::default()
            }],
        };
        for r in &mut rs {
            apply(&self.faults, r);
        }
        rs
    }
}

/// Links as read with the faults: each current state replaced by the
/// injected one; a device without links gets one at [`MADE_UP_MAX`].
pub fn links(f: &TelemetryFaults, real: Vec<(String, Link)>) -> Vec<(String, Link)> {
    let Some(cur) = f.link else { return real };
    if real.is_empty() {
        return vec![(
            name(f.device),
            Link {
                current: cur,
                max: MADE_UP_MAX,
            },
        )];
    }
    real.into_iter()
        .map(|(d, l)| (d, Link { current: cur, ..l }))
        .collect()
}

/// Error counters as read with the faults: from the second read on, the
/// uncorrectable count of the fault's block is one higher (a counter of
/// that block is made up, at 0 on the first read, where none is there).
pub fn counters(
    f: &TelemetryFaults,
    reads: &Cell<u32>,
    mut real: Vec<Counter>,
    device: &str,
) -> Vec<Counter> {
    let n = reads.get();
    reads.set(n.saturating_add(1));
    let Some(block) = f.ecc.as_deref() else {
        return real;
    };
    let rise = u64::from(n > 0);
    let mut hit = false;
    for c in real
        .iter_mut()
        .filter(|c| c.block == block && c.kind == "uncorrectable")
    {
        c.value = c.value.saturating_add(rise);
        hit = true;
    }
    if !hit {
        real.push(Counter {
            device: device.to_string(),
            block: block.to_string(),
            kind: "uncorrectable".into(),
            value: rise,
        });
    }
    real
}
