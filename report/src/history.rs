//! `greta report --history`: each gate's rate over time per device, from
//! every saved result, with the greta and driver version changes marked.
//! Drawn with plotters' SVG backend (axes, time ticks, series, legend);
//! the numbers of every chart are in a table under it.

use crate::html::{esc, exact, num, page, FAIL};
use crate::load::{Run, Skipped};
use crate::page::skipped_html;
use greta_smoke::results::GateStatus;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write;

const W: u32 = 900;
const H: u32 = 260;
/// Series colours (one per device, in order): Tableau 10, which stays
/// distinguishable for the common colour-vision deficiencies better than
/// a rainbow; past ten they repeat.
const COLOURS: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (214, 39, 40),
];

/// The largest rate a chart draws (GB/s, TFLOP/s, us/dispatch: real
/// rates are below 1e7), and the smallest top of its axis.
const MAX_DRAWN: f64 = 1e12;
const MIN_DRAWN: f64 = 1e-9;

/// One run's time as Unix seconds, from its RFC 3339 `started_at`.
fn unix(rfc3339: &str) -> Option<f64> {
    let t = time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .ok()?;
    Some(t.unix_timestamp_nanos() as f64 / 1e9)
}

fn when(t: f64, with_date: bool) -> String {
    let Ok(d) = time::OffsetDateTime::from_unix_timestamp(t.floor() as i64) else {
        return format!("{t}");
    };
    let f = if with_date {
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]")
    } else {
        time::macros::format_description!("[month]-[day] [hour]:[minute]")
    };
    d.format(&f).unwrap_or_else(|_| format!("{t}"))
}

/// A time on the chart's axis (to the minute).
fn axis_time(t: f64, with_date: bool) -> String {
    let Ok(d) = time::OffsetDateTime::from_unix_timestamp(t.floor() as i64) else {
        return format!("{t}");
    };
    let f = if with_date {
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]")
    } else {
        time::macros::format_description!("[month]-[day] [hour]:[minute]")
    };
    d.format(&f).unwrap_or_else(|_| format!("{t}"))
}

/// A device across runs: its UUID when the backend gave one, else the
/// host, index and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct DevKey(String);

struct Point {
    t: f64,
    run: usize,
    rate: f64,
    failed: bool,
}

/// A version change between two runs: what changed (`greta`, `driver`),
/// on whom (`""` for greta itself, else the device), from and to.
struct Change {
    t: f64,
    who: String,
    what: String,
}

/// The changes made at one time (one run), as one marker: the same change
/// on several devices (a driver update on a node of eight) said once.
fn merge(changes: Vec<Change>) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    let mut i = 0;
    while i < changes.len() {
        let t = changes[i].t;
        let mut j = i;
        let mut parts: Vec<(String, Vec<String>)> = Vec::new();
        while j < changes.len() && changes[j].t == t {
            let c = &changes[j];
            match parts.iter_mut().find(|(w, _)| *w == c.what) {
                Some((_, who)) => who.push(c.who.clone()),
                None => parts.push((c.what.clone(), vec![c.who.clone()])),
            }
            j += 1;
        }
        let what = parts
            .into_iter()
            .map(|(what, who)| {
                let who: Vec<String> = who.into_iter().filter(|w| !w.is_empty()).collect();
                match who.len() {
                    0 => what,
                    1 => format!("{}: {what}", who[0]),
                    n => format!("{n} devices ({}): {what}", who.join(", ")),
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        out.push(Change {
            t,
            who: String::new(),
            what,
        });
        i = j;
    }
    out
}

/// The history page of `runs` (any order) read from `source`.
pub fn render_history(runs: &[Run], skipped: &[Skipped], source: &str) -> String {
    let mut skipped: Vec<Skipped> = skipped.to_vec();
    let mut timed: Vec<(f64, &Run)> = Vec::with_capacity(runs.len());
    for r in runs {
        match unix(&r.report.started_at) {
            Some(t) => timed.push((t, r)),
            None => skipped.push(Skipped {
                path: r.path.clone().unwrap_or_default(),
                why: format!(
                    "started_at {:?} is not an RFC 3339 time",
                    r.report.started_at
                ),
            }),
        }
    }
    timed.sort_by(|a, b| a.0.total_cmp(&b.0));

    let hosts: std::collections::BTreeSet<&str> = timed
        .iter()
        .map(|(_, r)| r.report.host.hostname.as_deref().unwrap_or("?"))
        .collect();
    let many_hosts = hosts.len() > 1;
    // Devices, gates (first appearance order), points, version changes.
    let mut devices: Vec<(DevKey, String)> = Vec::new();
    let mut gates: Vec<(String, String)> = Vec::new();
    let mut points: BTreeMap<(usize, usize), Vec<Point>> = BTreeMap::new();
    let mut changes: Vec<Change> = Vec::new();
    let mut last_greta: Option<&str> = None;
    let mut last_driver: BTreeMap<DevKey, String> = BTreeMap::new();
    for (ri, (t, run)) in timed.iter().enumerate() {
        let r = &run.report;
        if let Some(prev) = last_greta.filter(|v| *v != r.greta_version) {
            changes.push(Change {
                t: *t,
                who: String::new(),
                what: format!("greta {prev} -> {}", r.greta_version),
            });
        }
        last_greta = Some(&r.greta_version);
        let host = r.host.hostname.as_deref().unwrap_or("?");
        let mut seen = std::collections::BTreeSet::new();
        for d in &r.devices {
            // A UUID twice in one run (replayed or cloned devices, a
            // driver that gives none useful) cannot tell them apart.
            let key = DevKey(match d.device.uuid {
                Some(u) if seen.insert(u.to_string()) => u.to_string(),
                Some(u) => format!("{u}/{}", d.index),
                None => format!("{host}/{}/{}", d.index, d.device.name),
            });
            let label = if many_hosts {
                format!("{host} GPU {} {}", d.index, d.device.name)
            } else {
                format!("GPU {} {}", d.index, d.device.name)
            };
            let di = match devices.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    devices.push((key.clone(), label.clone()));
                    devices.len() - 1
                }
            };
            let driver = format!(
                "{} {} {}",
                d.device.driver_name, d.device.driver_info, d.device.driver_version
            );
            if let Some(prev) = last_driver.insert(key, driver.clone()) {
                if prev != driver {
                    changes.push(Change {
                        t: *t,
                        who: label.clone(),
                        what: format!("driver {} -> {}", prev.trim(), driver.trim()),
                    });
                }
            }
            for g in &d.gates {
                let unit = g.metrics.as_ref().map_or("", |m| m.unit.as_str());
                let gi = match gates.iter().position(|(id, _)| *id == g.id) {
                    Some(i) => i,
                    None => {
                        gates.push((g.id.clone(), unit.to_string()));
                        gates.len() - 1
                    }
                };
                if let Some(rate) = g
                    .metrics
                    .as_ref()
                    .and_then(|m| m.rate)
                    .filter(|v| v.is_finite())
                {
                    points.entry((gi, di)).or_default().push(Point {
                        t: *t,
                        run: ri,
                        rate,
                        failed: g.status == GateStatus::Fail,
                    });
                }
            }
        }
    }

    let mut b = String::new();
    let span = match (timed.first(), timed.last()) {
        (Some(a), Some(z)) => format!("from {} to {} UTC", when(a.0, true), when(z.0, true)),
        _ => String::new(),
    };
    let versions: std::collections::BTreeSet<&str> = timed
        .iter()
        .map(|(_, r)| r.report.greta_version.as_str())
        .collect();
    let _ = write!(
        b,
        "<h1>greta smoke history</h1><p class=\"meta\">{} run{} in <code>{}</code> {span}; {} device{}, {} gate{}; \
         greta version{} {}. Every chart's numbers are in the table under it.</p>",
        timed.len(),
        if timed.len() == 1 { "" } else { "s" },
        esc(source),
        devices.len(),
        if devices.len() == 1 { "" } else { "s" },
        gates.len(),
        if gates.len() == 1 { "" } else { "s" },
        if versions.len() == 1 { "" } else { "s" },
        esc(&versions.iter().copied().collect::<Vec<_>>().join(", "))
    );
    b.push_str(&skipped_html(&skipped));
    if timed.is_empty() {
        b.push_str("<p class=\"warn\">No greta.smoke/v1 result could be read.</p>");
    }
    let changes = merge(changes);
    if !changes.is_empty() {
        b.push_str("<h2>Version changes</h2><ol class=\"changes\">");
        for c in &changes {
            let _ = write!(
                b,
                "<li data-t=\"{}\">{} UTC: {}</li>",
                exact(c.t),
                when(c.t, true),
                esc(&c.what)
            );
        }
        b.push_str("</ol>");
    }
    let (t0, t1) = match (timed.first(), timed.last()) {
        (Some(a), Some(z)) if z.0 > a.0 => {
            let pad = (z.0 - a.0) * 0.02;
            (a.0 - pad, z.0 + pad)
        }
        (Some(a), _) => (a.0 - 3600.0, a.0 + 3600.0),
        _ => (0.0, 1.0),
    };
    for (gi, (id, unit)) in gates.iter().enumerate() {
        let series: Vec<(usize, &Vec<Point>)> = devices
            .iter()
            .enumerate()
            .filter_map(|(di, _)| points.get(&(gi, di)).map(|p| (di, p)))
            .collect();
        let _ = write!(
            b,
            "<h2 data-gate=\"{}\">{} <span class=\"meta\">({}{})</span></h2>",
            esc(id),
            esc(id),
            esc(unit),
            if unit == "us/dispatch" {
                ", lower is better"
            } else {
                ""
            }
        );
        if series.is_empty() {
            b.push_str("<p class=\"meta\">no rate measured in any run</p>");
            continue;
        }
        match chart(id, unit, &series, &changes, (t0, t1)) {
            Ok(svg) => {
                b.push_str(&svg);
                legend(&mut b, &series, &devices);
            }
            Err(e) => {
                let _ = write!(b, "<p class=\"warn\">chart not drawn: {}</p>", esc(&e));
            }
        }
        numbers_table(&mut b, id, &series, &devices, &timed);
    }
    page("greta smoke history", &b)
}

fn chart(
    id: &str,
    unit: &str,
    series: &[(usize, &Vec<Point>)],
    changes: &[Change],
    (t0, t1): (f64, f64),
) -> Result<String, String> {
    let top = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.rate))
        .fold(0.0_f64, f64::max);
    // plotters' tick arithmetic overflows (a panic in a debug build) on
    // ranges near f64's limits; no rate greta measures comes close, so a
    // file that has one gets its table and no chart.
    let drawable = top <= MAX_DRAWN && t0.is_finite() && t1.is_finite();
    if !drawable {
        return Err(format!(
            "a rate over {MAX_DRAWN:e} or a time out of range; the numbers are in the table"
        ));
    }
    let bottom = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.rate))
        .fold(0.0_f64, f64::min);
    if bottom < 0.0 {
        return Err("a negative rate; the numbers are in the table".into());
    }
    let ymax = top.max(MIN_DRAWN) * 1.12;
    let with_date = t1 - t0 > 2.0 * 86_400.0;
    let mut svg = String::new();
    {
        let e = |e: plotters::drawing::DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let mut c = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(64)
            .build_cartesian_2d(t0..t1, 0.0..ymax)
            .map_err(e)?;
        c.configure_mesh()
            .x_labels(6)
            .y_labels(5)
            .x_label_formatter(&|t| axis_time(*t, with_date))
            .y_label_formatter(&|v| num(*v))
            .y_desc(unit)
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(e)?;
        for (n, ch) in changes.iter().enumerate() {
            c.draw_series(LineSeries::new(
                [(ch.t, 0.0), (ch.t, ymax)],
                RGBColor(120, 120, 120).stroke_width(1),
            ))
            .map_err(e)?;
            c.draw_series(std::iter::once(Text::new(
                format!("{}", n + 1),
                (ch.t, ymax),
                ("sans-serif", 11).into_font().color(&RGBColor(90, 90, 90)),
            )))
            .map_err(e)?;
        }
        let fail = RGBColor(0xd7, 0x30, 0x27);
        for (di, pts) in series {
            let (r, g, bl) = COLOURS[di % COLOURS.len()];
            let colour = RGBColor(r, g, bl);
            c.draw_series(LineSeries::new(
                pts.iter().map(|p| (p.t, p.rate)),
                colour.stroke_width(1),
            ))
            .map_err(e)?;
            c.draw_series(pts.iter().map(|p| {
                Circle::new(
                    (p.t, p.rate),
                    if p.failed { 3 } else { 2 },
                    if p.failed {
                        fail.filled()
                    } else {
                        colour.filled()
                    },
                )
            }))
            .map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    // plotters writes the SVG element bare: name what it shows for
    // screen readers and the tests.
    Ok(svg.replacen(
        "<svg ",
        &format!(
            "<svg class=\"history\" data-gate=\"{}\" role=\"img\" aria-label=\"{} over time\" ",
            esc(id),
            esc(id)
        ),
        1,
    ))
}

/// The chart's legend, as text beside colour swatches (in the page, not
/// in the drawing: it never covers a point, and it reads as text).
fn legend(b: &mut String, series: &[(usize, &Vec<Point>)], devices: &[(DevKey, String)]) {
    b.push_str("<p class=\"legend history-legend\">");
    for (di, _) in series {
        let (r, g, bl) = COLOURS[di % COLOURS.len()];
        let _ = write!(
            b,
            "<span><svg width=\"16\" height=\"10\" aria-hidden=\"true\"><rect width=\"16\" height=\"3\" y=\"4\" \
             fill=\"rgb({r},{g},{bl})\"/></svg> {}</span>",
            esc(&devices[*di].1)
        );
    }
    let _ = write!(
        b,
        "<span><svg width=\"10\" height=\"10\" aria-hidden=\"true\"><circle cx=\"5\" cy=\"5\" r=\"3\" fill=\"{FAIL}\"/></svg> \
         a run in which the gate failed</span><span>numbered lines: the version changes listed above</span></p>"
    );
}

fn numbers_table(
    b: &mut String,
    id: &str,
    series: &[(usize, &Vec<Point>)],
    devices: &[(DevKey, String)],
    timed: &[(f64, &Run)],
) {
    let n: usize = series.iter().map(|(_, p)| p.len()).sum();
    let _ = write!(
        b,
        "<details><summary>{n} rates of {} (table)</summary><table class=\"history-numbers\"><thead><tr><th>time (UTC)</th><th>greta</th>",
        esc(id)
    );
    for (di, _) in series {
        let _ = write!(b, "<th>{}</th>", esc(&devices[*di].1));
    }
    b.push_str("</tr></thead><tbody>");
    // One row per run that measured the gate on any device.
    let mut by_run: BTreeMap<usize, Vec<Option<&Point>>> = BTreeMap::new();
    for (col, (_, pts)) in series.iter().enumerate() {
        for p in pts.iter() {
            by_run
                .entry(p.run)
                .or_insert_with(|| vec![None; series.len()])[col] = Some(p);
        }
    }
    for (run, cells) in by_run {
        let (t, r) = timed[run];
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td>",
            when(t, true),
            esc(&r.report.greta_version)
        );
        for c in cells {
            match c {
                Some(p) => {
                    let _ = write!(
                        b,
                        "<td class=\"n\" data-rate=\"{}\"{}>{}</td>",
                        exact(p.rate),
                        if p.failed {
                            format!(" style=\"color:{FAIL}\"")
                        } else {
                            String::new()
                        },
                        num(p.rate)
                    );
                }
                None => b.push_str("<td class=\"n\">-</td>"),
            }
        }
        b.push_str("</tr>");
    }
    b.push_str("</tbody></table></details>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::sample;

    fn run_at(t: &str, version: &str, driver: &str, scale: f64) -> Run {
        let mut r = sample(2);
        r.started_at = t.into();
        r.greta_version = version.into();
        for d in &mut r.devices {
            d.device.uuid = None;
            d.device.driver_info = driver.into();
            for g in &mut d.gates {
                if let Some(m) = g.metrics.as_mut() {
                    m.rate = m.rate.map(|v| v * scale);
                }
            }
        }
        Run::from_report(r)
    }

    #[test]
    fn history_charts_each_gate_marks_version_changes_and_keeps_numbers() {
        let runs = vec![
            run_at("2026-11-20T10:00:00Z", "0.1.0", "Mesa 22", 1.0),
            run_at("2026-11-22T10:00:00Z", "0.2.0", "Mesa 22", 1.5),
            run_at("2026-11-21T10:00:00Z", "0.1.0", "Mesa 22", 1.1),
            run_at("2026-11-23T10:00:00Z", "0.2.0", "Mesa 23", 1.2),
        ];
        let mut bad = runs[0].clone();
        bad.report.started_at = "yesterday".into();
        let mut all = runs.clone();
        all.push(bad);
        let h = render_history(&all, &[], "/results");
        let gates = crate::grid::gate_ids(&runs[0].report);
        assert_eq!(h.matches("<svg class=\"history\"").count(), gates.len());
        // Each chart's legend is text: every device named under every chart.
        assert_eq!(
            h.matches("class=\"legend history-legend\"").count(),
            gates.len()
        );
        assert_eq!(h.matches("</svg> GPU 1 llvmpipe").count(), gates.len());
        assert!(
            h.contains("greta 0.1.0 -&gt; 0.2.0"),
            "the version change is listed"
        );
        assert!(h.contains("driver llvmpipe Mesa 22 0.0.1 -&gt; llvmpipe Mesa 23 0.0.1"));
        assert_eq!(
            h.matches("<li data-t=").count(),
            2,
            "the greta change; the driver change of both devices, said once"
        );
        assert!(h.contains(
            "2 devices (GPU 0 llvmpipe (LLVM 15.0.6, 256 bits), GPU 1 llvmpipe (LLVM 15.0.6, 256 bits)): driver"
        ));
        assert!(h.contains("yesterday") && h.contains("not an RFC 3339 time"));
        // The numbers: every run's rate of copy.16m on each device, as text.
        let copy = runs[0].report.devices[0]
            .gates
            .iter()
            .find(|g| g.id == "copy.16m")
            .unwrap();
        let base = copy.metrics.as_ref().unwrap().rate.unwrap();
        for s in [1.0, 1.1, 1.5, 1.2] {
            let v = base * s;
            assert!(
                h.contains(&format!("data-rate=\"{}\">{}<", exact(v), num(v))),
                "{v}"
            );
        }
        // Runs are in time order in the table: 1.1 (the 21st) before 1.5.
        let a = h.find(&exact(base * 1.1)).unwrap();
        let z = h.find(&exact(base * 1.5)).unwrap();
        assert!(a < z);
        // Devices that share a UUID within a run (replayed or cloned) stay
        // apart; one UUID across runs is one device.
        let mut twins = run_at("2026-11-24T10:00:00Z", "0.2.0", "Mesa 23", 1.0);
        let u = Some("6d657361-3232-2e33-2e36-000000000000".parse().unwrap());
        for d in &mut twins.report.devices {
            d.device.uuid = u;
        }
        let mut later = twins.clone();
        later.report.started_at = "2026-11-25T10:00:00Z".into();
        let h = render_history(&[twins, later], &[], "/r");
        assert!(h.contains("2 devices"), "two devices, not one");
        let empty = render_history(
            &[],
            &[Skipped {
                path: "x.json".into(),
                why: "bad".into(),
            }],
            "/r",
        );
        assert!(empty.contains("No greta.smoke/v1 result") && empty.contains("x.json"));
    }
}
