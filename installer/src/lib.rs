//! greta's modules, behind the one binary (`main.rs` parses the command
//! line and calls [`cmd`]). A library target so that the binary and the
//! coverage-guided fuzz harnesses (`fuzz-targets/`, `fuzz/`) share one
//! build; the lock and tools parsers are the `greta-lockset` crate. Only
//! what `main.rs` calls ([`cmd`], [`exit`], [`stop`], [`log_event`]) and the few items the fuzz
//! targets drive ([`fuzz_door`]) are public: everything else is the
//! binary's own, so the compiler reports what nothing uses.

#[macro_use]
mod out;
mod ask;
pub mod cmd;
mod envs;
pub mod exit;
mod fetch;
mod fix;
mod install;
mod interrupt;
mod read;
mod rerun;
pub mod stop;

/// Text on stdout for `main.rs`'s own commands (completions, the manual):
/// a reader that goes away ends greta quietly, as for every other output.
pub fn out_text(s: &str) {
    out::text(format_args!("{s}"));
}

/// The writer `main.rs` gives tracing: each log event wrapped to the
/// terminal's width on stderr, whole to a pipe or a file.
pub use out::log_event;

/// What the fuzz targets reach: the wheel cache and its fetcher
/// (`cache_paths`), where envs go (the doctor's `envs_at`), and the
/// install receipt's parser.
pub mod fuzz_door {
    pub use crate::envs::receipt::Receipt;
    pub use crate::envs::EnvRoot;
    pub use crate::fetch::{fetch_all, Cache, FetchOptions, Lookup, PinnedWheel};
}
