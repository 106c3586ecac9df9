//! `rocm-smi`: the concise table (three layouts seen in the wild: with
//! `IDs (DID, GUID)`, with `[Model : Revision]` plus a name line, and the old
//! one with neither) and the `GPU[n] : Key: value` form of its options.
//! rocm-smi reads sysfs, so a table proves amdgpu is bound, never that HSA works.

use super::amd::{find_gfx, parse_id};
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, KernelDriver};
use std::collections::BTreeMap;

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "rocm-smi",
    label: "rocm-smi",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[
        "ROCm System Management Interface",
        "End of ROCm SMI Log",
        "Driver not initialized (amdgpu not found in modules)",
        "GPU[",
        "0x",
        "\"card0\"",
        "device,",
    ]],
};

pub fn recognise(text: &str) -> bool {
    text.contains("ROCm System Management Interface")
        || text.contains("End of ROCm SMI Log")
        || text.contains("Driver not initialized (amdgpu not found in modules)")
        || lines_of(text).any(|l| (l.starts_with("GPU[") && l.contains("] ")) || is_id_row(l))
        || (text.contains("\"card0\"")
            && [
                "\"Device ID\"",
                "\"Card Series\"",
                "\"Card series\"",
                "\"GFX Version\"",
            ]
            .iter()
            .any(|k| text.contains(k)))
        || csv_tables(text).next().is_some()
}

/// `GFX Version` as rocm-smi prints it: the stepping in decimal, so
/// gfx90a (9.0.10) is `gfx9010` and gfx90c `gfx9012` (no real target has
/// four digits after a 9); other targets read as they are.
fn smi_gfx(v: &str) -> Option<String> {
    let g = find_gfx(v)?;
    let d = &g[3..];
    if d.len() == 4 && d.starts_with('9') {
        let step: u32 = d[2..].parse().ok()?;
        return (step < 16).then(|| format!("gfx{}{:x}", &d[..2], step));
    }
    Some(g)
}

/// A `Card series`/`Card model` value that is a PCI id (rocm-smi 4.0 had
/// no name for new chips: ROCm#1351 MI100 `0x738c`, `0xc34`): a device id
/// when the gfx table knows it as one (else a subsystem id: no name).
fn product_value(v: &str) -> Result<u16, Option<&str>> {
    match v
        .strip_prefix("0x")
        .and_then(|h| u16::from_str_radix(h, 16).ok())
    {
        Some(id) if super::amd::gfx_from_device_id(id).is_some() => Ok(id),
        Some(_) => Err(None),
        None => Err(Some(v).filter(|v| !v.is_empty())),
    }
}

/// `rocm-smi --csv`: each table is a `device,<columns>` header followed by
/// `cardN,...` rows (one per GPU) and `cardsystem,...` (system values).
/// Yields (column names, rows) with the device cell first in each row.
fn csv_tables(text: &str) -> impl Iterator<Item = (Vec<&str>, Vec<Vec<&str>>)> {
    let lines: Vec<&str> = lines_of(text).map(str::trim).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(cols) = lines[i].strip_prefix("device,") else {
            i += 1;
            continue;
        };
        let cols: Vec<&str> = cols.split(',').map(str::trim).collect();
        let mut rows = Vec::new();
        i += 1;
        while let Some(l) = lines.get(i) {
            let cells: Vec<&str> = l.split(',').map(str::trim).collect();
            let dev = cells[0];
            let card = dev.strip_prefix("card").is_some_and(|n| {
                n == "system" || (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            });
            if !card || cells.len() != cols.len() + 1 {
                break;
            }
            rows.push(cells);
            i += 1;
        }
        if !rows.is_empty() {
            out.push((cols, rows));
        }
    }
    out.into_iter()
}

fn parse_csv(text: &str, f: &mut Facts) {
    let mut cards: BTreeMap<u32, Gpu> = BTreeMap::new();
    for (cols, rows) in csv_tables(text) {
        for row in rows {
            let card = row[0]
                .strip_prefix("card")
                .and_then(|n| n.parse::<u32>().ok());
            for (k, v) in cols.iter().zip(&row[1..]) {
                let k = k.to_lowercase();
                if k == "driver version" && row[0] == "cardsystem" && !v.is_empty() {
                    f.kernel_driver_version = Some(v.to_string());
                    f.drivers.push(KernelDriver {
                        name: "amdgpu".into(),
                        loaded: true,
                        version: Some(v.to_string()),
                    });
                }
                let Some(c) = card else { continue };
                let g = cards
                    .entry(c)
                    .or_insert_with(|| Gpu::amdgpu_seen_by("rocm-smi"));
                keyed_value(g, &k, v);
            }
        }
    }
    f.gpus.extend(cards.into_values());
}

/// One `key: value` of a GPU in the keyed, JSON or CSV forms.
fn keyed_value(g: &mut Gpu, k: &str, v: &str) {
    match k {
        "card series" | "card model" | "device name" | "market name" => match product_value(v) {
            Ok(id) => {
                g.device_id.get_or_insert(id);
            }
            Err(Some(name)) if g.name.is_empty() => g.name = name.to_string(),
            Err(_) => {}
        },
        "device id" | "gpu id" => g.device_id = parse_id(v).map(|x| x as u16),
        "gfx version" => g.gfx = smi_gfx(v),
        "pci bus" => g.pci_address = super::amd::pci_address(v),
        _ => {}
    }
}

/// A concise-table row with its IDs column, recognisable without the header
/// (pastes of long tables are often cut): `15  17  0x74a1,  48427  42.0°C ...`
/// — device index, KFD node, `0xDDDD,` device id.
fn is_id_row(l: &str) -> bool {
    let mut w = l.split_whitespace();
    let num =
        |x: Option<&str>| x.is_some_and(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()));
    num(w.next())
        && num(w.next())
        && w.next().is_some_and(|x| {
            x.len() == 7
                && x.starts_with("0x")
                && x.ends_with(',')
                && u16::from_str_radix(&x[2..6], 16).is_ok()
        })
}

/// `rocm-smi --json` (also cut): `"card0": {` blocks with `"Device Name"`,
/// `"Device ID"`, `"PCI Bus"`, `"GFX Version"`, read line by line.
fn parse_json_lines(text: &str, f: &mut Facts) {
    let mut cur: Option<Gpu> = None;
    for l in lines_of(text) {
        let t = l.trim().trim_end_matches(',');
        if t.starts_with("\"card") && t.ends_with('{') {
            if let Some(g) = cur.take() {
                super::limits::push_gpu(f, g);
            }
            cur = Some(Gpu::amdgpu_seen_by("rocm-smi"));
            continue;
        }
        let Some(g) = cur.as_mut() else { continue };
        let Some((k, v)) = t.split_once("\": ") else {
            continue;
        };
        let (k, v) = (k.trim_matches('"'), v.trim_matches('"'));
        keyed_value(g, &k.to_lowercase(), v);
    }
    if let Some(g) = cur.take() {
        super::limits::push_gpu(f, g);
    }
}

/// One row of `--showhw` (ROC-smi#100): `1    744c  N/A ... 0000:03:00.0`:
/// the device id and bus address of GPU `1`, added to the GPU of that index
/// a concise table listed, else a GPU of its own.
fn hw_row(f: &mut Facts, t: &str) {
    let mut w = t.split_whitespace();
    let Some(idx) = w.next().and_then(|x| x.parse::<usize>().ok()) else {
        return;
    };
    let Some(did) = w
        .next()
        .filter(|d| d.len() == 4)
        .and_then(|d| u16::from_str_radix(d, 16).ok())
    else {
        return;
    };
    let bus = t
        .split_whitespace()
        .find(|x| x.len() == 12 && x.as_bytes()[4] == b':' && x.as_bytes()[10] == b'.')
        .map(str::to_lowercase);
    let g = match f.gpus.get_mut(idx) {
        Some(g) => g,
        None => {
            super::limits::push_gpu(f, Gpu::amdgpu_seen_by("rocm-smi"));
            match f.gpus.last_mut() {
                Some(g) => g,
                None => return,
            }
        }
    };
    g.vendor_id = Some(super::amd::AMD);
    g.device_id = Some(did);
    if g.pci_address.is_none() {
        g.pci_address = bus;
    }
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    if text.contains("amdgpu not found in modules") {
        f.drivers.push(KernelDriver {
            name: "amdgpu".into(),
            loaded: false,
            version: None,
        });
    }
    let lines: Vec<&str> = lines_of(text).collect();
    let mut rows = 0;
    let mut in_table = false;
    let mut names_follow = false;
    // `--showhw`'s table: `GPU  DID  GFX RAS ... VBIOS  BUS`, its rows
    // naming the device id of the GPU of their index.
    let mut hw_table = false;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim();
        let first = t.split_whitespace().next().unwrap_or("");
        if first == "GPU" && t.split_whitespace().nth(1) == Some("DID") {
            hw_table = true;
        } else if hw_table && !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) {
            hw_row(&mut f, t);
        } else if hw_table && t.starts_with("====") {
            hw_table = false;
        } else if (first == "Device" || first == "GPU") && t.contains("Temp") {
            // Rows follow, after a "====" rule in newer layouts, directly in old ones.
            in_table = true;
            rows = 0;
            names_follow = lines.get(i + 1).is_some_and(|n| n.contains("Name ("));
        } else if t.starts_with("====") {
            if in_table && rows > 0 {
                in_table = false;
            }
        } else if (in_table && !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()))
            || is_id_row(l)
        {
            let device_id = t
                .split(|c: char| c.is_whitespace() || c == '[' || c == ',')
                .find(|w| w.starts_with("0x") && w.len() == 6)
                .and_then(parse_id)
                .map(|x| x as u16);
            let mut name = String::new();
            if names_follow {
                if let Some(n) = lines.get(i + 1) {
                    let nt = n.trim();
                    let nf = nt.split_whitespace().next().unwrap_or("");
                    if !nt.is_empty()
                        && !nt.starts_with("==")
                        && !nf.bytes().all(|b| b.is_ascii_digit())
                    {
                        name = nt.to_string();
                        i += 1;
                    }
                }
            }
            rows += 1;
            super::limits::push_gpu(
                &mut f,
                Gpu {
                    name,
                    vendor_id: device_id.map(|_| super::amd::AMD),
                    device_id,
                    ..Gpu::amdgpu_seen_by("rocm-smi")
                },
            );
        }
        i += 1;
    }
    // GPU[n] : Key: value
    let mut keyed: BTreeMap<u32, Gpu> = BTreeMap::new();
    for l in &lines {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("Driver version:") {
            let v = v.trim().to_string();
            f.kernel_driver_version = Some(v.clone());
            f.drivers.push(KernelDriver {
                name: "amdgpu".into(),
                loaded: true,
                version: Some(v),
            });
            continue;
        }
        let Some(rest) = t.strip_prefix("GPU[") else {
            continue;
        };
        let Some((idx, rest)) = rest.split_once(']') else {
            continue;
        };
        let Ok(idx) = idx.parse::<u32>() else {
            continue;
        };
        let rest = rest.trim_start().trim_start_matches(':').trim();
        let Some((k, v)) = rest.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_lowercase(), v.trim());
        let g = keyed
            .entry(idx)
            .or_insert_with(|| Gpu::amdgpu_seen_by("rocm-smi"));
        keyed_value(g, &k, v);
    }
    if f.gpus.is_empty() {
        f.gpus.extend(keyed.into_values());
    }
    if f.gpus.is_empty() {
        parse_json_lines(text, &mut f);
    }
    if f.gpus.is_empty() {
        parse_csv(text, &mut f);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ROC-smi#100: the old concise table, then `--show-hw` naming each
    /// GPU's device id (a Raphael iGPU and a Navi 31).
    #[test]
    fn show_hw_names_the_device_of_each_row() {
        let t = "GPU  Temp   AvgPwr  SCLK    MCLK     Fan    Perf  PwrCap  VRAM%  GPU%  \n0    42.0c  39.02W  600Mhz  2700Mhz  None%  auto  N/A       5%   0%    \n1    50.0c  89.0W   27Mhz   1249Mhz  29.8%  auto  315.0W    3%   3%    \n================================================================================\n==============================End of ROCm SMI Log ==============================\n\n========================ROCm System Management Interface========================\n================================================================================\nGPU  DID   GFX RAS  SDMA RAS  UMC RAS  VBIOS            BUS           \n0    164e  N/A      N/A       N/A      102-RAPHAEL-008  0000:12:00.0  \n1    744c  N/A      N/A       N/A      115-D702BS0-101  0000:03:00.0  \n";
        let f = parse(t);
        let ids: Vec<_> = f
            .gpus
            .iter()
            .map(|g| (g.device_id, g.pci_address.clone()))
            .collect();
        assert_eq!(
            ids,
            [
                (Some(0x164e), Some("0000:12:00.0".into())),
                (Some(0x744c), Some("0000:03:00.0".into()))
            ]
        );
    }

    /// `rocm-smi --csv` (easybuild-framework#3978: 2x MI100 on RHEL's inbox
    /// driver): a `device,...` header, one `cardN,...` row per GPU and
    /// `cardsystem,...` for system-wide values.
    #[test]
    fn csv_rows_are_gpus_and_the_system_row_the_driver() {
        let t = "device,Driver version\ncardsystem,4.18.0-348.12.2.el8_5.x86_64\n\ndevice,Card series,Card model,Card vendor,Card SKU\ncard0,Arcturus GL-XL [AMD Instinct MI100],0x0c34,Advanced Micro Devices Inc. [AMD/ATI],D34316\ncard1,Arcturus GL-XL [AMD Instinct MI100],0x0c34,Advanced Micro Devices Inc. [AMD/ATI],D34316\n";
        assert!(recognise(t));
        let f = parse(t);
        assert_eq!(
            f.kernel_driver_version.as_deref(),
            Some("4.18.0-348.12.2.el8_5.x86_64")
        );
        let names: Vec<_> = f
            .gpus
            .iter()
            .map(|g| (g.name.as_str(), g.device_id))
            .collect();
        assert_eq!(names, [("Arcturus GL-XL [AMD Instinct MI100]", None); 2]);
        // A CSV of another tool is not rocm-smi's.
        assert!(!recognise("device,count\ncpu0,4\n"));
    }

    /// rocm-smi 4.0 printed a chip it had no name for by ids (ROCm#1351: MI100
    /// `Card series: 0x738c`, `Card model: 0xc34`); newer `--json` puts the
    /// device id in `Card Model` and the target with a decimal stepping
    /// (rocm_smi_lib#159: MI250X `"GFX Version": "gfx9010"`, i.e. gfx90a).
    #[test]
    fn ids_printed_as_product_names_and_decimal_steppings() {
        let t = "GPU[0]\t\t: Card series: \t\t0x738c\nGPU[0]\t\t: Card model: \t\t0xc34\nGPU[0]\t\t: Card SKU: \t\tD34314\n";
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].device_id, Some(0x738c));
        assert!(f.gpus[0].name.is_empty());
        let j = "{\n  \"card0\": {\n    \"Card Series\": \"AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2\",\n    \"Card Model\": \"0x7408\",\n    \"Subsystem ID\": \"0x0b0c\",\n    \"GFX Version\": \"gfx9010\"\n  }\n}\n";
        assert!(recognise(j));
        let f = parse(j);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].device_id, Some(0x7408));
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx90a"));
        for (v, g) in [
            ("gfx9010", "gfx90a"),
            ("gfx9012", "gfx90c"),
            ("gfx942", "gfx942"),
            ("gfx1100", "gfx1100"),
        ] {
            assert_eq!(smi_gfx(v).as_deref(), Some(g), "{v}");
        }
    }
}
