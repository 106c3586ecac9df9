//! The `--fix` sequence: plan, show, ask once, apply, run doctor again.

use super::{apply, plan, show, undo, Recorded, Remedy, Takes};
use anyhow::{bail, Result};
use greta_probe::{Report, Root};
use serde::Serialize;
use std::path::Path;

pub const SCHEMA: &str = "greta.doctor-fix/v1";

/// How the user answered, or would have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consent {
    /// `--yes`.
    Given,
    /// `--dry-run`: show only.
    DryRun,
    /// Ask on the terminal.
    Ask,
}

/// What became of one remedy's finding when doctor ran again.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct After {
    pub finding: String,
    /// `gone`, `pending` (raised still, as the remedy said it would be
    /// until a login, shell or boot) or `still-raised` (the remedy did not
    /// clear it).
    pub status: &'static str,
    pub takes: Takes,
}

/// `greta doctor --fix --json`.
#[derive(Debug, Clone, Serialize)]
pub struct FixOutput {
    pub schema: &'static str,
    /// `dry-run`, `declined`, `applied`, `nothing` or `undone`.
    pub outcome: &'static str,
    pub remedies: Vec<Remedy>,
    /// Raised findings with a remedy that cannot apply here, and why.
    pub not_fixable: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undo_record: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<After>,
    /// What `--undo` put back.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub restored: Vec<Recorded>,
}

impl FixOutput {
    fn new(outcome: &'static str, remedies: Vec<Remedy>, not_fixable: Vec<String>) -> FixOutput {
        FixOutput {
            schema: SCHEMA,
            outcome,
            remedies,
            not_fixable,
            undo_record: None,
            after: Vec::new(),
            restored: Vec::new(),
        }
    }

    /// Exit code: 1 when a remedy that should have cleared its finding
    /// did not.
    pub fn failed(&self) -> bool {
        self.after.iter().any(|a| a.status == "still-raised")
    }

    pub fn render(&self) -> String {
        let mut o = String::new();
        if self.outcome == "undone" {
            o.push_str(&format!(
                "Undone ({}):\n",
                self.undo_record.as_deref().unwrap_or("")
            ));
            for c in &self.restored {
                match c {
                    Recorded::Write { path, before, .. } => o.push_str(&format!(
                        "  {path}: {}\n",
                        if before.is_some() {
                            "restored"
                        } else {
                            "removed"
                        }
                    )),
                    Recorded::Move { from, .. } => o.push_str(&format!("  {from}: moved back\n")),
                }
            }
            return o;
        }
        if self.remedies.is_empty() {
            o.push_str("Nothing doctor --fix can change safely for these findings.\n");
        }
        for r in &self.remedies {
            o.push_str(&format!("{}: {} ({})\n", r.finding, r.title, r.takes.say()));
            for c in &r.changes {
                for l in show(c).lines() {
                    o.push_str(&format!("    {l}\n"));
                }
            }
            if let Some(t) = &r.then {
                o.push_str(&format!("    then: {t}\n"));
            }
        }
        for n in &self.not_fixable {
            o.push_str(&format!("not fixed: {n}\n"));
        }
        match self.outcome {
            "dry-run" => o.push_str("Dry run: nothing was changed.\n"),
            "declined" => o.push_str("Nothing was changed.\n"),
            _ => {}
        }
        if let Some(u) = &self.undo_record {
            o.push_str(&format!(
                "Applied. Undo record: {u} (greta doctor --fix --undo puts every file back)\n"
            ));
        }
        if !self.after.is_empty() {
            o.push_str("Doctor again:\n");
            for a in &self.after {
                let what = match a.status {
                    "gone" => "gone".to_string(),
                    "pending" => format!("still raised: {}", a.takes.say()),
                    _ => "still raised: the change did not clear it".to_string(),
                };
                o.push_str(&format!("  {}: {what}\n", a.finding));
            }
        }
        o
    }
}

fn ask(n: usize) -> Result<bool> {
    let question = format!("Apply these {n} change{}?", if n == 1 { "" } else { "s" });
    match crate::ask::yes_no(&question)? {
        Some(yes) => Ok(yes),
        None => bail!("--fix asks before it changes anything, and standard input is not a terminal: give --yes to apply, or --dry-run to see the changes"),
    }
}

/// Plans the remedies for `report` on the machine at `dir` (read through
/// `root`), and applies them as `consent` allows; `again` runs doctor once
/// more on the same machine.
pub fn run(
    dir: &Path,
    root: &Root,
    report: &Report,
    consent: Consent,
    again: &dyn Fn() -> Result<Report>,
) -> Result<FixOutput> {
    let (remedies, not_fixable) = plan(dir, root, report);
    if remedies.is_empty() {
        return Ok(FixOutput::new("nothing", remedies, not_fixable));
    }
    let n: usize = remedies.iter().map(|r| r.changes.len()).sum();
    match consent {
        Consent::DryRun => return Ok(FixOutput::new("dry-run", remedies, not_fixable)),
        Consent::Ask => {
            // What will change is shown before the question.
            let shown = FixOutput::new("dry-run", remedies.clone(), not_fixable.clone());
            let text = shown.render();
            crate::out::err_text(format_args!(
                "{}",
                text.trim_end_matches("Dry run: nothing was changed.\n")
            ));
            if !ask(n)? {
                return Ok(FixOutput::new("declined", remedies, not_fixable));
            }
        }
        Consent::Given => {}
    }
    let changes: Vec<_> = remedies.iter().flat_map(|r| r.changes.clone()).collect();
    let record = apply(dir, &changes)?;
    let later = again()?;
    let after = remedies
        .iter()
        .map(|r| {
            let raised = later.findings.iter().any(|f| f.id == r.finding);
            After {
                finding: r.finding.clone(),
                status: match (raised, r.takes) {
                    (false, _) => "gone",
                    (true, Takes::Now) => "still-raised",
                    (true, _) => "pending",
                },
                takes: r.takes,
            }
        })
        .collect();
    let mut out = FixOutput::new("applied", remedies, not_fixable);
    out.undo_record = Some(record.display().to_string());
    out.after = after;
    Ok(out)
}

/// `--fix --undo`.
pub fn run_undo(dir: &Path) -> Result<FixOutput> {
    let (record, restored) = undo(dir)?;
    let mut out = FixOutput::new("undone", Vec::new(), Vec::new());
    out.undo_record = Some(record.display().to_string());
    out.restored = restored;
    Ok(out)
}
