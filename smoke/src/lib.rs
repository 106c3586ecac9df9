//! greta-smoke: device gates (correctness against f64 CPU references,
//! stability over repeats, no timeouts, performance floors), profiles,
//! the runner and the results files of `greta smoke`.
//!
//! [`run_profile`] is the entry point: `greta smoke` and `greta install`
//! call it. Its runner drives gates on any [`greta_runtime::Backend`], so
//! a second backend (HIP) plugs in there.

// The crate's front door: the run (`run_profile` and its options), the
// catalogue, the baselines and lists a run reads, and five namespaces whose
// items share names (`table::render`, `tune::render`, `prom::render`):
// `results` (the greta.smoke/v1 schema), `table`, `tune`, `prom` and
// `oneline`. Everything else is private.
mod check;
mod deny;
mod floors;
mod gates;
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
pub mod spec;
mod stress;
pub mod table;
pub mod tune;
mod verify;

pub use check::Tolerance;
pub use deny::DenyList;
pub use floors::{Baseline, ClassFile, DEFAULT_FLOOR_FRACTION};
pub use gates::{Catalog, Profile};
pub use greta_runtime as runtime;
pub use peers::DEFAULT_PEER_FRACTION;
pub use session::{run_profile, BackendChoice, DeviceChoice, Options, Outcome, SmokeError};
