//! The human summary printed at the end of a run, and the `--list-gates`
//! listing.

use crate::check::Tolerance;
use crate::gates::{Catalog, Profile};
use crate::results::{GateResult, GateStatus, RateUnit, Report, RunStatus};
use greta_vocab::width::{hanging, stderr_width, stdout_width, visible_width, wrap_line, MIN_TEXT};
use greta_vocab::{visible, Visible};
use serde::Serialize;
use std::fmt::Write;

/// Render rows as left-aligned columns separated by two spaces.
fn columns(rows: &[Vec<String>]) -> String {
    columns_within(rows, None)
}

/// [`columns`] no wider than `width`: the last column (the free text) is
/// wrapped with a hanging indent under its own start, or, when the fixed
/// columns leave it too little room, on the lines below indented by four.
fn columns_within(rows: &[Vec<String>], width: Option<usize>) -> String {
    let n = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| visible_width(s)))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                let start = visible_width(&line);
                match width {
                    Some(w) if !cell.is_empty() && start + visible_width(cell) > w => {
                        line.push_str(&hanging(cell, start, w));
                    }
                    _ => line.push_str(cell),
                }
            } else {
                line.push_str(cell);
                let pad = widths[c] - visible_width(cell) + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        for l in line.lines() {
            out.push_str(l.trim_end());
            out.push('\n');
        }
        if line.is_empty() {
            out.push('\n');
        }
    }
    out
}

/// The columns a narrow terminal loses first, in order; gate, status, rate
/// and the floor gauge always stay.
const DROP_FIRST: [&str; 9] = [
    "first_us",
    "ratio",
    "ceiling",
    "median_us",
    "rel_err",
    "of_spec",
    "clean",
    "floor",
    "unit",
];

/// Makes the table (header row first, free text last) fit `width`: a
/// column with nothing in it (every cell `-` or empty) goes first, then
/// the columns of [`DROP_FIRST`] in turn, until the fixed columns leave the
/// last one room. Returns the names of the columns dropped that had
/// something to say.
fn fit(rows: &mut [Vec<String>], width: usize) -> Vec<String> {
    let Some(head) = rows.first().cloned() else {
        return Vec::new();
    };
    let empty = |rows: &[Vec<String>], c: usize| {
        rows.iter()
            .skip(1)
            .all(|r| r.get(c).is_none_or(|s| s.is_empty() || s == "-"))
    };
    let mut dropped = Vec::new();
    let remove = |rows: &mut [Vec<String>], c: usize| {
        for r in rows.iter_mut() {
            if c < r.len() {
                r.remove(c);
            }
        }
    };
    // The widest fixed part, and whether the last column holds any text.
    let need = |rows: &[Vec<String>]| {
        let n = rows[0].len();
        let fixed: usize = (0..n.saturating_sub(1))
            .map(|c| {
                rows.iter()
                    .map(|r| r.get(c).map_or(0, |s| visible_width(s)))
                    .max()
                    .unwrap_or(0)
                    + 2
            })
            .sum();
        let last = rows
            .iter()
            .map(|r| r.last().map_or(0, |s| visible_width(s)))
            .max()
            .unwrap_or(0);
        // Free text wraps into MIN_TEXT columns; a number column does not.
        let text = rows[0].last().is_some_and(|h| h == "reason");
        fixed + if text { last.min(MIN_TEXT) } else { last }
    };
    if need(rows) <= width {
        return dropped;
    }
    for name in head.iter().rev() {
        let Some(c) = rows[0].iter().position(|h| h == name) else {
            continue;
        };
        if empty(rows, c) && c > 0 {
            remove(rows, c);
        }
    }
    for name in DROP_FIRST {
        if need(rows) <= width {
            break;
        }
        if let Some(c) = rows[0].iter().position(|h| h == name) {
            remove(rows, c);
            dropped.push(name.to_string());
        }
    }
    dropped
}

fn num(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 0.01 => format!("{v:.3}"),
        Some(v) => format!("{v:.2e}"),
    }
}

/// A fraction of spec, compactly: `0.88`, `0.012`.
fn of_spec(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(v) if v >= 0.095 => format!("{v:.2}"),
        Some(v) if v >= 0.001 => format!("{v:.3}"),
        Some(v) => format!("{v:.0e}"),
    }
}

/// Whether the table may colour its cells: not when `NO_COLOR` is set to
/// anything (no-color.org), nor for a dumb terminal, nor when stdout or
/// stderr is not a terminal (a log file, a pipe, `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    On,
    Off,
}

impl Colour {
    /// greta's one colour decision (`--color`, NO_COLOR, TERM=dumb), for a
    /// table whose lines reach stdout or stderr: both must be terminals.
    pub fn from_env() -> Colour {
        use std::io::IsTerminal;
        let terminals = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        if greta_vocab::colour::use_color(terminals) {
            Colour::On
        } else {
            Colour::Off
        }
    }
}

/// Slots of the floor gauge.
const GAUGE: usize = 10;

/// A rate against its floor (and in-run ceiling, when there is one), in a
/// dozen characters: `1.67x [######|##  ]` — the rate as a multiple of the
/// floor (as a speed: for us/dispatch, lower is better, floor / rate), and
/// a gauge filled to the rate with `|` at the floor, whose right end is
/// the ceiling when there is one, else the larger of rate and floor.
/// Under the floor the multiple is below 1 (red with colour on).
pub fn vs_floor(
    rate: Option<f64>,
    floor: Option<f64>,
    ceiling: Option<f64>,
    higher_is_better: bool,
    colour: Colour,
) -> String {
    let good = |v: Option<f64>| {
        v.filter(|v| v.is_finite() && *v > 0.0)
            .map(|v| if higher_is_better { v } else { 1.0 / v })
    };
    let (Some(r), Some(f)) = (good(rate), good(floor)) else {
        return "-".into();
    };
    let end = good(ceiling).unwrap_or(0.0).max(r).max(f);
    let slot = |v: f64| ((v / end * GAUGE as f64).round() as usize).min(GAUGE);
    let fill = slot(r);
    let at = slot(f).max(1) - 1;
    let gauge: String = (0..GAUGE)
        .map(|i| {
            if i == at {
                '|'
            } else if i < fill {
                '#'
            } else {
                ' '
            }
        })
        .collect();
    let x = r / f;
    let text = format!("{x:.2}x");
    let text = match colour {
        Colour::Off => text,
        Colour::On if x >= 1.0 => format!("\x1b[32m{text}\x1b[0m"),
        Colour::On => format!("\x1b[1;31m{text}\x1b[0m"),
    };
    format!("{text} [{gauge}]")
}

/// A column of the end-of-run table: its header and its cell for a gate.
type Column = (&'static str, fn(&GateResult) -> String);

/// The end-of-run table's columns, in order (`first_us` only where a gate
/// timed its first call, `of_spec` only where the device has spec figures).
const GATE_COLUMNS: &[Column] = &[
    ("gate", |g| g.id.clone()),
    ("status", |g| g.status.as_str().to_uppercase()),
    ("rate", |g| num(g.metrics.as_ref().and_then(|m| m.rate))),
    ("unit", |g| {
        g.metrics
            .as_ref()
            .map_or_else(|| "-".into(), |m| m.unit.as_str().to_string())
    }),
    ("floor", |g| num(g.floor.as_ref().map(|f| f.limit))),
    // Filled in by `render` (it knows whether to colour).
    ("vs_floor", |_| String::new()),
    ("of_spec", |g| of_spec(g.spec_fraction)),
    ("ceiling", |g| ceiling_cell(g)),
    ("ratio", |g| of_spec(g.in_run.ratio)),
    ("rel_err", |g| {
        num(g.metrics.as_ref().and_then(|m| m.rel_err))
    }),
    ("clean", |g| {
        g.metrics.as_ref().map_or_else(
            || "-".into(),
            |m| format!("{}/{}", m.repeats_clean, m.repeats_total),
        )
    }),
    ("median_us", |g| {
        num(g.metrics.as_ref().and_then(|m| m.time_median_us))
    }),
    ("first_us", |g| {
        num(g.metrics.as_ref().and_then(|m| m.first_call_us))
    }),
    // A reason may quote the driver or the device child's error.
    ("reason", |g| {
        visible(g.reason.as_deref().unwrap_or_default()).into_owned()
    }),
];

/// A gate's in-run ceiling, compactly: `2956 memcpy d2d (cuMemcpyDtoDAsync)`.
fn ceiling_cell(g: &GateResult) -> String {
    match &g.in_run.ceiling {
        Some(c) => format!("{} {}", num(Some(c.rate)), Visible(&c.source)),
        None => "-".into(),
    }
}

/// Lines under a device's table: each stress gate's sustained figures, and
/// why ceilings are missing (each distinct reason once, with its gates).
fn in_run_lines(gates: &[GateResult]) -> Vec<String> {
    let mut out = Vec::new();
    for g in gates {
        if let Some(s) = &g.in_run.stress {
            out.push(format!(
                "stress {}: {} sustained {} TFLOP/s over {} intervals ({:.1} s; per interval min {} / median {} / max {}), {} tiles checked{}",
                g.id,
                s.engine,
                num(s.tflops_sustained),
                s.intervals,
                s.seconds,
                num(s.tflops_min),
                num(s.tflops_median),
                num(s.tflops_max),
                s.tiles_checked,
                s.note
                    .as_ref()
                    .map(|n| format!("; {}", Visible(n)))
                    .unwrap_or_default()
            ));
        }
    }
    for g in gates {
        if let Some(b) = &g.in_run.block {
            out.push(block_line(g, b));
        }
    }
    for g in gates {
        if let Some(h) = &g.in_run.host_copy {
            out.push(host_copy_line(g, h));
        }
    }
    let mut why: Vec<(&str, Vec<&str>)> = Vec::new();
    for g in gates {
        if let Some(r) = g.in_run.ceiling_unavailable.as_deref() {
            match why.iter_mut().find(|(w, _)| *w == r) {
                Some((_, ids)) => ids.push(&g.id),
                None => why.push((r, vec![&g.id])),
            }
        }
    }
    for (r, ids) in why {
        out.push(format!("no ceiling for {}: {}", ids.join(", "), Visible(r)));
    }
    out
}

/// A host-copy gate's line: each direction's rate, the rounds that came
/// back right, and the link floor or why none applied.
fn host_copy_line(g: &GateResult, h: &crate::results::HostCopySummary) -> String {
    let floor = match (&g.floor, &h.no_floor) {
        (Some(f), _) => format!(
            "floor {} GB/s each way ({} x {})",
            num(Some(f.limit)),
            f.fraction,
            Visible(&f.source)
        ),
        (None, Some(why)) => Visible(why).to_string(),
        (None, None) => "no floor".into(),
    };
    format!(
        "host copy {}: host to device {} GB/s, device to host {} GB/s, {}/{} rounds clean ({}); {floor}",
        g.id,
        num(h.up_gbps),
        num(h.down_gbps),
        h.rounds_clean,
        h.rounds,
        Visible(&h.how)
    )
}

/// A transformer-block gate's line: time per layer, the labelled estimate
/// for a model of such layers, and the step that took longest.
fn block_line(g: &GateResult, b: &crate::results::BlockSummary) -> String {
    let per_layer = g
        .metrics
        .as_ref()
        .and_then(|m| m.time_median_us)
        .map(|us| format!("{:.3} ms per layer", us / 1e3))
        .unwrap_or_else(|| "no time".into());
    let est = b
        .est_tokens_per_s
        .map(|t| {
            format!(
                "; estimate for {} such layers: {} tokens/s",
                b.layers,
                num(Some(t))
            )
        })
        .unwrap_or_default();
    let slowest = b
        .steps
        .iter()
        .enumerate()
        .max_by(|x, y| x.1.us.total_cmp(&y.1.us))
        .map(|(i, s)| {
            // A fused step names the unfused steps it does.
            let parts = if s.parts.is_empty() {
                String::new()
            } else {
                format!(": {}", s.parts.join(" + "))
            };
            format!(
                "; slowest step {} ({}{parts}) {:.1} us",
                i + 1,
                s.kernel,
                s.us
            )
        })
        .unwrap_or_default();
    format!(
        "block {}: {per_layer}, {} token(s){est}{slowest}",
        g.id, b.tokens
    )
}

/// A node check as a line of the table's footer: `check pcie_link: FAIL:
/// PCIe Gen5 x16 card trained at Gen3 x8 (card1)`.
fn check_line(c: &crate::telemetry::NodeCheck) -> String {
    format!(
        "check {}: {}: {}",
        Visible(&c.check),
        if c.pass { "pass" } else { "FAIL" },
        Visible(&c.detail)
    )
}

/// The end-of-run table: one block per device, one line per gate; coloured
/// as [`Colour::from_env`] says. What the driver, the device or the
/// validation layer said (a device name, a driver's info string, an error)
/// is printed through [`Visible`]: a name holding ESC or U+202E is shown,
/// never acted on. The JSON keeps the exact values. Wrapped to the
/// terminal of the stream it is printed on (`to_stderr`: with `--json` or
/// `--oneline`; else stdout), lines whole to a pipe or a file.
pub fn render(report: &Report, to_stderr: bool) -> String {
    let width = if to_stderr {
        stderr_width()
    } else {
        stdout_width()
    };
    render_within(report, Colour::from_env(), width)
}

/// [`render`] with colour decided by the caller, lines whole.
pub fn render_with(report: &Report, colour: Colour) -> String {
    render_within(report, colour, None)
}

/// [`render_with`] no wider than `width` columns (none: lines whole).
/// Skip reasons shared by several gates are said once, under the table.
pub fn render_within(report: &Report, colour: Colour, width: Option<usize>) -> String {
    let mut out = String::new();
    for d in &report.devices {
        let head = format!(
            "device {}: {} ({}, {} {}, {})",
            d.index,
            Visible(&d.device.name),
            d.backend,
            Visible(&d.device.driver_name),
            Visible(&d.device.driver_info),
            d.device.device_type.short_name()
        );
        let _ = writeln!(out, "{}", wrap_line(&head, width, 4));
        // A reason several skipped gates share: numbered once, the cells
        // point at it.
        let mut shared: Vec<String> = Vec::new();
        for g in &d.gates {
            let Some(r) = g.reason.as_deref().filter(|_| g.status == GateStatus::Skip) else {
                continue;
            };
            let n = d
                .gates
                .iter()
                .filter(|o| o.status == GateStatus::Skip && o.reason.as_deref() == Some(r))
                .count();
            if n > 1 && !shared.iter().any(|s| s == r) {
                shared.push(r.to_string());
            }
        }
        // Framework gates also time their first call (compile, library load).
        let first = d.gates.iter().any(|g| {
            g.metrics
                .as_ref()
                .is_some_and(|m| m.first_call_us.is_some())
        });
        let spec = d.gates.iter().any(|g| g.spec_fraction.is_some());
        let floors = d.gates.iter().any(|g| g.floor.is_some());
        let ceilings = d.gates.iter().any(|g| g.in_run.ceiling.is_some());
        let shown: Vec<&Column> = GATE_COLUMNS
            .iter()
            .filter(|c| first || c.0 != "first_us")
            .filter(|c| spec || c.0 != "of_spec")
            .filter(|c| floors || c.0 != "vs_floor")
            .filter(|c| ceilings || !matches!(c.0, "ceiling" | "ratio"))
            .collect();
        let mut rows = vec![shown.iter().map(|c| c.0.to_string()).collect::<Vec<_>>()];
        rows.extend(d.gates.iter().map(|g| {
            shown
                .iter()
                .map(|c| match c.0 {
                    // The gauge ends at the in-run ceiling where there is one.
                    "vs_floor" => {
                        let m = g.metrics.as_ref();
                        vs_floor(
                            m.and_then(|m| m.rate),
                            g.floor.as_ref().map(|f| f.limit),
                            g.in_run.ceiling.as_ref().map(|c| c.rate),
                            m.is_none_or(|m| m.unit.higher_is_better()),
                            colour,
                        )
                    }
                    "reason" => match g.reason.as_deref() {
                        Some(r) if g.status == GateStatus::Skip => {
                            match shared.iter().position(|s| s == r) {
                                Some(i) => format!("[{}] below", i + 1),
                                None => (c.1)(g),
                            }
                        }
                        _ => (c.1)(g),
                    },
                    _ => (c.1)(g),
                })
                .collect()
        }));
        let dropped = match width {
            Some(w) => fit(&mut rows, w),
            None => Vec::new(),
        };
        out.push_str(&columns_within(&rows, width));
        if !dropped.is_empty() {
            let line = format!(
                "(not shown at {} columns: {}; --json has every column)",
                width.unwrap_or_default(),
                dropped.join(", ")
            );
            let _ = writeln!(out, "{}", wrap_line(&line, width, 4));
        }
        for (i, r) in shared.iter().enumerate() {
            let n = d
                .gates
                .iter()
                .filter(|g| g.status == GateStatus::Skip && g.reason.as_deref() == Some(r))
                .count();
            let line = format!("[{}] {n} gates skipped: {}", i + 1, visible(r));
            let _ = writeln!(out, "{}", wrap_line(&line, width, 4));
        }
        for line in in_run_lines(&d.gates) {
            let _ = writeln!(out, "{}", wrap_line(&line, width, 4));
        }
        for m in &d.validation_messages {
            let line = format!("validation layer: {}", Visible(m));
            let _ = writeln!(out, "{}", wrap_line(&line, width, 4));
        }
        for n in &d.notes {
            let _ = writeln!(
                out,
                "{}",
                wrap_line(&format!("note: {}", Visible(n)), width, 4)
            );
        }
        if let Some(l) = &d.lost {
            let line = format!("device {} lost: {}", d.index, Visible(l));
            let _ = writeln!(out, "{}", wrap_line(&line, width, 4));
        }
        for c in &d.checks {
            let _ = writeln!(out, "{}", check_line(c));
        }
        out.push('\n');
    }
    for c in &report.checks {
        let _ = writeln!(out, "{}", check_line(c));
    }
    for f in &report.findings {
        let lines = [
            format!(
                "finding {} [{}] {}",
                f.severity,
                Visible(&f.id),
                Visible(&f.title)
            ),
            format!("    {}", Visible(&f.message)),
        ];
        for l in lines {
            let _ = writeln!(out, "{}", wrap_line(&l, width, 4));
        }
        for e in &f.evidence {
            let _ = writeln!(
                out,
                "{}",
                wrap_line(&format!("    evidence: {}", Visible(e)), width, 4)
            );
        }
        let _ = writeln!(
            out,
            "{}",
            wrap_line(&format!("    fix: {}", Visible(&f.fix.text)), width, 4)
        );
        for c in &f.fix.commands {
            // A command stays one line: it is copied whole.
            let _ = writeln!(out, "      $ {}", Visible(c));
        }
    }
    if !report.findings.is_empty() {
        out.push('\n');
    }
    let count = |s: GateStatus| {
        report
            .devices
            .iter()
            .flat_map(|d| &d.gates)
            .filter(|g| g.status == s)
            .count()
    };
    let verdict = match report.status {
        RunStatus::Pass => "PASS",
        RunStatus::Fail => "FAIL",
        RunStatus::Undecided => "UNDECIDED",
    };
    let line = format!(
        "smoke {}: {verdict}: {} passed, {} failed, {} skipped in {:.1} s (seed {})",
        report.profile,
        count(GateStatus::Pass),
        count(GateStatus::Fail),
        count(GateStatus::Skip),
        report.wall_s,
        report.settings.seed
    );
    let _ = writeln!(out, "{}", wrap_line(&line, width, 4));
    out
}

/// `--list-gates`: every gate with its profiles, tolerance, unit and what it does.
pub fn list_gates(catalog: &Catalog, include_test: bool) -> String {
    let mut rows = vec![["gate", "profiles", "tolerance", "unit", "about"]
        .map(String::from)
        .to_vec()];
    for g in catalog
        .gates
        .iter()
        .filter(|g| include_test || !g.test_only)
    {
        let profiles = if g.profiles.is_empty() {
            "(test-only)".to_string()
        } else {
            g.profiles
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        rows.push(vec![
            g.id.clone(),
            profiles,
            if g.op.outputs().is_empty() {
                "- (no output)".to_string()
            } else {
                g.tolerance().describe()
            },
            g.unit().as_str().to_string(),
            g.about.clone(),
        ]);
    }
    let mut out = columns(&rows);
    out.push_str("\nprofiles:\n");
    for p in Profile::ALL {
        let _ = writeln!(
            out,
            "  {:<10} {} ({} repeats)",
            p.as_str(),
            p.about(),
            p.repeats()
        );
    }
    out
}

/// `--list-gates --json`: the catalogue (`greta.smoke-gates/v1`). Every
/// object's fields stand in the order they have always been printed in
/// (alphabetical: the listing was a JSON map before it was a type).
#[derive(Debug, Clone, Serialize)]
pub struct GateList {
    pub gates: Vec<ListedGate>,
    pub profiles: Vec<ListedProfile>,
    pub schema: &'static str,
}

/// One gate of [`GateList`].
#[derive(Debug, Clone, Serialize)]
pub struct ListedGate {
    pub about: String,
    /// Bytes the op moves, and its floating-point operations.
    pub bytes: u64,
    pub flops: u64,
    pub id: String,
    pub op: &'static str,
    pub profiles: Vec<Profile>,
    pub shape: String,
    pub test_only: bool,
    /// `None` for an op without outputs (nothing is checked).
    pub tolerance: Option<Tolerance>,
    pub unit: RateUnit,
}

/// One profile of [`GateList`]: the gates it runs, in order.
#[derive(Debug, Clone, Serialize)]
pub struct ListedProfile {
    pub about: &'static str,
    pub gates: Vec<String>,
    pub name: &'static str,
    pub repeats: u32,
}

/// `--list-gates --json`: the catalogue as `greta.smoke-gates/v1`.
pub fn list_gates_json(catalog: &Catalog, include_test: bool) -> GateList {
    let gates = catalog
        .gates
        .iter()
        .filter(|g| include_test || !g.test_only)
        .map(|g| ListedGate {
            about: g.about.clone(),
            bytes: g.op.bytes_moved(),
            flops: g.op.flops(),
            id: g.id.clone(),
            op: g.op.name(),
            profiles: g.profiles.clone(),
            shape: g.shape(),
            test_only: g.test_only,
            tolerance: (!g.op.outputs().is_empty()).then(|| g.tolerance()),
            unit: g.unit(),
        })
        .collect();
    let profiles = Profile::ALL
        .iter()
        .map(|p| ListedProfile {
            about: p.about(),
            gates: catalog
                .plan(*p, &[], false)
                .map(|v| v.into_iter().map(|g| g.id).collect())
                .unwrap_or_default(),
            name: p.as_str(),
            repeats: p.repeats(),
        })
        .collect();
    GateList {
        gates,
        profiles,
        schema: "greta.smoke-gates/v1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a driver or a replayed capture can put in a device name: an
    /// OSC that retitles the terminal, a CSI that clears it, a CR that
    /// overwrites "FAIL" with "PASS", bidi controls, a C1 CSI.
    const HOSTILE: &str =
        "llvmpipe \u{1b}]0;owned\u{7}\u{1b}[2J FAIL\rPASS \u{202e}SSAP\u{2066} \u{9b}1m";

    /// The characters of [`HOSTILE`] that act on a terminal.
    const ACTING: [char; 6] = ['\u{1b}', '\u{7}', '\r', '\u{202e}', '\u{2066}', '\u{9b}'];

    #[test]
    fn outside_strings_are_shown_never_acted_on() {
        let mut r = crate::results::tests::sample_report();
        let d = &mut r.devices[0];
        d.device.name = HOSTILE.into();
        d.device.driver_name = HOSTILE.into();
        d.device.driver_info = HOSTILE.into();
        d.gates[1].reason = Some(HOSTILE.into());
        d.validation_messages = vec![HOSTILE.into()];
        d.notes = vec![HOSTILE.into()];
        d.lost = Some(HOSTILE.into());
        let t = render_with(&r, Colour::Off);
        for c in ACTING {
            assert!(!t.contains(c), "{c:?} reached the table:\n{t}");
        }
        // Shown, not dropped: each of the seven places, escaped.
        let shown =
            "llvmpipe \\u{1b}]0;owned\\u{7}\\u{1b}[2J FAIL\\rPASS \\u{202e}SSAP\\u{2066} \\u{9b}1m";
        assert_eq!(t.matches(shown).count(), 7, "{t}");
        // With colour, every ESC left is greta's own SGR sequence.
        let t = render_with(&r, Colour::On);
        for (i, _) in t.match_indices('\u{1b}') {
            let sgr = t[i + 1..].strip_prefix('[').and_then(|x| {
                let end = x.find(|c: char| !c.is_ascii_digit() && c != ';')?;
                (x.as_bytes()[end] == b'm').then_some(())
            });
            assert!(sgr.is_some(), "not an SGR at {i}: {:?}", &t[i..]);
        }
        // The JSON keeps the exact value.
        let back: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(back["devices"][0]["device"]["name"], HOSTILE);
    }

    #[test]
    fn table_has_a_line_per_gate_and_a_verdict() {
        let r = crate::results::tests::sample_report();
        let t = render_with(&r, Colour::Off);
        assert!(
            t.contains("copy.bw") && t.contains("PASS") && t.contains("12.500"),
            "{t}"
        );
        assert!(t.contains("softmax.256x1024") && t.contains("FAIL"));
        assert!(
            t.lines()
                .last()
                .unwrap()
                .contains("FAIL: 1 passed, 1 failed, 1 skipped"),
            "{t}"
        );
    }

    /// The node checks are in the table: a run that failed on one alone
    /// says which (the table had no line for them).
    #[test]
    fn node_checks_are_listed() {
        let mut r = crate::results::tests::sample_report();
        r.devices[0].checks.push(crate::telemetry::NodeCheck {
            check: "error_counters".into(),
            pass: false,
            detail: "umc error counter rose on card1: umc uncorrectable 0 -> 2".into(),
        });
        r.checks.push(crate::telemetry::recount("cuda", 8, 8));
        let t = render_with(&r, Colour::Off);
        assert!(
            t.contains("check error_counters: FAIL: umc error counter rose on card1: umc uncorrectable 0 -> 2\n"),
            "{t}"
        );
        assert!(
            t.contains("check gpu_count_stable: pass: 8 cuda device(s) before the run, 8 after\n"),
            "{t}"
        );
    }

    #[test]
    fn columns_are_the_headers_cells_and_first_call_only_when_timed() {
        let mut r = crate::results::tests::sample_report();
        // Line `i` of the table, its cells joined by one `|` (the reason may hold spaces).
        let line = |t: &str, i: usize| -> String {
            let l = t.lines().nth(i).unwrap();
            let cells: Vec<&str> = l
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            cells.join("|")
        };
        let t = render_with(&r, Colour::Off);
        assert_eq!(
            line(&t, 1),
            "gate|status|rate|unit|floor|vs_floor|rel_err|clean|median_us|reason"
        );
        assert_eq!(
            line(&t, 2),
            "copy.bw|PASS|12.500|GB/s|7.500|1.67x [#####|####]|0|10/10|80.000"
        );
        assert_eq!(
            line(&t, 4),
            "gemm_f16.256|SKIP|-|-|-|-|-|-|-|an f32 gate failed"
        );
        let m = r.devices[0].gates[0].metrics.as_mut().unwrap();
        m.first_call_us = Some(1234.5);
        let t = render_with(&r, Colour::Off);
        assert!(line(&t, 1).ends_with("|median_us|first_us|reason"), "{t}");
        assert!(line(&t, 2).ends_with("|80.000|1234.5"), "{t}");
        assert!(line(&t, 4).ends_with("|-|-|an f32 gate failed"), "{t}");
    }

    /// Fractions of spec: a column after the floor, only for a device with
    /// spec figures; `-` for a gate without one.
    #[test]
    fn the_fraction_of_spec_column_shows_only_for_known_devices() {
        let mut r = crate::results::tests::sample_report();
        // (No floor, so no vs_floor column between them.)
        r.devices[0].gates[0].floor = None;
        let t = render_with(&r, Colour::Off);
        assert!(!t.contains("of_spec") && !t.contains("vs_floor"), "{t}");
        r.devices[0].gates[0].spec_fraction = Some(0.8823);
        r.devices[0].gates[1].spec_fraction = Some(0.0083);
        let t = render_with(&r, Colour::Off);
        let header = t.lines().nth(1).unwrap();
        assert!(header.contains("floor  of_spec  rel_err"), "{t}");
        let cells = |i: usize| -> Vec<String> {
            t.lines()
                .nth(i)
                .unwrap()
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        assert_eq!(cells(2)[4..6], ["-", "0.88"]);
        assert_eq!(cells(3)[5], "0.008");
        assert_eq!(cells(4)[5], "-");
        assert_eq!(of_spec(Some(0.0004)), "4e-4");
    }

    /// The rate against its floor: the multiple (as a speed) and a gauge
    /// filled to the rate with `|` at the floor, its end the ceiling when
    /// there is one.
    #[test]
    fn the_floor_gauge_reads_as_a_speed() {
        let off = Colour::Off;
        assert_eq!(
            vs_floor(Some(12.5), Some(7.5), None, true, off),
            "1.67x [#####|####]"
        );
        // Under the floor: the gauge stops short of the mark.
        assert_eq!(
            vs_floor(Some(5.0), Some(10.0), None, true, off),
            "0.50x [#####    |]"
        );
        // With a ceiling twice the rate: the gauge is half full.
        assert_eq!(
            vs_floor(Some(10.0), Some(5.0), Some(20.0), true, off),
            "2.00x [##|##     ]"
        );
        // us/dispatch: lower is better, so 20 us against a 40 us limit is 2x.
        assert_eq!(
            vs_floor(Some(20.0), Some(40.0), None, false, off),
            "2.00x [####|#####]"
        );
        assert_eq!(vs_floor(None, Some(1.0), None, true, off), "-");
        assert_eq!(vs_floor(Some(1.0), None, None, true, off), "-");
        // Colour: green over the floor, red under it; the columns stay aligned.
        assert!(vs_floor(Some(12.5), Some(7.5), None, true, Colour::On)
            .starts_with("\x1b[32m1.67x\x1b[0m"));
        assert!(
            vs_floor(Some(5.0), Some(10.0), None, true, Colour::On).starts_with("\x1b[1;31m0.50x")
        );
        let r = crate::results::tests::sample_report();
        let plain = render_with(&r, Colour::Off);
        let coloured = render_with(&r, Colour::On);
        assert!(!plain.contains('\x1b'));
        assert!(coloured.contains("\x1b[32m1.67x\x1b[0m"));
        let strip = coloured.replace("\x1b[32m", "").replace("\x1b[0m", "");
        assert_eq!(strip, plain, "colour codes take no width");
    }

    /// Skip reasons several gates share are said once under the table;
    /// at a given width no line is wider, and the columns that had to go
    /// are named.
    #[test]
    fn shared_skip_reasons_are_said_once_and_lines_fit_the_width() {
        let mut r = crate::results::tests::sample_report();
        let why = "f16 is on the deny list for this driver: a reason long enough to need wrapping on any narrow terminal";
        let mut g = r.devices[0].gates[0].clone();
        for id in ["gemm_f16.a", "gemm_f16.b", "gemm_f16.c"] {
            g.id = id.into();
            g.status = GateStatus::Skip;
            g.reason = Some(why.into());
            g.metrics = None;
            r.devices[0].gates.push(g.clone());
        }
        let whole = render_with(&r, Colour::Off);
        assert_eq!(whole.matches(why).count(), 1, "{whole}");
        assert!(
            whole.contains(&format!("[1] 3 gates skipped: {why}")),
            "{whole}"
        );
        assert_eq!(whole.matches("[1] below").count(), 3, "{whole}");
        for w in [60usize, 80, 120] {
            let t = render_within(&r, Colour::Off, Some(w));
            for line in t.lines() {
                assert!(line.chars().count() <= w, "{w}: {line:?}\n{t}");
            }
            assert_eq!(t.matches("[1] below").count(), 3, "{t}");
        }
        let narrow = render_within(&r, Colour::Off, Some(60));
        assert!(narrow.contains("(not shown at 60 columns:"), "{narrow}");
    }

    #[test]
    fn ceilings_ratios_and_stress_show_only_when_measured() {
        let mut r = crate::results::tests::sample_report();
        let plain = render(&r, false);
        assert!(!plain.contains("ceiling") && !plain.contains("ratio"));
        r.devices[0].gates[0].in_run.ceiling = Some(crate::results::CeilingRef {
            rate: 2956.0,
            unit: crate::results::RateUnit::GBps,
            source: "memcpy d2d (cuMemcpyDtoDAsync)".into(),
            library: "libcuda.so.1".into(),
            version: "CUDA 12.8".into(),
        });
        r.devices[0].gates[0].in_run.ratio = Some(0.8011);
        for g in &mut r.devices[0].gates[1..] {
            g.in_run.ceiling_unavailable = Some("no cuBLAS found; looked in: x".into());
        }
        let t = render(&r, false);
        let head = t.lines().nth(1).unwrap();
        assert!(
            head.contains("  ceiling  ") && head.contains("  ratio  "),
            "{t}"
        );
        let copy = t.lines().find(|l| l.starts_with("copy.bw")).unwrap();
        assert!(
            copy.contains("2956.0 memcpy d2d (cuMemcpyDtoDAsync)") && copy.contains("0.80"),
            "{t}"
        );
        assert!(
            t.contains(
                "no ceiling for softmax.256x1024, gemm_f16.256: no cuBLAS found; looked in: x"
            ),
            "{t}"
        );
    }

    #[test]
    fn a_block_gate_gets_its_line_with_the_estimate_labelled() {
        let mut r = crate::results::tests::sample_report();
        assert!(!render(&r, false).contains("block "));
        let g = &mut r.devices[0].gates[0];
        g.metrics.as_mut().unwrap().time_median_us = Some(250.0);
        g.in_run.block = Some(crate::results::BlockSummary::new(
            "graph:rmsnorm_f16+gemv_f16_v8",
            &[3_000, 120_500],
            &[],
            1,
            Some(250_000.0),
        ));
        let t = render(&r, false);
        let line = t.lines().find(|l| l.starts_with("block ")).unwrap();
        assert!(line.contains("0.250 ms per layer, 1 token(s)"), "{line}");
        // 1 token / (32 x 250 us) = 125 tokens/s.
        assert!(line.contains("estimate for 32 such layers: 125"), "{line}");
        assert!(
            line.contains("slowest step 2 (gemv_f16_v8) 120.5 us"),
            "{line}"
        );
        // A fused step reports as one step with its parts named.
        let fused = greta_kernels::Op::RmsGemvSwigluF16 {
            rows: 11008,
            cols: 4096,
            eps: 1e-5,
        };
        let b = crate::results::BlockSummary::new(
            "graph:gemv_add_f16_v8+rms_gemv_swiglu_f16_v8",
            &[3_000, 60_000],
            &[greta_kernels::Op::GemvAddF16 { rows: 8, cols: 8 }, fused],
            1,
            Some(70_000.0),
        );
        assert_eq!(b.steps[0].parts, ["gemv_f16", "residual add"]);
        r.devices[0].gates[0].in_run.block = Some(b);
        let t = render(&r, false);
        let line = t.lines().find(|l| l.starts_with("block ")).unwrap();
        assert!(
            line.contains(
                "slowest step 2 (rms_gemv_swiglu_f16_v8: rmsnorm_f16 + gemv_f16 (gate, up) + swiglu_f16) 60.0 us"
            ),
            "{line}"
        );
    }

    #[test]
    fn listing_as_json() {
        let c = Catalog::builtin();
        let v = serde_json::to_value(list_gates_json(&c, false)).unwrap();
        assert_eq!(v["schema"], "greta.smoke-gates/v1");
        let gates = v["gates"].as_array().unwrap();
        assert_eq!(gates.len(), c.gates.iter().filter(|g| !g.test_only).count());
        let g = gates.iter().find(|g| g["id"] == "gemm_f16.256").unwrap();
        assert_eq!(g["unit"], "TFLOP/s");
        assert_eq!(g["tolerance"]["value"], 1e-2);
        assert_eq!(g["flops"], 2 * 256u64.pow(3));
        let noop = gates.iter().find(|g| g["id"] == "noop.dispatch").unwrap();
        assert!(noop["tolerance"].is_null());
        let ultrasafe = &v["profiles"][0];
        assert_eq!(ultrasafe["name"], "ultrasafe");
        assert_eq!(
            ultrasafe["gates"],
            serde_json::json!(["fill.tiny", "copy.tiny"])
        );
    }

    #[test]
    fn listing_hides_test_gates_unless_asked() {
        let c = Catalog::builtin();
        let l = list_gates(&c, false);
        assert!(l.contains("gemm_f16.256") && !l.contains("test.slow"));
        assert!(list_gates(&c, true).contains("test.slow"));
    }
}
