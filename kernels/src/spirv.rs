//! SPIR-V of the compute shaders in `shaders/`, compiled by build.rs with the
//! vendored glslang (Vulkan 1.2 / SPIR-V 1.5 target) and embedded.

include!(concat!(env!("OUT_DIR"), "/spirv.rs"));

/// SPIR-V words of shader `name` (its file stem, e.g. `"gemm_f32"`).
pub fn words(name: &str) -> Option<Vec<u32>> {
    SHADERS.iter().find(|(n, _)| *n == name).map(|(_, b)| {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// Names of every embedded shader.
pub fn names() -> impl Iterator<Item = &'static str> {
    SHADERS.iter().map(|(n, _)| *n)
}
