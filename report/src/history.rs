//! `greta report --history`: each gate's rate over time per device, from
//! every saved result, with the greta and driver version changes marked.
//! Drawn with plotters' SVG backend (axes, time ticks, series, legend);
//! the numbers of every chart are in a table under it.

use crate::digest::{digest, DeviceDigest, Digest, Kept, Strings, Sym};
use crate::html::{esc, exact, num, page, FAIL};
use crate::load::{json_files, read_run, Run, Skipped};
use crate::page::skipped_html;
use plotters::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;
use std::path::Path;

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

/// Most charts a history draws. A profile has a few dozen gates (every
/// profile together some 60); a chart costs the page some 15 KB however
/// few its points, so a file naming thousands of gate ids gets tables for
/// the rest.
const CHARTS: usize = 256;

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

/// A device across runs: its UUID when the backend gave one (with its
/// index when two devices of one run share it), else the host, index and
/// name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum DevKey {
    Uuid([u8; 16]),
    UuidAt([u8; 16], usize),
    Host(Sym, usize, Sym),
}

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
        // Each distinct change once, in order, with who made it.
        let mut parts: Vec<(&str, Vec<&str>)> = Vec::new();
        let mut at: HashMap<&str, usize> = HashMap::new();
        while j < changes.len() && changes[j].t == t {
            let c = &changes[j];
            let k = *at.entry(c.what.as_str()).or_insert_with(|| {
                parts.push((c.what.as_str(), Vec::new()));
                parts.len() - 1
            });
            parts[k].1.push(c.who.as_str());
            j += 1;
        }
        let what = parts
            .into_iter()
            .map(|(what, who)| {
                let who: Vec<&str> = who.into_iter().filter(|w| !w.is_empty()).collect();
                match who.len() {
                    0 => what.to_string(),
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

/// The runs of a history, each kept as a [`Digest`] (a few numbers per
/// gate) as it is added, and the files that were not used.
pub struct History {
    source: String,
    strings: Strings,
    kept: Kept,
    runs: Vec<Digest>,
    skipped: Vec<Skipped>,
}

impl History {
    /// An empty history of `source` (the directory, as the page names it).
    pub fn new(source: &str) -> History {
        History {
            source: source.to_string(),
            strings: Strings::default(),
            kept: Kept::default(),
            runs: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Every `*.json` of `dir`, newest name first (results are named by
    /// their start time), each digested as it is read and then dropped;
    /// when the history is full the older files are not read, and one
    /// entry of [`History::skipped`] says how many and why. Err only when
    /// `dir` cannot be listed.
    pub fn read_dir(dir: &Path) -> Result<History, String> {
        let mut h = History::new(&dir.display().to_string());
        h.read(dir)?;
        Ok(h)
    }

    fn read(&mut self, dir: &Path) -> Result<(), String> {
        let (names, skipped) = json_files(dir)?;
        self.skipped.extend(skipped);
        for (left, (seq, p)) in names.iter().enumerate().rev().enumerate() {
            let run = match read_run(p) {
                Ok(r) => r,
                Err(s) => {
                    self.skip(s);
                    continue;
                }
            };
            if let Err(full) = self.add_at(&run, seq) {
                let older = names.len() - left - 1;
                let read = self.runs.len();
                self.skip(Skipped {
                    path: p.clone(),
                    why: format!(
                        "not read, nor the {older} older file{} (by name): {full}; {read} run{} read. \
                         Report on fewer results (move older ones out of the directory)",
                        if older == 1 { "" } else { "s" },
                        if read == 1 { " was" } else { "s were" },
                    ),
                });
                break;
            }
        }
        Ok(())
    }

    /// Adds `run`: its digest is kept, the run itself is not. A run whose
    /// start is not an RFC 3339 time is skipped (named); Err when the
    /// history is full (nothing of `run` is kept).
    pub fn add(&mut self, run: &Run) -> Result<(), String> {
        self.add_at(run, self.runs.len())
    }

    fn add_at(&mut self, run: &Run, seq: usize) -> Result<(), String> {
        let Some(t) = unix(&run.report.started_at) else {
            self.skip(Skipped {
                path: run.path.clone().unwrap_or_default(),
                why: format!(
                    "started_at {:?} is not an RFC 3339 time",
                    crate::html::cut(&run.report.started_at)
                ),
            });
            return Ok(());
        };
        self.kept.check(run, &self.strings)?;
        let d = digest(run, t, seq, &mut self.strings, &mut self.kept);
        self.runs.push(d);
        Ok(())
    }

    /// Names a file that was not used.
    pub fn skip(&mut self, s: Skipped) {
        self.skipped.push(s);
    }

    /// How many runs are kept.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The files that were not used, and why.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The page.
    pub fn render(mut self) -> String {
        self.runs
            .sort_by(|a, b| a.t.total_cmp(&b.t).then(a.seq.cmp(&b.seq)));
        render(&self)
    }
}

/// The history page of `runs` (any order) read from `source`.
pub fn render_history(runs: &[Run], skipped: &[Skipped], source: &str) -> String {
    let mut h = History::new(source);
    h.skipped = skipped.to_vec();
    for r in runs {
        if let Err(full) = h.add(r) {
            h.skip(Skipped {
                path: r.path.clone().unwrap_or_default(),
                why: format!("not drawn: {}", full),
            });
        }
    }
    h.render()
}

fn render(h: &History) -> String {
    let s = &h.strings;
    let timed = &h.runs;
    let hosts: std::collections::BTreeSet<Sym> = timed.iter().map(|r| r.host).collect();
    let many_hosts = hosts.len() > 1;
    let label = |host: Sym, d: &DeviceDigest| {
        if many_hosts {
            format!("{} GPU {} {}", s.get(host), d.index, s.get(d.name))
        } else {
            format!("GPU {} {}", d.index, s.get(d.name))
        }
    };
    // Devices and gates in order of first appearance; each gate's points
    // by device; version changes.
    // Each device's label, from the run it first appeared in.
    let mut devices: Vec<String> = Vec::new();
    let mut device_at: HashMap<DevKey, usize> = HashMap::new();
    let mut gates: Vec<(Sym, &'static str)> = Vec::new();
    let mut gate_at: HashMap<Sym, usize> = HashMap::new();
    let mut points: Vec<BTreeMap<usize, Vec<Point>>> = Vec::new();
    let mut changes: Vec<Change> = Vec::new();
    let mut last_greta: Option<Sym> = None;
    let mut last_driver: HashMap<DevKey, Sym> = HashMap::new();
    for (ri, r) in timed.iter().enumerate() {
        let t = r.t;
        if let Some(prev) = last_greta.filter(|v| *v != r.greta) {
            changes.push(Change {
                t,
                who: String::new(),
                what: format!("greta {} -> {}", s.get(prev), s.get(r.greta)),
            });
        }
        last_greta = Some(r.greta);
        // A UUID twice in one run (replayed or cloned devices, a driver
        // that gives none useful) cannot tell them apart.
        let mut seen: HashSet<[u8; 16]> = HashSet::new();
        for d in &r.devices {
            let key = match d.uuid {
                Some(u) if seen.insert(u) => DevKey::Uuid(u),
                Some(u) => DevKey::UuidAt(u, d.index),
                None => DevKey::Host(r.host, d.index, d.name),
            };
            let di = *device_at.entry(key).or_insert_with(|| {
                devices.push(label(r.host, d));
                devices.len() - 1
            });
            if let Some(prev) = last_driver.insert(key, d.driver) {
                if prev != d.driver {
                    changes.push(Change {
                        t,
                        who: label(r.host, d),
                        what: format!(
                            "driver {} -> {}",
                            s.get(prev).trim(),
                            s.get(d.driver).trim()
                        ),
                    });
                }
            }
            for g in &d.gates {
                let gi = *gate_at.entry(g.id).or_insert_with(|| {
                    gates.push((g.id, g.unit));
                    points.push(BTreeMap::new());
                    gates.len() - 1
                });
                if let Some(rate) = g.rate {
                    points[gi].entry(di).or_default().push(Point {
                        t,
                        run: ri,
                        rate,
                        failed: g.failed,
                    });
                }
            }
        }
    }

    let mut b = String::new();
    let span = match (timed.first(), timed.last()) {
        (Some(a), Some(z)) => format!("from {} to {} UTC", when(a.t, true), when(z.t, true)),
        _ => String::new(),
    };
    let versions: std::collections::BTreeSet<&str> = timed.iter().map(|r| s.get(r.greta)).collect();
    let _ = write!(
        b,
        "<h1>greta smoke history</h1><p class=\"meta\">{} run{} in <code>{}</code> {span}; {} device{}, {} gate{}; \
         greta version{} {}. Every chart's numbers are in the table under it.</p>",
        timed.len(),
        if timed.len() == 1 { "" } else { "s" },
        esc(&h.source),
        devices.len(),
        if devices.len() == 1 { "" } else { "s" },
        gates.len(),
        if gates.len() == 1 { "" } else { "s" },
        if versions.len() == 1 { "" } else { "s" },
        esc(&versions.iter().copied().collect::<Vec<_>>().join(", "))
    );
    b.push_str(&skipped_html(&h.skipped));
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
        (Some(a), Some(z)) if z.t > a.t => {
            let pad = (z.t - a.t) * 0.02;
            (a.t - pad, z.t + pad)
        }
        (Some(a), _) => (a.t - 3600.0, a.t + 3600.0),
        _ => (0.0, 1.0),
    };
    let labels: Vec<&str> = devices.iter().map(String::as_str).collect();
    for (gi, ((id, unit), by_device)) in gates.iter().zip(&points).enumerate() {
        let id = s.get(*id);
        let series: Vec<(usize, &Vec<Point>)> = by_device.iter().map(|(di, p)| (*di, p)).collect();
        let _ = write!(
            b,
            "<h2 data-gate=\"{}\">{} <span class=\"meta\">({}{})</span></h2>",
            esc(id),
            esc(id),
            esc(unit),
            if *unit == "us/dispatch" {
                ", lower is better"
            } else {
                ""
            }
        );
        if series.is_empty() {
            b.push_str("<p class=\"meta\">no rate measured in any run</p>");
            continue;
        }
        let drawn = if gi < CHARTS {
            chart(id, unit, &series, &changes, (t0, t1))
        } else {
            Err(format!(
                "the history has {} gate ids and charts the first {CHARTS}; the numbers are in the table",
                gates.len()
            ))
        };
        match drawn {
            Ok(svg) => {
                b.push_str(&svg);
                legend(&mut b, &series, &labels);
            }
            Err(e) => {
                let _ = write!(b, "<p class=\"warn\">chart not drawn: {}</p>", esc(&e));
            }
        }
        numbers_table(&mut b, id, &series, &labels, timed, s);
    }
    page("greta smoke history", &[&b])
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
fn legend(b: &mut String, series: &[(usize, &Vec<Point>)], labels: &[&str]) {
    b.push_str("<p class=\"legend history-legend\">");
    for (di, _) in series {
        let (r, g, bl) = COLOURS[di % COLOURS.len()];
        let _ = write!(
            b,
            "<span><svg width=\"16\" height=\"10\" aria-hidden=\"true\"><rect width=\"16\" height=\"3\" y=\"4\" \
             fill=\"rgb({r},{g},{bl})\"/></svg> {}</span>",
            esc(labels[*di])
        );
    }
    let _ = write!(
        b,
        "<span><svg width=\"10\" height=\"10\" aria-hidden=\"true\"><circle cx=\"5\" cy=\"5\" r=\"3\" fill=\"{FAIL}\"/></svg> \
         a run in which the gate failed</span><span>numbered lines: the version changes listed above</span></p>"
    );
}

/// Most cells of a gate's table of runs x devices. A history of one node
/// is a few devices wide; one gathered from many nodes (or whose devices
/// change UUID every run) would be runs x devices cells, nearly all
/// empty: past this the table lists one rate per row instead.
pub const TABLE_CELLS: usize = 100_000;

fn rate_cell(b: &mut String, p: &Point) {
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

fn numbers_table(
    b: &mut String,
    id: &str,
    series: &[(usize, &Vec<Point>)],
    labels: &[&str],
    timed: &[Digest],
    s: &Strings,
) {
    let n: usize = series.iter().map(|(_, p)| p.len()).sum();
    // The runs that measured the gate on any device.
    let mut runs: Vec<usize> = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.run))
        .collect();
    runs.sort_unstable();
    runs.dedup();
    let _ = write!(
        b,
        "<details><summary>{n} rates of {} (table)</summary>",
        esc(id)
    );
    let row_head = |b: &mut String, run: usize| {
        let r = &timed[run];
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td>",
            when(r.t, true),
            esc(s.get(r.greta))
        );
    };
    if runs.len().saturating_mul(series.len()) > TABLE_CELLS {
        // One rate per row, in time order.
        let _ = write!(
            b,
            "<p class=\"meta\">{} runs x {} devices would be too wide a table: one rate per row.</p>\
             <table class=\"history-numbers long\"><thead><tr><th>time (UTC)</th><th>greta</th><th>device</th>\
             <th>rate</th></tr></thead><tbody>",
            runs.len(),
            series.len()
        );
        let mut all: Vec<(usize, usize, &Point)> = series
            .iter()
            .flat_map(|(di, pts)| pts.iter().map(move |p| (p.run, *di, p)))
            .collect();
        all.sort_by_key(|(run, di, _)| (*run, *di));
        for (run, di, p) in all {
            row_head(b, run);
            let _ = write!(b, "<td>{}</td>", esc(labels[di]));
            rate_cell(b, p);
            b.push_str("</tr>");
        }
        b.push_str("</tbody></table></details>");
        return;
    }
    b.push_str("<table class=\"history-numbers\"><thead><tr><th>time (UTC)</th><th>greta</th>");
    for (di, _) in series {
        let _ = write!(b, "<th>{}</th>", esc(labels[*di]));
    }
    b.push_str("</tr></thead><tbody>");
    let mut by_run: BTreeMap<usize, Vec<Option<&Point>>> = BTreeMap::new();
    for (col, (_, pts)) in series.iter().enumerate() {
        for p in pts.iter() {
            by_run
                .entry(p.run)
                .or_insert_with(|| vec![None; series.len()])[col] = Some(p);
        }
    }
    for (run, cells) in by_run {
        row_head(b, run);
        for c in cells {
            match c {
                Some(p) => rate_cell(b, p),
                None => b.push_str("<td class=\"n\">-</td>"),
            }
        }
        b.push_str("</tr>");
    }
    b.push_str("</tbody></table></details>");
}

#[cfg(test)]
mod tests;
