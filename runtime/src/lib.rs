//! greta-runtime
