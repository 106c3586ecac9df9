//! PCI function addresses as tools print them: `0000:03:00.0` (sysfs,
//! lspci -D, amd-smi), `00000000:03:00.0` (nvidia-smi's 32-bit domain) and
//! `03:00.0` (lspci, rocminfo's BDFID: no domain). One parser, so that a
//! pasted address is either read whole or refused, never sliced.
use std::fmt;
use std::str::FromStr;

/// `[domain:]bus:device.function`, each part hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PciAddress {
    /// None where the tool prints no domain (`03:00.0`).
    pub domain: Option<u32>,
    pub bus: u8,
    /// 0-31.
    pub device: u8,
    /// 0-7.
    pub function: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a PCI address (expected [domain:]bus:device.function in hex, e.g. 0000:03:00.0)")]
pub struct PciAddressError {
    pub text: String,
}

impl PciAddress {
    /// The same function, whether or not both sides name a domain
    /// (rocminfo's BDFID carries none).
    pub fn same_function(&self, other: &PciAddress) -> bool {
        (self.bus, self.device, self.function) == (other.bus, other.device, other.function)
            && match (self.domain, other.domain) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }

    /// rocminfo's `BDFID` (bus<<8 | device<<3 | function); 0 and values
    /// past 16 bits are no address.
    pub fn from_bdfid(id: u32) -> Option<PciAddress> {
        (id != 0 && id <= 0xffff).then_some(PciAddress {
            domain: None,
            bus: (id >> 8) as u8,
            device: ((id >> 3) & 0x1f) as u8,
            function: (id & 7) as u8,
        })
    }
}

/// Parses 1..=max hex digits (ASCII only, so no slice of the text can fall
/// inside a character).
fn hex(part: &str, max: usize) -> Option<u32> {
    (!part.is_empty() && part.len() <= max && part.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u32::from_str_radix(part, 16).ok())
        .flatten()
}

impl FromStr for PciAddress {
    type Err = PciAddressError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = || PciAddressError {
            text: text.chars().take(64).collect(),
        };
        let s = text.trim();
        let (rest, function) = s.rsplit_once('.').ok_or_else(err)?;
        let function = hex(function, 1).filter(|f| *f <= 7).ok_or_else(err)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (domain, bus, device) = match parts.as_slice() {
            [bus, device] => (None, *bus, *device),
            [domain, bus, device] => (Some(hex(domain, 8).ok_or_else(err)?), *bus, *device),
            _ => return Err(err()),
        };
        let bus = hex(bus, 2).ok_or_else(err)?;
        let device = hex(device, 2).filter(|d| *d <= 0x1f).ok_or_else(err)?;
        Ok(PciAddress {
            domain,
            bus: bus as u8,
            device: device as u8,
            function: function as u8,
        })
    }
}

/// Lowercase, the domain as four digits or more (sysfs's form).
impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(d) = self.domain {
            write!(f, "{d:04x}:")?;
        }
        write!(
            f,
            "{:02x}:{:02x}.{:x}",
            self.bus, self.device, self.function
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_printed_form_reads_and_prints_as_sysfs_does() {
        for (text, shown) in [
            ("0000:03:00.0", "0000:03:00.0"),
            ("00000000:C1:00.0", "0000:c1:00.0"),
            ("03:00.0", "03:00.0"),
            ("  0001:83:1f.7 ", "0001:83:1f.7"),
            ("c8ab:00:00.0", "c8ab:00:00.0"),
        ] {
            let a: PciAddress = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(a.to_string(), shown, "{text}");
            assert_eq!(shown.parse::<PciAddress>(), Ok(a), "{shown} round trip");
        }
    }

    #[test]
    fn what_is_not_an_address_is_refused_whole() {
        for text in [
            "",
            "0000:03:00",
            "0000:03:20.0",
            "0000:03:00.8",
            "000000000:03:00.0",
            "0000:103:00.0",
            "00000000\u{fffd}\u{fffd}:02:00.0",
            "0000:0\u{e9}:00.0",
            "0000:03:00.0.0",
            "1:2:3:4.0",
            "N/A",
        ] {
            assert!(text.parse::<PciAddress>().is_err(), "{text:?} was read");
        }
    }

    #[test]
    fn a_domain_less_address_is_the_same_function_as_one_with_a_domain() {
        let a: PciAddress = "0000:83:00.0".parse().unwrap();
        let b: PciAddress = "83:00.0".parse().unwrap();
        let c: PciAddress = "0001:83:00.0".parse().unwrap();
        assert!(a.same_function(&b) && b.same_function(&c));
        assert!(!a.same_function(&c));
        assert!(!a.same_function(&"84:00.0".parse().unwrap()));
    }

    #[test]
    fn rocminfo_bdfids_decode() {
        assert_eq!(
            PciAddress::from_bdfid(0x8300).map(|a| a.to_string()),
            Some("83:00.0".into())
        );
        assert_eq!(
            PciAddress::from_bdfid((0xc1 << 8) | (3 << 3) | 1).map(|a| a.to_string()),
            Some("c1:03.1".into())
        );
        assert_eq!(PciAddress::from_bdfid(0), None);
        assert_eq!(PciAddress::from_bdfid(0x1_0000), None);
    }
}
