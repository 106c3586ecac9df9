//! Step 5c, the ultrasafe smoke gate on this machine's device, run in the
//! device child (`greta __gpu serve`) so that a driver crash or hang costs
//! the child, not the install.
//!
//! Two processes and typed messages: the request is a
//! [`greta_smoke::gpu_child::Request`], the reply its `greta.smoke/v1`
//! report or a typed error ([`greta_smoke::gpu_child::run_smoke`]). The
//! child decides `--backend auto` itself (this process loads no GPU
//! library for it). The verdict comes from the report and the child's exit
//! code, never from words on its stderr.

use std::path::Path;

use greta_smoke::results::{Report, RunStatus};
use greta_smoke::{BackendChoice, Finished, Options, Profile, SmokeRequest, Undecided};

use super::report::{SmokeReport, SmokeStatus};

/// Runs the gate; with `hip` (the staged env), `--backend hip` on that env's
/// HIP runtime, else the backend `greta smoke` would choose here.
pub(super) fn run_smoke(hip: Option<&Path>) -> SmokeReport {
    let mut opts = Options::new(SmokeRequest {
        backend: if hip.is_some() {
            BackendChoice::Hip
        } else {
            BackendChoice::Auto
        },
        ..SmokeRequest::new(Profile::Ultrasafe)
    });
    opts.progress = false;
    let env: Vec<(&str, &std::ffi::OsStr)> = hip
        .map(|env| (greta_vocab::EnvVars::GRETA_ENV, env.as_os_str()))
        .into_iter()
        .collect();
    verdict(greta_smoke::gpu_child::run_smoke_with_env(&opts, &env))
}

/// The verdict from the child's exit code (0 pass, 1 a gate failed, else
/// could not run; `greta smoke`'s contract) and its report, which must
/// agree: a report that says otherwise, or none at all, leaves it
/// undecided, with the child's reason.
pub fn verdict(asked: Result<Finished, Undecided>) -> SmokeReport {
    match asked {
        Ok(f) => {
            let status = match (f.exit_code, f.outcome.report.status) {
                (0, RunStatus::Pass) => SmokeStatus::Pass,
                (1, RunStatus::Fail) => SmokeStatus::Fail,
                _ => SmokeStatus::Undecided,
            };
            SmokeReport {
                status,
                note: summary(&f.outcome.report),
            }
        }
        Err(u) => SmokeReport {
            status: SmokeStatus::Undecided,
            note: u.message,
        },
    }
}

/// The report's one-line summary ("smoke ultrasafe: PASS: 2 passed, ..."),
/// as `greta smoke` renders it under its table: its lines whole (wrapped
/// to a terminal, the last line would be the summary's tail alone).
fn summary(r: &Report) -> String {
    greta_smoke::table::render_with(r, greta_smoke::table::Colour::Off)
        .lines()
        .next_back()
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use greta_smoke::gpu_child::ErrorKind;
    use greta_smoke::Outcome;

    fn report(status: &str) -> Report {
        serde_json::from_value(serde_json::json!({
            "schema": greta_smoke::results::SCHEMA,
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
        }))
        .unwrap()
    }

    fn finished(code: u8, status: &str) -> Result<Finished, Undecided> {
        Ok(Finished {
            outcome: Outcome {
                report: report(status),
                written: None,
                write_error: None,
            },
            exit_code: code,
        })
    }

    #[test]
    fn a_passing_report_is_a_pass_with_its_summary_line() {
        let s = verdict(finished(0, "pass"));
        assert_eq!(s.status, SmokeStatus::Pass);
        assert_eq!(
            s.note,
            "smoke ultrasafe: PASS: 0 passed, 0 failed, 0 skipped in 2.9 s (seed 7)"
        );
    }

    #[test]
    fn a_failing_report_is_a_fail() {
        let s = verdict(finished(1, "fail"));
        assert_eq!(s.status, SmokeStatus::Fail);
        assert!(s.note.starts_with("smoke ultrasafe: FAIL:"), "{}", s.note);
    }

    #[test]
    fn report_and_exit_code_must_agree() {
        // Exit 2 with a passing report: the results could not be written.
        assert_eq!(verdict(finished(2, "pass")).status, SmokeStatus::Undecided);
        assert_eq!(
            verdict(finished(0, "undecided")).status,
            SmokeStatus::Undecided
        );
        assert_eq!(verdict(finished(1, "pass")).status, SmokeStatus::Undecided);
    }

    #[test]
    fn no_report_is_undecided_with_the_childs_reason() {
        let s = verdict(Err(Undecided {
            kind: ErrorKind::CouldNotRun,
            message: "no HIP device found: x".into(),
        }));
        assert_eq!(s.status, SmokeStatus::Undecided);
        assert_eq!(s.note, "no HIP device found: x");
    }
}
