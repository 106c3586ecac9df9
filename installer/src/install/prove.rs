//! Step 5, prove: the staged env is checked before it may replace the
//! previous one: imports and framework gates, the HIP runtime (rocm
//! profiles), then the ultrasafe smoke gate on the device. Any failure is
//! a finding and stops the install before the swap.

use anyhow::Result;
use std::time::Instant;

use super::build::Built;
use super::report::{SmokeReport, SmokeStatus};
use super::{hip, smoke, InstallInput, Plan, Timings};
use crate::envs::{check, receipt::HipRef};

/// What the checks found in the staged env.
pub(super) struct Proof {
    /// Per module: what the import check reported.
    pub modules: crate::envs::check_results::Checks,
    pub verdict: Verdict,
}

/// Whether the staged env may be swapped in.
#[derive(Debug)]
pub(super) enum Verdict {
    /// Every check passed (or was not asked for).
    Proven {
        hip: Option<HipRef>,
        smoke: SmokeReport,
    },
    /// A check failed: the previous env stays, nothing is installed.
    Stopped {
        findings: Vec<check::Finding>,
        smoke: SmokeReport,
    },
}

pub(super) fn prove(
    plan: &Plan,
    input: &InstallInput,
    built: &Built,
    prestarted: check::Prestarted,
    timings: &mut Timings,
) -> Result<Proof> {
    let t = Instant::now();
    let expect = check::Expect {
        profile: plan.profile.clone(),
        backend: plan.backend,
        version: plan
            .backend_version
            .as_deref()
            .map(crate::envs::receipt::major_minor),
        probe: plan.probe.clone(),
    };
    let report = prestarted.run(&expect, input.import_timeout)?;
    timings.insert("import_check", t);
    let verdict = judge(plan, input, built, report.findings, timings);
    Ok(Proof {
        modules: report.modules,
        verdict,
    })
}

/// The import check's findings, then the HIP step, then the smoke gate:
/// the first that fails stops the install (the later ones are skipped).
fn judge(
    plan: &Plan,
    input: &InstallInput,
    built: &Built,
    findings: Vec<check::Finding>,
    timings: &mut Timings,
) -> Verdict {
    if !findings.is_empty() {
        let smoke =
            SmokeReport::skipped("the post-install check (imports, framework gates) failed");
        return Verdict::Stopped { findings, smoke };
    }
    // The HIP runtime (rocm profiles): found for the staged env; a failure
    // is a finding and the previous env stays.
    let hip = if plan.backend == greta_vocab::Backend::Rocm {
        let t = Instant::now();
        let r = hip::hip_step(plan, &built.staging, input.verbose);
        timings.insert("hip", t);
        match r {
            Ok(h) => Some(h),
            Err(finding) => {
                let smoke = SmokeReport::skipped("the HIP step failed");
                return Verdict::Stopped {
                    findings: vec![*finding],
                    smoke,
                };
            }
        }
    } else {
        None
    };
    let smoke = if input.smoke {
        smoke::run_smoke(hip.as_ref().map(|_| built.staging.path.as_path()))
    } else {
        SmokeReport::skipped("--no-smoke")
    };
    if smoke.status == SmokeStatus::Fail {
        let finding = smoke_failed(&smoke);
        return Verdict::Stopped {
            findings: vec![finding],
            smoke,
        };
    }
    Verdict::Proven { hip, smoke }
}

/// The finding a failed ultrasafe gate becomes.
fn smoke_failed(smoke: &SmokeReport) -> check::Finding {
    check::Finding {
        id: "smoke.ultrasafe-failed".into(),
        severity: greta_vocab::Severity::Fail,
        title: "The ultrasafe smoke gate failed".into(),
        message: "The ultrasafe smoke gate failed on this machine, so the new env was not put in place.".into(),
        evidence: vec![smoke.note.clone()],
        fix: greta_vocab::Fix {
            text: "Find the cause with `greta doctor`; to install the env anyway, rerun with --no-smoke.".into(),
            commands: vec!["greta doctor".into()],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_smoke_gate_is_a_finding_with_its_evidence() {
        let smoke = SmokeReport {
            status: SmokeStatus::Fail,
            note: "smoke ultrasafe: FAIL: 1 passed, 1 failed, 0 skipped in 0.5 s (seed 7)".into(),
        };
        let f = smoke_failed(&smoke);
        assert_eq!(f.id, "smoke.ultrasafe-failed");
        assert_eq!(f.severity, greta_vocab::Severity::Fail);
        assert_eq!(f.evidence, std::slice::from_ref(&smoke.note));
    }
}
