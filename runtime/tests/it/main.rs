//! The runtime crate's integration tests: one test binary, one module per area
//! (`cargo test -p greta-runtime --test it -- MODULE::` runs one).

mod attn_ops;
mod block;
mod cache;
mod common;
mod device;
mod f16_block_ops;
mod graph;
mod host_copy;
mod ops;
mod prepare;
mod subgroups;
mod timeout;
