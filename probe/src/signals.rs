//! Error signatures recognised line by line in any text (command output,
//! dmesg, application logs). The table is data (`probe/signals.toml`): adding
//! a newly seen error message is a data change, not a code change.
//!
//! Harmless noise is matched first and recorded with an id starting with
//! `noise-`, so a line such as turnip's `VK_ERROR_INCOMPATIBLE_DRIVER` probe
//! failure can never be mistaken for a real Vulkan failure.

use crate::facts::Signal;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::OnceLock;

const SIGNALS_TOML: &str = include_str!("../signals.toml");

/// At most this many signals of one id are kept per source: a 16 MiB log
/// repeating one error must not produce a 16 MiB report.
pub const MAX_PER_ID: usize = 20;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    pub id: String,
    #[serde(default)]
    pub noise: bool,
    #[serde(default)]
    pub all: Vec<String>,
    #[serde(default)]
    pub any: Vec<String>,
    #[serde(default)]
    pub none: Vec<String>,
    /// Where the signature comes from (ERRORS.md entry or fixture).
    #[serde(default, rename = "ref")]
    pub reference: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignalFile {
    signal: Vec<Signature>,
}

impl Signature {
    /// `line_lc` must already be lowercase.
    fn matches(&self, line_lc: &str) -> bool {
        self.all.iter().all(|s| line_lc.contains(s.as_str()))
            && (self.any.is_empty() || self.any.iter().any(|s| line_lc.contains(s.as_str())))
            && !self.none.iter().any(|s| line_lc.contains(s.as_str()))
    }
}

/// Parses a signature table; patterns are lowercased once here.
pub fn parse_table(text: &str) -> Result<Vec<Signature>, String> {
    let file: SignalFile = toml::from_str(text).map_err(|e| format!("signals.toml: {e}"))?;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(file.signal.len());
    for mut s in file.signal {
        if s.all.is_empty() && s.any.is_empty() {
            return Err(format!("signals.toml: signal {:?} has no pattern", s.id));
        }
        if s.noise != s.id.starts_with("noise-") {
            return Err(format!(
                "signals.toml: signal {:?}: ids of noise signatures (and only those) start with \"noise-\"",
                s.id
            ));
        }
        if !seen.insert(s.id.clone()) {
            return Err(format!("signals.toml: duplicate signal id {:?}", s.id));
        }
        for v in [&mut s.all, &mut s.any, &mut s.none] {
            for p in v.iter_mut() {
                *p = p.to_lowercase();
            }
        }
        out.push(s);
    }
    Ok(out)
}

/// The embedded table (validated by a unit test, so `expect` cannot fire in
/// a released binary).
pub fn table() -> &'static [Signature] {
    static TABLE: OnceLock<Vec<Signature>> = OnceLock::new();
    TABLE.get_or_init(|| parse_table(SIGNALS_TOML).expect("embedded signals.toml is valid"))
}

/// Signals the live/sysroot collectors raise themselves (not text
/// signatures): id and meaning. Rules may name them like any other.
pub const COLLECTOR_SIGNALS: &[(&str, &str)] = &[
    ("device-group-stale-login", "the user is in the device's group in /etc/group, but this login session lacks it"),
    ("device-open-eperm", "opening a device node failed with EPERM although its mode allows it (container device cgroup / LSM)"),
    ("rocminfo-timeout", "rocminfo did not finish in time and was killed (HSA runtime hang)"),
    ("hipconfig-timeout", "hipconfig --version did not finish in time"),
    ("python-timeout", "a Python interpreter did not print its version in time"),
    ("rocm-path-missing", "ROCM_PATH/HIP_PATH points at no ROCm install"),
    ("vulkan-icd-broken", "an ICD manifest is unreadable or its library cannot load"),
    ("vulkan-enumeration-timeout", "Vulkan device enumeration did not finish in time (a driver hangs)"),
    ("vulkan-loader-unusable", "libvulkan.so.1 is missing or cannot be loaded"),
    ("vulkan-enumeration-failed", "vkCreateInstance or device enumeration failed"),
];

/// Ids of every known signature and collector signal (rules are checked
/// against this list).
pub fn known_ids() -> Vec<&'static str> {
    table()
        .iter()
        .map(|s| s.id.as_str())
        .chain(COLLECTOR_SIGNALS.iter().map(|c| c.0))
        .collect()
}

/// Whether `id` names a harmless notice.
pub fn is_noise(id: &str) -> bool {
    id.starts_with("noise-")
}

/// The first signature matching one line, if any.
pub fn classify(line: &str) -> Option<&'static Signature> {
    let lc = line.to_lowercase();
    table().iter().find(|s| s.matches(&lc))
}

/// Scans `text` line by line; `source` names the file or command.
pub fn scan(text: &str, source: &str) -> Vec<Signal> {
    let mut out = Vec::new();
    let mut counts: HashMap<&'static str, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some(sig) = classify(line) else { continue };
        let n = counts.entry(sig.id.as_str()).or_default();
        *n += 1;
        if *n > MAX_PER_ID {
            continue;
        }
        out.push(Signal {
            id: sig.id.clone(),
            source: source.to_string(),
            line: Some(i + 1),
            text: truncate(line.trim(), 300),
        });
    }
    out
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_table_is_valid() {
        assert!(parse_table(SIGNALS_TOML).is_ok());
        assert!(table().len() > 30);
    }

    #[test]
    fn noise_wins_over_errors_on_the_same_line() {
        let l = "TU: error: ../src/freedreno/vulkan/tu_knl.cc:387: failed to open device /dev/dri/renderD128 (VK_ERROR_INCOMPATIBLE_DRIVER)";
        assert_eq!(classify(l).unwrap().id, "noise-other-driver-probe");
        let l = "/home/x/vulkaninfo/vulkaninfo.h:371: failed with ERROR_INCOMPATIBLE_DRIVER";
        assert_eq!(classify(l).unwrap().id, "vulkaninfo-failed");
    }

    #[test]
    fn kfd_errno_variants_are_distinct() {
        for (errno, id) in [
            ("Permission denied", "kfd-permission-denied"),
            ("No such file or directory", "kfd-no-such-file"),
            ("Invalid argument", "kfd-invalid-argument"),
            ("Cannot allocate memory", "kfd-cannot-allocate"),
            ("Operation not permitted", "kfd-operation-not-permitted"),
        ] {
            let l = format!("Unable to open /dev/kfd read-write: {errno}");
            assert_eq!(classify(&l).unwrap().id, id, "{l}");
        }
        assert_eq!(
            classify("Failed to get user name to check for video group membership")
                .unwrap()
                .id,
            "noise-rocminfo-username"
        );
    }

    #[test]
    fn only_amd_icds_skipped_count() {
        let other = "WARNING: [Loader Message] Code 0 : terminator_CreateInstance: Received return code -3 from call to vkCreateInstance in ICD /nix/store/x/lib/libvulkan_dzn.so. Skipping this driver.";
        assert!(is_noise(&classify(other).unwrap().id));
        let radv = other.replace("libvulkan_dzn", "libvulkan_radeon");
        assert_eq!(classify(&radv).unwrap().id, "vk-icd-skipped");
    }

    #[test]
    fn repeated_lines_are_capped_with_line_numbers() {
        let text = "x\nhsa_init failed with 1008\n".repeat(100);
        let s = scan(&text, "log.txt");
        assert_eq!(s.len(), MAX_PER_ID);
        assert_eq!(s[0].line, Some(2));
        assert_eq!(s[1].line, Some(4));
        assert_eq!(s[0].source, "log.txt");
    }

    #[test]
    fn bad_tables_are_rejected() {
        assert!(parse_table("[[signal]]\nid = \"x\"\n").is_err());
        assert!(parse_table(
            "[[signal]]\nid = \"x\"\nall=[\"a\"]\n[[signal]]\nid = \"x\"\nall=[\"b\"]\n"
        )
        .is_err());
        assert!(parse_table("[[signal]]\nid = \"noise-x\"\nall=[\"a\"]\n").is_err());
        assert!(parse_table("[[signal]]\nid = \"x\"\nall=[\"a\"]\nbogus=1\n").is_err());
    }
}
