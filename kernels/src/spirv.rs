//! SPIR-V of the compute shaders in `shaders/`, compiled by build.rs with the
//! vendored glslang (Vulkan 1.2 / SPIR-V 1.5 target) and embedded, each
//! named by a variant of the generated [`Shader`]: code that picks a shader
//! cannot name one that was not built.

use std::fmt;

include!(concat!(env!("OUT_DIR"), "/spirv.rs"));

impl Shader {
    /// The SPIR-V words (what `vkCreateShaderModule` takes): the embedded
    /// bytes are only byte-aligned, so they are copied out once per call.
    pub fn words(self) -> Vec<u32> {
        self.bytes()
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    /// The shader called `name` (see [`Shader::name`]), for text that stays
    /// a string where it is stored, such as a tuning cache's `kernel`.
    pub fn from_name(name: &str) -> Option<Shader> {
        Shader::ALL.iter().copied().find(|s| s.name() == name)
    }
}

/// The name, as results and messages have always printed it.
impl fmt::Display for Shader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_every_shader_is_spirv() {
        assert!(!Shader::ALL.is_empty());
        for s in Shader::ALL {
            assert_eq!(Shader::from_name(s.name()), Some(*s));
            assert_eq!(s.to_string(), s.name());
            assert_eq!(s.words()[0], 0x0723_0203, "{s}: not SPIR-V");
        }
        assert_eq!(Shader::GemmF16Cm2.name(), "gemm_f16_cm2");
        assert_eq!(Shader::from_name("no_such_shader"), None);
    }
}
