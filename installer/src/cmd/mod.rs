//! One module per subcommand; each owns its clap `Args` and a `run` function.

pub mod bundle;
pub mod doctor;
pub mod env;
pub mod gpu;
pub mod install;
pub mod lock;
pub mod report;
pub mod smoke;
