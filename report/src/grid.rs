//! `--device all`: a gates x devices grid, each cell coloured by the
//! device's rate over the node's median for the gate, so an outlier GPU is
//! seen at once. A failed gate is drawn in the failing colour whatever its
//! ratio (it failed for a reason: the cell's title says which).
//!
//! HTML table cells rather than a chart: every cell holds its numbers as
//! text and carries its class, ratio and rate as attributes.

use crate::html::{esc, exact, num, ratio};
use greta_smoke::results::{GateStatus, Report};
use std::fmt::Write;

/// The ratio classes of a cell, best last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
    Fail,
    Low,
    Mid,
    High,
    None,
}

impl Band {
    pub fn class(self) -> &'static str {
        match self {
            Band::Fail => "r-fail",
            Band::Low => "r-low",
            Band::Mid => "r-mid",
            Band::High => "r-high",
            Band::None => "r-none",
        }
    }
}

/// Where a ratio falls: under the peer fraction (the limit greta fails an
/// outlier at) is failing; within 5% of the median is the middle.
pub fn band(ratio: Option<f64>, status: GateStatus, peer_fraction: f64) -> Band {
    if status == GateStatus::Fail {
        return Band::Fail;
    }
    match ratio {
        None => Band::None,
        Some(r) if r < peer_fraction => Band::Fail,
        Some(r) if r < 0.95 => Band::Low,
        Some(r) if r <= 1.05 => Band::Mid,
        Some(_) => Band::High,
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Each gate id in order of first appearance over the devices.
pub fn gate_ids(r: &Report) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for d in &r.devices {
        for g in &d.gates {
            if !ids.contains(&g.id) {
                ids.push(g.id.clone());
            }
        }
    }
    ids
}

/// One cell's ratio: greta's own peer comparison when the run made one,
/// else this rate over the median of the devices' rates (as a speed).
pub fn ratios(r: &Report, gate: &str) -> Vec<Option<f64>> {
    let rates: Vec<Option<(f64, bool)>> = r
        .devices
        .iter()
        .map(|d| {
            let g = d.gates.iter().find(|g| g.id == gate)?;
            let m = g.metrics.as_ref()?;
            m.rate
                .filter(|v| v.is_finite() && *v > 0.0)
                .map(|v| (v, m.unit.higher_is_better()))
        })
        .collect();
    let med = median(rates.iter().flatten().map(|(v, _)| *v).collect());
    r.devices
        .iter()
        .zip(&rates)
        .map(|(d, rate)| {
            let peer = d.gates.iter().find(|g| g.id == gate)?.peer.as_ref();
            if let Some(p) = peer {
                return Some(p.ratio);
            }
            let (v, hib) = (*rate)?;
            let med = med.filter(|_| rates.iter().flatten().count() >= 2)?;
            Some(if hib { v / med } else { med / v })
        })
        .collect()
}

pub fn html(r: &Report, anchor: &str) -> String {
    let pf = r
        .settings
        .peer_fraction
        .unwrap_or(greta_smoke::DEFAULT_PEER_FRACTION);
    let mut o = String::new();
    let _ = write!(
        o,
        "<p class=\"legend\">Each cell: the device's rate over the node's median for the gate (as a speed: \
         1.00 is the median, 0.50 half as fast), and the rate. \
         <span class=\"r-fail\">failed, or under {pf} (--peer-fraction)</span>\
         <span class=\"r-low\">under 0.95</span><span class=\"r-mid\">0.95-1.05</span>\
         <span class=\"r-high\">over 1.05</span><span class=\"r-none\">no rate</span></p>\
         <table class=\"grid\"><thead><tr><th>gate</th>"
    );
    for d in &r.devices {
        let _ = write!(
            o,
            "<th title=\"{}\"><a href=\"#{anchor}dev-{}\">GPU {}</a></th>",
            esc(&d.device.name),
            d.index,
            d.index
        );
    }
    o.push_str("</tr></thead><tbody>");
    for id in gate_ids(r) {
        let rs = ratios(r, &id);
        let _ = write!(o, "<tr><th>{}</th>", esc(&id));
        for (d, ratio_v) in r.devices.iter().zip(rs) {
            let Some(g) = d.gates.iter().find(|g| g.id == id) else {
                let _ = write!(
                    o,
                    "<td class=\"cell r-none\" data-device=\"{}\" data-gate=\"{}\">not run</td>",
                    d.index,
                    esc(&id)
                );
                continue;
            };
            let rate = g.metrics.as_ref().and_then(|m| m.rate);
            let unit = g.metrics.as_ref().map_or("", |m| m.unit.as_str());
            let b = band(ratio_v, g.status, pf);
            let mut title = format!(
                "GPU {} {}: {}",
                d.index,
                id,
                g.status.as_str().to_uppercase()
            );
            if let Some(v) = rate {
                let _ = write!(title, ", {} {unit}", num(v));
            }
            if let Some(v) = ratio_v {
                let _ = write!(title, ", {}x the node's median", ratio(v));
            }
            if let Some(why) = &g.reason {
                let _ = write!(title, "\n{why}");
            }
            let _ = write!(
                o,
                "<td class=\"cell {} s-{}\" data-device=\"{}\" data-gate=\"{}\"{}{} title=\"{}\">{}<small>{}</small></td>",
                b.class(),
                g.status.as_str(),
                d.index,
                esc(&id),
                rate.map(|v| format!(" data-rate=\"{}\"", exact(v))).unwrap_or_default(),
                ratio_v.map(|v| format!(" data-ratio=\"{}\"", exact(v))).unwrap_or_default(),
                esc(&title),
                ratio_v.map(ratio).unwrap_or_else(|| g.status.as_str().to_string()),
                rate.map(|v| format!("{} {unit}", num(v))).unwrap_or_default(),
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::sample;

    /// Eight identical devices and one at a quarter of the speed: the
    /// slow one's cells fail, the others sit at the median.
    #[test]
    fn the_slow_device_is_the_outlier() {
        let mut r = sample(8);
        for g in &mut r.devices[5].gates {
            if let Some(m) = g.metrics.as_mut() {
                m.rate = m.rate.map(|v| {
                    if m.unit.higher_is_better() {
                        v / 4.0
                    } else {
                        v * 4.0
                    }
                });
            }
        }
        for id in gate_ids(&r) {
            let rs = ratios(&r, &id);
            assert!((rs[5].unwrap() - 0.25).abs() < 1e-12, "{id} {rs:?}");
            assert!((rs[0].unwrap() - 1.0).abs() < 1e-12, "{id} {rs:?}");
        }
        let h = html(&r, "");
        let slow = h
            .matches("class=\"cell r-fail s-pass\" data-device=\"5\"")
            .count();
        assert_eq!(slow, gate_ids(&r).len(), "{h}");
        assert_eq!(
            h.matches("r-fail").count(),
            slow + 1,
            "legend + slow cells only"
        );
        assert_eq!(band(Some(1.0), GateStatus::Fail, 0.85), Band::Fail);
        assert_eq!(band(Some(0.9), GateStatus::Pass, 0.85), Band::Low);
        assert_eq!(band(None, GateStatus::Skip, 0.85), Band::None);
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), Some(2.5));
    }
}
