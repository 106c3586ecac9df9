//! greta-smoke: device gates (correctness against f64 CPU references,
//! stability over repeats, no timeouts, performance floors), profiles,
//! the runner and the results files of `greta smoke`.

pub mod check;
pub mod deny;
pub mod floors;
pub mod results;
