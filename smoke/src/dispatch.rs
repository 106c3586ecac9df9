//! Where a run's gates run: Vulkan in this process, HIP and its CUDA twin
//! in the device child ([`crate::gpu_child`]). The CLI calls [`run`] and
//! prints what comes back, whichever it was.

use crate::gpu_child::{self, ErrorKind};
use crate::session::{run_profile, BackendChoice, Options, Outcome, SmokeError};

/// A run that decided something (its report may still say it failed).
#[derive(Debug, Clone)]
pub struct Finished {
    pub outcome: Outcome,
    /// 0 every gate passed, 1 a gate failed, 2 nothing decided (the results
    /// could not be written, or the child did not end as its report says).
    pub exit_code: u8,
}

/// Nothing was decided (exit 2): what kind of reason, and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Undecided {
    pub kind: ErrorKind,
    pub message: String,
}

impl From<SmokeError> for Undecided {
    fn from(e: SmokeError) -> Undecided {
        Undecided {
            kind: ErrorKind::of(&e),
            message: e.to_string(),
        }
    }
}

/// Runs `opts`: `hip` and `cuda` in the device child (the executable must
/// have registered itself as the helper), anything else here (`auto` here
/// means Vulkan: the machine's choice is [`crate::auto`]'s, made before).
pub fn run(opts: &Options) -> Result<Finished, Undecided> {
    match opts.request.backend {
        BackendChoice::Hip | BackendChoice::Cuda => gpu_child::run_smoke(opts),
        BackendChoice::Auto | BackendChoice::Vulkan => {
            let outcome = run_profile(opts)?;
            Ok(Finished {
                exit_code: outcome.exit_code(),
                outcome,
            })
        }
    }
}
