//! greta-probe: read-only detection of the GPU stack (live, from a sysroot, or
//! from pasted tool output) and the data-driven diagnosis rules of `greta doctor`.
//!
//! Every input path produces the same [`Facts`], so one rule engine
//! explains a live machine, a captured bundle and a pasted `rocminfo` alike.
//!
//! The modules are private: callers come in through the front door,
//! [`Probe::new`]`(root).scope(..).run()` (or `.capture(dir)`), or the
//! `--from` text entry points ([`from_files`], [`parse_text`]...), and get
//! back the facts, findings and report types below. Which collectors run,
//! and how a snapshot is written and replayed, stays in here.

mod capture;
mod clauses;
mod collect;
mod detail;
mod facts;
mod from;
mod front;
mod hip_order;
mod live;
mod merge;
mod products;
mod report;
mod root;
mod rules;
mod signals;

pub use capture::{CaptureError, Captured};
pub use collect::{CheckRun, CHECKS};
pub use facts::{
    DeviceNode, Facts, Framework, Gpu, Icd, Interpreter, KernelDriver, Python, Rocm, RocmInstall,
    Signal, Vendor, Vulkan, VulkanDevice,
};
pub use from::{
    decode, from_files, parse_text, recognise, summarise, FileReport, Format, FromError, FromRun,
    MAX_LISTED,
};
pub use front::{EnvsAt, HipRun, Outcome, Probe, Scope};
pub use hip_order::{hip_devices, BadEntry, HipDevices, HipGpu, OrderFrom, SELECTION_VARS};
pub use live::python::env_frameworks;
pub use merge::merge;
pub use report::{use_color, CheckLine, CheckStatus, Report};
pub use root::{CmdStatus, NodeState, Root, Unreadable, ENV_ALLOW};
pub use rules::{
    catalogue, diagnose, diagnose_for, Finding, Fix, ProfileTargets, Rule, Severity, CONTRACT_IDS,
};
pub use signals::{is_noise as is_noise_signal, scan as scan_signals};
