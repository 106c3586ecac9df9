//! One device's gates as horizontal bars: each gate's rate on its own
//! scale, with its floor, in-run ceiling and spec figure marked on it, the
//! bar in the verdict's colour and the reason in its `<title>` (hover).
//!
//! Drawn as SVG directly rather than with plotters: each bar is one rect
//! that must carry a `<title>` and `class`/`data-*` attributes (hover text,
//! and what the tests and scripts check), which plotters' SVG backend
//! cannot attach; and every row has its own unit and scale, which is a
//! layout of a few rects, not a chart with axes.

use crate::html::{cut, cut_to, esc, exact, label, num, FAIL, HOVER_CAP, PASS, SKIP};
use greta_smoke::results::{DeviceRun, GateResult, GateStatus};
use std::fmt::Write;

/// The gate names' column: at least this wide.
const MIN_LABEL_W: f64 = 200.0;
/// Pixels a character of a gate's name may take at the SVG's 12 px DejaVu
/// Sans (its digits and most lowercase letters: 7.6).
const CHAR_W: f64 = 7.6;
/// Characters of a gate's name drawn; a longer one is cut with a `…`.
const LABEL_CHARS: usize = 48;
const BAR_W: f64 = 420.0;
const TEXT_W: f64 = 330.0;
const ROW_H: f64 = 22.0;
const TOP: f64 = 26.0;

/// What a gate's bar shows: the rate and its reference lines, all as
/// "more is better" values (µs/dispatch is drawn as its reciprocal, so a
/// longer bar is always better).
pub struct Marks {
    pub rate: Option<f64>,
    pub floor: Option<f64>,
    pub ceiling: Option<f64>,
    pub spec: Option<f64>,
    pub higher_is_better: bool,
}

impl Marks {
    pub fn of(g: &GateResult) -> Marks {
        let unit = g.metrics.as_ref().map(|m| m.unit);
        Marks {
            rate: g.metrics.as_ref().and_then(|m| m.rate),
            floor: g.floor.as_ref().map(|f| f.limit),
            ceiling: g.in_run.ceiling.as_ref().map(|c| c.rate),
            spec: g
                .spec
                .as_ref()
                .filter(|s| Some(s.unit) == unit)
                .map(|s| s.figure),
            higher_is_better: unit.is_none_or(|u| u.higher_is_better()),
        }
    }

    fn goodness(&self, v: Option<f64>) -> Option<f64> {
        let v = v.filter(|v| v.is_finite() && *v > 0.0)?;
        Some(if self.higher_is_better { v } else { 1.0 / v })
    }

    /// The scale's end: the largest mark, with a little room.
    fn scale(&self) -> Option<f64> {
        [self.rate, self.floor, self.ceiling, self.spec]
            .into_iter()
            .filter_map(|v| self.goodness(v))
            .reduce(f64::max)
            .map(|m| m * 1.08)
    }
}

/// A gate with a rate and nothing to hold it against: no floor, in-run
/// ceiling or spec figure.
pub fn alone(g: &GateResult) -> bool {
    let m = Marks::of(g);
    m.goodness(m.rate).is_some()
        && [m.floor, m.ceiling, m.spec]
            .iter()
            .all(|v| m.goodness(*v).is_none())
}

pub fn status_colour(s: GateStatus) -> &'static str {
    match s {
        GateStatus::Pass => PASS,
        GateStatus::Fail => FAIL,
        GateStatus::Skip => SKIP,
    }
}

/// The hover text of a gate: rate, verdict, reason, and each mark. Drawn
/// in each of the gate's drawings, so each piece from the file is cut.
pub fn describe(g: &GateResult) -> String {
    let m = Marks::of(g);
    let unit = g.metrics.as_ref().map_or("", |m| m.unit.as_str());
    let long = |s: &str| cut_to(s, HOVER_CAP).into_owned();
    let mut t = format!("{}: ", cut(&g.id));
    match m.rate {
        Some(r) => {
            let _ = write!(t, "{} {unit}", num(r));
        }
        None => t.push_str("no rate"),
    }
    let _ = write!(t, ", {}", g.status.as_str().to_uppercase());
    if let Some(r) = &g.reason {
        let _ = write!(t, ": {}", long(r));
    }
    if let Some(f) = &g.floor {
        let _ = write!(t, "\nfloor {} {unit} ({})", num(f.limit), long(&f.source));
    }
    if let Some(c) = &g.in_run.ceiling {
        let _ = write!(
            t,
            "\nceiling {} {unit} {} {} {}",
            num(c.rate),
            cut(&c.library),
            cut(&c.version),
            long(&c.source)
        );
    }
    if let Some(s) = &g.spec {
        let _ = write!(
            t,
            "\nspec {} {} ({} {})",
            num(s.figure),
            s.unit.as_str(),
            cut(&s.model),
            cut(&s.field)
        );
    }
    t
}

/// A gate's name as its row shows it (cut at [`LABEL_CHARS`]), escaped.
fn row_label(id: &str) -> String {
    esc(&cut_to(id, LABEL_CHARS))
}

/// The width of the names' column: room for the longest name drawn (the
/// fused gates' names, 30 characters, ran past the SVG's left edge in a
/// fixed 200 px column).
fn label_width(d: &DeviceRun) -> f64 {
    let longest = d
        .gates
        .iter()
        .map(|g| cut_to(&g.id, LABEL_CHARS).chars().count())
        .max()
        .unwrap_or(0);
    (8.0 + CHAR_W * longest as f64 + 4.0).max(MIN_LABEL_W)
}

/// The SVG of one device's bars.
pub fn svg(d: &DeviceRun) -> String {
    let n = d.gates.len() as f64;
    let h = TOP + n * ROW_H + 6.0;
    let label_w = label_width(d);
    let w = label_w + BAR_W + TEXT_W;
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg class=\"bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"device {} gate rates\" font-size=\"12\">",
        d.index
    );
    // Legend: what the marks mean.
    let lx = label_w;
    let _ = write!(
        o,
        "<g class=\"legend\" font-size=\"11\"><rect x=\"{lx}\" y=\"6\" width=\"14\" height=\"10\" fill=\"{PASS}\"/>\
         <text x=\"{}\" y=\"15\">rate (longer is better; each row on its own scale)</text>\
         <line x1=\"{}\" y1=\"4\" x2=\"{}\" y2=\"18\" stroke=\"#000\" stroke-width=\"2\"/><text x=\"{}\" y=\"15\">floor</text>\
         <line x1=\"{}\" y1=\"4\" x2=\"{}\" y2=\"18\" stroke=\"#2166ac\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/><text x=\"{}\" y=\"15\">ceiling</text>\
         <line x1=\"{}\" y1=\"4\" x2=\"{}\" y2=\"18\" stroke=\"#7b3294\" stroke-width=\"2\" stroke-dasharray=\"1 2\"/><text x=\"{}\" y=\"15\">spec</text></g>",
        lx + 18.0,
        lx + 300.0, lx + 300.0, lx + 306.0,
        lx + 350.0, lx + 350.0, lx + 356.0,
        lx + 416.0, lx + 416.0, lx + 422.0,
    );
    for (i, g) in d.gates.iter().enumerate() {
        let y = TOP + i as f64 * ROW_H;
        let m = Marks::of(g);
        let title = esc(&describe(g));
        let _ = write!(
            o,
            "<g class=\"row\" data-gate=\"{}\"><title>{title}</title>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{label_w}\" y=\"{}\" width=\"{BAR_W}\" height=\"{}\" fill=\"#f3f3f3\"/>",
            label(&g.id),
            label_w - 8.0,
            y + 15.0,
            row_label(&g.id),
            y + 3.0,
            ROW_H - 6.0
        );
        let scale = m.scale();
        let pos =
            |v: Option<f64>| -> Option<f64> { Some(label_w + m.goodness(v)? / scale? * BAR_W) };
        // A rate with nothing to hold it against fills its row on its
        // own scale: drawn pale (the page says so once), so a full bar is
        // not read as "at the ceiling".
        let alone = alone(g);
        if let Some(end) = pos(m.rate) {
            let rate = m.rate.unwrap_or_default();
            let _ = write!(
                o,
                "<rect class=\"bar {}\" data-device=\"{}\" data-gate=\"{}\" data-rate=\"{}\" x=\"{label_w}\" y=\"{}\" \
                 width=\"{:.1}\" height=\"{}\" fill=\"{}\"{}><title>{title}</title></rect>",
                g.status.as_str(),
                d.index,
                label(&g.id),
                exact(rate),
                y + 3.0,
                end - label_w,
                ROW_H - 6.0,
                status_colour(g.status),
                if alone { " fill-opacity=\"0.35\"" } else { "" }
            );
        }
        for (v, colour, dash, what) in [
            (m.floor, "#000", "", "floor"),
            (m.ceiling, "#2166ac", "3 2", "ceiling"),
            (m.spec, "#7b3294", "1 2", "spec"),
        ] {
            if let Some(px) = pos(v) {
                let _ = write!(
                    o,
                    "<line class=\"mark {what}\" x1=\"{px:.1}\" y1=\"{}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"{colour}\" \
                     stroke-width=\"2\" stroke-dasharray=\"{dash}\"><title>{what} {} {}</title></line>",
                    y + 1.0,
                    y + ROW_H - 1.0,
                    num(v.unwrap_or_default()),
                    g.metrics.as_ref().map_or("", |m| m.unit.as_str())
                );
            }
        }
        let unit = g.metrics.as_ref().map_or("", |m| m.unit.as_str());
        let text = match (m.rate, g.status) {
            (Some(r), s) => format!("{} {unit}  {}", num(r), s.as_str().to_uppercase()),
            (None, GateStatus::Skip) => "skipped".to_string(),
            (None, s) => format!("no rate  {}", s.as_str().to_uppercase()),
        };
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text></g>",
            label_w + BAR_W + 8.0,
            y + 15.0,
            if g.status == GateStatus::Fail {
                FAIL
            } else {
                "#222"
            },
            esc(&text)
        );
    }
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::sample;

    #[test]
    fn bars_carry_rate_verdict_and_marks_in_order_of_goodness() {
        let mut r = sample(1);
        let d = &mut r.devices[0];
        let gi = d.gates.iter().position(|g| g.id == "copy.16m").unwrap();
        let rate = d.gates[gi].metrics.as_ref().unwrap().rate.unwrap();
        d.gates[gi].floor = Some(greta_smoke::results::Floor {
            limit: rate * 0.5,
            unit: greta_smoke::results::RateUnit::GBps,
            reference: rate * 0.5 / 0.75,
            fraction: 0.75,
            source: "baseline x.json".into(),
            passed: true,
        });
        d.gates[gi].in_run.ceiling = Some(greta_smoke::results::CeilingRef {
            rate: rate * 2.0,
            unit: greta_smoke::results::RateUnit::GBps,
            source: "memcpy d2d".into(),
            library: "libcuda.so".into(),
            version: "CUDA 13.0".into(),
        });
        let s = svg(d);
        assert_eq!(
            s.matches("class=\"bar ").count(),
            d.gates
                .iter()
                .filter(|g| g.metrics.as_ref().is_some_and(|m| m.rate.is_some()))
                .count()
        );
        assert!(
            s.contains(&format!(
                "data-gate=\"copy.16m\" data-rate=\"{}\"",
                exact(rate)
            )),
            "{s}"
        );
        // The ceiling is the scale's largest mark: rate at 1/2.16 of the
        // width, floor at half of that.
        let x = |what: &str| -> f64 {
            let i = s.find(&format!("class=\"mark {what}\" x1=\"")).unwrap();
            let rest = &s[i + what.len() + 18..];
            rest[..rest.find('"').unwrap()].parse().unwrap()
        };
        let ceil = x("ceiling");
        let floor = x("floor");
        assert!((ceil - (MIN_LABEL_W + BAR_W / 1.08)).abs() < 0.1, "{ceil}");
        assert!(
            (floor - (MIN_LABEL_W + BAR_W / 1.08 / 4.0)).abs() < 0.1,
            "{floor}"
        );
        assert!(s.contains("ceiling ") && s.contains("memcpy"));
        // us/dispatch is drawn as a reciprocal: a floor (a maximum) above
        // the rate sits left of the bar's end.
        let noop = d.gates.iter().find(|g| g.id == "noop.dispatch").unwrap();
        let mut m = Marks::of(noop);
        assert!(!m.higher_is_better);
        m.floor = Some(m.rate.unwrap() * 2.0);
        assert!(m.goodness(m.floor).unwrap() < m.goodness(m.rate).unwrap());
    }
}
