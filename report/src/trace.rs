//! A watched gate's telemetry over time (`telemetry[].series`): clock,
//! power and temperature as three stacked line charts sharing the gate's
//! time axis, the stretches in which a limit held the clocks shaded in the
//! clock panel. Drawn with plotters' SVG backend, as the history charts
//! are; the points are in a table under the chart.
//!
//! The series comes from a file someone else may have written: a chart is
//! drawn only from a series greta could have written (at most
//! [`SERIES_CAP`] points, finite times and readings in range), else the
//! table alone stands, with the reason.

use crate::html::{esc, num};
use greta_smoke::telemetry::{Held, Point, Summary, SERIES_CAP};
use plotters::prelude::*;
use std::fmt::Write;

const W: u32 = 900;
const PANEL_H: u32 = 130;

/// The most charts one page draws: a node of 8 GPUs has a few watched
/// gates each (stress, memory test); past this a watched gate gets its
/// table of figures only, so a file of thousands of made-up gates cannot
/// grow the page by megabytes per gate.
pub const CHARTS_PER_PAGE: usize = 64;

/// Readings above this (or a time past it, in seconds) are not a GPU's:
/// MHz, W and °C of real cards are below 1e4, gates shorter than a day.
const MAX_DRAWN: f64 = 1e6;

/// Colours of the held stretches: the power cap orange, heat the failing
/// red, the rest purple (the verdict colours stay the verdicts').
fn held_colour(h: Held) -> RGBColor {
    match h {
        Held::Power => RGBColor(253, 174, 97),
        Held::Thermal => RGBColor(0xd7, 0x30, 0x27),
        Held::Current | Held::Other => RGBColor(171, 130, 200),
    }
}

fn held_name(h: Held) -> &'static str {
    match h {
        Held::Power => "power",
        Held::Thermal => "thermal",
        Held::Current => "current",
        Held::Other => "other",
    }
}

/// One panel: what it plots and how it is named.
struct Panel {
    label: &'static str,
    colour: RGBColor,
    value: fn(&Point) -> Option<f64>,
}

const PANELS: [Panel; 3] = [
    Panel {
        label: "clock MHz",
        colour: RGBColor(31, 119, 180),
        value: |p| p.sm_mhz,
    },
    Panel {
        label: "power W",
        colour: RGBColor(44, 160, 44),
        value: |p| p.power_w,
    },
    Panel {
        label: "temperature °C",
        colour: RGBColor(214, 39, 40),
        value: |p| p.temp_c,
    },
];

/// Why `series` is not drawn, if it is not.
fn undrawable(series: &[Point]) -> Option<String> {
    if series.len() > SERIES_CAP {
        return Some(format!(
            "{} points, more than greta writes ({SERIES_CAP})",
            series.len()
        ));
    }
    let bad_t = |t: f64| !t.is_finite() || !(0.0..=MAX_DRAWN).contains(&t);
    let bad_v = |v: Option<f64>| v.is_some_and(|v| !v.is_finite() || v.abs() > MAX_DRAWN);
    if series
        .iter()
        .any(|p| bad_t(p.t_s) || bad_v(p.sm_mhz) || bad_v(p.power_w) || bad_v(p.temp_c))
    {
        return Some(format!(
            "a time or reading out of range (above {MAX_DRAWN:e})"
        ));
    }
    let readings = |p: &Point| {
        p.sm_mhz.is_some() || p.power_w.is_some() || p.temp_c.is_some() || !p.held.is_empty()
    };
    if !series.iter().any(readings) {
        return Some("no readings in the series".into());
    }
    None
}

/// The chart and table of one watched device's series during gate
/// `gate`, or nothing when it has none. `charts_left` counts down the
/// page's [`CHARTS_PER_PAGE`].
pub fn html(gate: &str, s: &Summary, charts_left: &mut usize) -> String {
    if s.series.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "<div class=\"trace\" data-gate=\"{}\" data-telemetry=\"{}\"><p class=\"meta\">{} on {} over the gate",
        esc(gate),
        esc(&s.device),
        esc(gate),
        esc(&s.device)
    );
    let why_not = undrawable(&s.series).or_else(|| {
        (*charts_left == 0).then(|| {
            format!("the page already holds {CHARTS_PER_PAGE} charts; the points are in the table")
        })
    });
    match why_not {
        Some(why) => {
            let _ = write!(o, ": not drawn: {}</p>", esc(&why));
        }
        None => match chart(gate, s) {
            Ok(svg) => {
                *charts_left -= 1;
                o.push_str(&legend(&s.series));
                o.push_str("</p>");
                o.push_str(&svg);
            }
            Err(why) => {
                let _ = write!(o, ": not drawn: {}</p>", esc(&why));
            }
        },
    }
    o.push_str(&table(&s.series));
    o.push_str("</div>");
    o
}

/// What the chart shows, as text beside colour swatches.
fn legend(series: &[Point]) -> String {
    let mut o = String::from(": ");
    for p in &PANELS {
        let RGBColor(r, g, b) = p.colour;
        let _ = write!(
            o,
            "<span style=\"border-left:12px solid rgb({r},{g},{b});padding-left:4px;margin-right:8px\">{}</span>",
            esc(p.label)
        );
    }
    let seen: Vec<Held> = [Held::Power, Held::Thermal, Held::Current, Held::Other]
        .into_iter()
        .filter(|h| series.iter().any(|p| p.held.contains(h)))
        .collect();
    for h in seen {
        let RGBColor(r, g, b) = held_colour(h);
        let _ = write!(
            o,
            "<span style=\"background:rgba({r},{g},{b},0.35);padding:0 4px;margin-right:8px\">{} held the clocks</span>",
            held_name(h)
        );
    }
    o
}

/// The points as text (every number of the chart is in the page).
fn table(series: &[Point]) -> String {
    let mut o = format!(
        "<details><summary>{} points</summary><table class=\"trace-points\"><thead><tr><th>t s</th>\
         <th>clock MHz</th><th>power W</th><th>max °C</th><th>held by</th></tr></thead><tbody>",
        series.len()
    );
    let opt = |v: Option<f64>| v.map(num).unwrap_or_else(|| "-".into());
    for p in series.iter().take(SERIES_CAP) {
        let held: Vec<&str> = p.held.iter().map(|h| held_name(*h)).collect();
        let _ = write!(
            o,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            num(p.t_s),
            opt(p.sm_mhz),
            opt(p.power_w),
            opt(p.temp_c),
            held.join(", ")
        );
    }
    if series.len() > SERIES_CAP {
        let _ = write!(
            o,
            "<tr><td colspan=\"5\">{} more points not shown</td></tr>",
            series.len() - SERIES_CAP
        );
    }
    o.push_str("</tbody></table></details>");
    o
}

/// The stacked panels: those with readings, the clock panel always when
/// a limit held (its stretches are drawn there).
fn chart(gate: &str, s: &Summary) -> Result<String, String> {
    let pts = &s.series;
    let any_held = pts.iter().any(|p| !p.held.is_empty());
    let panels: Vec<&Panel> = PANELS
        .iter()
        .enumerate()
        .filter(|(i, p)| pts.iter().any(|q| (p.value)(q).is_some()) || (*i == 0 && any_held))
        .map(|(_, p)| p)
        .collect();
    if panels.is_empty() {
        return Err("no readings in the series".into());
    }
    let t_end = pts.iter().map(|p| p.t_s).fold(0.0_f64, f64::max);
    // One stretch past the last point, so a lone point has a width.
    let step = if pts.len() > 1 {
        t_end / (pts.len() - 1) as f64
    } else {
        0.1
    };
    let x1 = (t_end + step).max(0.1);
    let h = PANEL_H * panels.len() as u32;
    let mut svg = String::new();
    {
        let e = |e: plotters::drawing::DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let root = SVGBackend::with_string(&mut svg, (W, h)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let areas = root.split_evenly((panels.len(), 1));
        for (k, (area, p)) in areas.iter().zip(&panels).enumerate() {
            let vals: Vec<f64> = pts.iter().filter_map(|q| (p.value)(q)).collect();
            let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let (y0, y1) = if vals.is_empty() {
                (0.0, 1.0)
            } else {
                let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.02).max(1.0);
                (
                    if lo >= 0.0 {
                        (lo - pad).max(0.0)
                    } else {
                        lo - pad
                    },
                    hi + pad,
                )
            };
            let last = k + 1 == panels.len();
            let mut c = ChartBuilder::on(area)
                .margin(6)
                .x_label_area_size(if last { 26 } else { 4 })
                .y_label_area_size(64)
                .build_cartesian_2d(0.0..x1, y0..y1)
                .map_err(e)?;
            let mut mesh = c.configure_mesh();
            mesh.x_labels(if last { 8 } else { 0 })
                .y_labels(4)
                .x_label_formatter(&|t| format!("{} s", num(*t)))
                .y_label_formatter(&|v| num(*v))
                .y_desc(p.label)
                .light_line_style(RGBColor(240, 240, 240));
            mesh.draw().map_err(e)?;
            if std::ptr::eq(*p, &PANELS[0]) {
                for (i, q) in pts.iter().enumerate() {
                    let Some(&h) = q.held.iter().max_by_key(|h| **h == Held::Thermal) else {
                        continue;
                    };
                    let t1 = pts.get(i + 1).map_or(q.t_s + step, |n| n.t_s.max(q.t_s));
                    c.draw_series(std::iter::once(Rectangle::new(
                        [(q.t_s, y0), (t1, y1)],
                        held_colour(h).mix(0.35).filled(),
                    )))
                    .map_err(e)?;
                }
            }
            c.draw_series(LineSeries::new(
                pts.iter().filter_map(|q| Some((q.t_s, (p.value)(q)?))),
                p.colour.stroke_width(1),
            ))
            .map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    Ok(svg.replacen(
        "<svg ",
        &format!(
            "<svg class=\"trace-chart\" data-gate=\"{}\" data-telemetry=\"{}\" data-panels=\"{}\" role=\"img\" aria-label=\"{} telemetry over the gate\" ",
            esc(gate),
            esc(&s.device),
            panels.len(),
            esc(gate)
        ),
        1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(t: f64, mhz: f64, w: f64, c: f64, held: Vec<Held>) -> Point {
        Point {
            t_s: t,
            sm_mhz: Some(mhz),
            power_w: Some(w),
            temp_c: Some(c),
            held,
        }
    }

    fn summary(series: Vec<Point>) -> Summary {
        Summary {
            device: "card<1>".into(),
            samples: series.len(),
            series,
            ..Default::default()
        }
    }

    #[test]
    fn a_series_is_three_panels_with_the_held_stretches_and_a_table() {
        let pts: Vec<Point> = (0..30)
            .map(|i| {
                let held = if (10..15).contains(&i) {
                    vec![Held::Power, Held::Thermal]
                } else {
                    vec![]
                };
                point(
                    f64::from(i) * 0.1,
                    1980.0 - f64::from(i),
                    650.0,
                    70.0 + f64::from(i),
                    held,
                )
            })
            .collect();
        let mut left = 2;
        let h = html("stress.x\"<", &summary(pts), &mut left);
        assert_eq!(left, 1, "one chart drawn");
        assert!(h.contains("<svg class=\"trace-chart\" data-gate=\"stress.x&quot;&lt;\" data-telemetry=\"card&lt;1&gt;\" data-panels=\"3\""), "{h}");
        assert!(!h.contains("card<1>") && !h.contains("x\"<"), "escaped");
        // Three line series (plotters writes each as a polyline), five
        // shaded stretches (thermal's red, the worse of the two held).
        for colour in ["#1F77B4", "#2CA02C", "#D62728"] {
            let line = format!("<polyline fill=\"none\" opacity=\"1\" stroke=\"{colour}\"");
            assert_eq!(h.matches(&line).count(), 1, "{colour}: {h}");
        }
        assert_eq!(h.matches("fill=\"#D73027\"").count(), 5, "{h}");
        assert!(h.contains("thermal held the clocks") && h.contains("power held the clocks"));
        assert!(h.contains("<summary>30 points</summary>"));
        assert!(h.contains("<td class=\"n\">1.000</td><td class=\"n\">1970</td><td class=\"n\">650.0</td><td class=\"n\">80.00</td><td>power, thermal</td>"), "{h}");
        assert!(h.contains("clock MHz") && h.contains("power W") && h.contains("temperature °C"));
    }

    #[test]
    fn held_stretches_alone_draw_the_clock_panel_and_nothing_draws_nothing() {
        let pts: Vec<Point> = (0..4)
            .map(|i| Point {
                t_s: f64::from(i) * 0.1,
                held: vec![Held::Thermal],
                ..Default::default()
            })
            .collect();
        let mut left = 1;
        let h = html("memtest.16m", &summary(pts), &mut left);
        assert!(h.contains("data-panels=\"1\""), "{h}");
        assert_eq!(h.matches("fill=\"#D73027\"").count(), 4);
        assert_eq!(
            html("g", &summary(vec![]), &mut left),
            "",
            "no series, nothing"
        );
        let empty = vec![Point::default(); 3];
        let h = html("g", &summary(empty), &mut left);
        assert!(h.contains("not drawn: no readings in the series"), "{h}");
    }

    /// Hostile series: too many points, readings and times out of range,
    /// the page's chart budget spent: the table stands, with the reason,
    /// and nothing panics.
    #[test]
    fn a_series_greta_could_not_have_written_gets_its_table_only() {
        let mut left = CHARTS_PER_PAGE;
        let many = vec![point(0.0, 1.0, 1.0, 1.0, vec![]); SERIES_CAP + 5];
        let h = html("g", &summary(many), &mut left);
        assert!(
            h.contains("not drawn: 605 points, more than greta writes (600)"),
            "{h}"
        );
        assert!(h.contains("5 more points not shown"));
        assert_eq!(h.matches("<tr><td class=\"n\">").count(), SERIES_CAP);
        for bad in [1e308, -1e308, 2e6] {
            let h = html(
                "g",
                &summary(vec![point(0.0, bad, 1.0, 1.0, vec![])]),
                &mut left,
            );
            assert!(
                h.contains("not drawn: a time or reading out of range"),
                "{h}"
            );
            let h = html(
                "g",
                &summary(vec![point(bad, 1.0, 1.0, 1.0, vec![])]),
                &mut left,
            );
            assert!(
                h.contains("not drawn: a time or reading out of range"),
                "{h}"
            );
        }
        assert_eq!(left, CHARTS_PER_PAGE, "none drawn");
        // Unsorted times and a single point draw.
        let odd = vec![
            point(0.5, 1.0, 2.0, 3.0, vec![Held::Other]),
            point(0.1, 1.0, 2.0, 3.0, vec![]),
        ];
        assert!(html("g", &summary(odd), &mut left).contains("<svg"));
        assert!(html(
            "g",
            &summary(vec![point(0.0, 5.0, 5.0, 5.0, vec![])]),
            &mut left
        )
        .contains("<svg"));
        let mut none_left = 0;
        let h = html(
            "g",
            &summary(vec![point(0.0, 1.0, 1.0, 1.0, vec![])]),
            &mut none_left,
        );
        assert!(
            h.contains("not drawn: the page already holds 64 charts"),
            "{h}"
        );
    }
}
