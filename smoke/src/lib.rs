//! greta-smoke
