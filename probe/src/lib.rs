//! greta-probe: read-only detection of the GPU stack (live, from a sysroot, or
//! from pasted tool output) and the data-driven diagnosis rules of `greta doctor`.
//!
//! Every input path produces the same [`facts::Facts`], so one rule engine
//! explains a live machine, a captured bundle and a pasted `rocminfo` alike.

pub mod capture;
pub mod collect;
pub mod facts;
pub mod from;
pub mod live;
pub mod merge;
pub mod report;
pub mod root;
pub mod rules;
pub mod signals;
