// `block_decode` is a composite op (kernels/src/ops/block_decode.rs): it has no kernel of its
// own; a device runs it as the graph of the f16 ops its file builds.
