//! Signals read from text that matches no known tool's format: a benchmark's
//! device list, an empty device list, a crashed rocminfo, GPUs a runtime
//! refused, versions named in passing, WSL.

use super::amd;
use super::shared_lines::lines_of;
use crate::facts::Facts;

/// The device line of ROCm's benchmark clients (rocblas-bench,
/// hipblaslt-bench, ...): `Device ID 0 : AMD Radeon VII gfx906:sramecc+:xnack-`.
pub(super) fn bench_devices(facts: &mut Facts, text: &str) {
    if !text.contains("Device ID ") {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    for l in lines_of(text) {
        let Some(rest) = l.trim().strip_prefix("Device ID ") else {
            continue;
        };
        let Some((idx, desc)) = rest.split_once(" : ") else {
            continue;
        };
        if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(pos) = desc.find(" gfx") else {
            continue;
        };
        let Some(gfx) = amd::find_gfx(desc[pos + 1..].split([':', ' ']).next().unwrap_or(""))
        else {
            continue;
        };
        let name = desc[..pos].trim().to_string();
        // A log of several runs repeats the line: one GPU per device index.
        if !seen.insert(idx) {
            continue;
        }
        super::limits::push_gpu(
            facts,
            crate::facts::Gpu {
                vendor: crate::facts::Vendor::Amd,
                vendor_id: Some(amd::AMD),
                name,
                integrated: amd::is_apu_target(&gfx).then_some(true),
                gfx: Some(gfx),
                seen_by: vec!["rocm-bench".into()],
                ..Default::default()
            },
        );
    }
}

/// `llama-server --list-devices` printing `Available devices:` and no
/// device after it (the next line is a prompt, or the paste ends): the
/// ggml backends found no device at all, recorded as `vk-app-no-devices`
/// for a Vulkan build (the paste names Vulkan), as llama.cpp's own "No
/// devices found" line would be.
pub(super) fn empty_device_list(facts: &mut Facts, text: &str, source: &str) {
    if !text.contains("Available devices:") || !mentions(text, &["vulkan"]) {
        return;
    }
    let lines: Vec<&str> = lines_of(text).collect();
    for (i, l) in lines.iter().enumerate() {
        if l.trim() != "Available devices:" {
            continue;
        }
        let next = lines[i + 1..]
            .iter()
            .map(|x| x.trim())
            .find(|x| !x.is_empty());
        // A device line is "Backend0: NAME (...)"; anything else (a prompt,
        // the end) means none was listed.
        let device = next.is_some_and(|n| {
            n.split_once(": ").is_some_and(|(b, _)| {
                !b.is_empty()
                    && b.bytes().last().is_some_and(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_alphanumeric())
            })
        });
        if !device && !facts.signals.iter().any(|s| s.id == "vk-app-no-devices") {
            facts.signals.push(crate::facts::Signal {
                id: "vk-app-no-devices".into(),
                source: source.to_string(),
                line: Some(i + 1),
                text: "llama-server --list-devices: Available devices: (none listed)".into(),
            });
        }
    }
}

/// rocminfo calls nothing but the HSA runtime: its output ending in the
/// shell's `Segmentation fault` (or an abort) is the runtime crashing,
/// recorded as the `hsa-runtime-crash` signal.
pub(super) fn rocminfo_crash(facts: &mut Facts, text: &str, source: &str) {
    let crash = lines_of(text).enumerate().find(|(_, l)| {
        let t = l.trim();
        t.starts_with("Segmentation fault") || t.starts_with("Aborted (core dumped)")
    });
    if let Some((i, l)) = crash {
        if !facts.signals.iter().any(|s| s.id == "hsa-runtime-crash") {
            facts.signals.push(crate::facts::Signal {
                id: "hsa-runtime-crash".into(),
                source: source.to_string(),
                line: Some(i + 1),
                text: format!("rocminfo (the HSA runtime) crashed: {}", l.trim()),
            });
        }
    }
}

/// The GPU an application's refusal names, when nothing else in the text
/// listed it: ollama's `gpu_type=gfx1150` (never its
/// list of supported types), lemonade's `Unsupported GPU: gfx950`, and the
/// target an LLVM too old for the GPU warns about (`'gfx1201' is not a
/// recognized processor for this target`, Julia's AMDGPU.jl, Triton).
pub(super) fn refused_gpus(facts: &mut Facts, text: &str) {
    let mut found: Vec<String> = Vec::new();
    for s in &facts.signals {
        if !matches!(
            s.id.as_str(),
            "app-gpu-refused" | "tool-gfx-unsupported" | "llvm-amd-target-unknown"
        ) {
            continue;
        }
        // The whole line: a signal keeps only its first 300 characters, and
        // a log pasted as one line has the GPU far beyond them.
        let line = s
            .line
            .and_then(|n| lines_of(text).nth(n.saturating_sub(1)))
            .unwrap_or(&s.text);
        let lc = line.to_ascii_lowercase();
        let named = if s.id == "llvm-amd-target-unknown" {
            // "'gfx1201' is not a recognized processor for this target":
            // the target LLVM was asked to compile for is the GPU's.
            lc.split('\'').nth(1).and_then(amd::find_gfx)
        } else {
            ["gpu_type=", "unsupported gpu: "]
                .iter()
                .find_map(|m| lc.find(m).map(|p| &lc[p + m.len()..]))
                .and_then(|rest| amd::find_gfx(rest.split_whitespace().next().unwrap_or("")))
        };
        if let Some(g) = named {
            if !found.contains(&g) {
                found.push(g);
            }
        }
    }
    add_amd_targets(facts, found, "app");
}

/// The GPU PyTorch names when it warns that its build has no kernels for
/// it (torch.cuda's capability check): `NVIDIA GeForce RTX 5090 with CUDA
/// capability sm_120 is not compatible with the current PyTorch
/// installation.` (CUDA builds only), and the older `Found GPU0 GeForce GTX
/// 770 which is of cuda capability 3.0.`, which old ROCm builds print too
/// (`Found GPU0 Ellesmere [Radeon RX 470/480/570/570X/580/580X] which is of
/// cuda capability 3.0.`, a hard-coded 3.0): its vendor comes from the
/// name, and a name that shows none adds no GPU. Also behind a journal or
/// logger prefix.
pub(super) fn torch_warned_gpus(facts: &mut Facts, text: &str) {
    use crate::facts::Vendor;
    if !text.contains("apability") {
        return;
    }
    let mut found: Vec<(&str, Vendor)> = Vec::new();
    // Both warnings say "... capability": lines without it are not lower-cased.
    for l in lines_of(text).filter(|l| l.contains("apability")) {
        let lc = l.to_ascii_lowercase();
        let (name, vendor) = if let Some(p) = lc.find(" with cuda capability sm_") {
            // The name follows a prefix's last ": " (journal, logger).
            let head = &l[..p];
            (
                head.rsplit(": ").next().unwrap_or(head).trim(),
                Vendor::Nvidia,
            )
        } else if let Some(p) = lc.find(" which is of cuda capability ") {
            let Some(q) = lc[..p].find("found gpu") else {
                continue;
            };
            let name = l[q + "found gpu".len()..p]
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .trim();
            (name, super::vulkaninfo::vendor_from_name(name))
        } else {
            continue;
        };
        if !matches!(vendor, Vendor::Nvidia | Vendor::Amd) || name.is_empty() || name.len() > 80 {
            continue;
        }
        if !found.iter().any(|(n, _)| *n == name) {
            found.push((name, vendor));
        }
    }
    for (name, vendor) in found {
        add_named_gpu(
            facts,
            crate::facts::Gpu {
                vendor,
                vendor_id: vendor.pci_id(),
                name: name.to_string(),
                seen_by: vec!["torch".into()],
                ..Default::default()
            },
        );
    }
}

/// The GPU targets a Stable Diffusion launcher (stable-diffusion-webui-
/// amdgpu-forge, SD.Next) found through ROCm before it chose a torch:
/// `ROCm: agents=['gfx1100']` and `ROCm: version=6.2, using agent gfx1100`.
pub(super) fn launcher_rocm_agents(facts: &mut Facts, text: &str) {
    if !mentions(text, &["rocm: agents=[", "using agent gfx"]) {
        return;
    }
    let mut found: Vec<String> = Vec::new();
    for l in lines_of(text) {
        let lc = l.to_ascii_lowercase();
        let listed = lc
            .find("rocm: agents=[")
            .map(|p| &lc[p + "rocm: agents=[".len()..])
            .map(|rest| rest.split(']').next().unwrap_or(""))
            .map(|inner| {
                inner
                    .split(',')
                    .filter_map(amd::find_gfx)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let using = lc
            .find("using agent gfx")
            .and_then(|p| amd::find_gfx(&lc[p + "using agent ".len()..]));
        for g in listed.into_iter().chain(using) {
            if !found.contains(&g) {
                found.push(g);
            }
        }
    }
    add_amd_targets(facts, found, "launcher");
}

/// `torch.version.hip` asked in a Python session (`>>> torch.version.hip`
/// then `'3.0.19493-36529b1'`, or `print(torch.version.hip)` then the bare
/// version): the HIP/ROCm build the wheel was made with.
pub(super) fn torch_version_hip(text: &str) -> Option<String> {
    if !text.contains("torch.version.hip") {
        return None;
    }
    let mut lines = lines_of(text);
    while let Some(l) = lines.next() {
        if !l.contains("torch.version.hip") {
            continue;
        }
        // On the same line after the expression (`... hip: 6.2.41133`) or
        // on the next non-empty line.
        let same = l.split("torch.version.hip").nth(1).unwrap_or("");
        let same = same.trim_start_matches([')', ':', ' ', '=']).trim();
        let cand = if same.is_empty() {
            lines.by_ref().map(str::trim).find(|x| !x.is_empty())?
        } else {
            same
        };
        let v = cand.trim_matches(['\'', '"']);
        let b = v.as_bytes();
        if b.first().is_some_and(u8::is_ascii_digit) && v.contains('.') && v.len() < 40 {
            return Some(v.to_string());
        }
    }
    None
}

/// The release in a versioned ROCm install path a paste shows (a library
/// loaded from `/opt/rocm-7.1.1/lib/...`), when one release only appears.
pub(super) fn rocm_path_version(text: &str) -> Option<String> {
    let mut found: Option<String> = None;
    for (p, _) in text.match_indices("/opt/rocm-") {
        let v: String = text[p + 10..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let v = v.trim_end_matches('.').to_string();
        if v.split('.').count() < 2 || v.split('.').any(str::is_empty) {
            continue;
        }
        match &found {
            Some(f) if *f != v => return None,
            _ => found = Some(v),
        }
    }
    found
}

/// What WSL2 leaves in any paste: its kernel's name
/// (`5.15.167.4-microsoft-standard-WSL2` in uname, a log or a path), the
/// paravirtual GPU device `/dev/dxg`, ROCm's WSL bridge `librocdxg`, and
/// rocminfo's own notice. There is no KFD there, by design.
pub(super) fn shows_wsl(text: &str) -> bool {
    const HINTS: &[&str] = &[
        "microsoft-standard-wsl",
        "wsl environment detected",
        "/dev/dxg",
        "librocdxg",
        "libdxcore.so",
        "/usr/lib/wsl/lib",
    ];
    mentions(text, HINTS)
}

/// The GPU ComfyUI's start-up log names (its `model_management` prints the
/// torch device it picked): `Device: cuda:0 AMD Radeon RX 7900 XTX :
/// native` or `Device: cuda:0 NVIDIA GeForce RTX 4090 : cudaMallocAsync`,
/// also behind a `[00:50:45] ` timestamp; on a ROCm torch its `AMD arch:
/// gfx1100` line gives the target. A name that shows no vendor (a CPU
/// device, `Device: cpu`) adds nothing.
pub(super) fn comfyui_devices(facts: &mut Facts, text: &str) {
    use crate::facts::{Gpu, Vendor};
    if !text.contains("Device: cuda:") {
        return;
    }
    let arch = lines_of(text).find_map(|l| {
        let p = l.find("AMD arch: ")?;
        amd::find_gfx(l[p + "AMD arch: ".len()..].trim())
    });
    let mut found: Vec<String> = Vec::new();
    for l in lines_of(text) {
        let Some(p) = l.find("Device: cuda:") else {
            continue;
        };
        let rest = &l[p + "Device: cuda:".len()..];
        let Some(rest) = rest
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .strip_prefix(' ')
        else {
            continue;
        };
        // The allocator follows the last " : "; ZLUDA builds tag the name.
        let name = rest.rsplit_once(" : ").map_or(rest, |(n, _)| n);
        let name = name.trim().trim_end_matches("[ZLUDA]").trim();
        if name.is_empty() || name.len() > 80 || found.iter().any(|n| n == name) {
            continue;
        }
        found.push(name.to_string());
    }
    for name in found {
        let vendor = super::vulkaninfo::vendor_from_name(&name);
        if !matches!(vendor, Vendor::Amd | Vendor::Nvidia) {
            continue;
        }
        let gfx = arch.clone().filter(|_| vendor == Vendor::Amd);
        add_named_gpu(
            facts,
            Gpu {
                vendor,
                vendor_id: (vendor == Vendor::Amd).then_some(amd::AMD),
                integrated: gfx.as_deref().map(amd::is_apu_target).filter(|x| *x),
                gfx,
                name,
                seen_by: vec!["comfyui".into()],
                ..Gpu::default()
            },
        );
    }
}

/// The device a short torch check script prints after its availability
/// line: `CUDA available: True` then `Device: AMD Radeon 8060S` (also
/// `device:`, `CUDA device:`, `GPU:`, `GPU name:`, `Device name:`, padded).
/// Only with that line in the text, and only a name that states its vendor:
/// a bare `Device:` line proves nothing.
pub(super) fn torch_script_devices(facts: &mut Facts, text: &str) {
    use crate::facts::{Gpu, Vendor};
    if !mentions(text, &["cuda available"]) {
        return;
    }
    let available = lines_of(text).any(|l| {
        let l = l.trim().to_ascii_lowercase();
        l.contains("cuda available") && l.trim_end_matches('.').ends_with("true")
    });
    if !available {
        return;
    }
    for l in lines_of(text) {
        let Some((k, v)) = l.trim().split_once(':') else {
            continue;
        };
        let k = k.trim().to_ascii_lowercase();
        if !matches!(
            k.as_str(),
            "device" | "cuda device" | "gpu" | "gpu name" | "device name"
        ) {
            continue;
        }
        let name = v.trim().trim_end_matches('.').trim();
        let vendor = super::vulkaninfo::vendor_from_name(name);
        if name.len() > 80 || !matches!(vendor, Vendor::Amd | Vendor::Nvidia) {
            continue;
        }
        add_named_gpu(
            facts,
            Gpu {
                vendor,
                vendor_id: (vendor == Vendor::Amd).then_some(amd::AMD),
                name: name.to_string(),
                seen_by: vec!["torch-script".into()],
                ..Gpu::default()
            },
        );
    }
}

/// Adds the GPU an application named, unless a GPU of that name is
/// listed already (by another recogniser, or an earlier line).
/// Every string the readings of this module and `amd::hip_sdk_path_version`
/// look for in a whole paste: one search of the paste `parse_text` reads
/// answers for all of them.
const NEEDLES: &[&str] = &[
    "vulkan",
    "rocm: agents=[",
    "using agent gfx",
    "microsoft-standard-wsl",
    "wsl environment detected",
    "/dev/dxg",
    "librocdxg",
    "libdxcore.so",
    "/usr/lib/wsl/lib",
    "cuda available",
    "\\amd\\rocm\\",
];

thread_local! {
    /// Which of [`NEEDLES`] the shared paste (of that generation) contains.
    static FOUND: std::cell::RefCell<Option<(u64, Vec<bool>)>> =
        const { std::cell::RefCell::new(None) };
}

fn automaton(needles: &[&str]) -> Option<aho_corasick::AhoCorasick> {
    aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(needles)
        .ok()
}

/// Whether `text` contains one of `needles`, ASCII case ignored: one search
/// of the whole paste where the reading would lower-case every line (for
/// the paste being parsed, one search for every needle of [`NEEDLES`]).
/// An automaton that cannot be built decides nothing: the reading runs.
pub(super) fn mentions(text: &str, needles: &[&str]) -> bool {
    let known: Option<Vec<usize>> = needles
        .iter()
        .map(|n| NEEDLES.iter().position(|x| x == n))
        .collect();
    if let (Some(idx), Some(generation)) = (known, super::shared_lines::shared_generation(text)) {
        let found = FOUND.with(|f| {
            let mut f = f.borrow_mut();
            if f.as_ref().is_none_or(|(g, _)| *g != generation) {
                let mut seen = vec![false; NEEDLES.len()];
                match automaton(NEEDLES) {
                    Some(ac) => {
                        for m in ac.find_overlapping_iter(text) {
                            seen[m.pattern().as_usize()] = true;
                        }
                    }
                    None => seen.fill(true),
                }
                *f = Some((generation, seen));
            }
            f.as_ref().map(|(_, s)| idx.iter().any(|&i| s[i]))
        });
        if let Some(found) = found {
            return found;
        }
    }
    automaton(needles).is_none_or(|ac| ac.is_match(text))
}

fn add_named_gpu(facts: &mut Facts, gpu: crate::facts::Gpu) {
    if !facts.gpus.iter().any(|g| g.name == gpu.name) {
        super::limits::push_gpu(facts, gpu);
    }
}

/// One AMD GPU per target an application named, unless a GPU of that
/// target is listed already; `seen_by` names the kind of text.
fn add_amd_targets(facts: &mut Facts, found: Vec<String>, seen_by: &str) {
    for g in found {
        if facts
            .gpus
            .iter()
            .any(|x| x.gfx.as_deref() == Some(g.as_str()))
        {
            continue;
        }
        super::limits::push_gpu(
            facts,
            crate::facts::Gpu {
                vendor: crate::facts::Vendor::Amd,
                vendor_id: Some(amd::AMD),
                integrated: amd::is_apu_target(&g).then_some(true),
                gfx: Some(g),
                seen_by: vec![seen_by.into()],
                ..Default::default()
            },
        );
    }
}

#[cfg(test)]
mod mention_tests {
    use super::*;

    /// One search answers for every needle of the paste being parsed,
    /// exactly as a search for the needle alone does (case ignored), and
    /// a second paste is searched afresh.
    #[test]
    fn one_search_answers_for_every_needle() {
        for text in [
            "Linux 5.15.167.4-microsoft-standard-WSL2\nVULKAN devices\n",
            "C:\\Program Files\\AMD\\ROCm\\6.2\\bin\nCUDA available: True\n",
            "nothing of note\n",
        ] {
            let alone: Vec<bool> = NEEDLES
                .iter()
                .map(|n| automaton(&[n]).unwrap().is_match(text))
                .collect();
            let _g = super::super::shared_lines::share(text);
            let shared: Vec<bool> = NEEDLES.iter().map(|n| mentions(text, &[n])).collect();
            assert_eq!(shared, alone, "{text}");
            assert!(!mentions(text, &["a needle of no list"]));
        }
    }
}
