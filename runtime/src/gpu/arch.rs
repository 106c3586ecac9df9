//! What kernels are compiled for: a device's target, as the driver names it
//! and as the compiler and the kernel cache key take it.

use greta_vocab::Gfx;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What kernels are compiled for. An AMD target is a [`Gfx`], so HIP code
/// compares families as numbers, not text; everything else (NVIDIA's
/// `sm_90`, or a target name greta cannot parse, handed to the compiler
/// untouched) stays text. It prints, serialises and enters the kernel
/// cache key as exactly the text it was made from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// An AMD GPU target (HIP): `gfx90a`, `gfx942`, `gfx1103`.
    Gfx(Gfx),
    /// Any other target name: `sm_90` (CUDA), or text that is not a
    /// canonical gfx name.
    Other(String),
}

impl Arch {
    /// `Gfx` when `text` is a gfx name that prints back as itself (so no
    /// text is ever rewritten), `Other` otherwise.
    pub fn parse(text: &str) -> Arch {
        match text.parse::<Gfx>() {
            Ok(g) if g.to_string() == text => Arch::Gfx(g),
            _ => Arch::Other(text.to_string()),
        }
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Arch::Gfx(g) => g.fmt(f),
            Arch::Other(s) => f.write_str(s),
        }
    }
}

impl From<Gfx> for Arch {
    fn from(g: Gfx) -> Arch {
        Arch::Gfx(g)
    }
}

/// Text from a flag or a test (`greta __gpu build-kernels --target`).
impl From<&str> for Arch {
    fn from(s: &str) -> Arch {
        Arch::parse(s)
    }
}

impl From<&String> for Arch {
    fn from(s: &String) -> Arch {
        Arch::parse(s)
    }
}

/// As the text it prints: the GPU child's answer and any JSON keep the
/// strings they always carried.
impl Serialize for Arch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Arch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Arch::parse(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arch_keeps_the_text_it_was_made_from() {
        for text in [
            "gfx90a",
            "gfx942",
            "gfx1103",
            "sm_90",
            "gfx",
            "gfx90a:xnack-",
        ] {
            let a = Arch::parse(text);
            assert_eq!(a.to_string(), text);
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<Arch>(&json).unwrap(), a);
        }
        assert_eq!(Arch::parse("gfx942"), Arch::Gfx(Gfx::new(9, 4, 2)));
        assert_eq!(Arch::parse("sm_90"), Arch::Other("sm_90".into()));
        assert_eq!(
            Arch::parse("gfx90a:xnack-"),
            Arch::Other("gfx90a:xnack-".into())
        );
    }
}
