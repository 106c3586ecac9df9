//! AMD naming knowledge shared by the text parsers and the live collectors
//! ([`crate::live`]): PCI vendor ids, gfx target decoding, which targets are
//! APUs, RADV's chip codenames, and PCI names/VF flags from the pci.ids
//! database (the `pci-ids` crate, never a hand table).

/// KFD `gfx_target_version` (major*10000 + minor*100 + stepping) to the LLVM
/// target name: 90402 -> gfx942, 90010 -> gfx90a, 110003 -> gfx1103.
/// Reading it from KFD is the reliable way (ERRORS.md C7: decoding the DRM
/// GC IP version gives gfx943 for a gfx942 MI300X).
pub fn gfx_from_target_version(v: u64) -> Option<String> {
    if v == 0 {
        return None;
    }
    let major = v / 10000;
    let minor = (v / 100) % 100;
    let step = v % 100;
    if major == 0 || minor > 15 || step > 15 {
        return None;
    }
    Some(format!("gfx{major}{minor:x}{step:x}"))
}

/// `HSA_OVERRIDE_GFX_VERSION` ("11.0.0") to the target it pretends to be.
pub fn gfx_from_override(v: &str) -> Option<String> {
    let mut it = v.trim().split('.');
    let major: u64 = it.next()?.parse().ok()?;
    let minor: u64 = it.next()?.parse().ok()?;
    let step: u64 = it.next()?.parse().ok()?;
    if it.next().is_some() {
        return None;
    }
    gfx_from_target_version(major * 10000 + minor * 100 + step)
}

/// Extracts the first `gfxNNNN` token from text ("amdgcn-amd-amdhsa--gfx942:sramecc+").
pub fn find_gfx(text: &str) -> Option<String> {
    let lc = text.to_ascii_lowercase();
    let b = lc.as_bytes();
    let mut i = 0;
    while let Some(pos) = lc[i..].find("gfx") {
        let start = i + pos;
        let before_ok =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        let mut end = start + 3;
        while end < b.len() && b[end].is_ascii_hexdigit() {
            end += 1;
        }
        let digits = &lc[start + 3..end];
        let after_ok = end == b.len() || !(b[end].is_ascii_alphanumeric() || b[end] == b'_');
        if before_ok
            && after_ok
            && (3..=4).contains(&digits.len())
            && digits.as_bytes()[0].is_ascii_digit()
        {
            return Some(format!("gfx{digits}"));
        }
        i = start + 3;
    }
    None
}

/// gfx targets of AMD APUs (integrated GPUs sharing system memory). The KFD
/// topology says so directly (a node with CPU cores and SIMDs); text such as
/// a rocminfo paste only shows the target, so this list fills the gap.
const APU_TARGETS: &[&str] = &[
    "gfx801", "gfx902", "gfx909", "gfx90c", "gfx1013", "gfx1033", "gfx1035", "gfx1036", "gfx1037",
    "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
];

pub fn is_apu_target(gfx: &str) -> bool {
    APU_TARGETS.contains(&gfx)
}

/// A chip codename as the kernel (`initializing kernel modesetting (POLARIS10 ...`)
/// or RADV (`(RADV NAVI23)`) prints it, to its gfx target
/// (`probe/gfx-targets.toml`'s `[[codename]]`).
pub fn gfx_from_codename(code: &str) -> Option<String> {
    gfx_targets()
        .codename
        .iter()
        .find(|c| c.name.eq_ignore_ascii_case(code))
        .map(|c| c.gfx.clone())
}

/// The gfx target table of `probe/gfx-targets.toml` (see its header): what a
/// paste implies when no tool printed the target.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GfxTargets {
    device: Vec<DeviceRange>,
    codename: Vec<Named>,
    ip: Vec<GcIp>,
    name: Vec<Named>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceRange {
    first: u16,
    last: u16,
    #[allow(dead_code)] // documentation in the data file
    chip: String,
    gfx: String,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Named {
    name: String,
    gfx: String,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GcIp {
    gc: String,
    gfx: String,
}

const GFX_TARGETS_TOML: &str = include_str!("../../gfx-targets.toml");

fn parse_gfx_targets(text: &str) -> Result<GfxTargets, String> {
    let t: GfxTargets = toml::from_str(text).map_err(|e| e.to_string())?;
    let ok = |g: &str| find_gfx(g).as_deref() == Some(g);
    for d in &t.device {
        if d.first > d.last || !ok(&d.gfx) {
            return Err(format!(
                "device range {:#06x}..={:#06x}: bad",
                d.first, d.last
            ));
        }
        if let Some(o) = t
            .device
            .iter()
            .find(|o| !std::ptr::eq(*o, d) && o.first <= d.last && d.first <= o.last)
        {
            return Err(format!(
                "device ranges overlap: {:#06x} and {:#06x}",
                d.first, o.first
            ));
        }
    }
    for n in t.codename.iter().chain(&t.name) {
        if n.name.is_empty() || !ok(&n.gfx) {
            return Err(format!("{}: bad entry", n.name));
        }
    }
    for i in &t.ip {
        if i.gc.split('.').count() != 3 || !ok(&i.gfx) {
            return Err(format!("gc {}: bad entry", i.gc));
        }
    }
    Ok(t)
}

fn gfx_targets() -> &'static GfxTargets {
    static T: std::sync::OnceLock<GfxTargets> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        parse_gfx_targets(GFX_TARGETS_TOML).expect("embedded gfx-targets.toml is valid")
    })
}

/// An AMD PCI device id to its gfx target (0x744c -> gfx1100).
pub fn gfx_from_device_id(device: u16) -> Option<String> {
    gfx_targets()
        .device
        .iter()
        .find(|d| (d.first..=d.last).contains(&device))
        .map(|d| d.gfx.clone())
}

/// A chip codename in any case (RENOIR, yellow_carp) to its gfx target.
pub fn gfx_from_chip(code: &str) -> Option<String> {
    gfx_from_codename(code)
}

/// The gfx target a firmware file name implies: `amdgpu/gc_11_0_0_mes.bin`
/// (graphics IP 11.0.0) or `amdgpu/carrizo_pfp.bin` (the chip's codename,
/// the longest one that prefixes the name).
pub fn gfx_from_firmware(line: &str) -> Option<String> {
    let p = line.find("amdgpu/")? + 7;
    let file: String = line[p..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
        .collect::<String>()
        .to_ascii_lowercase();
    if let Some(ip) = file.strip_prefix("gc_") {
        let v: Vec<&str> = ip.split('_').take(3).collect();
        let v = v.join(".");
        return gfx_targets()
            .ip
            .iter()
            .find(|i| i.gc == v)
            .map(|i| i.gfx.clone());
    }
    gfx_targets()
        .codename
        .iter()
        .map(|c| c.name.as_str())
        .filter(|c| file.starts_with(&format!("{}_", c.to_ascii_lowercase())))
        .max_by_key(|c| c.len())
        .and_then(gfx_from_chip)
}

/// "amdgpu: ATOM BIOS: 113-RAVEN-114" -> gfx902 (the part name carries the chip).
pub fn gfx_from_atom_bios(line: &str) -> Option<String> {
    let p = line.find("ATOM BIOS: ")? + 11;
    line[p..]
        .split(['-', ' '])
        .skip(1)
        .take(2)
        .find_map(gfx_from_chip)
}

/// An integrated GPU's marketing name that only one chip carries
/// ("AMD Radeon(TM) 890M Graphics" -> gfx1150).
pub fn gfx_from_marketing_name(name: &str) -> Option<String> {
    let words: Vec<&str> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    gfx_targets()
        .name
        .iter()
        .find(|n| words.iter().any(|w| w.eq_ignore_ascii_case(&n.name)))
        .map(|n| n.gfx.clone())
        .or_else(|| chip_in_name(&words))
}

/// The chip name pci.ids gives a GPU (what `lspci` without `-nn` prints:
/// "Ellesmere [Radeon RX 470/480]", "Aldebaran", "Navi 21 [...]", "Vega 20
/// [Radeon VII]"): a word that is a codename, or a codename split from its
/// number ("Navi" "21" is NAVI21). Only codenames count, never retail names.
fn chip_in_name(words: &[&str]) -> Option<String> {
    words.iter().enumerate().find_map(|(i, w)| {
        let joined = words
            .get(i + 1)
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| gfx_from_chip(&format!("{w}{n}")));
        joined.or_else(|| gfx_from_chip(w))
    })
}

/// The `HSA_OVERRIDE_GFX_VERSION` value that makes the runtime report
/// target `gfx`: gfx1201 -> 12.0.1, gfx90a -> 9.0.10, gfx1030 -> 10.3.0.
pub fn override_value(gfx: &str) -> Option<String> {
    let d = gfx.strip_prefix("gfx")?;
    let (major, rest) = match d.len() {
        4 => d.split_at(2),
        3 => d.split_at(1),
        _ => return None,
    };
    let major: u32 = major.parse().ok()?;
    let mut r = rest.chars().map(|c| c.to_digit(16));
    let (minor, step) = (r.next()??, r.next()??);
    Some(format!("{major}.{minor}.{step}"))
}

/// A ROCm tool's reported target that the GPU's own identity contradicts:
/// HSA reports whatever `HSA_OVERRIDE_GFX_VERSION` forces (ROCm/ROCm#5696:
/// a Radeon 8060S reported as gfx1201; #5238: an MI210, chip 0x740f,
/// reported as gfx1030), while the chip id (KFD's, from the driver) or a
/// name only one chip carries still says what the GPU is. Returns the real
/// target and the override value in effect.
pub fn forced_target(
    reported: &str,
    device_id: Option<u16>,
    name: &str,
) -> Option<(String, String)> {
    let real = device_id
        .and_then(gfx_from_device_id)
        .or_else(|| gfx_from_marketing_name(name))?;
    (real != reported)
        .then(|| override_value(reported).map(|v| (real, v)))
        .flatten()
}

/// The release in the Windows HIP SDK's install path a paste shows
/// (`PS C:\\AMD\\ROCm\\6.2\\bin> hipinfo.exe`, `C:\\Program Files\\AMD\\ROCm\\7.1\\bin`),
/// when one release only appears.
pub fn hip_sdk_path_version(text: &str) -> Option<String> {
    if !super::loose::mentions(text, &["\\amd\\rocm\\"]) {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let mut found: Option<String> = None;
    for (p, m) in lower.match_indices("\\amd\\rocm\\") {
        let v: String = lower[p + m.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let v = v.trim_end_matches('.');
        if v.split('.').count() < 2 || v.split('.').any(str::is_empty) {
            continue;
        }
        match &found {
            Some(f) if f != v => return None,
            _ => found = Some(v.to_string()),
        }
    }
    found
}

/// A ROCm/HIP version in its build-number form to the release it names:
/// `3.7.20315-077bcfa0` and `5.7.31921` -> `3.7`, `5.7` (the third number
/// is a build, not a patch level); `7.2.1` stays `7.2.1`.
pub fn rocm_release(v: &str) -> String {
    let v = v.trim().trim_matches(['\'', '"']);
    let core = v.split(['-', '+', ' ']).next().unwrap_or(v);
    let parts: Vec<&str> = core.split('.').collect();
    match parts.as_slice() {
        [a, b, c, ..] if c.len() >= 4 && c.bytes().all(|x| x.is_ascii_digit()) => {
            format!("{a}.{b}")
        }
        _ => core.to_string(),
    }
}

/// "AMD Radeon Graphics (RADV GFX1201)" -> gfx1201.
pub fn gfx_from_radv_name(name: &str) -> Option<String> {
    let start = name.find("(RADV ")? + 6;
    let rest = &name[start..];
    let code = rest.split(')').next()?.trim();
    gfx_from_codename(code).or_else(|| find_gfx(code))
}

/// pci.ids name of a device ("Aqua Vanjaram [Instinct MI300X VF]"): the
/// sourced supplement (`probe/pci-ids-supplement.toml`, devices newer than
/// the compiled-in database) first, then pci.ids.
pub fn pci_name(vendor: u16, device: u16) -> Option<&'static str> {
    supplement()
        .iter()
        .find(|e| e.vendor == vendor && e.device == device)
        .map(|e| e.name.as_str())
        .or_else(|| pci_ids::Device::from_vid_pid(vendor, device).map(|d| d.name()))
}

const SUPPLEMENT_TOML: &str = include_str!("../../pci-ids-supplement.toml");

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupplementEntry {
    pub vendor: u16,
    pub device: u16,
    pub name: String,
    /// Where a real tool printed this id with this name (checked non-empty).
    pub source: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SupplementFile {
    device: Vec<SupplementEntry>,
}

/// Parses a supplement table; every entry must cite a source.
pub fn parse_supplement(text: &str) -> Result<Vec<SupplementEntry>, String> {
    let f: SupplementFile =
        toml::from_str(text).map_err(|e| format!("pci-ids-supplement.toml: {e}"))?;
    for e in &f.device {
        if e.source.trim().is_empty() || e.name.trim().is_empty() {
            return Err(format!(
                "pci-ids-supplement.toml: {:04x}:{:04x} needs a name and a source",
                e.vendor, e.device
            ));
        }
    }
    Ok(f.device)
}

/// The embedded supplement (validated by a unit test, so the `expect`
/// cannot fire in a released binary).
pub fn supplement() -> &'static [SupplementEntry] {
    static S: std::sync::OnceLock<Vec<SupplementEntry>> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        parse_supplement(SUPPLEMENT_TOML).expect("embedded pci-ids-supplement.toml is valid")
    })
}

/// SR-IOV virtual function, as proven by a name ("AMD Instinct MI300X VF")
/// or by the pci.ids name of the device id (1002:74b5 "... MI300X VF]").
pub fn is_vf(name: &str, vendor: Option<u16>, device: Option<u16>) -> bool {
    let named = |n: &str| {
        n.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "VF")
            || n.contains("Virtual Function")
    };
    if named(name) {
        return true;
    }
    match (vendor, device) {
        (Some(v), Some(d)) => pci_name(v, d).is_some_and(named),
        _ => false,
    }
}

/// A server's BMC display controller (ASPEED AST2x00, Matrox G200e): a
/// VGA device for the remote console, never a GPU to compute on.
pub fn is_bmc_display(vendor: Option<u16>, name: &str) -> bool {
    matches!(vendor, Some(ASPEED) | Some(MATROX))
        || name.contains("ASPEED")
        || name.contains("Matrox")
        || name.contains("MGA G200")
}

pub const ASPEED: u16 = 0x1a03;
pub const MATROX: u16 = 0x102b;

/// PCI vendor ids.
pub const AMD: u16 = 0x1002;
pub const NVIDIA: u16 = 0x10de;
pub const INTEL: u16 = 0x8086;

/// rocminfo's `BDFID` (bus<<8 | dev<<3 | fn) as "bb:dd.f".
/// A PCI address in any printed form, as sysfs prints it; text that is not
/// one is no address.
pub fn pci_address(text: &str) -> Option<String> {
    text.parse::<greta_vocab::PciAddress>()
        .ok()
        .map(|a| a.to_string())
}

pub fn bdf_from_bdfid(id: u32) -> Option<String> {
    greta_vocab::PciAddress::from_bdfid(id).map(|a| a.to_string())
}

/// Parses "0x74a1", "74a1" or "29857" as the hex/decimal it is written in.
pub fn parse_id(s: &str) -> Option<u32> {
    let s = s.trim().trim_end_matches(',');
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_versions_decode() {
        assert_eq!(gfx_from_target_version(90402).as_deref(), Some("gfx942"));
        assert_eq!(gfx_from_target_version(90010).as_deref(), Some("gfx90a"));
        assert_eq!(gfx_from_target_version(110003).as_deref(), Some("gfx1103"));
        assert_eq!(gfx_from_target_version(100300).as_deref(), Some("gfx1030"));
        assert_eq!(gfx_from_target_version(90012).as_deref(), Some("gfx90c"));
        assert_eq!(gfx_from_target_version(110000).as_deref(), Some("gfx1100"));
        assert_eq!(gfx_from_target_version(0), None);
        assert_eq!(gfx_from_target_version(99), None);
        assert_eq!(gfx_from_override("11.0.0").as_deref(), Some("gfx1100"));
        assert_eq!(gfx_from_override("10.3.0").as_deref(), Some("gfx1030"));
        assert_eq!(gfx_from_override("eleven"), None);
        assert!(is_apu_target("gfx1103") && !is_apu_target("gfx942"));
    }

    #[test]
    fn gfx_tokens_are_found_only_as_words() {
        assert_eq!(
            find_gfx("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-").as_deref(),
            Some("gfx942")
        );
        assert_eq!(
            find_gfx("AMD Radeon Graphics (gfx1103)").as_deref(),
            Some("gfx1103")
        );
        assert_eq!(find_gfx("TensileLibrary_lazy_gfx90a.dat").as_deref(), None);
        assert_eq!(find_gfx("gfx9-4-generic"), None);
    }

    #[test]
    fn supplement_is_valid_and_wins_over_pci_ids() {
        assert!(!supplement().is_empty());
        assert_eq!(pci_name(AMD, 0x75a0), Some("Instinct MI350X"));
        // pci.ids still answers what the supplement does not hold.
        assert_eq!(
            pci_name(AMD, 0x74a1),
            Some("Aqua Vanjaram [Instinct MI300X]")
        );
        assert!(parse_supplement(
            "[[device]]\nvendor = 1\ndevice = 2\nname = \"x\"\nsource = \"\"\n"
        )
        .is_err());
        assert!(parse_supplement("[[device]]\nvendor = 1\ndevice = 2\nname = \"x\"\n").is_err());
    }

    #[test]
    fn override_values_and_forced_targets() {
        for (g, v) in [
            ("gfx1201", "12.0.1"),
            ("gfx90a", "9.0.10"),
            ("gfx1030", "10.3.0"),
            ("gfx942", "9.4.2"),
            ("gfx90c", "9.0.12"),
        ] {
            assert_eq!(override_value(g).as_deref(), Some(v), "{g}");
        }
        assert_eq!(override_value("gfx12"), None);
        assert_eq!(
            forced_target("gfx1201", None, "Radeon 8060S Graphics"),
            Some(("gfx1151".into(), "12.0.1".into()))
        );
        assert_eq!(
            forced_target("gfx1151", None, "Radeon 8060S Graphics"),
            None
        );
        // Nothing the name or id implies: no conclusion.
        assert_eq!(forced_target("gfx1030", None, "AMD Radeon RX 6800"), None);
        assert_eq!(
            forced_target("gfx1030", Some(0x740f), "AMD Instinct MI210"),
            Some(("gfx90a".into(), "10.3.0".into()))
        );
    }

    /// The HIP SDK's path on Windows (ROCm/ROCm#5105 `C:\\AMD\\ROCm\\6.2\\bin`,
    /// ROCm/librocdxg#57 `C:\\Program Files\\AMD\\ROCm\\7.1\\bin`).
    #[test]
    fn hip_sdk_path_names_the_release() {
        assert_eq!(
            hip_sdk_path_version("PS C:\\AMD\\ROCm\\6.2\\bin> hipinfo.exe\n").as_deref(),
            Some("6.2")
        );
        assert_eq!(
            hip_sdk_path_version("InstalledDir: C:\\Program Files\\AMD\\ROCm\\7.1\\bin\n")
                .as_deref(),
            Some("7.1")
        );
        assert_eq!(
            hip_sdk_path_version("C:\\AMD\\ROCm\\6.1\\bin C:\\AMD\\ROCm\\6.2\\bin"),
            None
        );
        assert_eq!(hip_sdk_path_version("C:\\AMD\\ROCm\\bin"), None);
    }

    #[test]
    fn rocm_release_of_build_numbers() {
        assert_eq!(rocm_release("3.7.20315-077bcfa0"), "3.7");
        assert_eq!(rocm_release("'3.0.19493-36529b1'"), "3.0");
        assert_eq!(rocm_release("5.7.31921"), "5.7");
        assert_eq!(rocm_release("7.2.1"), "7.2.1");
        assert_eq!(rocm_release("6.4.43482-0f2d60242"), "6.4");
    }

    #[test]
    fn gfx_targets_table_is_valid_and_answers() {
        parse_gfx_targets(GFX_TARGETS_TOML).unwrap();
        assert!(parse_gfx_targets(
            "device = []\ncodename = []\nip = []\nname = [{name = \"x\", gfx = \"nope\"}]\n"
        )
        .is_err());
        assert!(parse_gfx_targets("codename = []\nip = []\nname = []\n[[device]]\nfirst = 2\nlast = 9\nchip = \"a\"\ngfx = \"gfx900\"\n[[device]]\nfirst = 9\nlast = 9\nchip = \"b\"\ngfx = \"gfx900\"\n").unwrap_err().contains("overlap"));
        assert_eq!(gfx_from_device_id(0x744c).as_deref(), Some("gfx1100"));
        assert_eq!(gfx_from_device_id(0x66a1).as_deref(), Some("gfx906"));
        assert_eq!(gfx_from_device_id(0x7551).as_deref(), Some("gfx1201"));
        assert_eq!(gfx_from_device_id(0x1234), None);
        assert_eq!(gfx_from_chip("yellow_carp").as_deref(), Some("gfx1035"));
        assert_eq!(gfx_from_chip("RENOIR").as_deref(), Some("gfx90c"));
        for (l, g) in [
            (
                "Direct firmware load for amdgpu/carrizo_pfp.bin failed with error -2",
                "gfx801",
            ),
            (
                "mc: Failed to load firmware \"amdgpu/polaris12_mc.bin\"",
                "gfx803",
            ),
            ("loading amdgpu/gc_11_0_1_mes_2.bin", "gfx1103"),
            ("amdgpu/yellow_carp_dmcub.bin", "gfx1035"),
        ] {
            assert_eq!(gfx_from_firmware(l).as_deref(), Some(g), "{l}");
        }
        assert_eq!(gfx_from_firmware("amdgpu/psp_13_0_8_toc.bin"), None);
        assert_eq!(
            gfx_from_atom_bios("amdgpu: ATOM BIOS: 113-RAVEN-114").as_deref(),
            Some("gfx902")
        );
        assert_eq!(
            gfx_from_atom_bios("amdgpu: ATOM BIOS: 113-REMBRANDT-X37").as_deref(),
            Some("gfx1035")
        );
        assert_eq!(
            gfx_from_marketing_name("AMD Radeon(TM) 890M Graphics").as_deref(),
            Some("gfx1150")
        );
        assert_eq!(gfx_from_marketing_name("AMD Radeon RX 7900 XTX"), None);
    }

    /// lspci without `-nn` names a GPU by the pci.ids chip name only
    /// (ROCm/ROCm#415 "Ellesmere [Radeon RX 470/480]", #5480 "Aldebaran",
    /// #6166 "Navi 48"), and dmesg's `kfd: added device 1002:6fdf` names an
    /// id outside the Polaris blocks (#739): each implies one target.
    #[test]
    fn pci_ids_chip_names_and_stray_ids_imply_a_target() {
        for (name, gfx) in [
            ("Advanced Micro Devices, Inc. [AMD/ATI] Ellesmere [Radeon RX 470/480] (rev ef)", "gfx803"),
            ("Advanced Micro Devices, Inc. [AMD/ATI] Baffin [Radeon RX 460/560D / Pro 450/455/460/555/555X/560/560X]", "gfx803"),
            ("Advanced Micro Devices, Inc. [AMD/ATI] Aldebaran (rev 02)", "gfx90a"),
            ("Aldebaran/MI200 [Instinct MI250X/MI250/MI210]", "gfx90a"),
            ("Advanced Micro Devices, Inc. [AMD/ATI] Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]", "gfx1030"),
            ("Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]", "gfx1030"),
            ("Advanced Micro Devices, Inc. [AMD/ATI] Navi 48 [Radeon RX 9070/9070 XT/9070 GRE]", "gfx1201"),
            ("Vega 20 [Radeon VII]", "gfx906"),
            ("Fiji [Radeon R9 FURY / NANO Series]", "gfx803"),
        ] {
            assert_eq!(gfx_from_marketing_name(name).as_deref(), Some(gfx), "{name}");
        }
        // A number after "Vega" that is no chip, and retail names, imply nothing.
        assert_eq!(gfx_from_marketing_name("AMD Radeon RX Vega 56"), None);
        assert_eq!(gfx_from_marketing_name("AMD Radeon Vega 8 Graphics"), None);
        assert_eq!(gfx_from_marketing_name("Radeon RX 590 Series"), None);
        assert_eq!(gfx_from_device_id(0x6fdf).as_deref(), Some("gfx803"));
    }

    #[test]
    fn radv_names_and_vf_ids() {
        assert_eq!(
            gfx_from_radv_name("AMD Radeon Graphics (RADV GFX1201)").as_deref(),
            Some("gfx1201")
        );
        assert_eq!(
            gfx_from_radv_name("AMD Radeon 780M Graphics (RADV PHOENIX)").as_deref(),
            Some("gfx1103")
        );
        assert_eq!(gfx_from_radv_name("NVIDIA GeForce RTX 2060"), None);
        assert!(is_vf("AMD Instinct MI300X VF", None, None));
        assert!(is_vf("", Some(AMD), Some(0x74b5)));
        assert!(!is_vf("AMD Instinct MI300X", Some(AMD), Some(0x74a1)));
        assert_eq!(bdf_from_bdfid(33536).as_deref(), Some("83:00.0"));
        assert!(is_bmc_display(Some(0x1a03), ""));
        assert!(is_bmc_display(
            None,
            "Matrox Electronics Systems Ltd. MGA G200e [Pilot] ServerEngines (SEP1)"
        ));
        assert!(!is_bmc_display(
            Some(AMD),
            "Aqua Vanjaram [Instinct MI300X]"
        ));
        assert_eq!(bdf_from_bdfid(50688).as_deref(), Some("c6:00.0"));
    }
}
