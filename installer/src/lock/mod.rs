//! `lock/`: the profile matrix, the PEP 751 lockfiles, and the choices made
//! from them (which profile for this machine, which wheel for this Python).
//!
//! Public API used by `greta install`/`bundle`:
//! - [`Matrix::load`] reads `lock/matrix.toml`; [`Matrix::select`] /
//!   [`Matrix::select_with`] choose a profile from probe facts.
//! - [`Lockfile::load`] reads a `pylock.*.toml`.
//! - [`Interpreter::inspect`] asks a Python for its version and tags.
//! - [`resolve`] gives the exact wheel set, each with the reason it matched.
//!
//! Every parse error is a [`SourceError`] (`file:line:col: message`); every
//! "this machine cannot use that" is a [`Refusal`] carrying the fix.

// The API below is consumed by `greta install`/`bundle` (built alongside);
// items they do not use yet must not fail `clippy -D warnings`.
#![allow(dead_code, unused_imports)]

pub mod check;
pub mod dir;
pub mod matrix;
pub mod pylock;
pub mod resolve;
pub mod select;
pub mod source;
pub mod tags;
pub mod update;

pub use dir::LockDir;
pub use matrix::{lockfile_name_for, Backend, GfxOverride, LockStatus, Matrix, Profile};
pub use pylock::{Lockfile, Package, Wheel};
pub use resolve::{resolve, resolve_lock, WheelPin};
pub use select::Selection;
pub use source::SourceError;
pub use tags::{host_glibc, Interpreter};

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
