//! The bodies of greta's fuzz targets, one function per target, and the
//! seed corpus each starts from (the repository's real fixtures).
//!
//! Two drivers call them: the AFL++ harnesses in `fuzz/` (coverage-guided,
//! long runs, `scripts/fuzz.sh`) and `tests/replay.rs` (every seed, every
//! saved regression input, then a fixed time of blind mutation; run by CI).
//! A target signals a defect by panicking: a parser that panics, an
//! assertion about what an accepted input must satisfy, or a hang.

mod cache;
mod markers;
mod plan;
mod report;
mod seeds;
mod split;
mod targets;

pub use cache::cache_paths;
pub use markers::{lock_markers, lock_markers_process_spent};
pub use report::report;
pub use seeds::seeds;
pub use split::{parts, Words};
pub use targets::{data_files, from_text, gemm_plan, lock_files, sysroot, Scratch, SYSROOT_FILES};

/// The targets, by the names the AFL++ harnesses and `scripts/fuzz.sh` use.
pub const TARGETS: &[&str] = &[
    "from_text",
    "sysroot",
    "lock_files",
    "data_files",
    "gemm_plan",
    "cache_paths",
    "report",
    "lock_markers",
];

/// Runs target `name` on one input (`scratch` is its working directory).
/// Unknown names are a programming error of the caller.
pub fn run(name: &str, scratch: &Scratch, data: &[u8]) {
    match name {
        "from_text" => from_text(data),
        "sysroot" => sysroot(scratch, data),
        "lock_files" => lock_files(scratch, data),
        "data_files" => data_files(scratch, data),
        "gemm_plan" => gemm_plan(data),
        "cache_paths" => cache_paths(scratch, data),
        "report" => report(data),
        "lock_markers" => lock_markers(data),
        other => panic!("no fuzz target named {other:?}"),
    }
}
