//! Output checking: greta-kernels' one comparison engine, re-exported where
//! the smoke gates (and the installer's framework gates) have always
//! found it.
pub use greta_kernels::check::*;
