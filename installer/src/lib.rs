//! greta's modules, behind the one binary (`main.rs` parses the command
//! line and calls [`cmd`]). A library target so that the coverage-guided
//! fuzz harnesses in `fuzz/` reach the receipt and fetch code the binary
//! uses (the lock and tools parsers are the `greta-lockset` crate); nothing
//! else links it.

#[macro_use]
pub mod out;
pub mod cmd;
pub mod envs;
pub mod exit;
pub mod fetch;
pub mod install;
pub mod interrupt;
pub mod read;
pub mod rerun;
