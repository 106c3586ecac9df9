//! llama.cpp / ggml start-up lines: the device list an application saw.
//! `ggml_vulkan: 0 = AMD Radeon 780M Graphics (RADV PHOENIX) (radv) | uma: 1 | fp16: 1 | warp size: 64 | ... | matrix cores: KHR_coopmat`
//! and, for the HIP/CUDA backend after `ggml_cuda_init: found N ROCm devices:`,
//! `  Device 0: AMD Radeon Graphics, gfx1103 (0x1103), VMM: no, Wave Size: 32`.

use super::amd::find_gfx;
use super::limits::Keyed;
use super::shared_lines::lines_of;
use super::vulkaninfo::{gpu_of, kind_from_driver_id};
use crate::facts::{Facts, Gpu, Vendor, VulkanDevice};
use greta_vocab::{DeviceType, VkFamily};

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "llama-cpp",
    label: "llama.cpp/ggml log",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[
        "ggml_vulkan: ",
        "Vulkan",
        "VMM:",
        "MiB free)",
        "ggml_cuda_init: found",
        "ggml_init_cublas: found",
    ]],
};

pub fn recognise(text: &str) -> bool {
    lines_of(text).any(|l| {
        ggml_vulkan_rest(l).is_some_and(|r| r.contains(" = ") || using_line(r).is_some())
            || old_vulkan_line(l).is_some()
            || hip_device_line(l).is_some()
            || rocm_list_row(l).is_some()
    }) || text.contains("ggml_cuda_init: found")
        || text.contains("ggml_init_cublas: found")
}

/// The text after `ggml_vulkan: `, also behind a log prefix: ctest's `2: `,
/// a container's `llama-1  | `, journald's `... ollama[1234]: `.
fn ggml_vulkan_rest(l: &str) -> Option<&str> {
    const TAG: &str = "ggml_vulkan: ";
    l.find(TAG).map(|p| &l[p + TAG.len()..])
}

/// The first Vulkan builds (early 2024) named only the device they used:
/// `ggml_vulkan: Using AMD Radeon RX 7900 XTX | fp16: 1 | warp size: 64`,
/// `ggml_vulkan: Using V3D 7.1.7 | uma: 1 | fp16: 0 | warp size: 16`.
fn using_line(rest: &str) -> Option<&str> {
    rest.strip_prefix("Using ").filter(|d| d.contains(" | "))
}

/// Older builds print `Vulkan0: NAME (driver) | uma: 0 | ...`; `llama-server
/// --list-devices` and current logs `Vulkan0: NAME (driver) (29696 MiB,
/// 28598 MiB free)`. The description without the memory group.
fn old_vulkan_line(l: &str) -> Option<&str> {
    let rest = l.trim_start().strip_prefix("Vulkan")?;
    let (idx, desc) = rest.split_once(": ")?;
    if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if desc.contains(" | ") {
        return Some(desc);
    }
    let d = desc.trim_end();
    if d.ends_with("MiB free)") {
        return d.rfind(" (").map(|p| &d[..p]);
    }
    None
}

/// ggml's HIP device line, also pasted without the `ggml_cuda_init: found
/// N ROCm devices` line above it: `Device 0: AMD Radeon 860M Graphics,
/// gfx1152 (0x1152), VMM: no, Wave Size: 32`. The text after `Device N: `.
fn hip_device_line(l: &str) -> Option<&str> {
    let rest = l.trim().strip_prefix("Device ")?;
    let (idx, rest) = rest.split_once(": ")?;
    let gfx = rest.split(',').nth(1).and_then(find_gfx);
    (!idx.is_empty()
        && idx.bytes().all(|b| b.is_ascii_digit())
        && gfx.is_some()
        && rest.contains("VMM:"))
    .then_some(rest)
}

/// A HIP device as ggml's device list names it: `llama-server
/// --list-devices` prints `  ROCm0: AMD Radeon Pro V620 (30704 MiB, 30562
/// MiB free)`, current logs' device_info block `  - ROCm0   : NAME (24560
/// MiB, 24510 MiB free)`. The index and the name, without the memory group.
fn rocm_list_row(l: &str) -> Option<(u32, &str)> {
    let t = l.trim_start();
    // device_info rows sit behind a log timestamp: `0.00.042.225 I   - `.
    let t = match t.find("- ROCm") {
        Some(p) => &t[p + 2..],
        None => t,
    };
    let rest = t.strip_prefix("ROCm")?;
    let (idx, desc) = rest.split_once(':')?;
    let idx = idx.trim_end();
    if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let d = desc.trim();
    if !d.ends_with("MiB free)") {
        return None;
    }
    let name = d.rfind(" (").map(|p| d[..p].trim())?;
    if name.is_empty() {
        return None;
    }
    Some((idx.parse().ok()?, name))
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut cuda_backend: Option<Vendor> = None;
    let mut seen: std::collections::HashSet<(String, String, VkFamily)> = Default::default();
    // Device-list rows, kept apart: the same device's `Device N:` line,
    // which names its gfx, wins over them (added after the loop).
    let mut listed: Keyed<u32, (u32, String)> = Keyed::default();
    for line in lines_of(text) {
        if let Some((idx, name)) = rocm_list_row(line) {
            listed.entry(idx, || (idx, name.to_string()));
            continue;
        }
        // A log of several runs repeats the device list: one device per
        // (index, name, driver), so two identical GPUs still count twice.
        let mut push = |f: &mut Facts, idx: &str, d: VulkanDevice| {
            let key = (idx.to_string(), d.name.clone(), d.kind);
            if !seen.insert(key) {
                return;
            }
            if !f.vulkan.drivers.contains(&d.kind) {
                f.vulkan.drivers.push(d.kind);
            }
            let mut g = gpu_of(&d);
            // ggml's list is its own source: the same GPU in a vulkaninfo
            // pasted beside it is one GPU, which two lists under one
            // source name would keep apart.
            g.seen_by = vec![format!("ggml-vulkan:{}", d.kind.name())];
            super::limits::push_gpu(f, g);
            f.vulkan.devices.push(d);
        };
        if let Some(rest) = ggml_vulkan_rest(line) {
            if let Some(desc) = using_line(rest) {
                if let Some(d) = parse_vulkan_line(&format!("0 = {desc}")) {
                    push(&mut f, "0", d);
                }
                continue;
            }
            if let Some(d) = parse_vulkan_line(rest) {
                push(&mut f, rest.split(" = ").next().unwrap_or(""), d);
            }
            continue;
        }
        if let Some(desc) = old_vulkan_line(line) {
            if let Some(d) = parse_vulkan_line(&format!("0 = {desc}")) {
                let idx = line.split(':').next().unwrap_or("");
                push(&mut f, idx.trim_start_matches("Vulkan"), d);
            }
            continue;
        }
        // Also after a shell prompt pasted on the same line.
        if let Some(rest) = ["ggml_cuda_init: found ", "ggml_init_cublas: found "]
            .iter()
            .find_map(|m| line.find(m).map(|p| &line[p + m.len()..]))
        {
            cuda_backend = Some(if rest.contains("ROCm") {
                Vendor::Amd
            } else {
                Vendor::Nvidia
            });
            continue;
        }
        let t = line.trim();
        // A HIP device line names its gfx target: AMD even without the header.
        let backend = cuda_backend.or(hip_device_line(t).map(|_| Vendor::Amd));
        if let (Some(vendor), Some(rest)) = (backend, t.strip_prefix("Device ")) {
            let Some((idx, rest)) = rest.split_once(": ") else {
                continue;
            };
            let name = rest.split(',').next().unwrap_or("").trim().to_string();
            let gfx = if vendor == Vendor::Amd {
                rest.split(',').nth(1).and_then(find_gfx)
            } else {
                None
            };
            super::limits::push_gpu(
                &mut f,
                Gpu {
                    vendor,
                    name,
                    gfx,
                    seen_by: vec!["ggml-hip".into()],
                    hip_index: (vendor == Vendor::Amd).then(|| idx.parse().ok()).flatten(),
                    ..Gpu::default()
                },
            );
            if vendor == Vendor::Amd {
                f.rocm.runtime_sees_gpu = Some(true);
            }
        }
    }
    let listed = listed.finish("GPUs", &mut f.cut);
    for (idx, name) in listed {
        let known = f
            .gpus
            .iter()
            .any(|g| g.vendor == Vendor::Amd && g.hip_index == Some(idx));
        if known {
            continue;
        }
        super::limits::push_gpu(
            &mut f,
            Gpu {
                vendor: Vendor::Amd,
                name,
                seen_by: vec!["ggml-hip".into()],
                hip_index: Some(idx),
                ..Gpu::default()
            },
        );
        f.rocm.runtime_sees_gpu = Some(true);
    }
    f
}

fn parse_vulkan_line(rest: &str) -> Option<VulkanDevice> {
    let (idx, desc) = rest.split_once(" = ")?;
    if !idx.trim().bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut fields = desc.split(" | ");
    let head = fields.next()?.trim();
    // "NAME (driver)": the last parenthesised group is the driver name.
    let (name, kind) = match head.rfind(" (") {
        // RADV names the chip in the device name itself: "AMD Radeon 780M
        // Graphics (RADV PHOENIX)" is the device name, the driver RADV.
        Some(p) if head[p + 2..].starts_with("RADV ") => (head.to_string(), VkFamily::Radv),
        Some(p) if head.ends_with(')') => {
            let drv = &head[p + 2..head.len() - 1];
            (head[..p].to_string(), kind_from_driver_id(drv))
        }
        _ => (head.to_string(), VkFamily::Other),
    };
    let mut d = VulkanDevice {
        name,
        kind,
        ..VulkanDevice::default()
    };
    for fld in fields {
        let Some((k, v)) = fld.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "uma" => {
                d.device_type = Some(if v == "1" {
                    DeviceType::IntegratedGpu
                } else {
                    DeviceType::DiscreteGpu
                })
            }
            "fp16" => d.fp16 = Some(v == "1"),
            "warp size" => d.subgroup_size = v.parse().ok(),
            "matrix cores" => d.cooperative_matrix = Some(v != "none" && !v.is_empty()),
            _ => {}
        }
    }
    if d.name.starts_with("llvmpipe") {
        d.kind = VkFamily::Lavapipe;
        d.device_type = Some(DeviceType::Cpu);
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lines_behind_a_log_prefix() {
        // ctest's per-test prefix (llama.cpp#19846).
        let t = "2: ggml_vulkan: 0 = llvmpipe (LLVM 20.1.8, 256 bits) (llvmpipe) | uma: 0 | fp16: 0 | bf16: 0 | warp size: 8 | shared memory: 32768 | int dot: 0 | matrix cores: KHR_coopmat\n2: ggml_vulkan: Warning: Device type is CPU. This is probably not the device you want.\n";
        assert!(recognise(t));
        let f = parse(t);
        assert_eq!(f.vulkan.devices.len(), 1);
        assert!(f.vulkan.devices[0].is_cpu());
        assert_eq!(f.vulkan.drivers, vec![VkFamily::Lavapipe]);
        // A container log's service prefix.
        let t = "llamacpp-1  | ggml_vulkan: 0 = AMD Radeon 780M Graphics (RADV PHOENIX) (radv) | uma: 1 | fp16: 1 | warp size: 64 | shared memory: 65536 | int dot: 1 | matrix cores: KHR_coopmat\n";
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1103"));
        // The found-count and warning lines are no devices.
        assert!(!recognise("ggml_vulkan: Found 1 Vulkan devices:\n"));
    }

    #[test]
    fn first_builds_using_line_is_the_device() {
        // The first Vulkan builds' one `Using` line (llama.cpp#2059, a
        // Windows RX 7900 XTX; llama.cpp#5237, a Raspberry Pi 5's V3D).
        let t = "ggml_vulkan: Using AMD Radeon RX 7900 XTX | fp16: 1 | warp size: 64\n";
        assert!(recognise(t));
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].vendor, Vendor::Amd);
        assert_eq!(f.gpus[0].name, "AMD Radeon RX 7900 XTX");
        let f = parse("ggml_vulkan: Using V3D 7.1.7 | uma: 1 | fp16: 0 | warp size: 16\n");
        assert_eq!(f.vulkan.devices.len(), 1);
        assert_eq!(f.vulkan.devices[0].fp16, Some(false));
        assert!(parse("ggml_vulkan: Using host memory\n")
            .vulkan
            .devices
            .is_empty());
    }

    #[test]
    fn rocm_device_list_rows_are_gpus() {
        // `llama-server --list-devices` of a Windows fork build
        // (atomic-llama-cpp-turboquant#81): three Radeon Pro cards.
        let t = "Available devices:\n  ROCm0: AMD Radeon Pro W5500 (8176 MiB, 8034 MiB free)\n  ROCm1: AMD Radeon Pro V620 (30704 MiB, 30562 MiB free)\n  ROCm2: AMD Radeon Pro V620 (30704 MiB, 30562 MiB free)\n";
        assert!(recognise(t));
        let f = parse(t);
        let names: Vec<&str> = f.gpus.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "AMD Radeon Pro W5500",
                "AMD Radeon Pro V620",
                "AMD Radeon Pro V620"
            ]
        );
        assert!(f.gpus.iter().all(|g| g.vendor == Vendor::Amd));
        assert_eq!(f.gpus[2].hip_index, Some(2));
        // The same list in a current log's device_info block
        // (llama.cpp#23934), with padding before the colon.
        let t = "0.00.042.225 I   - ROCm0   : AMD Radeon RX 7900 XTX (24560 MiB, 24510 MiB free)\n0.00.042.231 I   - CPU     : AMD Ryzen 5 5600X 6-Core Processor (31991 MiB, 31991 MiB free)\n";
        assert!(recognise(t));
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].name, "AMD Radeon RX 7900 XTX");
        // A log with both the ggml_cuda_init device line and the list row
        // of the same device: one GPU, the one that names its gfx.
        let t = "ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon RX 7900 XTX, gfx1100 (0x1100), VMM: no, Wave Size: 32\nAvailable devices:\n  ROCm0: AMD Radeon RX 7900 XTX (24560 MiB, 24510 MiB free)\n";
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1100"));
        // Not a device row: no memory group, or a CPU row.
        assert!(!recognise(
            "ROCm0: out of memory\n  - CPU     : x (1 MiB, 1 MiB free)\n"
        ));
    }
}
