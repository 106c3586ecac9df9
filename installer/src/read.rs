//! Bounded reads of the files greta is handed (lockfiles, manifests,
//! receipts, fact files). The adapter from `greta-fsread`'s typed errors to
//! `anyhow` lives in the lock set crate, the lowest of greta's crates that
//! reads files into `anyhow` results; the installer uses the same one.

pub use greta_lockset::read::*;
