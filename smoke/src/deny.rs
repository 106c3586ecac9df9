//! The f16 deny list: devices/drivers whose f16 path is known bad, so the
//! f16 gates are skipped there (with the reason) rather than trusted.

use crate::floors::{locate, toml_error, DeviceMatch, FloorsError};
use crate::results::DeviceInfo;
use serde::Deserialize;
use std::path::Path;

/// `smoke/data/deny.toml`, embedded.
pub const BUILTIN_DENY: &str = include_str!("../data/deny.toml");

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenyList {
    #[serde(default, rename = "deny")]
    pub entries: Vec<DenyEntry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenyEntry {
    pub id: String,
    pub reason: String,
    #[serde(rename = "match")]
    pub matcher: DeviceMatch,
}

/// Largest deny list read (the built-in one is a few KiB).
pub const MAX_FILE: u64 = 4 << 20;

impl DenyList {
    pub fn builtin() -> DenyList {
        Self::parse("smoke/data/deny.toml", BUILTIN_DENY).expect("built-in deny.toml is valid")
    }

    /// Reads a `--deny-list` file: a regular file (a FIFO is refused, not
    /// waited on) of at most [`MAX_FILE`] bytes.
    pub fn load(path: &Path) -> Result<DenyList, FloorsError> {
        let text = greta_fsread::text(path, MAX_FILE)?;
        Self::parse(&path.display().to_string(), &text)
    }

    pub fn parse(path: &str, text: &str) -> Result<DenyList, FloorsError> {
        let list: DenyList = toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
        if let Some(e) = list
            .entries
            .iter()
            .find(|e| e.matcher == DeviceMatch::default())
        {
            // The entry's line (its id's first mention), at its start.
            let (line, _) = locate(text, &format!("\"{}\"", e.id));
            return Err(FloorsError::Invalid {
                path: path.to_string(),
                line,
                column: 1,
                msg: format!(
                    "deny entry {}: an empty match would deny every device",
                    e.id
                ),
            });
        }
        Ok(list)
    }

    pub fn extend(&mut self, other: DenyList) {
        self.entries.extend(other.entries);
    }

    /// The first entry that denies f16 on this device.
    pub fn denies(&self, d: &DeviceInfo, backend: &str) -> Option<&DenyEntry> {
        self.entries.iter().find(|e| e.matcher.matches(d, backend))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::sample_report;

    #[test]
    fn builtin_list_parses() {
        let _ = DenyList::builtin();
    }

    #[test]
    fn matches_by_vendor_device_and_driver() {
        let text = r#"
[[deny]]
id = "radv-old"
reason = "f16 miscompile"
match = { vendor_id = 0x10005, driver_name = "llvmpipe", driver_info_contains = "mesa 22" }
"#;
        let list = DenyList::parse("d.toml", text).unwrap();
        let mut d = sample_report().devices[0].device.clone();
        assert_eq!(list.denies(&d, "vulkan").unwrap().id, "radv-old");
        d.driver_info = "Mesa 24.1".into();
        assert!(list.denies(&d, "vulkan").is_none());
    }

    #[test]
    fn errors_name_file_and_line() {
        let err = |text: &str| DenyList::parse("d.toml", text).unwrap_err().to_string();
        let e = err("[[deny]]\nid = \"x\"\nreason = \"r\"\nmatch = { colour = 1 }\n");
        assert!(e.starts_with("d.toml:4:"), "{e}");
        let e = err("[[deny]]\nid = \"x\"\nreason = \"r\"\nmatch = {}\n");
        assert!(e.contains("every device"), "{e}");
        // The entry named by its id's line, at the line's start.
        let e = err("[[deny]]\nid = \"a\"\nreason = \"r\"\nmatch = { backend = \"hip\" }\n\n[[deny]]\nreason = \"r\"\n  id = \"b\"\nmatch = {}\n");
        assert!(e.starts_with("d.toml:8:1: deny entry b:"), "{e}");
    }
}
