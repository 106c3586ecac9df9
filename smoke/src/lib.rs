//! greta-smoke: device gates (correctness against f64 CPU references,
//! stability over repeats, no timeouts, performance floors), profiles,
//! the runner and the results files of `greta smoke`.
//!
//! [`run_profile`] is the entry point: `greta smoke` and `greta install`
//! call it. [`runner::run_device`] runs gates on any
//! [`greta_runtime::Backend`], so a second backend (HIP) plugs in there.

pub mod check;
pub mod deny;
pub mod floors;
pub mod gates;
pub mod inject;
pub mod inputs;
pub mod node;
pub mod oneline;
pub mod peers;
pub mod progress;
pub mod prom;
pub mod results;
pub mod runner;
pub mod session;
pub mod table;
pub mod tune;
pub mod verify;

pub use gates::Profile;
pub use greta_runtime as runtime;
pub use session::{run_profile, BackendChoice, DeviceChoice, Options, Outcome, SmokeError};
