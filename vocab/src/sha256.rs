//! A SHA-256 digest: what the lock files pin and the cache is keyed by.
use std::fmt;
use std::str::FromStr;

/// 32 bytes, written as 64 lowercase hex digits (as PEP 751 lock files,
/// greta's receipts and its cache write it). Parsing accepts uppercase
/// hex and a `sha256:` / `sha256=` prefix (PyPI's URL fragments) and
/// prints the canonical form.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256(pub [u8; 32]);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{shown} is not a sha256 (expected 64 hex digits)")]
pub struct Sha256Error {
    shown: String,
}

impl FromStr for Sha256 {
    type Err = Sha256Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bare = s
            .strip_prefix("sha256:")
            .or_else(|| s.strip_prefix("sha256="))
            .unwrap_or(s);
        let mut out = [0u8; 32];
        match hex::decode_to_slice(bare, &mut out) {
            Ok(()) => Ok(Sha256(out)),
            Err(_) => Err(Sha256Error {
                // A long or binary value is shown cut, never whole.
                shown: format!("{:?}", s.chars().take(80).collect::<String>()),
            }),
        }
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256({self})")
    }
}

serde_as_text!(Sha256);

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn canonical_form_round_trips() {
        let h: Sha256 = EMPTY.parse().unwrap();
        assert_eq!(h.to_string(), EMPTY);
        assert_eq!(h.0[0], 0xe3);
        assert_eq!(EMPTY.to_uppercase().parse::<Sha256>().unwrap(), h);
        assert_eq!(format!("sha256:{EMPTY}").parse::<Sha256>().unwrap(), h);
        assert_eq!(format!("sha256={EMPTY}").parse::<Sha256>().unwrap(), h);
        assert_eq!(serde_json::to_string(&h).unwrap(), format!("\"{EMPTY}\""));
        let back: Sha256 = serde_json::from_str(&format!("\"{EMPTY}\"")).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn wrong_lengths_and_digits_are_refused_and_shown_cut() {
        for bad in [
            "",
            &EMPTY[1..],
            &format!("{EMPTY}0"),
            &EMPTY.replace('e', "g"),
            "md5:abc",
        ] {
            assert!(bad.parse::<Sha256>().is_err(), "{bad:?}");
        }
        let long = "z".repeat(10_000);
        let e = long.parse::<Sha256>().unwrap_err().to_string();
        assert!(e.len() < 200, "{e}");
    }
}
