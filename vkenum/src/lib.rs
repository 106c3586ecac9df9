//! The one Vulkan device enumerator: what `greta doctor` reports and what
//! `greta smoke` runs on are read by the same code, so the two agree on a
//! device's features, on its driver's name (an id newer than ash is
//! `UNKNOWN_<n>` in both) and on which of two drivers exposing one GPU is
//! used. The loader is opened at run time (ash's `loaded`): greta starts
//! on machines without Vulkan.
//!
//! - [`describe()`]: one physical device as a typed [`Description`],
//!   querying only what the device supports.
//! - [`enumerate()`]: every device of a caller's instance (the runtime
//!   keeps the instance to create a device).
//! - [`enumerate_with_timeout`]: an instance of its own on a thread with a
//!   time limit (the doctor).
//! - [`one_per_gpu`] and [`type_rank`]: de-duplication and ranking.

pub mod coop2;
mod dedupe;
mod describe;
mod enumerate;

pub use dedupe::{duplicate_note, one_per_gpu, same_gpu, type_rank, Group, Identity};
pub use describe::{describe, driver_of, version_text, CoopShape, Description, Heap};
pub use enumerate::{enumerate, enumerate_now, enumerate_with_timeout, EnumError, Enumeration};
