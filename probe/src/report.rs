//! The doctor's report: the `greta.doctor/v1` JSON (a stable contract,
//! documented in docs/doctor.md) and its human rendering (one line per
//! check with glyph and time, the findings with fixes, one summary line).

use crate::facts::{Facts, Vendor};
use crate::rules::{Finding, Severity};
use greta_vocab::{visible, Visible};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

pub const SCHEMA: &str = "greta.doctor/v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    Pass,
    Warn,
    Fail,
}

/// One line of the check list: a live/sysroot collector, or one `--from` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckLine {
    pub id: String,
    pub title: String,
    pub status: CheckStatus,
    pub duration_ms: f64,
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub fail: usize,
    pub warn: usize,
    pub ok: usize,
    /// 0: no `fail` finding; 1: at least one; 2: none, but an input the
    /// checks needed could not be read (a `--sysroot` capture file), so
    /// "no fail" is not a conclusion.
    pub exit_code: u8,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub greta_version: String,
    /// "live", "sysroot" or "from".
    pub mode: String,
    pub checks: Vec<CheckLine>,
    pub facts: Facts,
    /// Only the findings raised.
    pub findings: Vec<Finding>,
    pub summary: Summary,
    /// Things the reader should know about the input (unrecognised files...).
    pub notes: Vec<String>,
    /// An input the checks needed could not be read (said in `notes`):
    /// without a `fail` finding, the exit code is 2, not 0.
    #[serde(skip)]
    undecided: bool,
}

impl Report {
    pub fn new(
        mode: &str,
        checks: Vec<CheckLine>,
        facts: Facts,
        findings: Vec<Finding>,
        notes: Vec<String>,
    ) -> Report {
        let count = |s| findings.iter().filter(|f| f.severity == s).count();
        let fail = count(Severity::Fail);
        Report {
            schema: SCHEMA.into(),
            greta_version: env!("CARGO_PKG_VERSION").into(),
            mode: mode.into(),
            summary: Summary {
                fail,
                warn: count(Severity::Warn),
                ok: count(Severity::Ok),
                exit_code: u8::from(fail > 0),
            },
            checks,
            facts,
            findings,
            notes,
            undecided: false,
        }
    }

    /// Marks the report undecided (see [`Summary::exit_code`]).
    pub fn undecided(mut self) -> Report {
        self.set_undecided();
        self
    }

    fn set_undecided(&mut self) {
        self.undecided = true;
        if self.summary.fail == 0 {
            self.summary.exit_code = 2;
        }
    }

    /// Keeps only the check or finding named `id` (`--check ID`); false when
    /// `id` names neither.
    pub fn restrict(&mut self, id: &str) -> bool {
        let is_check = self.checks.iter().any(|c| c.id == id);
        let is_finding = crate::rules::catalogue().iter().any(|r| r.id == id);
        if !is_check && !is_finding {
            return false;
        }
        if is_check {
            self.checks.retain(|c| c.id == id);
            self.findings
                .retain(|f| crate::rules::check_of(&f.id) == Some(id));
        } else {
            self.findings.retain(|f| f.id == id);
        }
        let undecided = self.undecided;
        *self = Report::new(
            &self.mode,
            self.checks.clone(),
            self.facts.clone(),
            self.findings.clone(),
            self.notes.clone(),
        );
        if undecided {
            self.set_undecided();
        }
        true
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The report for people. Every string in it may hold text from the
    /// machine or the paste (a device name, a path, an evidence line), so
    /// each is printed through [`Visible`]: control and bidi characters
    /// are shown as escapes, never acted on by the terminal. The JSON
    /// keeps the exact values.
    pub fn render(&self, color: bool) -> String {
        self.render_detailed(color, false)
    }

    /// [`Report::render`]; `verbose` (`greta doctor -v`) adds under each
    /// check what it read (`crate::detail`) and every evidence line.
    pub fn render_detailed(&self, color: bool, verbose: bool) -> String {
        self.render_within(color, verbose, None)
    }

    /// [`Report::render_detailed`] no wider than `width` columns (the
    /// terminal's; `None`: every line whole): a long line goes on under
    /// itself with a hanging indent, a check's summary under its own
    /// column where there is room for it.
    pub fn render_within(&self, color: bool, verbose: bool, width: Option<usize>) -> String {
        let lines = self.render_lines(color, verbose);
        // "  ✓ TITLE  12.3 ms  summary": the summary's column.
        let summary_at = 2 + 2 + self.title_width() + 2 + 8 + 2;
        let mut o = String::new();
        for (line, hang) in &lines.lines {
            // A check's summary hangs under its own column where there is
            // room for it; any other line four columns in from its text.
            let indent = match (hang, width) {
                (Hang::Summary, Some(cols)) if summary_at + SUMMARY_ROOM <= cols => summary_at - 2,
                _ => 4,
            };
            let _ = writeln!(o, "{}", greta_vocab::width::wrap_line(line, width, indent));
        }
        o
    }

    /// The checks' title column: as wide as the longest, at most 48.
    fn title_width(&self) -> usize {
        self.checks
            .iter()
            .map(|c| visible(&c.title).chars().count())
            .max()
            .unwrap_or(0)
            .min(48)
    }

    fn render_lines(&self, color: bool, verbose: bool) -> Lines {
        let p = Paint(color);
        let mut o = Lines::default();
        let _ = writeln!(o, "{}", p.bold(&format!("greta doctor ({})", self.mode)));
        let w = self.title_width();
        for c in &self.checks {
            let glyph = match c.status {
                CheckStatus::Pass => p.green("✓"),
                CheckStatus::Warn => p.yellow("!"),
                CheckStatus::Fail => p.red("✗"),
            };
            o.hang = Hang::Summary;
            let _ = writeln!(
                o,
                "  {glyph} {:<w$}  {:>8}  {}",
                Visible(&c.title),
                p.dim(&fmt_ms(c.duration_ms)),
                Visible(&c.summary)
            );
            o.hang = Hang::Text;
            if verbose {
                for l in crate::detail::lines(&c.id, &c.title, &self.facts) {
                    let _ = writeln!(o, "      {} {}", p.dim("·"), Visible(&l));
                }
            }
        }
        for n in &self.notes {
            let _ = writeln!(o, "  {} {}", p.yellow("note:"), Visible(n));
        }
        // One pasted file: its path is said on its check's line, and each
        // evidence line from it says only `line N`.
        let one_file = match self.checks.as_slice() {
            [only] if self.mode == "from" => Some(format!("{}:", only.title)),
            _ => None,
        };
        let one_file = one_file.as_deref();
        if !self.findings.is_empty() {
            let _ = writeln!(o, "\n{}", p.bold("Findings"));
        }
        for f in &self.findings {
            let (glyph, sev) = match f.severity {
                Severity::Fail => (p.red("✗"), p.red("fail")),
                Severity::Warn => (p.yellow("!"), p.yellow("warn")),
                Severity::Ok => (p.green("✓"), p.green("ok")),
            };
            let _ = writeln!(
                o,
                "  {glyph} {sev} {}  {}",
                p.bold(&visible(&f.id)),
                Visible(&f.title)
            );
            let _ = writeln!(o, "      {}", Visible(&f.message));
            let shown = if verbose { usize::MAX } else { 8 };
            // Each line once: two rules or two sources can give one
            // finding the same line.
            let mut seen = std::collections::HashSet::new();
            let evidence: Vec<&String> = f
                .evidence
                .iter()
                .filter(|e| seen.insert(e.as_str()))
                .collect();
            for e in evidence.iter().take(shown) {
                let at = one_file
                    .and_then(|p| e.strip_prefix(p))
                    .filter(|at| at.starts_with(|c: char| c.is_ascii_digit()));
                let e = match at {
                    Some(at) => format!("line {at}"),
                    None => e.to_string(),
                };
                let _ = writeln!(o, "      {} {}", p.dim("evidence:"), Visible(&e));
            }
            if evidence.len() > shown {
                let _ = writeln!(
                    o,
                    "      {} … {} more",
                    p.dim("evidence:"),
                    evidence.len() - shown
                );
            }
            let _ = writeln!(o, "      {} {}", p.bold("fix:"), Visible(&f.fix.text));
            for c in &f.fix.commands {
                let _ = writeln!(o, "        $ {}", Visible(c));
            }
        }
        let gpus: Vec<String> = self
            .facts
            .gpus
            .iter()
            .filter(|g| g.vendor != Vendor::Cpu)
            .map(|g| visible(&g.label(|| "unnamed GPU".to_string())).into_owned())
            .collect();
        let s = &self.summary;
        // Say what each number counts: "0 fail, 2 warn, 0 ok" alone read as
        // if no check had passed.
        let by = |st: CheckStatus| self.checks.iter().filter(|c| c.status == st).count();
        let unit = if self.mode == "from" { "file" } else { "check" };
        let n = self.checks.len();
        let findings = s.fail + s.warn + s.ok;
        let line = format!(
            "{n} {unit}{} ({} passed, {} with warnings, {} failed); {findings} finding{} ({} fail, {} warn, {} ok) — {} — exit {}",
            if n == 1 { "" } else { "s" },
            by(CheckStatus::Pass),
            by(CheckStatus::Warn),
            by(CheckStatus::Fail),
            if findings == 1 { "" } else { "s" },
            s.fail,
            s.warn,
            s.ok,
            if gpus.is_empty() {
                "no GPU seen".to_string()
            } else {
                format!("{} GPU(s): {}", gpus.len(), compact(&gpus))
            },
            s.exit_code
        );
        let line = if s.fail > 0 {
            p.red(&line)
        } else if s.warn > 0 {
            p.yellow(&line)
        } else {
            p.green(&line)
        };
        let _ = writeln!(o, "\n{} {line}", p.bold("Summary:"));
        o
    }
}

/// The narrowest summary column worth hanging a check's summary under;
/// with less room (80 columns beside long titles) it goes on four columns
/// in, as every other line does.
const SUMMARY_ROOM: usize = 40;

/// How a line of the report goes on when it is wider than the terminal.
#[derive(Clone, Copy, Default)]
enum Hang {
    /// Four columns in from its own text.
    #[default]
    Text,
    /// Under the check's summary column.
    Summary,
}

/// The report's lines as they are written, each with its [`Hang`].
#[derive(Default)]
struct Lines {
    lines: Vec<(String, Hang)>,
    cur: String,
    hang: Hang,
}

impl std::fmt::Write for Lines {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for piece in s.split_inclusive('\n') {
            match piece.strip_suffix('\n') {
                Some(end) => {
                    self.cur.push_str(end);
                    let line = std::mem::take(&mut self.cur);
                    self.lines.push((line, self.hang));
                }
                None => self.cur.push_str(piece),
            }
        }
        Ok(())
    }
}

/// "8× AMD Instinct MI300X (gfx942)" instead of eight copies.
fn compact(names: &[String]) -> String {
    let mut out: Vec<(String, usize)> = Vec::new();
    for n in names {
        match out.iter_mut().find(|(x, _)| x == n) {
            Some((_, c)) => *c += 1,
            None => out.push((n.clone(), 1)),
        }
    }
    out.into_iter()
        .map(|(n, c)| if c > 1 { format!("{c}× {n}") } else { n })
        .collect::<Vec<_>>()
        .join(", ")
}

fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn red(&self, s: &str) -> String {
        self.wrap("31", s)
    }
    fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    fn yellow(&self, s: &str) -> String {
        self.wrap("33", s)
    }
    fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
}

/// greta's one colour decision (`--color`, NO_COLOR, TERM=dumb) for a
/// stream that `is_tty` says is or is not a terminal.
pub fn use_color(is_tty: bool) -> bool {
    greta_vocab::colour::use_color(is_tty)
}

/// `--from` mode: one check line per file; its glyph is the worst finding
/// that belongs to the file (`!` when nothing was recognised). A finding
/// belongs to the files its evidence cites (`path:line`); one whose
/// evidence cites no line of any file (a fact, "Vulkan device llvmpipe")
/// belongs to the files whose own facts raise it (`raised_by`: file index ->
/// finding ids), or, raised only by files together, to every file that
/// said something. Either way a finding is counted on some file: a warning
/// beside a ✓ and "0 with warnings" would contradict itself.
pub fn file_checks(
    files: &[crate::from::FileReport],
    findings: &[Finding],
    raised_by: &dyn Fn(usize) -> Vec<String>,
) -> (Vec<CheckLine>, Vec<String>) {
    let cites = |x: &Finding, path: &str| {
        let cite = format!("{path}:");
        x.evidence.iter().any(|e| e.starts_with(&cite))
    };
    let mut owners: Vec<Vec<usize>> = findings
        .iter()
        .map(|x| {
            (0..files.len())
                .filter(|&i| cites(x, &files[i].path))
                .collect()
        })
        .collect();
    if owners.iter().any(Vec::is_empty) {
        let alone: Vec<Vec<String>> = (0..files.len()).map(raised_by).collect();
        for (x, o) in findings.iter().zip(owners.iter_mut()) {
            if o.is_empty() {
                *o = (0..files.len())
                    .filter(|&i| alone[i].contains(&x.id))
                    .collect();
            }
            if o.is_empty() {
                *o = (0..files.len())
                    .filter(|&i| !files[i].formats.is_empty())
                    .collect();
            }
        }
    }
    let mut checks = Vec::new();
    let mut notes = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let kinds: Vec<&str> = f.formats.iter().map(|x| x.label()).collect();
        let worst = findings
            .iter()
            .zip(&owners)
            .filter(|(_, o)| o.contains(&i))
            .map(|(x, _)| x.severity)
            .max();
        let status = match (worst, &f.note) {
            (Some(Severity::Fail), _) => CheckStatus::Fail,
            (Some(Severity::Warn), _) | (_, Some(_)) => CheckStatus::Warn,
            _ => CheckStatus::Pass,
        };
        let summary = match (&f.note, kinds.is_empty()) {
            (Some(n), true) => n.clone(),
            (Some(n), false) => format!("{}: {}; {n}", kinds.join(" + "), f.summary),
            (None, _) => format!("{}: {}", kinds.join(" + "), f.summary),
        };
        if let Some(n) = &f.note {
            notes.push(format!("{}: {n}", f.path));
        }
        checks.push(CheckLine {
            id: format!("file:{}", i + 1),
            title: f.path.clone(),
            status,
            duration_ms: (f.micros as f64 / 100.0).round() / 10.0,
            summary,
        });
    }
    (checks, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_only_on_tty_without_no_color() {
        assert!(!use_color(false));
        let p = Paint(false);
        assert_eq!(p.red("x"), "x");
        assert_eq!(Paint(true).red("x"), "\x1b[31mx\x1b[0m");
    }

    #[test]
    fn exit_code_follows_fail_findings() {
        let r = Report::new("from", vec![], Facts::default(), vec![], vec![]);
        assert_eq!(r.summary.exit_code, 0);
        assert_eq!(r.schema, SCHEMA);
        assert!(compact(&["a".into(), "a".into(), "b".into()]).starts_with("2× a"));
    }

    #[test]
    fn summary_line_says_what_it_counts() {
        let line = |id: &str, status| CheckLine {
            id: id.into(),
            title: id.into(),
            status,
            duration_ms: 0.0,
            summary: String::new(),
        };
        let warn = Finding {
            id: "vulkan.cpu-only".into(),
            severity: Severity::Warn,
            title: "t".into(),
            message: "m".into(),
            evidence: vec![],
            fix: crate::rules::Fix {
                text: "f".into(),
                commands: vec![],
            },
        };
        let checks = vec![
            line("pci", CheckStatus::Pass),
            line("kfd", CheckStatus::Pass),
            line("vulkan-devices", CheckStatus::Warn),
        ];
        let r = Report::new(
            "live",
            checks,
            Facts::default(),
            vec![warn.clone(), warn],
            vec![],
        );
        let out = r.render(false);
        assert!(
            out.contains("Summary: 3 checks (2 passed, 1 with warnings, 0 failed); 2 findings (0 fail, 2 warn, 0 ok) — no GPU seen — exit 0"),
            "{out}"
        );
        let r = Report::new(
            "from",
            vec![line("file:1", CheckStatus::Pass)],
            Facts::default(),
            vec![],
            vec![],
        );
        assert!(r
            .render(false)
            .contains("1 file (1 passed, 0 with warnings, 0 failed); 0 findings"));
    }
}
