//! AMD GPU targets (`gfx942`, `gfx90a`, `gfx1103`): the LLVM processor names
//! that rocminfo, the KFD topology, HIP and the ROCm wheels speak.
use std::fmt;
use std::str::FromStr;

/// An AMD GPU target. The name is `gfx` + major (decimal, 1-2 digits) +
/// minor + stepping (one hex digit each): `gfx90a` is 9.0.10, `gfx1103`
/// 11.0.3. Kept as those three numbers so families compare without text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gfx {
    pub major: u8,
    pub minor: u8,
    pub stepping: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an AMD GPU target (expected gfx + 3 or 4 digits, e.g. gfx942, gfx90a, gfx1103)")]
pub struct GfxError {
    pub text: String,
}

impl Gfx {
    pub const fn new(major: u8, minor: u8, stepping: u8) -> Gfx {
        Gfx {
            major,
            minor,
            stepping,
        }
    }

    /// CDNA 3 (MI300 series), the data-centre parts HIP serves by default.
    pub fn is_gfx94x(self) -> bool {
        self.major == 9 && self.minor == 4
    }

    /// The family as `HSA_OVERRIDE_GFX_VERSION` writes it: `11.0.3`.
    pub fn hsa_version(self) -> String {
        format!("{}.{}.{}", self.major, self.minor, self.stepping)
    }
}

impl FromStr for Gfx {
    type Err = GfxError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || GfxError {
            text: s.to_string(),
        };
        let digits = s.strip_prefix("gfx").ok_or_else(err)?;
        // A target may carry feature suffixes (gfx90a:sramecc+:xnack-).
        let digits = digits.split(':').next().unwrap_or_default();
        if !(3..=4).contains(&digits.len()) || !digits.is_ascii() {
            return Err(err());
        }
        let (major, rest) = digits.split_at(digits.len() - 2);
        if major.starts_with('0') || !major.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let major: u8 = major.parse().map_err(|_| err())?;
        let hex = |c: &str| u8::from_str_radix(c, 16).map_err(|_| err());
        let (minor, stepping) = (hex(&rest[..1])?, hex(&rest[1..])?);
        if rest.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(err());
        }
        Ok(Gfx::new(major, minor, stepping))
    }
}

impl fmt::Display for Gfx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gfx{}{:x}{:x}", self.major, self.minor, self.stepping)
    }
}

serde_as_text!(Gfx);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_targets_round_trip() {
        for (text, (ma, mi, st)) in [
            ("gfx906", (9, 0, 6)),
            ("gfx90a", (9, 0, 10)),
            ("gfx942", (9, 4, 2)),
            ("gfx950", (9, 5, 0)),
            ("gfx1030", (10, 3, 0)),
            ("gfx1103", (11, 0, 3)),
            ("gfx1151", (11, 5, 1)),
            ("gfx1201", (12, 0, 1)),
        ] {
            let g: Gfx = text.parse().unwrap();
            assert_eq!(g, Gfx::new(ma, mi, st), "{text}");
            assert_eq!(g.to_string(), text);
            assert_eq!(serde_json::to_string(&g).unwrap(), format!("\"{text}\""));
        }
        assert_eq!(
            "gfx90a:sramecc+:xnack-".parse::<Gfx>().unwrap().to_string(),
            "gfx90a"
        );
        assert!("gfx942".parse::<Gfx>().unwrap().is_gfx94x());
        assert_eq!("gfx1103".parse::<Gfx>().unwrap().hsa_version(), "11.0.3");
    }

    #[test]
    fn what_is_not_a_target_is_refused() {
        for bad in [
            "", "gfx", "gfx9", "gfx12345", "GFX942", "gfx90A", "gfx0942", "gfxé42", "sm_90",
            "gfx-42",
        ] {
            assert!(bad.parse::<Gfx>().is_err(), "{bad:?} parsed");
        }
        assert!(serde_json::from_str::<Gfx>("\"gfx9x\"").is_err());
    }
}
