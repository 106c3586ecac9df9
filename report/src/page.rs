//! The report page of one or more runs: a summary per run, the node grid
//! when it ran on several devices, and per device the bars and a table
//! holding every number as text.

use crate::bars;
use crate::grid;
use crate::html::{cut, esc, exact, label, num, page, ratio};
use crate::load::{Run, Skipped};
use crate::node::Node;
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
/// Holds every run: `greta report FILES` draws through a [`Page`].
pub fn render_runs(runs: &[Run], skipped: &[Skipped]) -> String {
    let mut sections = String::new();
    // Telemetry charts drawn so far count against one budget per page.
    let mut charts_left = crate::trace::CHARTS_PER_PAGE;
    for (i, run) in runs.iter().enumerate() {
        run_section(&mut sections, run, &anchor(runs.len(), i), &mut charts_left);
    }
    let title = match runs {
        [one] => title_of(one),
        _ => title_of_many(runs.len()),
    };
    let alone = runs.iter().map(alone_in).sum();
    assemble(&title, runs.is_empty(), alone, skipped, &sections)
}

/// Most runs one page draws: a page sets runs side by side; many runs
/// over time are a history (`--history`), which keeps a few numbers of each.
pub const PAGE_RUNS: usize = 100;
/// Most bytes of result files one page draws: two results at the file
/// cap, or some 200 runs of an eight-GPU node (150 KB each). A page is at
/// most some 20 times the results it draws (typically 3).
pub const PAGE_BYTES: u64 = 32 << 20;

/// A page of runs drawn as each is added, for many files: a run's section
/// is drawn and the run dropped, so the page holds at most two runs at
/// once (the first waits for a second: a page of one run names its
/// devices without a run prefix) and the page of at most [`PAGE_RUNS`]
/// runs and [`PAGE_BYTES`] of results. A run past either cap is not
/// drawn; it is among the files not used, with why.
pub struct Page {
    first: Option<Run>,
    title: String,
    runs: usize,
    bytes: u64,
    /// Gate results drawn with nothing to compare against.
    alone: usize,
    /// Telemetry charts the page may still draw.
    charts_left: usize,
    sections: String,
    skipped: Vec<Skipped>,
    read: Vec<std::path::PathBuf>,
}

impl Default for Page {
    fn default() -> Page {
        Page {
            first: None,
            title: String::new(),
            runs: 0,
            bytes: 0,
            alone: 0,
            charts_left: crate::trace::CHARTS_PER_PAGE,
            sections: String::new(),
            skipped: Vec::new(),
            read: Vec::new(),
        }
    }
}

impl Page {
    /// Draws `run`, or names it not used when the page is full.
    pub fn add(&mut self, run: Run) {
        let why = if self.runs >= PAGE_RUNS {
            Some(format!(
                "the page draws at most {PAGE_RUNS} runs, and has them; draw more with \
                 --history DIR, or name fewer files"
            ))
        } else if self.bytes.saturating_add(run.size) > PAGE_BYTES {
            Some(format!(
                "the page draws at most {} MiB of results, and this file of {} bytes would \
                 pass it ({} bytes drawn); draw more with --history DIR, or name fewer files",
                PAGE_BYTES >> 20,
                run.size,
                self.bytes
            ))
        } else {
            None
        };
        if let Some(why) = why {
            self.skipped.push(Skipped {
                path: run.path.unwrap_or_else(|| "(a run in memory)".into()),
                why,
            });
            return;
        }
        self.runs += 1;
        self.bytes += run.size;
        self.alone += alone_in(&run);
        self.read.extend(run.path.clone());
        if self.runs == 1 {
            self.title = title_of(&run);
            self.first = Some(run);
            return;
        }
        if let Some(first) = self.first.take() {
            run_section(
                &mut self.sections,
                &first,
                &anchor(2, 0),
                &mut self.charts_left,
            );
        }
        run_section(
            &mut self.sections,
            &run,
            &anchor(2, self.runs - 1),
            &mut self.charts_left,
        );
    }

    /// Names a file that was not used.
    pub fn skip(&mut self, s: Skipped) {
        self.skipped.push(s);
    }

    /// How many runs are drawn.
    pub fn runs(&self) -> usize {
        self.runs
    }

    /// The files not used, with why.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The files of the runs drawn.
    pub fn read(&self) -> &[std::path::PathBuf] {
        &self.read
    }

    /// The whole page.
    pub fn finish(mut self) -> String {
        if let Some(first) = self.first.take() {
            run_section(
                &mut self.sections,
                &first,
                &anchor(1, 0),
                &mut self.charts_left,
            );
        }
        let title = if self.runs == 1 {
            std::mem::take(&mut self.title)
        } else {
            title_of_many(self.runs)
        };
        assemble(
            &title,
            self.runs == 0,
            self.alone,
            &self.skipped,
            &self.sections,
        )
    }
}

/// The gate results of `run` drawn with no floor, ceiling or spec.
fn alone_in(run: &Run) -> usize {
    run.report
        .devices
        .iter()
        .flat_map(|d| &d.gates)
        .filter(|g| bars::alone(g))
        .count()
}

/// The prefix of a run's anchors: none on a page of one run.
fn anchor(runs: usize, i: usize) -> String {
    if runs == 1 {
        String::new()
    } else {
        format!("run{i}-")
    }
}

fn title_of(one: &Run) -> String {
    let t = format!(
        "greta smoke {}: {}, {}",
        one.report.profile,
        verdict(one.report.status).to_uppercase(),
        when(&one.report.started_at)
    );
    cut(&t).into_owned()
}

fn title_of_many(n: usize) -> String {
    format!("greta smoke: {n} runs")
}

/// The page around the runs' `sections`.
fn assemble(title: &str, none: bool, alone: usize, skipped: &[Skipped], sections: &str) -> String {
    let mut head = String::new();
    let _ = write!(
        head,
        "<h1>{}</h1><p class=\"meta\">greta report {}: every number in the drawings is also in the tables below them. \
         <label><input type=\"checkbox\" id=\"failonly\"> failing gates only</label></p>",
        esc(title),
        env!("CARGO_PKG_VERSION")
    );
    head.push_str(&skipped_html(skipped));
    // Said once for the page, not on every bar of every run.
    if alone > 0 {
        let _ = write!(
            head,
            "<p class=\"meta\" id=\"alone\">Pale bars: nothing to compare against ({alone} gate result{} with no floor, ceiling or spec); each is drawn on its own scale, so a full bar is not \"at the ceiling\".</p>",
            if alone == 1 { "" } else { "s" }
        );
    }
    if none {
        head.push_str("<p class=\"warn\">No greta.smoke/v1 result could be read.</p>");
    }
    page(title, &[&head, sections])
}

fn run_section(b: &mut String, run: &Run, anchor: &str, charts_left: &mut usize) {
    let r: &Report = &run.report;
    let _ = write!(
        b,
        "<section class=\"run\" data-status=\"{}\" data-started-at=\"{}\"><h2>{} {} on {} device{}, {}</h2>",
        verdict(r.status),
        label(&r.started_at),
        badge(r.status),
        label(&r.profile),
        r.devices.len(),
        if r.devices.len() == 1 { "" } else { "s" },
        label(&when(&r.started_at))
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
        label(&r.greta_version),
        label(r.host.hostname.as_deref().unwrap_or("?")),
        label(r.host.os.as_deref().unwrap_or("?")),
        label(&r.backend_requested),
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
    b.push_str(&crate::health::checks("node checks of the run", &r.checks));
    // Indexed once for the grid and every device's table.
    let node = Node::of(r);
    if r.devices.len() >= 2 {
        let _ = write!(
            b,
            "<h3>Node: gates x devices</h3>{}",
            grid::html(r, &node, anchor)
        );
    }
    for (di, d) in r.devices.iter().enumerate() {
        device_section(b, &node, di, d, anchor, charts_left);
    }
    b.push_str("</section>");
}

fn device_section(
    b: &mut String,
    node: &Node<'_>,
    di: usize,
    d: &DeviceRun,
    anchor: &str,
    charts_left: &mut usize,
) {
    let info = &d.device;
    let _ = write!(
        b,
        "<h3 id=\"{anchor}dev-{}\" class=\"device\" data-device=\"{}\">{} GPU {}: {} <span class=\"meta\">({}, {} {}, driver {}, API {}, {}{}{})</span></h3>",
        d.index,
        d.index,
        badge(d.status),
        d.index,
        label(&info.name),
        label(&d.backend),
        label(&info.driver_name),
        label(&info.driver_info),
        label(&info.driver_version),
        label(&info.api_version),
        esc(info.device_type.short_name()),
        info.uuid.map(|u| format!(", uuid {u}")).unwrap_or_default(),
        info.pci_bus_id
            .as_deref()
            .map(|b| format!(", PCI {}", esc(b)))
            .unwrap_or_default()
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
        // This device's ratio to the node's median for the gate id.
        let vs = node.cell(di, &g.id).and_then(|c| c.ratio);
        let cell = |v: Option<f64>, f: fn(f64) -> String| v.map(f).unwrap_or_else(|| "-".into());
        let _ = write!(
            b,
            "<tr class=\"g-{}\" data-device=\"{}\" data-gate=\"{}\" title=\"{}\"><td>{}</td><td>{}</td>\
             <td class=\"n rate\"{}>{}</td><td>{}</td><td class=\"n floor\"{}>{}</td><td class=\"n ceiling\"{}>{}</td>\
             <td class=\"n\">{}</td><td class=\"n spec\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"reason\">{}</td></tr>",
            g.status.as_str(),
            d.index,
            label(&g.id),
            esc(&bars::describe(g)),
            label(&g.id),
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
    b.push_str(&crate::health::device(d, charts_left));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::sample;
    use std::path::Path;

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

    /// CPU seconds of this thread (not wall time: other builds load the
    /// machine's cores).
    fn cpu_s() -> f64 {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec for the call to fill.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        assert_eq!(rc, 0);
        t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
    }

    /// The page of one result of `n` devices (each running its own gate
    /// ids when `own_ids`), and the CPU seconds it took.
    fn draw(n: usize, own_ids: bool) -> (String, f64) {
        let mut r = sample(n);
        if own_ids {
            for (i, d) in r.devices.iter_mut().enumerate() {
                for g in &mut d.gates {
                    g.id = format!("{}-{i}", g.id);
                }
            }
        }
        let run = Run::from_report(r);
        let t = cpu_s();
        let page = render_runs(std::slice::from_ref(&run), &[]);
        (page, cpu_s() - t)
    }

    /// A result of N devices, then of 3N: the page must cost about three
    /// times the time and bytes, not 27 times. Each device's table used to
    /// rescan every device for every gate (cubic: 1,000 devices took
    /// minutes), and the grid draws gates x devices cells, which a file
    /// whose every device runs gates of its own makes quadratic: past
    /// `GRID_CELLS` it is left out, saying so. Run on a thread with a
    /// deadline, so that the old code fails instead of running for ever.
    #[test]
    fn a_result_of_many_devices_is_drawn_in_linear_time() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let n = 300;
            // The smaller twice, keeping the faster (the first warms up).
            let small = (0..2)
                .map(|_| draw(n, false))
                .fold((String::new(), f64::MAX), |a, b| (b.0, a.1.min(b.1)));
            let big = draw(3 * n, false);
            let own = draw(340, true);
            let own3 = draw(1020, true);
            let _ = tx.send((small, big, own, own3));
        });
        let ((small, small_s), (big, big_s), (own, _), (own3, own3_s)) = rx
            .recv_timeout(std::time::Duration::from_secs(240))
            .expect("pages of 300, 900 and 1020 devices took over 240 s: not linear");
        let (small_len, big_len, own_len, own3_len) =
            (small.len(), big.len(), own.len(), own3.len());
        eprintln!(
            "300 devices {small_s:.3} s {small_len} B; 900 devices {big_s:.3} s {big_len} B; \
             1020 devices with their own gates {own3_s:.3} s {own3_len} B"
        );
        assert!(
            big_s < 7.0 * small_s.max(0.01),
            "300 devices {small_s:.3} s, 900 devices {big_s:.3} s: not linear"
        );
        assert!(big_len < 4 * small_len, "{small_len} B, then {big_len} B");
        assert!(own3_len < 4 * own_len, "{own_len} B, then {own3_len} B");
        assert!(own3_s < 60.0, "{own3_s} s");
        // 300 devices running the same 11 gates are a grid; 1020 devices
        // of 11 gates of their own would be 11,220 x 1020 cells: left out,
        // and the page says why.
        assert!(small.contains("<table class=\"grid\">"));
        assert!(!own3.contains("<table class=\"grid\">"));
        assert!(
            own3.contains("11220 gate ids on 1020 devices") && own3.contains("left out"),
            "the page says why the grid is left out"
        );
    }

    /// Text of a result drawn where it repeats (a gate id in every cell
    /// of its grid row, a device name, a reason in each of a gate's hover
    /// texts) is cut; text drawn once (the reason's table cell) is whole.
    /// The grid used to write a gate id into each other device's "not run"
    /// cell: a 6 MB id on one of 250 devices asked for a 1.5 GB page.
    #[test]
    fn a_huge_name_is_drawn_whole_once_at_most() {
        use crate::html::label;
        let mut r = sample(200);
        let huge = "<x'&".repeat(1 << 16);
        r.devices[11].gates[0].id = huge.clone();
        r.devices[3].device.name = huge.clone();
        r.devices[5].gates[1].reason = Some(huge.clone());
        let json = r.to_json();
        let run = Run::parse(json.as_bytes(), None).unwrap();
        let page = render_runs(&[run], &[]);
        assert!(
            page.len() < 8 * json.len(),
            "{} bytes of page from {} bytes of result",
            page.len(),
            json.len()
        );
        assert_eq!(page.matches(&esc(&huge)).count(), 1, "the reason, once");
        assert!(page.contains(&label(&huge)) && label(&huge).len() < 2048);
        assert!(page.ends_with("</html>\n"));
    }

    /// A page drawn run by run is the page of the same runs drawn at
    /// once, for one run (no anchor prefix) and for several.
    #[test]
    fn a_page_drawn_run_by_run_is_the_page_of_all_runs() {
        let runs: Vec<Run> = (1..4)
            .map(|n| Run::parse(sample(n).to_json().as_bytes(), Some(Path::new("r.json"))).unwrap())
            .collect();
        let skipped = Skipped {
            path: "bad.json".into(),
            why: "not JSON".into(),
        };
        for k in [1, 3] {
            let mut p = Page::default();
            for r in &runs[..k] {
                p.add(r.clone());
            }
            p.skip(skipped.clone());
            assert_eq!(p.runs(), k);
            assert_eq!(p.read().len(), k);
            assert_eq!(
                p.finish(),
                render_runs(&runs[..k], std::slice::from_ref(&skipped)),
                "{k} runs"
            );
        }
        assert!(render_runs(&runs[..1], &[]).contains("id=\"dev-0\""));
        assert!(render_runs(&runs, &[]).contains("id=\"run2-dev-0\""));
    }

    /// A page draws at most PAGE_RUNS runs and PAGE_BYTES of results: the
    /// rest are files not used, each named with why.
    #[test]
    fn a_page_past_its_caps_names_the_runs_it_does_not_draw() {
        let one = Run::parse(sample(1).to_json().as_bytes(), None).unwrap();
        let mut p = Page::default();
        for i in 0..PAGE_RUNS + 3 {
            let mut r = one.clone();
            r.path = Some(format!("r{i}.json").into());
            p.add(r);
        }
        assert_eq!(p.runs(), PAGE_RUNS);
        assert_eq!(p.skipped().len(), 3);
        assert_eq!(
            p.skipped()[0].path,
            Path::new(&format!("r{PAGE_RUNS}.json"))
        );
        assert!(
            p.skipped()[0].why.contains("at most 100 runs"),
            "{:?}",
            p.skipped()
        );
        let page = p.finish();
        assert!(
            page.contains(&format!("r{}.json", PAGE_RUNS + 2)) && page.contains("3 files not used")
        );

        let mut p = Page::default();
        for (i, size) in [PAGE_BYTES / 2, PAGE_BYTES / 2 + 1, PAGE_BYTES / 2]
            .into_iter()
            .enumerate()
        {
            let mut r = one.clone();
            r.path = Some(format!("big{i}.json").into());
            r.size = size;
            p.add(r);
        }
        assert_eq!(p.runs(), 2);
        assert_eq!(p.skipped().len(), 1);
        assert_eq!(p.skipped()[0].path, Path::new("big1.json"));
        assert!(
            p.skipped()[0].why.contains("at most 32 MiB"),
            "{:?}",
            p.skipped()
        );
    }

    /// A file of more devices than any node has is refused, with the count.
    #[test]
    fn a_result_of_more_devices_than_a_node_has_is_refused() {
        let r = sample(crate::load::DEVICE_CAP + 1);
        let e = Run::parse(r.to_json().as_bytes(), None).unwrap_err();
        assert!(
            e.contains(&format!("{} devices", crate::load::DEVICE_CAP + 1)) && e.contains("node"),
            "{e}"
        );
        let r = sample(crate::load::DEVICE_CAP);
        assert!(Run::parse(r.to_json().as_bytes(), None).is_ok());
    }

    #[test]
    fn nothing_to_compare_against_is_said_once_per_page() {
        // Three runs of two devices, no floor, ceiling or spec anywhere.
        let runs: Vec<Run> = (0..3)
            .map(|_| {
                let mut r = sample(2);
                for g in r.devices.iter_mut().flat_map(|d| &mut d.gates) {
                    g.floor = None;
                    g.spec = None;
                    g.in_run = Default::default();
                }
                Run::from_report(r)
            })
            .collect();
        let rated = runs
            .iter()
            .flat_map(|r| &r.report.devices)
            .flat_map(|d| &d.gates)
            .filter(|g| g.metrics.as_ref().and_then(|m| m.rate).is_some())
            .count();
        assert!(rated > 10, "{rated}");
        let h = render_runs(&runs, &[]);
        assert_eq!(h.matches("nothing to compare against").count(), 1, "{h}");
        assert!(h.contains(&format!("({rated} gate results with no floor")));
        assert!(!h.contains("(no floor, ceiling or spec)"), "said per bar");
        // A run where every rate has a mark says nothing of the kind.
        let mut r = sample(1);
        for g in &mut r.devices[0].gates {
            let rate = g.metrics.as_ref().and_then(|m| m.rate);
            g.spec = rate.map(|v| greta_smoke::results::SpecRef {
                figure: v * 2.0,
                unit: g.metrics.as_ref().unwrap().unit,
                model: "m".into(),
                field: "f".into(),
                source: "s".into(),
            });
        }
        let h = render_runs(&[Run::from_report(r)], &[]);
        assert!(!h.contains("nothing to compare against"));
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

    /// The device heading names its PCI address where the result has one,
    /// escaped like every string from a file.
    #[test]
    fn the_device_heading_names_its_pci_address_escaped() {
        let mut r = sample(1);
        let page =
            |r: &greta_smoke::results::Report| render_runs(&[Run::from_report(r.clone())], &[]);
        assert!(!page(&r).contains(", PCI "), "none in the file, none shown");
        r.devices[0].device.pci_bus_id = Some("0000:c1:00.0".into());
        assert!(page(&r).contains(", PCI 0000:c1:00.0)</span></h3>"));
        r.devices[0].device.pci_bus_id = Some("<script>x</script>".into());
        let h = page(&r);
        assert!(
            h.contains(", PCI &lt;script&gt;x&lt;/script&gt;)"),
            "escaped"
        );
        assert!(!h.contains("<script>x"));
    }
}
