//! greta-kernels
