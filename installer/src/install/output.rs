//! `greta install --json`: the `greta.install/v1` document, one variant
//! per way an install ends, printed at one place ([`InstallOutput::print`]).
//! Scripts read it (`result`, `report.smoke.status`, ...): fields are only
//! ever added (`tests/it/install_schema.rs` pins it).

use super::{InstallReport, Plan};
use serde::Serialize;

pub const SCHEMA: &str = "greta.install/v1";

pub enum InstallOutput<'a> {
    /// `--dry-run`: the plan; nothing fetched or written.
    Planned { env_name: &'a str, plan: &'a Plan },
    /// Refused before a plan (a bundle made for another architecture).
    Refused { error: String },
    /// Stopped by an error after the plan; nothing in the env changed.
    Stopped {
        env_name: &'a str,
        plan: &'a Plan,
        error: String,
    },
    /// Ran to its verdict: installed, up to date, or failed its checks.
    Reported {
        env_name: &'a str,
        plan: &'a Plan,
        report: &'a InstallReport,
    },
}

/// The document as written: the variant's fields, absent ones left out.
#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    env_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<&'a Plan>,
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<&'a InstallReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

impl InstallOutput<'_> {
    /// `planned`, `failed`, `installed` or `up-to-date`.
    pub fn result(&self) -> &'static str {
        match self {
            InstallOutput::Planned { .. } => "planned",
            InstallOutput::Refused { .. } | InstallOutput::Stopped { .. } => "failed",
            InstallOutput::Reported { report, .. } if report.up_to_date => "up-to-date",
            InstallOutput::Reported { report, .. } if report.installed => "installed",
            InstallOutput::Reported { .. } => "failed",
        }
    }

    fn document(&self) -> Document<'_> {
        let mut d = Document {
            schema: SCHEMA,
            result: self.result(),
            env_name: None,
            plan: None,
            report: None,
            error: None,
        };
        match self {
            InstallOutput::Planned { env_name, plan } => {
                (d.env_name, d.plan) = (Some(*env_name), Some(*plan));
            }
            InstallOutput::Refused { error } => d.error = Some(error),
            InstallOutput::Stopped {
                env_name,
                plan,
                error,
            } => {
                (d.env_name, d.plan, d.error) =
                    (Some(*env_name), Some(*plan), Some(error.as_str()));
            }
            InstallOutput::Reported {
                env_name,
                plan,
                report,
            } => {
                (d.env_name, d.plan, d.report) = (Some(*env_name), Some(*plan), Some(*report));
            }
        }
        d
    }

    /// Pretty JSON on stdout. Written through a JSON value: its keys
    /// (the plan's and the report's too) come out sorted, as greta has
    /// always written this document.
    pub fn print(&self) -> anyhow::Result<()> {
        crate::out::print_json(&serde_json::to_value(self.document())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_has_only_its_error() {
        let o = InstallOutput::Refused {
            error: "bundle x was made on a y machine".into(),
        };
        assert_eq!(o.result(), "failed");
        let v = serde_json::to_value(o.document()).unwrap();
        assert_eq!(
            v.to_string(),
            r#"{"error":"bundle x was made on a y machine","result":"failed","schema":"greta.install/v1"}"#
        );
    }
}
