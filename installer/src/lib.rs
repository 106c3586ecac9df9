//! greta's modules, behind the one binary (`main.rs` parses the command
//! line and calls [`cmd`]). A library target so that the coverage-guided
//! fuzz harnesses in `fuzz/` reach the lock, tools and receipt parsers the
//! binary uses; nothing else links it.

#[macro_use]
pub mod out;
pub mod cmd;
pub mod envs;
pub mod exit;
pub mod fetch;
pub mod install;
pub mod interrupt;
pub mod lock;
pub mod read;
pub mod rerun;
