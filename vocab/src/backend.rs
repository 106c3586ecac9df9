//! Which framework build a profile installs: the `backend` of a lock
//! profile and of an env receipt.
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The compute stack a profile's wheels are built for. Serialised as the
/// lock files and receipts write it: `"rocm"`, `"cuda"`, `"cpu"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Rocm,
    Cuda,
    Cpu,
}

impl Backend {
    pub const ALL: [Backend; 3] = [Backend::Rocm, Backend::Cuda, Backend::Cpu];

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Rocm => "rocm",
            Backend::Cuda => "cuda",
            Backend::Cpu => "cpu",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Backend::ALL
            .into_iter()
            .find(|b| b.as_str() == s)
            .ok_or_else(|| format!("unknown backend {s:?} (expected rocm, cuda or cpu)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_agree_with_the_lock_files() {
        for b in Backend::ALL {
            assert_eq!(b.as_str().parse::<Backend>(), Ok(b));
            assert_eq!(serde_json::to_string(&b).unwrap(), format!("\"{b}\""));
        }
        assert!("ROCm".parse::<Backend>().is_err());
    }
}
