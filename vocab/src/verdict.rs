//! The answer a script or a scheduler acts on, and its exit code.
use serde::{Deserialize, Serialize};

/// `greta smoke`'s (and the health check's) answer: 0 the device may be
/// used, 1 it computed wrong or too slowly, 2 greta could not decide (no
/// device, no driver, bad input: no gate ran). Serialised as `"pass"`,
/// `"fail"`, `"undecided"`, as smoke's reports have always written it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every gate that ran passed (skips allowed).
    Pass,
    /// At least one gate failed.
    Fail,
    /// Nothing could be decided (no gate ran).
    Undecided,
}

impl Verdict {
    /// The process exit code of this verdict.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Undecided => 2,
        }
    }

    /// The verdict of several runs together: the worst one.
    pub fn worst(self, other: Verdict) -> Verdict {
        if self.exit_code() >= other.exit_code() {
            self
        } else {
            other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_worst() {
        assert_eq!(Verdict::Pass.exit_code(), 0);
        assert_eq!(Verdict::Fail.exit_code(), 1);
        assert_eq!(Verdict::Undecided.exit_code(), 2);
        assert_eq!(Verdict::Pass.worst(Verdict::Fail), Verdict::Fail);
        assert_eq!(Verdict::Undecided.worst(Verdict::Fail), Verdict::Undecided);
        assert_eq!(
            serde_json::to_string(&Verdict::Undecided).unwrap(),
            "\"undecided\""
        );
    }
}
