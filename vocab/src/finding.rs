//! A diagnosis: what `doctor`, `install` and the framework gates report.
use serde::{Deserialize, Serialize};

/// How bad a finding is. Ordered: `Ok < Warn < Fail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Ok,
    Warn,
    Fail,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warn => "warn",
            Severity::Fail => "fail",
        }
    }
}

/// What to do about a finding: a sentence and the commands, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fix {
    pub text: String,
    #[serde(default)]
    pub commands: Vec<String>,
}

/// A raised finding: what `findings` in the JSON outputs holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// A stable id (`gpu.none`, `framework.cpu-fallback`): scripts match it.
    pub id: String,
    pub severity: Severity,
    pub title: String,
    pub message: String,
    /// The facts and `source:line` signals the finding rests on.
    pub evidence: Vec<String>,
    pub fix: Fix,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape_is_the_doctor_contract() {
        let f = Finding {
            id: "gpu.none".into(),
            severity: Severity::Fail,
            title: "No GPU".into(),
            message: "m".into(),
            evidence: vec!["lspci:3".into()],
            fix: Fix {
                text: "t".into(),
                commands: vec![],
            },
        };
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"id":"gpu.none","severity":"fail","title":"No GPU","message":"m","evidence":["lspci:3"],"fix":{"text":"t","commands":[]}}"#
        );
        assert!(Severity::Ok < Severity::Warn && Severity::Warn < Severity::Fail);
    }
}
