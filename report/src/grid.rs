//! `--device all`: a gates x devices grid, each cell coloured by the
//! device's rate over the node's median for the gate, so an outlier GPU is
//! seen at once. A failed gate is drawn in the failing colour whatever its
//! ratio (it failed for a reason: the cell's title says which).
//!
//! HTML table cells rather than a chart: every cell holds its numbers as
//! text and carries its class, ratio and rate as attributes.

use crate::html::{cut, cut_to, esc, exact, label, num, ratio, HOVER_CAP};
use crate::node::Node;
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

/// Most cells the grid draws. Every device of a real node runs the same
/// gates (8 GPUs x 40 gates is 320 cells), but a file whose devices each
/// name gates of their own would ask for devices x gates cells, most of
/// them "not run": past this the grid is left out and says why (each
/// device's table still has its ratio to the median).
pub const GRID_CELLS: usize = 100_000;

pub fn html(r: &Report, node: &Node<'_>, anchor: &str) -> String {
    let pf = r
        .settings
        .peer_fraction
        .unwrap_or(greta_smoke::DEFAULT_PEER_FRACTION);
    let mut o = String::new();
    let cells = node.ids.len().saturating_mul(r.devices.len());
    if cells > GRID_CELLS {
        let _ = write!(
            o,
            "<p class=\"warn grid-left-out\">The gates x devices grid is left out: {} gate ids on {} devices would be \
             {cells} cells (more than {GRID_CELLS}); each device's table below has its ratio to the node's median.</p>",
            node.ids.len(),
            r.devices.len()
        );
        return o;
    }
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
            label(&d.device.name),
            d.index,
            d.index
        );
    }
    o.push_str("</tr></thead><tbody>");
    for (id, row) in node.ids.iter().zip(&node.rows) {
        let _ = write!(o, "<tr><th>{}</th>", label(id));
        // `row` holds the devices that ran the gate, in device order.
        let mut ran = row.iter().peekable();
        for (di, d) in r.devices.iter().enumerate() {
            let Some((_, cell)) = ran.next_if(|(i, _)| *i == di) else {
                let _ = write!(
                    o,
                    "<td class=\"cell r-none\" data-device=\"{}\" data-gate=\"{}\">not run</td>",
                    d.index,
                    label(id)
                );
                continue;
            };
            let g = &d.gates[cell.gate];
            let ratio_v = cell.ratio;
            let rate = g.metrics.as_ref().and_then(|m| m.rate);
            let unit = g.metrics.as_ref().map_or("", |m| m.unit.as_str());
            let b = band(ratio_v, g.status, pf);
            let mut title = format!(
                "GPU {} {}: {}",
                d.index,
                cut(id),
                g.status.as_str().to_uppercase()
            );
            if let Some(v) = rate {
                let _ = write!(title, ", {} {unit}", num(v));
            }
            if let Some(v) = ratio_v {
                let _ = write!(title, ", {}x the node's median", ratio(v));
            }
            if let Some(why) = &g.reason {
                let _ = write!(title, "\n{}", cut_to(why, HOVER_CAP));
            }
            let _ = write!(
                o,
                "<td class=\"cell {} s-{}\" data-device=\"{}\" data-gate=\"{}\"{}{} title=\"{}\">{}<small>{}</small></td>",
                b.class(),
                g.status.as_str(),
                d.index,
                label(id),
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
        let node = Node::of(&r);
        for id in &node.ids {
            let at = |di| node.cell(di, id).unwrap().ratio.unwrap();
            assert!((at(5) - 0.25).abs() < 1e-12, "{id}");
            assert!((at(0) - 1.0).abs() < 1e-12, "{id}");
        }
        let h = html(&r, &node, "");
        let slow = h
            .matches("class=\"cell r-fail s-pass\" data-device=\"5\"")
            .count();
        assert_eq!(slow, node.ids.len(), "{h}");
        assert_eq!(
            h.matches("r-fail").count(),
            slow + 1,
            "legend + slow cells only"
        );
        assert_eq!(band(Some(1.0), GateStatus::Fail, 0.85), Band::Fail);
        assert_eq!(band(Some(0.9), GateStatus::Pass, 0.85), Band::Low);
        assert_eq!(band(None, GateStatus::Skip, 0.85), Band::None);
    }

    /// A gate only some devices ran is "not run" on the others, in its
    /// column; the ratios are over the devices that ran it.
    #[test]
    fn a_gate_some_devices_did_not_run_is_not_run_in_their_columns() {
        let mut r = sample(3);
        let copy = r.devices[0]
            .gates
            .iter()
            .position(|g| g.id == "copy.16m")
            .unwrap();
        r.devices[1].gates.remove(copy);
        let node = Node::of(&r);
        assert!(node.cell(1, "copy.16m").is_none());
        assert_eq!(node.cell(2, "copy.16m").unwrap().ratio, Some(1.0));
        let h = html(&r, &node, "");
        assert_eq!(
            h.matches("data-device=\"1\" data-gate=\"copy.16m\">not run<")
                .count(),
            1,
            "{h}"
        );
        assert_eq!(h.matches(">not run<").count(), 1);
    }
}
