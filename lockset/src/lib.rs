//! The lock set: the profile matrix, the PEP 751 lockfiles and the tool
//! pins of the checkout's `lock/` (or of a bundle, or built into greta), and
//! the choices made from them (which profile for this machine, which wheel
//! for this Python).
//!
//! The front door, used by `greta install`/`bundle`/`lock`:
//! - [`LockDir`] says which lock set is in effect and why; [`Matrix::load`]
//!   reads its `matrix.toml`; [`Matrix::select`] / [`Matrix::select_with`]
//!   choose a profile for a [`Host`], the small summary of the machine its
//!   caller builds from its own probe (this crate reads no machine).
//! - [`Lockfile::load`] reads a `pylock.*.toml`; [`load_tools`] the tool pins.
//! - [`Interpreter::inspect`] asks a Python for its version and tags.
//! - [`resolve`] gives the exact wheel set, each with the reason it matched.
//! - [`check`] verifies a lock set; [`update`] re-resolves a profile with uv.
//!
//! Every error is an [`Error`]: a parse error is [`Error::Source`] (a
//! [`SourceError`], `file:line:col: message`); every "this machine cannot
//! use that" is [`Error::Refused`] (a [`Refusal`] carrying the fix).
//!
//! It depends on no installer module (the installer's lock, envs, fetch
//! and install modules once imported each other in a circle), and neither
//! on the probe nor on clap.

mod dir;
mod error;
mod host;
mod marker;
mod matrix;
mod pylock;
pub mod read;
mod resolve;
mod select;
mod source;
mod tags;
mod tools;
mod update;

/// `greta lock check`: the report types and the checks.
pub mod check;

/// The bounds on a lockfile marker, and what is left of this process's
/// marker work: for the fuzz harness, which reads lockfile after lockfile.
pub mod marker_bounds {
    pub use crate::marker::{
        process_work_left, FILE_WORK, MAX_BYTES, MAX_DEPTH, MAX_TERMS, MAX_WORK, PROCESS_WORK,
    };
}

pub use dir::{LockDir, BUNDLE_MANIFEST, ENV_VAR as LOCK_DIR_ENV_VAR};
pub use error::{Error, Result};
pub use host::{Amd, Host, Kfd, Nvidia, RocmRelease};
pub use matrix::{Backend, GfxOverride, LockStatus, Matrix, Profile, MATRIX_FILE};
pub use pylock::{Lockfile, Package, Wheel};
pub use read::identity as file_identity;
pub use resolve::{resolve, resolve_lock, WheelPin};
pub use select::Selection;
pub use source::SourceError;
pub use tags::{host_glibc, Interpreter};
pub use tools::load as load_tools;
pub use update::{build as update, write_atomic, Options as UpdateOptions};

/// A clear "no" with what to do about it (an unlocked profile, a GPU the
/// wheels do not cover, an unsupported Python).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub fix: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\n  fix: {}", self.message, self.fix)
    }
}

impl std::error::Error for Refusal {}
