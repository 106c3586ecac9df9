//! What `greta install` reports (text and `--json`): the report types and
//! their assembly from the steps' reports. The JSON shape is a contract
//! (scripts read `report.smoke.status`, `report.findings`, ...): fields are
//! only ever added.

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

use super::Plan;
use crate::envs::{self, check, check_results::Checks};
use crate::fetch::{self, Fetched};

#[derive(Debug, Clone, Serialize)]
pub struct WheelReport {
    pub name: String,
    pub version: String,
    pub filename: String,
    pub sha256: greta_vocab::Sha256,
    pub source: fetch::Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_corrupt: Option<String>,
}

/// The smoke gate's verdict, as install reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SmokeStatus {
    Pass,
    Fail,
    Undecided,
    Skipped,
}

impl SmokeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SmokeStatus::Pass => "pass",
            SmokeStatus::Fail => "fail",
            SmokeStatus::Undecided => "undecided",
            SmokeStatus::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for SmokeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SmokeReport {
    pub status: SmokeStatus,
    /// The report's summary line, or why there was none.
    pub note: String,
}

impl SmokeReport {
    pub fn skipped(why: impl Into<String>) -> Self {
        SmokeReport {
            status: SmokeStatus::Skipped,
            note: why.into(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct InstallReport {
    pub env: PathBuf,
    pub installer: String,
    pub wheels: Vec<WheelReport>,
    pub recovery: envs::Recovery,
    pub checks: Checks,
    pub findings: Vec<check::Finding>,
    pub smoke: SmokeReport,
    /// How the venv was made ("uv venv", "uv venv (restored from its
    /// template)", "python -m venv"); empty when none was made.
    pub venv: String,
    /// True when the env was swapped into place.
    pub installed: bool,
    /// The env was already exactly this install (verified, see
    /// `envs::current`): nothing was fetched, built or swapped.
    pub up_to_date: bool,
    /// Why an existing env was rebuilt (None: there was none, or `--reinstall`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuilt_because: Option<String>,
    /// What the up-to-date check verified (present when `up_to_date`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<Verification>,
    pub timings_ms: BTreeMap<String, u128>,
}

/// What the up-to-date check verified of an env in place (fields in
/// alphabetical order: this was a JSON object, whose keys serde_json sorts).
#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    /// Distributions whose RECORD was checked.
    pub distributions: usize,
    /// Files listed in those RECORDs whose presence and size were checked.
    pub files: usize,
    /// When the env's receipt was written.
    pub receipt_created: String,
}

pub fn wheel_report(f: &Fetched) -> WheelReport {
    WheelReport {
        name: f.artifact.name.clone(),
        version: f.artifact.version.clone(),
        filename: f.artifact.filename.clone(),
        sha256: f.artifact.sha256,
        source: f.source,
        replaced_corrupt: f.replaced_corrupt.clone(),
    }
}

/// The env was already this plan: nothing fetched, built or swapped.
pub fn up_to_date(
    plan: &Plan,
    env: PathBuf,
    recovery: envs::Recovery,
    v: &envs::current::Verified,
    timings_ms: BTreeMap<String, u128>,
) -> InstallReport {
    let wheels = plan
        .wheels
        .iter()
        .map(|w| WheelReport {
            name: w.wheel.name.clone(),
            version: w.wheel.version.clone(),
            filename: w.wheel.filename.clone(),
            sha256: w.wheel.sha256,
            source: fetch::Source::Installed,
            replaced_corrupt: None,
        })
        .collect();
    InstallReport {
        env,
        installer: v.receipt.installer.clone(),
        wheels,
        recovery,
        checks: v.receipt.checks.clone(),
        findings: vec![],
        smoke: SmokeReport::skipped(
            "the env is up to date; nothing was rebuilt (`greta smoke` runs the gate)",
        ),
        venv: String::new(),
        installed: false,
        up_to_date: true,
        rebuilt_because: None,
        verified: Some(Verification {
            distributions: v.distributions,
            files: v.files,
            receipt_created: v.receipt.created.clone(),
        }),
        timings_ms,
    }
}

/// A built env, before the verdict: what either ending reports.
pub struct Attempt {
    /// Where the env lives (or would have).
    pub env: PathBuf,
    pub installer: String,
    pub wheels: Vec<WheelReport>,
    pub recovery: envs::Recovery,
    pub checks: Checks,
    pub venv: String,
    pub rebuilt_because: Option<String>,
}

impl Attempt {
    /// A check failed before the swap: the previous env stays, nothing installed.
    pub fn stopped(
        self,
        findings: Vec<check::Finding>,
        smoke: SmokeReport,
        timings_ms: BTreeMap<String, u128>,
    ) -> InstallReport {
        self.report(findings, smoke, false, timings_ms)
    }

    /// Swapped into place at `env`.
    pub fn installed(
        mut self,
        env: PathBuf,
        smoke: SmokeReport,
        timings_ms: BTreeMap<String, u128>,
    ) -> InstallReport {
        self.env = env;
        self.report(vec![], smoke, true, timings_ms)
    }

    fn report(
        self,
        findings: Vec<check::Finding>,
        smoke: SmokeReport,
        installed: bool,
        timings_ms: BTreeMap<String, u128>,
    ) -> InstallReport {
        InstallReport {
            env: self.env,
            installer: self.installer,
            wheels: self.wheels,
            recovery: self.recovery,
            checks: self.checks,
            findings,
            smoke,
            venv: self.venv,
            installed,
            up_to_date: false,
            rebuilt_because: self.rebuilt_because,
            verified: None,
            timings_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt() -> Attempt {
        Attempt {
            env: "/envs/cpu".into(),
            installer: "uv 0.9.1".into(),
            wheels: vec![WheelReport {
                name: "torch".into(),
                version: "2.5.1".into(),
                filename: "torch-2.5.1-py3-none-any.whl".into(),
                sha256: greta_vocab::Sha256([0xab; 32]),
                source: fetch::Source::Network,
                replaced_corrupt: None,
            }],
            recovery: envs::Recovery::default(),
            checks: Checks::new(),
            venv: "uv venv".into(),
            rebuilt_because: Some("the lockfile changed".into()),
        }
    }

    #[test]
    fn a_stopped_install_reports_its_findings_and_installs_nothing() {
        let finding = check::Finding {
            id: "framework.gate-failed".into(),
            severity: greta_vocab::Severity::Fail,
            title: "t".into(),
            message: "m".into(),
            evidence: vec!["e".into()],
            fix: greta_vocab::Fix {
                text: "f".into(),
                commands: vec![],
            },
        };
        let r = attempt().stopped(
            vec![finding],
            SmokeReport::skipped("the post-install check (imports, framework gates) failed"),
            BTreeMap::new(),
        );
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["installed"], false);
        assert_eq!(j["up_to_date"], false);
        assert_eq!(j["findings"][0]["id"], "framework.gate-failed");
        assert_eq!(j["smoke"]["status"], "skipped");
        assert_eq!(j["rebuilt_because"], "the lockfile changed");
        assert_eq!(j["wheels"][0]["source"], "network");
        assert!(j.get("verified").is_none(), "{j}");
        assert!(j["wheels"][0].get("replaced_corrupt").is_none(), "{j}");
    }

    #[test]
    fn an_installed_env_reports_its_final_path() {
        let smoke = SmokeReport {
            status: SmokeStatus::Pass,
            note: "smoke ultrasafe: PASS".into(),
        };
        let r = attempt().installed("/envs/final".into(), smoke, BTreeMap::new());
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["env"], "/envs/final");
        assert_eq!(j["installed"], true);
        assert_eq!(j["findings"], serde_json::json!([]));
        assert_eq!(j["smoke"]["status"], "pass");
        assert_eq!(j["venv"], "uv venv");
    }

    #[test]
    fn smoke_statuses_keep_their_json_words() {
        for (s, w) in [
            (SmokeStatus::Pass, "pass"),
            (SmokeStatus::Fail, "fail"),
            (SmokeStatus::Undecided, "undecided"),
            (SmokeStatus::Skipped, "skipped"),
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), w);
            assert_eq!(s.to_string(), w);
        }
    }
}
