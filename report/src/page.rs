//! The report page of one or more runs: a summary per run, the node grid
//! when it ran on several devices, and per device the bars and a table
//! holding every number as text.

use crate::bars;
use crate::grid;
use crate::html::{esc, exact, num, page, ratio};
use crate::load::{Run, Skipped};
use greta_smoke::results::{DeviceRun, GateStatus, Report, RunStatus};
use std::fmt::Write;

/// The verdict as the JSON writes it.
pub fn verdict(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Pass => "pass",
        RunStatus::Fail => "fail",
        RunStatus::Undecided => "undecided",
    }
}

/// `2026-11-26T00:13:55.2929Z` as `2026-11-26 00:13:55 UTC` (other text as is).
pub fn when(rfc3339: &str) -> String {
    let b = rfc3339.as_bytes();
    if b.len() >= 19 && b[10] == b'T' && rfc3339.ends_with('Z') && rfc3339.is_char_boundary(19) {
        format!("{} {} UTC", &rfc3339[..10], &rfc3339[11..19])
    } else {
        rfc3339.to_string()
    }
}

pub fn badge(s: RunStatus) -> String {
    let (c, t) = match s {
        RunStatus::Pass => ("b-pass", "PASS"),
        RunStatus::Fail => ("b-fail", "FAIL"),
        RunStatus::Undecided => ("b-undecided", "UNDECIDED"),
    };
    format!("<span class=\"badge {c}\">{t}</span>")
}

/// Files that were not used, as a list (empty when none).
pub fn skipped_html(skipped: &[Skipped]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "<div class=\"warn skipped\"><b>{} file{} not used:</b><ul>",
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" }
    );
    for s in skipped {
        let _ = write!(
            o,
            "<li data-path=\"{}\"><code>{}</code>: {}</li>",
            esc(&s.path.display().to_string()),
            esc(&s.path.display().to_string()),
            esc(&s.why)
        );
    }
    o.push_str("</ul></div>");
    o
}

/// The page for `runs` (each its own section), naming the `skipped` files.
pub fn render_runs(runs: &[Run], skipped: &[Skipped]) -> String {
    let mut b = String::new();
    let title = match runs {
        [one] => format!(
            "greta smoke {}: {}, {}",
            one.report.profile,
            verdict(one.report.status).to_uppercase(),
            when(&one.report.started_at)
        ),
        _ => format!("greta smoke: {} runs", runs.len()),
    };
    let _ = write!(
        b,
        "<h1>{}</h1><p class=\"meta\">greta report {}: every number in the drawings is also in the tables below them. \
         <label><input type=\"checkbox\" id=\"failonly\"> failing gates only</label></p>",
        esc(&title),
        env!("CARGO_PKG_VERSION")
    );
    b.push_str(&skipped_html(skipped));
    if runs.is_empty() {
        b.push_str("<p class=\"warn\">No greta.smoke/v1 result could be read.</p>");
    }
    for (i, run) in runs.iter().enumerate() {
        let anchor = if runs.len() == 1 {
            String::new()
        } else {
            format!("run{i}-")
        };
        run_section(&mut b, run, &anchor);
    }
    page(&title, &b)
}

fn run_section(b: &mut String, run: &Run, anchor: &str) {
    let r: &Report = &run.report;
    let _ = write!(
        b,
        "<section class=\"run\" data-status=\"{}\" data-started-at=\"{}\"><h2>{} {} on {} device{}, {}</h2>",
        verdict(r.status),
        esc(&r.started_at),
        badge(r.status),
        esc(&r.profile),
        r.devices.len(),
        if r.devices.len() == 1 { "" } else { "s" },
        esc(&when(&r.started_at))
    );
    let count = |s: GateStatus| {
        r.devices
            .iter()
            .flat_map(|d| &d.gates)
            .filter(|g| g.status == s)
            .count()
    };
    let _ = write!(
        b,
        "<p class=\"meta\">{} passed, {} failed, {} skipped in {:.1} s &middot; greta {} &middot; host {} ({}) \
         &middot; backend asked: {} &middot; seed {}{}</p>",
        count(GateStatus::Pass),
        count(GateStatus::Fail),
        count(GateStatus::Skip),
        r.wall_s,
        esc(&r.greta_version),
        esc(r.host.hostname.as_deref().unwrap_or("?")),
        esc(r.host.os.as_deref().unwrap_or("?")),
        esc(&r.backend_requested),
        r.settings.seed,
        run.path
            .as_ref()
            .map(|p| format!(" &middot; file <code>{}</code>", esc(&p.display().to_string())))
            .unwrap_or_default()
    );
    if !r.settings.inject.is_empty() {
        let _ = write!(
            b,
            "<p class=\"warn\">TEST faults were injected into this run: {}</p>",
            esc(&r.settings.inject.join(", "))
        );
    }
    for f in &r.findings {
        let _ = write!(
            b,
            "<p class=\"warn\"><b>{} [{}]</b> {}<br>{}<br>fix: {}</p>",
            esc(&f.severity.to_string()),
            esc(&f.id),
            esc(&f.title),
            esc(&f.message),
            esc(&f.fix.text)
        );
    }
    if r.devices.len() >= 2 {
        let _ = write!(b, "<h3>Node: gates x devices</h3>{}", grid::html(r, anchor));
    }
    for (di, d) in r.devices.iter().enumerate() {
        device_section(b, run, di, d, anchor);
    }
    b.push_str("</section>");
}

fn device_section(b: &mut String, run: &Run, di: usize, d: &DeviceRun, anchor: &str) {
    let info = &d.device;
    let _ = write!(
        b,
        "<h3 id=\"{anchor}dev-{}\" class=\"device\" data-device=\"{}\">{} GPU {}: {} <span class=\"meta\">({}, {} {}, driver {}, API {}, {}{})</span></h3>",
        d.index,
        d.index,
        badge(d.status),
        d.index,
        esc(&info.name),
        esc(&d.backend),
        esc(&info.driver_name),
        esc(&info.driver_info),
        esc(&info.driver_version),
        esc(&info.api_version),
        esc(info.device_type.short_name()),
        info.uuid.map(|u| format!(", uuid {u}")).unwrap_or_default()
    );
    if let Some(l) = &d.lost {
        let _ = write!(b, "<p class=\"warn\">device lost: {}</p>", esc(l));
    }
    for m in &d.validation_messages {
        let _ = write!(b, "<p class=\"warn\">validation layer: {}</p>", esc(m));
    }
    for n in &d.notes {
        let _ = write!(b, "<p class=\"meta\">note: {}</p>", esc(n));
    }
    b.push_str(&bars::svg(d));
    // This device's ratio to the node's median, per gate id.
    let ids = grid::gate_ids(&run.report);
    let ratios: Vec<Option<f64>> = ids
        .iter()
        .map(|id| grid::ratios(&run.report, id)[di])
        .collect();
    b.push_str(
        "<table class=\"gates\"><thead><tr><th>gate</th><th>status</th><th>rate</th><th>unit</th><th>floor</th>\
         <th>ceiling</th><th>of ceiling</th><th>spec</th><th>of spec</th><th>vs median</th><th>clean</th><th>rel_err</th><th>reason</th></tr></thead><tbody>",
    );
    for g in &d.gates {
        let m = g.metrics.as_ref();
        let rate = m.and_then(|m| m.rate);
        let ceil = g.in_run.ceiling.as_ref().map(|c| c.rate);
        let of_ceiling = g
            .in_run
            .ratio
            .or_else(|| Some(rate? / ceil?).filter(|v| v.is_finite()));
        let vs = ids.iter().position(|i| *i == g.id).and_then(|i| ratios[i]);
        let cell = |v: Option<f64>, f: fn(f64) -> String| v.map(f).unwrap_or_else(|| "-".into());
        let _ = write!(
            b,
            "<tr class=\"g-{}\" data-device=\"{}\" data-gate=\"{}\" title=\"{}\"><td>{}</td><td>{}</td>\
             <td class=\"n rate\"{}>{}</td><td>{}</td><td class=\"n floor\"{}>{}</td><td class=\"n ceiling\"{}>{}</td>\
             <td class=\"n\">{}</td><td class=\"n spec\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"reason\">{}</td></tr>",
            g.status.as_str(),
            d.index,
            esc(&g.id),
            esc(&bars::describe(g)),
            esc(&g.id),
            g.status.as_str().to_uppercase(),
            rate.map(|v| format!(" data-rate=\"{}\"", exact(v))).unwrap_or_default(),
            cell(rate, num),
            m.map_or("-", |m| m.unit.as_str()),
            g.floor.as_ref().map(|f| format!(" data-floor=\"{}\"", exact(f.limit))).unwrap_or_default(),
            cell(g.floor.as_ref().map(|f| f.limit), num),
            ceil.map(|v| format!(" data-ceiling=\"{}\"", exact(v))).unwrap_or_default(),
            cell(ceil, num),
            cell(of_ceiling, ratio),
            g.spec.as_ref().map(|s| format!("{} {}", num(s.figure), s.unit.as_str())).unwrap_or_else(|| "-".into()),
            cell(g.spec_fraction, ratio),
            cell(vs, ratio),
            m.map(|m| format!("{}/{}", m.repeats_clean, m.repeats_total)).unwrap_or_else(|| "-".into()),
            cell(m.and_then(|m| m.rel_err), |v| if v == 0.0 { "0".into() } else { format!("{v:.2e}") }),
            esc(g.reason.as_deref().unwrap_or("")),
        );
    }
    b.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::sample;

    /// Mutated results (odd numbers where rates and times are, cut files,
    /// deleted bytes) are read or refused, and whatever reads is drawn:
    /// never a panic, and the page is always a whole page.
    #[test]
    fn mutated_results_are_refused_or_drawn_never_a_panic() {
        use rand::{Rng, SeedableRng};
        let var = greta_vocab::EnvVars::GRETA_TEST_SEED;
        let seed: u64 = std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(rand::random);
        eprintln!("seed {seed} ({var}={seed} replays it)");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let base = sample(3).to_json();
        let odd = [
            "0",
            "-0",
            "-1",
            "1e308",
            "-1e308",
            "5e-324",
            "123456789012345678901234567890",
        ];
        let (mut read, mut refused) = (0, 0);
        for _ in 0..300 {
            let mut t = base.clone();
            match rng.gen_range(0..3) {
                0 => {
                    // Replace numbers (rates, times, indices) with odd ones.
                    for _ in 0..rng.gen_range(1..20) {
                        let at = rng.gen_range(0..t.len());
                        let Some(k) = t[at..].find(|c: char| c.is_ascii_digit()).map(|k| k + at)
                        else {
                            continue;
                        };
                        let end = t[k..]
                            .find(|c: char| {
                                !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-')
                            })
                            .map_or(t.len(), |e| e + k);
                        t.replace_range(k..end, odd[rng.gen_range(0..odd.len())]);
                    }
                }
                1 => t.truncate(rng.gen_range(0..t.len())),
                _ => {
                    let at = rng.gen_range(0..t.len());
                    if t.is_char_boundary(at) && t.is_char_boundary(at + 1) {
                        t.remove(at);
                    }
                }
            }
            match Run::parse(t.as_bytes(), None) {
                Ok(run) => {
                    read += 1;
                    let page = render_runs(std::slice::from_ref(&run), &[]);
                    assert!(page.ends_with("</html>\n"));
                    let h = crate::render_history(&[run], &[], "/r");
                    assert!(h.ends_with("</html>\n"));
                }
                Err(why) => {
                    refused += 1;
                    assert!(!why.is_empty());
                }
            }
        }
        eprintln!("{read} drawn, {refused} refused");
        assert!(read > 0 && refused > 0);
    }

    #[test]
    fn one_run_page_holds_every_gate_and_number_as_text() {
        let r = sample(1);
        let run = Run::from_report(r.clone());
        let h = render_runs(&[run], &[]);
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(
            !h.contains("http://") || !h.contains("<script src"),
            "nothing loaded from elsewhere"
        );
        assert!(!h.contains("<link"), "no external stylesheet");
        for g in &r.devices[0].gates {
            assert!(h.contains(&format!("data-gate=\"{}\"", g.id)), "{}", g.id);
            if let Some(v) = g.metrics.as_ref().and_then(|m| m.rate) {
                assert!(
                    h.contains(&format!("data-rate=\"{}\">{}<", exact(v), num(v))),
                    "{}",
                    g.id
                );
            }
        }
        assert!(
            !h.contains("Node: gates x devices"),
            "no grid for one device"
        );
        let two = render_runs(
            &[Run::from_report(sample(2))],
            &[Skipped {
                path: "x.json".into(),
                why: "<bad>".into(),
            }],
        );
        assert!(two.contains("Node: gates x devices"));
        assert!(two.contains("&lt;bad&gt;") && !two.contains("<bad>"));
    }
}
