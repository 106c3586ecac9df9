//! `amd-smi` (the default table, and the `KEY: value` form of `amd-smi
//! static`/`list`): driver and ROCm versions, GPUs by PCI address. SMI output
//! proves the kernel driver, not the HSA runtime (ERRORS.md D5).

use super::amd::{self, find_gfx, parse_id};
use super::kv;
use super::limits::Keyed;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, KernelDriver};

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "amd-smi",
    label: "amd-smi",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[
        "AMD-SMI ",
        "AMDSMI Tool",
        "GPU-Name",
        "MARKET_NAME:",
        "CURRENT_PARTITION:",
        "\"market_name\":",
        "\"target_graphics_version\":",
    ]],
};

pub fn recognise(text: &str) -> bool {
    text.contains("AMD-SMI ")
        || text.contains("AMDSMI Tool")
        || (text.contains("GPU-Name") && text.contains("BDF"))
        || text.contains("MARKET_NAME:")
        || (text.contains("CURRENT_PARTITION:") && text.contains("GPU_ID"))
        || is_json(text)
}

/// `amd-smi static --json`: the key form's keys, lower case and quoted.
fn is_json(text: &str) -> bool {
    text.contains("\"market_name\":") || text.contains("\"target_graphics_version\":")
}

/// The JSON form rewritten line by line into the key form (`"market_name":
/// "X",` -> `MARKET_NAME: X`), so a hand-edited paste that is no longer
/// valid JSON (ids masked, a quote lost) still names its GPUs.
fn json_as_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for l in lines_of(text) {
        let t = l.trim_start();
        let Some((k, v)) = t.strip_prefix('"').and_then(|r| r.split_once("\":")) else {
            // Brackets, and any text pasted around the JSON (a version line).
            out.push_str(l);
            out.push('\n');
            continue;
        };
        let v = v.trim().trim_end_matches(',').trim();
        let v = if v == "{" || v == "[" {
            ""
        } else {
            v.trim_matches('"')
        };
        out.push_str(&l[..l.len() - t.len()]);
        out.push_str(&k.to_ascii_uppercase());
        out.push_str(": ");
        out.push_str(v);
        out.push('\n');
    }
    out
}

fn word_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let p = text.find(key)? + key.len();
    text[p..].split_whitespace().next()
}

/// amd-smi always prints the domain.
fn bdf(s: &str) -> Option<String> {
    s.parse::<greta_vocab::PciAddress>()
        .ok()
        .filter(|a| a.domain.is_some())
        .map(|a| a.to_string())
}

pub fn parse(text: &str) -> Facts {
    if is_json(text) {
        return parse_keys(&json_as_keys(text));
    }
    parse_keys(text)
}

fn parse_keys(text: &str) -> Facts {
    let mut f = Facts::default();
    if let Some(v) = word_after(text, "amdgpu version:").and_then(driver_version) {
        f.kernel_driver_version = Some(v.to_string());
        f.drivers.push(KernelDriver {
            name: "amdgpu".into(),
            loaded: true,
            version: Some(v.into()),
        });
    }
    if let Some(v) = word_after(text, "ROCm version:") {
        f.rocm.version = Some(v.to_string());
    }
    let lines: Vec<&str> = lines_of(text).collect();
    // Key form: GPUs by their amd-smi index ("GPU: 0"); a paste of `amd-smi
    // list` then `amd-smi static` names each index twice, for one GPU.
    let mut keyed: Keyed<&str, Gpu> = Keyed::default();
    let mut cur: Option<&str> = None;
    // `amd-smi static --driver`: "DRIVER:" then indented "NAME: amdgpu", "VERSION: 6.18.3".
    let mut section = "";
    let mut section_indent = 0;
    for (i, line) in lines.iter().enumerate() {
        // Table form: "| 0000:83:00.0 AMD Instinct MI300X VF | 0 % ..."
        let cells: Vec<&str> = line.split('|').collect();
        if cells.len() >= 3 {
            let c = cells[1].trim();
            if let Some((bdf, name)) = c.split_once(' ') {
                if let Some(bdf) = self::bdf(bdf) {
                    let vram = lines
                        .get(i + 1)
                        .and_then(|n| total_mb(n))
                        .map(|mb| mb << 20);
                    let name = name.trim().to_string();
                    super::limits::push_gpu(
                        &mut f,
                        Gpu {
                            vf: amd::is_vf(&name, None, None),
                            name,
                            pci_address: Some(bdf),
                            vram_bytes: vram,
                            ..Gpu::amdgpu_seen_by("amd-smi")
                        },
                    );
                    continue;
                }
            }
        }
        // Key form: "GPU: 0" starts a device; "MARKET_NAME: ...", "BDF: ...".
        let Some((indent, k, v)) = kv(line) else {
            continue;
        };
        if v.is_empty() {
            section = k;
            section_indent = indent;
            continue;
        }
        if indent <= section_indent {
            section = "";
        }
        if section == "DRIVER" {
            match k {
                "VERSION" => {
                    if let Some(v) = driver_version(v) {
                        f.kernel_driver_version.get_or_insert(v.to_string());
                        f.drivers.push(KernelDriver {
                            name: "amdgpu".into(),
                            loaded: true,
                            version: Some(v.into()),
                        });
                    }
                }
                "OS_KERNEL_VERSION" => {
                    f.kernel_version.get_or_insert(v.to_string());
                }
                _ => {}
            }
            continue;
        }
        match k {
            "GPU" if v.bytes().all(|b| b.is_ascii_digit()) && !v.is_empty() => {
                keyed.entry(v, || Gpu::amdgpu_seen_by("amd-smi"));
                cur = Some(v);
            }
            // Another kind of device amd-smi lists in the same layout
            // (`AI_NIC: 0`, `CPU: 0`): it ends the GPU, and its keys
            // (BDF, PRODUCT_NAME) are not the GPU's.
            _ if indent == 0
                && !v.is_empty()
                && v.bytes().all(|b| b.is_ascii_digit())
                && k.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') =>
            {
                cur = None;
            }
            _ => {
                let Some(c) = cur else {
                    continue;
                };
                let g = keyed.entry(c, || Gpu::amdgpu_seen_by("amd-smi"));
                match k {
                    "BDF" => {
                        if let Some(a) = bdf(v) {
                            g.pci_address.get_or_insert(a);
                        }
                    }
                    "MARKET_NAME" | "PRODUCT_NAME" if g.name.is_empty() => g.name = v.to_string(),
                    "DEVICE_ID" => g.device_id = g.device_id.or(parse_id(v).map(|x| x as u16)),
                    "VENDOR_ID" => g.vendor_id = g.vendor_id.or(parse_id(v).map(|x| x as u16)),
                    "TARGET_GRAPHICS_VERSION" => g.gfx = g.gfx.take().or_else(|| find_gfx(v)),
                    _ => {}
                }
            }
        }
    }
    let keyed = keyed.finish("GPUs", &mut f.cut);
    f.gpus.extend(keyed);
    if f.gpus.is_empty() {
        f.gpus = partition_gpus(&lines, &mut f.cut);
    }
    for g in &mut f.gpus {
        g.vf |= amd::is_vf(&g.name, g.vendor_id.or(Some(amd::AMD)), g.device_id);
    }
    f
}

/// `amd-smi partition`: tables headed "GPU_ID  MEMORY  ACCELERATOR_TYPE ..."
/// with one row per logical GPU. In CPX/NPS4 modes one physical GPU shows as
/// several logical ones, each a GPU_ID and each a device of its own to ROCm,
/// so the distinct GPU_IDs are the GPUs. Used only when the text names the
/// GPUs no other way (the same GPUs in `amd-smi static` carry names).
fn partition_gpus(
    lines: &[&str],
    cut: &mut std::collections::BTreeMap<&'static str, usize>,
) -> Vec<Gpu> {
    let mut ids: Keyed<&str, ()> = Keyed::default();
    let mut in_table = false;
    for line in lines {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else {
            in_table = false;
            continue;
        };
        if first == "GPU_ID" {
            in_table = true;
        } else if line.starts_with(char::is_whitespace) {
            // A row whose GPU_ID cell is blank: another profile or resource
            // of the GPU above (ACCELERATOR_PARTITION_PROFILES), not a GPU.
        } else if in_table && first.bytes().all(|b| b.is_ascii_digit()) {
            ids.entry(first, || ());
        } else {
            in_table = false;
        }
    }
    ids.finish("GPUs", cut)
        .iter()
        .map(|_| Gpu::amdgpu_seen_by("amd-smi"))
        .collect()
}

/// The driver version as amd-smi prints it. With the kernel's own (in-tree)
/// amdgpu it prints the kernel's version banner squashed together
/// ("Linuxversion6.8.0-79-generic(buildd@...)..."): that driver's version
/// is the kernel release.
fn driver_version(v: &str) -> Option<&str> {
    let v = match v.strip_prefix("Linuxversion") {
        Some(r) => r.split('(').next().unwrap_or(r),
        None => v,
    };
    (v.starts_with(|c: char| c.is_ascii_digit()) && v != "N/A").then_some(v)
}

/// "0 %        N/A           285/196288 MB" -> 196288.
fn total_mb(line: &str) -> Option<u64> {
    let p = line.find(" MB")?;
    let before = line[..p].split_whitespace().last()?;
    before.split('/').nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// amd-smi lists AMD's AI NICs beside the GPUs in the same `KEY: value`
    /// layout (ROCm/rocm-systems#3654: `AI_NIC: 0` with its own BDF and
    /// PRODUCT_NAME); a NIC is no GPU and its keys belong to no GPU.
    #[test]
    fn other_device_blocks_end_the_gpu_and_are_not_gpus() {
        let t = "GPU: 0\n    BDF: 0000:23:00.0\n    UUID: 67ff740f-0000-1000-80e6-b5bb3c3ce0db\n    KFD_ID: 63484\n\nAI_NIC: 0\n    BDF: 0000:e2:00.0\n    PERMANENT_ADDRESS: 04:90:81:2c:77:b0\n    PRODUCT_NAME: POLLARA 1x400G QSFP112\n    VENDOR_NAME: AMD Pensando Systems, Inc.\n\nGPU: 1\n    BDF: 0000:43:00.0\n";
        let f = parse(t);
        let bdfs: Vec<_> = f.gpus.iter().map(|g| g.pci_address.as_deref()).collect();
        assert_eq!(bdfs, [Some("0000:23:00.0"), Some("0000:43:00.0")]);
        assert!(f.gpus.iter().all(|g| !g.name.contains("POLLARA")));
        // A NIC-only listing (`amd-smi list --nic 0`) holds no GPU.
        let nic = "AI_NIC: 0\n    BDF: 0000:e2:00.0\n    PRODUCT_NAME: POLLARA 1x400G QSFP112\n";
        assert!(parse(nic).gpus.is_empty());
    }

    /// `amd-smi list` then `amd-smi static` in one paste (ROCm/rocm-systems#3654)
    /// describe GPU 0 twice: one GPU with the BDF of the one and the name and
    /// ids of the other.
    #[test]
    fn the_same_gpu_index_in_two_listings_is_one_gpu() {
        let t = "$ amd-smi list\nGPU: 0\n    BDF: 0000:23:00.0\n    UUID: 67ff740f-0000-1000-80e6-b5bb3c3ce0db\n$ amd-smi static\nGPU: 0\n    ASIC:\n        MARKET_NAME: AMD Instinct MI210\n        VENDOR_ID: 0x1002\n        DEVICE_ID: 0x740f\nGPU: 1\n    ASIC:\n        MARKET_NAME: AMD Instinct MI210\n";
        let f = parse(t);
        assert_eq!(f.gpus.len(), 2);
        assert_eq!(f.gpus[0].pci_address.as_deref(), Some("0000:23:00.0"));
        assert_eq!(f.gpus[0].name, "AMD Instinct MI210");
        assert_eq!(f.gpus[0].device_id, Some(0x740f));
        assert_eq!(f.gpus[1].pci_address, None);
    }

    /// `amd-smi partition` (ROCm/legacy-rocm-build#4477, 4 GPUs in SPX/NPS1):
    /// one GPU per distinct GPU_ID, counted once across its tables; the
    /// profile table's indented rows (resources of GPU 0, ROCm/amdsmi#132's
    /// DPX spelling) are not GPUs.
    #[test]
    fn partition_tables_count_each_gpu_id_once() {
        let text = "CURRENT_PARTITION:\nGPU_ID  MEMORY  ACCELERATOR_TYPE  ACCELERATOR_PROFILE_INDEX  PARTITION_ID\n0       NPS1    SPX               0                          0\n1       NPS1    SPX               0                          0\n\nMEMORY_PARTITION:\nGPU_ID  MEMORY_PARTITION_CAPS  CURRENT_MEMORY_PARTITION\n0       N/A                    NPS1\n1       N/A                    NPS1\n\nACCELERATOR_PARTITION_PROFILES:\nGPU_ID  PROFILE_INDEX  MEMORY_PARTITION_CAPS  ACCELERATOR_TYPE  PARTITION_ID     NUM_PARTITIONS  NUM_RESOURCES  RESOURCE_INDEX  RESOURCE_TYPE  RESOURCE_INSTANCES  RESOURCES_SHARED\n0       0              N/A                    SPX*              0                1               4              0               XCC            6                   1\n                                                                                                                1               DECODER        4                   1\n        1              NPS1                   DPX               N/A              2               4              4               XCC            4                   1\n                                                                                                                5               DECODER        2                   1\n";
        assert!(recognise(text));
        let f = parse(text);
        assert_eq!(f.gpus.len(), 2, "{:?}", f.gpus);
        assert!(f.gpus.iter().all(|g| g.vendor == crate::facts::Vendor::Amd));
    }

    /// `amd-smi static --asic --json` from two machines (OpenLinkHub#117): a
    /// Granite Ridge iGPU, and an RX 7900 XTX whose ids the reporter masked,
    /// dropping a closing quote, so the paste is no longer valid JSON.
    #[test]
    fn static_json_is_read_line_by_line() {
        let igpu = "[\n    {\n        \"gpu\": 0,\n        \"asic\": {\n            \"market_name\": \"Granite Ridge [Radeon Graphics]\",\n            \"vendor_id\": \"0x1002\",\n            \"vendor_name\": \"Advanced Micro Devices Inc. [AMD/ATI]\",\n            \"subvendor_id\": \"0x1458\",\n            \"device_id\": \"0x13c0\",\n            \"subsystem_id\": \"0xd000\",\n            \"rev_id\": \"0xc1\",\n            \"asic_serial\": \"N/A\",\n            \"oam_id\": \"N/A\",\n            \"num_compute_units\": 2,\n            \"target_graphics_version\": \"gfx1036\"\n        }\n    }\n]\n";
        assert!(recognise(igpu));
        let f = parse(igpu);
        assert_eq!(f.gpus.len(), 1);
        let g = &f.gpus[0];
        assert_eq!(g.name, "Granite Ridge [Radeon Graphics]");
        assert_eq!(g.gfx.as_deref(), Some("gfx1036"));
        assert_eq!(g.device_id, Some(0x13c0));
        let masked = "[\n    {\n        \"gpu\": 0,\n        \"asic\": {\n            \"market_name\": \"Radeon RX 7900 XTX\",\n            \"vendor_id\": \"0x1002\",\n            \"device_id\": \"0x----\",\n            \"subsystem_id\": \"0x----,\n            \"rev_id\": \"0xc8\",\n            \"target_graphics_version\": \"gfx1100\"\n        }\n    }\n]\n";
        assert!(recognise(masked));
        let f = parse(masked);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].name, "Radeon RX 7900 XTX");
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1100"));
        assert_eq!(f.gpus[0].device_id, None);
        // Other JSON naming a "gpu" is not amd-smi's.
        assert!(!recognise("{\"gpu\": 0, \"name\": \"x\"}\n"));
    }
}
