//! Step 5c, the ultrasafe smoke gate on this machine's device, run as a
//! child (`greta smoke --profile ultrasafe --json`) so that a driver crash
//! or hang costs the child, not the install.
//!
//! The child's result travels as its typed report: with `--json` it prints
//! exactly one `greta.smoke/v1` report on stdout (its table and progress go
//! to stderr), which is deserialized into [`Report`] here. The verdict comes
//! from the report and the exit code, never from words on stderr; stderr is
//! only quoted as evidence when there is no report (the run could not
//! start, e.g. no device).

use std::path::Path;
use std::time::Duration;

use greta_smoke::results::{Report, RunStatus, SCHEMA};

use super::report::{SmokeReport, SmokeStatus};
use crate::envs::installer;

/// Runs the gate; with `hip` (the staged env), `--backend hip` on that env's
/// HIP runtime.
pub(super) fn run_smoke(hip: Option<&Path>) -> SmokeReport {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            return SmokeReport {
                status: SmokeStatus::Undecided,
                note: format!("cannot find greta itself: {e}"),
            }
        }
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["smoke", "--profile", "ultrasafe", "--json"]);
    if let Some(env) = hip {
        cmd.args(["--backend", "hip"])
            .env(greta_vocab::EnvVars::GRETA_ENV, env);
    }
    match installer::run(cmd, Some(Duration::from_secs(300))) {
        Err(e) => SmokeReport {
            status: SmokeStatus::Undecided,
            note: format!("{e:#}"),
        },
        Ok(o) => read(o.status.code(), &o.stdout, &o.stderr),
    }
}

/// Why the child's stdout is not a report.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NoReport {
    #[error("no report on stdout")]
    Empty,
    #[error("stdout is not a {SCHEMA} report: {0}")]
    Unreadable(String),
    #[error("stdout is a {found:?} report, not {SCHEMA}")]
    OtherSchema { found: String },
}

/// The child's stdout as its typed report.
pub fn parse_report(stdout: &str) -> Result<Report, NoReport> {
    let text = stdout.trim();
    if text.is_empty() {
        return Err(NoReport::Empty);
    }
    let report: Report =
        serde_json::from_str(text).map_err(|e| NoReport::Unreadable(e.to_string()))?;
    if report.schema != SCHEMA {
        return Err(NoReport::OtherSchema {
            found: report.schema,
        });
    }
    Ok(report)
}

/// The verdict from the exit code (0 pass, 1 a gate failed, else could not
/// run; `greta smoke`'s contract) and the report, which must agree: a
/// report that says otherwise, or none at all, leaves it undecided.
pub fn read(code: Option<i32>, stdout: &str, stderr: &str) -> SmokeReport {
    match parse_report(stdout) {
        Ok(r) => {
            let status = match (code, r.status) {
                (Some(0), RunStatus::Pass) => SmokeStatus::Pass,
                (Some(1), RunStatus::Fail) => SmokeStatus::Fail,
                _ => SmokeStatus::Undecided,
            };
            SmokeReport {
                status,
                note: summary(&r),
            }
        }
        Err(why) => SmokeReport {
            status: SmokeStatus::Undecided,
            // What the child said last (e.g. "no HIP device found: ..."),
            // else why its stdout was no report.
            note: stderr
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map_or_else(|| why.to_string(), str::to_string),
        },
    }
}

/// The report's one-line summary ("smoke ultrasafe: PASS: 2 passed, ..."),
/// as `greta smoke` renders it under its table.
fn summary(r: &Report) -> String {
    greta_smoke::table::render(r)
        .lines()
        .next_back()
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: &str) -> String {
        serde_json::json!({
            "schema": SCHEMA,
            "greta_version": "0.1.0",
            "started_at": "2026-11-21T22:49:37Z",
            "finished_at": "2026-11-21T22:49:40Z",
            "wall_s": 2.9,
            "host": {"hostname": null, "os": null, "kernel": null, "cpu": null},
            "profile": "ultrasafe",
            "backend_requested": "auto",
            "settings": {
                "repeat": null, "timeout_s": 10.0, "floor_fraction": 0.75,
                "baseline": null, "gates": [], "seed": 7, "include_test_gates": false
            },
            "status": status,
            "devices": []
        })
        .to_string()
    }

    #[test]
    fn a_passing_report_is_a_pass_with_its_summary_line() {
        let s = read(
            Some(0),
            &report("pass"),
            "progress\nsmoke ultrasafe: PASS\n",
        );
        assert_eq!(s.status, SmokeStatus::Pass);
        assert_eq!(
            s.note,
            "smoke ultrasafe: PASS: 0 passed, 0 failed, 0 skipped in 2.9 s (seed 7)"
        );
    }

    #[test]
    fn a_failing_report_is_a_fail() {
        let s = read(Some(1), &report("fail"), "");
        assert_eq!(s.status, SmokeStatus::Fail);
        assert!(s.note.starts_with("smoke ultrasafe: FAIL:"), "{}", s.note);
    }

    #[test]
    fn report_and_exit_code_must_agree() {
        // Exit 2 with a passing report: the results could not be written.
        assert_eq!(
            read(Some(2), &report("pass"), "").status,
            SmokeStatus::Undecided
        );
        assert_eq!(
            read(Some(0), &report("undecided"), "").status,
            SmokeStatus::Undecided
        );
        // Killed by a signal.
        assert_eq!(
            read(None, &report("pass"), "").status,
            SmokeStatus::Undecided
        );
    }

    #[test]
    fn no_report_is_undecided_with_the_last_words_on_stderr() {
        let s = read(
            Some(2),
            "",
            "greta smoke: backend hip: asked\ngreta smoke: could not run: no HIP device found: x\n\n",
        );
        assert_eq!(s.status, SmokeStatus::Undecided);
        assert_eq!(s.note, "greta smoke: could not run: no HIP device found: x");
        // Even exit 0 decides nothing without a report.
        let s = read(Some(0), "not json", "");
        assert_eq!(s.status, SmokeStatus::Undecided);
        assert!(
            s.note.starts_with("stdout is not a greta.smoke/v1 report"),
            "{}",
            s.note
        );
    }

    #[test]
    fn parse_errors_are_typed() {
        assert_eq!(parse_report("  \n"), Err(NoReport::Empty));
        let other = report("pass").replace(SCHEMA, "greta.smoke/v9");
        assert_eq!(
            parse_report(&other),
            Err(NoReport::OtherSchema {
                found: "greta.smoke/v9".into()
            })
        );
        assert!(matches!(
            parse_report("{\"schema\": 1}"),
            Err(NoReport::Unreadable(_))
        ));
        let r = parse_report(&report("fail")).unwrap();
        assert_eq!(
            (r.profile.as_str(), r.status),
            ("ultrasafe", RunStatus::Fail)
        );
    }
}
