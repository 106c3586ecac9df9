//! A node's health panel: the checks that judge the node rather than a
//! gate (error counters, PCIe link, GPU counts), and for each gate the
//! sampler watched what the GPU said of itself while it ran (power,
//! temperature, clock, and the share of the time each limit held the
//! clocks). Every figure is text in the table.

use crate::html::{esc, label, num, percent};
use greta_smoke::results::DeviceRun;
use greta_smoke::telemetry::NodeCheck;
use std::fmt::Write;

/// The checks as a table (empty text when there are none).
pub fn checks(title: &str, cs: &[NodeCheck]) -> String {
    if cs.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "<table class=\"health checks\"><caption>{}</caption><thead><tr><th>check</th><th>status</th><th>detail</th></tr></thead><tbody>",
        esc(title)
    );
    for c in cs {
        let (class, word) = if c.pass {
            ("pass", "PASS")
        } else {
            ("fail", "FAIL")
        };
        let _ = write!(
            o,
            "<tr class=\"g-{class}\" data-check=\"{}\"><td>{}</td><td>{word}</td><td class=\"reason\">{}</td></tr>",
            label(&c.check),
            label(&c.check),
            esc(&c.detail)
        );
    }
    o.push_str("</tbody></table>");
    o
}

/// A device's health: its checks, its watched gates' telemetry, and each
/// one's readings over the gate as a chart ([`crate::trace`]; the page's
/// remaining chart budget in `charts_left`).
pub fn device(d: &DeviceRun, charts_left: &mut usize) -> String {
    let mut o = checks("node checks", &d.checks);
    let watched: Vec<_> = d
        .gates
        .iter()
        .flat_map(|g| g.in_run.telemetry.iter().map(move |t| (g, t)))
        .collect();
    if watched.is_empty() {
        return o;
    }
    o.push_str(
        "<table class=\"health telemetry\"><caption>what the GPU said while a gate ran</caption><thead><tr>\
         <th>gate</th><th>telemetry</th><th>samples</th><th>power W (mean / max / limit)</th><th>max °C</th>\
         <th>clock MHz</th><th>power-capped</th><th>thermal</th><th>current</th><th>other</th><th>link</th></tr></thead><tbody>",
    );
    let opt = |v: Option<f64>| v.map(num).unwrap_or_else(|| "-".into());
    for &(g, t) in &watched {
        let _ = write!(
            o,
            "<tr data-gate=\"{}\" data-telemetry=\"{}\"><td>{}</td><td>{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{} / {} / {}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}{}</td><td class=\"n thermal\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            label(&g.id),
            label(&t.device),
            label(&g.id),
            label(&t.device),
            t.samples,
            opt(t.mean_power_w),
            opt(t.max_power_w),
            opt(t.power_limit_w),
            opt(t.max_temp_c),
            opt(t.mean_sm_mhz),
            percent(t.power_capped),
            if t.power_inferred { " (from power)" } else { "" },
            percent(t.thermal),
            percent(t.current),
            percent(t.other),
            t.best_link
                .map(|l| format!("Gen{} x{}", l.gen, l.width))
                .unwrap_or_else(|| "-".into()),
        );
    }
    o.push_str("</tbody></table>");
    for (g, t) in watched {
        o.push_str(&crate::trace::html(&g.id, t, charts_left));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::sample;

    #[test]
    fn checks_and_telemetry_are_drawn_as_text() {
        let mut r = sample(1);
        let d = &mut r.devices[0];
        assert_eq!(device(d, &mut 1), "", "nothing watched, nothing drawn");
        d.checks.push(NodeCheck {
            check: "pcie_link".into(),
            pass: false,
            detail: "PCIe Gen5 x16 card trained at Gen3 x8 (card<1>)".into(),
        });
        d.gates[0]
            .in_run
            .telemetry
            .push(greta_smoke::telemetry::Summary {
                device: "card1".into(),
                samples: 30,
                power_capped: 0.38,
                thermal: 0.5,
                mean_power_w: Some(612.3),
                max_power_w: Some(700.0),
                power_limit_w: Some(700.0),
                max_temp_c: Some(91.0),
                best_link: Some(greta_smoke::telemetry::LinkState { gen: 3, width: 8 }),
                ..Default::default()
            });
        let h = device(d, &mut 1);
        assert!(
            h.contains(
                "<tr class=\"g-fail\" data-check=\"pcie_link\"><td>pcie_link</td><td>FAIL</td>"
            ),
            "{h}"
        );
        assert!(
            h.contains("trained at Gen3 x8 (card&lt;1&gt;)"),
            "escaped: {h}"
        );
        assert!(h.contains("<td class=\"n\">612.3 / 700.0 / 700.0</td><td class=\"n\">91.00</td><td class=\"n\">-</td>"), "{h}");
        assert!(
            h.contains("<td class=\"n\">38%</td><td class=\"n thermal\">50%</td>"),
            "{h}"
        );
        assert!(h.contains("<td>Gen3 x8</td>"), "{h}");
    }
}
