//! The installer's integration tests: one test binary (one link of greta
//! and its test dependencies instead of one per file), one module per area.
//! Every test starts from [`support::Harness`] (a private HOME, XDG dirs,
//! lock dir, uv cache and a real HTTP server) or `lock_support`'s copy of
//! the lock set: no test sees the developer's own state.
//!
//! Run one area with `cargo test -p greta --test it -- MODULE::`.

mod lock_support;
mod support;

mod bundle_replace;
mod cli_shell;
mod cuda_targets;
mod did_you_mean;
mod doctor_cli;
mod doctor_detail;
mod doctor_fix;
mod doctor_live_unreadable;
mod env_lock_hostile;
mod first_hour;
mod fleet_cli;
mod frameworks_gates;
mod full_disk;
mod greta_home;
mod hip_cli;
mod hip_roofline;
mod hip_targets;
mod hostile_io;
mod hostile_outputs;
mod hostile_settings;
mod hostile_smoke;
mod install_basic;
mod install_bundle_uv;
mod install_faults;
mod install_hip;
mod install_interrupt;
mod install_kill;
mod install_plan;
mod install_progress;
mod install_schema;
mod install_uptodate;
mod install_uv_bootstrap;
mod install_uv_cache;
mod installer_hang;
mod installer_result;
mod leftovers;
mod lock_check;
mod lock_device;
mod lock_device_pip;
mod lock_errors;
mod lock_resolve;
mod lock_select;
mod lock_show_builtin;
mod lock_update;
mod messages;
mod radv_targets;
mod report_cli;
mod report_grafana;
mod report_memory;
mod report_page;
mod runtime_in_child;
mod self_contained;
mod slurm_healthcheck;
mod smoke_cli;
mod smoke_modes;
mod telemetry_faults;
mod terminal_text;
mod terminal_width;
mod tuning_cache_cli;
