//! greta-smoke: device gates (correctness against f64 CPU references,
//! stability over repeats, no timeouts, performance floors), profiles,
//! the runner and the results files of `greta smoke`.
//!
//! [`run`] is the entry point `greta smoke` calls: Vulkan runs here
//! ([`run_profile`]), HIP and its CUDA twin in the device child
//! ([`gpu_child`], which runs `run_profile` on its side). The runner drives
//! gates on any [`greta_runtime::Backend`].

// The crate's front door: the run (`run_profile` and its options), the
// catalogue, the baselines and lists a run reads, and five namespaces whose
// items share names (`table::render`, `tune::render`, `prom::render`):
// `results` (the greta.smoke/v1 schema), `table`, `tune`, `prom` and
// `oneline`; `auto` (the machine's backend) and `gpu_child` (the HIP/CUDA
// device child's request and reply). Everything else is private.
pub mod auto;
mod check;
pub mod compile;
mod deny;
mod dispatch;
mod floors;
mod gates;
pub mod gpu_child;
mod inject;
mod inputs;
mod node;
pub mod oneline;
mod peers;
mod progress;
pub mod prom;
pub mod results;
mod runner;
mod session;
mod shared_refs;
pub mod spec;
mod stress;
pub mod table;
pub mod telemetry;
#[cfg(test)]
mod test_files;
pub mod tune;
mod verify;

pub use check::Tolerance;
pub use deny::DenyList;
pub use dispatch::{run, Finished, Undecided};
pub use floors::{Baseline, ClassFile, DEFAULT_FLOOR_FRACTION};
pub use gates::{duration_note, Catalog, Profile};
pub use peers::DEFAULT_PEER_FRACTION;
pub use session::{
    run_profile, BackendChoice, DeviceChoice, Options, Outcome, SmokeError, SmokeRequest,
};
