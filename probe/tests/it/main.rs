//! The probe crate's integration tests: one test binary, one module per area
//! (`cargo test -p greta-probe --test it -- MODULE::` runs one).

mod capture_roundtrip;
mod common;
mod file_glyphs;
mod fixtures;
mod from_formats;
mod from_limits;
mod from_line_ends;
mod from_live_tools;
mod from_robustness;
mod hip_devices;
mod live_lavapipe;
mod live_rocminfo_timeout;
mod live_unreadable;
mod python_active_env;
mod sysroot_garbage;
mod sysroot_machines;
mod sysroot_unreadable;
mod text_scan;
