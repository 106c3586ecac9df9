//! `greta doctor --from FILE...`: explains tool output pasted from elsewhere.
//!
//! Users paste text into bug reports far more often than they can capture a
//! machine, so each file is recognised by its CONTENT (never its name), every
//! parser whose markers it carries extracts partial [`Facts`], the error
//! signatures of [`crate::signals`] are scanned on every line, and
//! [`crate::merge`] folds the parts into one picture of the machine.
//!
//! Nothing here panics on bad input: binary or empty files and text nobody
//! recognises become a note; at most [`MAX_READ`] bytes of a file are read.

pub mod agent_enum;
pub mod amd;
pub mod amdsmi;
pub mod clinfo;
pub mod collect_env;
pub mod dmesg;
pub mod env_dump;
pub mod hipconfig;
pub mod hipinfo;
pub mod icd_json;
pub mod jax_env;
pub mod k8s_labels;
pub mod kfd_props;
pub mod llama;
pub mod ls_dev;
pub mod lshw;
pub mod lspci;
pub mod mesa_gl;
pub mod module_version;
pub mod nvidia_smi;
mod nvrm;
pub mod ollama;
pub mod packages;
pub mod rocminfo;
pub mod rocmsmi;
pub mod vulkaninfo;

mod input;
mod limits;
mod loose;
mod quoted;
pub mod readers;
mod scan;
mod shared_lines;

use input::read_capped;
pub use input::{decode, MAX_READ};
pub(crate) use limits::cut_note;
pub use limits::MAX_LISTED;
use loose::{
    bench_devices, comfyui_devices, empty_device_list, launcher_rocm_agents, refused_gpus,
    rocm_path_version, shows_wsl, torch_script_devices, torch_version_hip, torch_warned_gpus,
};
pub use readers::{recognise, Format, Reader, READERS};
use shared_lines::lines_of;

use crate::facts::{Facts, ScanFact, GPU_GFX, TEXT_SCAN};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// What happened to one `--from` file.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub path: String,
    /// Empty when nothing was recognised (see `note`).
    pub formats: Vec<Format>,
    pub bytes: u64,
    /// Only the first [`MAX_READ`] bytes were read.
    pub truncated: bool,
    /// Why the file explained nothing (binary, empty, unrecognised).
    pub note: Option<String>,
    /// One line saying what was found ("1 GPU agent (gfx942), ROCk 6.16.13").
    pub summary: String,
    pub micros: u64,
}

#[derive(Debug, Clone)]
pub struct FromRun {
    pub facts: Facts,
    pub files: Vec<FileReport>,
    /// What each file alone said (index of `files`; `None` for a file
    /// that could not be decoded): a finding whose evidence cites no line is
    /// put on the files whose own facts raise it.
    pub per_file: Vec<Option<Facts>>,
}

/// Doctor cannot run at all (exit 2): a named file is missing or unreadable.
#[derive(Debug, thiserror::Error)]
pub enum FromError {
    /// The OS error is part of the message, not a `source` too: a chain
    /// printer would show it twice.
    #[error("{path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}: is a directory; give the files inside it")]
    Directory { path: String },
}

/// Reads, recognises and parses every file, then merges what they say.
pub fn from_files(paths: &[PathBuf]) -> Result<FromRun, FromError> {
    let mut parts = Vec::new();
    let mut files = Vec::new();
    let mut per_file = Vec::new();
    for p in paths {
        let started = Instant::now();
        let name = p.display().to_string();
        let (bytes, truncated, raw) = read_capped(p)?;
        let mut report = FileReport {
            path: name.clone(),
            formats: Vec::new(),
            bytes,
            truncated,
            note: None,
            summary: String::new(),
            micros: 0,
        };
        let mut own = None;
        match decode(&raw) {
            Err(why) => report.note = Some(why),
            Ok(text) => {
                let (formats, facts) = parse_text(&text, &name);
                if formats.is_empty() {
                    report.note = Some(format!(
                        "not recognised: not the output of any tool doctor knows ({})",
                        known_formats()
                    ));
                } else {
                    report.summary = summarise(&facts);
                }
                if let Some(n) = cut_note(&facts, "this paste") {
                    report.note = Some(match report.note.take() {
                        Some(x) => format!("{x}; {n}"),
                        None => n,
                    });
                }
                report.formats = formats;
                own = Some(facts.clone());
                parts.push(facts);
            }
        }
        if truncated {
            let n = format!("only the first {} MiB were read", MAX_READ >> 20);
            report.note = Some(match report.note.take() {
                Some(x) => format!("{x}; {n}"),
                None => n,
            });
        }
        report.micros = started.elapsed().as_micros() as u64;
        per_file.push(own);
        files.push(report);
    }
    let stated = stated_by_readers(&parts);
    let mut facts = crate::merge::merge(parts);
    // A release or driver one file's scan read and another file's reader
    // printed is a reader's fact.
    facts
        .text_scan
        .retain(|s| !stated.iter().any(|(f, v)| *f == s.fact && *v == s.value));
    scanned_targets(&mut facts, &stated);
    implied_gfx(&mut facts);
    facts.sources = vec![format!(
        "from:{}",
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    )];
    Ok(FromRun {
        facts,
        files,
        per_file,
    })
}

/// The ROCm releases, kernel driver versions and Vulkan drivers the
/// readers of each file stated
/// (not its scan): (fact, value) as `text_scan` spells them.
fn stated_by_readers(parts: &[Facts]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for p in parts {
        let scanned = |fact: &str, value: &str| {
            p.text_scan
                .iter()
                .any(|s| s.fact == fact && s.value == value)
        };
        if let Some(v) = &p.rocm.version {
            if !scanned("rocm_version", v) {
                out.push(("rocm_version", v.clone()));
            }
        }
        if let Some(v) = &p.kernel_driver_version {
            if !scanned("kernel_driver_version", v) {
                out.push(("kernel_driver_version", v.clone()));
            }
        }
        for k in &p.vulkan.drivers {
            let v = format!("{k:?}").to_lowercase();
            if !scanned("vulkan_driver", &v) {
                out.push(("vulkan_driver", v));
            }
        }
        for g in &p.gpus {
            let by_reader = g.seen_by.iter().any(|s| s != TEXT_SCAN);
            if let Some(t) = g.gfx.as_ref().filter(|t| by_reader && !scanned(GPU_GFX, t)) {
                out.push((GPU_GFX, t.clone()));
            }
        }
    }
    out
}

/// A GPU one file's reader saw and another file's scan named: its target
/// is the scan's word when no reader of any file gave it, and is recorded
/// as such (`facts.text_scan`, see [`Facts::readers_only`]).
fn scanned_targets(facts: &mut Facts, stated: &[(&'static str, String)]) {
    let mut found = Vec::new();
    for g in &facts.gpus {
        let both =
            g.seen_by.iter().any(|s| s == TEXT_SCAN) && g.seen_by.iter().any(|s| s != TEXT_SCAN);
        let Some(t) = g.gfx.as_ref().filter(|_| both) else {
            continue;
        };
        // A target a reader's device id implies is no scan's word.
        let known = stated.iter().any(|(f, v)| *f == GPU_GFX && v == t)
            || facts
                .text_scan
                .iter()
                .any(|s| s.fact == GPU_GFX && s.value == *t)
            || g.device_id.and_then(amd::gfx_from_device_id).as_ref() == Some(t);
        if known {
            continue;
        }
        let evidence = facts
            .text_scan
            .iter()
            .find(|s| s.fact == "gpu" && s.value.contains(t.as_str()))
            .map(|s| s.evidence.clone());
        if let Some(evidence) = evidence {
            found.push(ScanFact {
                fact: GPU_GFX.into(),
                value: t.clone(),
                evidence,
            });
        }
    }
    facts.text_scan.extend(found);
}

/// What the pastes imply when no tool printed an AMD GPU's target (class 6 of
/// the corpus, docs/doctor.md): its PCI device id, else a marketing name only one chip
/// carries (probe/gfx-targets.toml). Pasted text only, after every file is
/// merged (so a printed target always wins): on a live machine or a
/// capture the target comes from KFD, never from a table.
fn implied_gfx(facts: &mut Facts) {
    for g in &mut facts.gpus {
        if g.gfx.is_some() || g.vendor != crate::facts::Vendor::Amd {
            continue;
        }
        g.gfx = g
            .device_id
            .filter(|_| g.vendor_id.is_none_or(|v| v == amd::AMD))
            .and_then(amd::gfx_from_device_id)
            .or_else(|| amd::gfx_from_marketing_name(&g.name))
            .or_else(|| crate::products::in_name(&g.name).and_then(|p| p.gfx.clone()));
        if g.integrated.is_none() && g.gfx.as_deref().is_some_and(amd::is_apu_target) {
            g.integrated = Some(true);
        }
    }
}

fn known_formats() -> String {
    let mut l: Vec<&str> = READERS.iter().map(|r| r.label()).collect();
    l.push("logs with known errors");
    l.join(", ")
}

/// Recognises `text` and runs every matching parser; `source` names it in
/// evidence ("rocminfo.txt:2").
pub fn parse_text(text: &str, source: &str) -> (Vec<Format>, Facts) {
    let text = &*quoted::unquote(text);
    // Every reader below walks the same lines: split them once.
    let _shared = shared_lines::share(text);
    let mut formats = readers::recognise_readers(text);
    let mut parts: Vec<Facts> = formats
        .iter()
        .filter_map(|f| readers::reader(*f))
        .map(|r| {
            let mut part = r.parse(text, source);
            limits::cap_lists(&mut part);
            part
        })
        .collect();
    // Environment assignments inside terminal sessions count wherever they are.
    if !formats.contains(&env_dump::READER.format()) {
        let mut exports = env_dump::parse_exports(text);
        limits::cap_lists(&mut exports);
        parts.push(exports);
    }
    let mut facts = crate::merge::merge(parts);
    // A parser's own signals (a state its format states, not a line a
    // signature matches) follow the scanned lines.
    let mut parsed = std::mem::take(&mut facts.signals);
    facts.signals = crate::signals::scan(text, source);
    // Nothing of a known format, but a line with a known error signature.
    if formats.is_empty() && !facts.signals.is_empty() {
        formats.push(Format::APP_LOG);
    }
    // A state a parser reports that a line's signature already matched
    // (rocminfo crashing in the HSA runtime) is said once.
    parsed.retain(|p| !facts.signals.iter().any(|s| s.id == p.id));
    facts.signals.extend(parsed);
    refused_gpus(&mut facts, text);
    torch_warned_gpus(&mut facts, text);
    comfyui_devices(&mut facts, text);
    torch_script_devices(&mut facts, text);
    launcher_rocm_agents(&mut facts, text);
    facts.rocm.failed_hip_device = failed_hip_device(text);
    bench_devices(&mut facts, text);
    empty_device_list(&mut facts, text, source);
    if facts.rocm.version.is_none() {
        if let Some(v) = torch_version_hip(text) {
            facts.rocm.version = Some(amd::rocm_release(&v));
            facts.rocm.hip_version = Some(v);
        } else {
            facts.rocm.version =
                rocm_path_version(text).or_else(|| amd::hip_sdk_path_version(text));
        }
    }
    if facts.wsl.is_none() && shows_wsl(text) {
        facts.wsl = Some(true);
    }
    scan::scan(text, source).apply(&mut facts);
    if formats.is_empty() && !facts.text_scan.is_empty() {
        formats.push(Format::TEXT_SCAN);
    }
    // The recognisers and the scan above add to the merged facts.
    limits::cap_lists(&mut facts);
    (formats, facts)
}

/// The device ggml names under a GPU error: `  current device: 1, in
/// function ggml_cuda_compute_forward at ...` (ggml's CUDA/HIP error
/// report prints the index `hipGetDevice` returned, a HIP device index).
fn failed_hip_device(text: &str) -> Option<u32> {
    lines_of(text).find_map(|l| {
        let rest = l.trim_start().strip_prefix("current device: ")?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// One line for the check list: what the file showed.
pub fn summarise(f: &Facts) -> String {
    let mut parts = Vec::new();
    let gpus: Vec<String> = f
        .gpus
        .iter()
        .map(|g| g.label(|| format!("{:?}", g.vendor).to_lowercase()))
        .collect();
    if !gpus.is_empty() {
        let n = gpus.len();
        let mut shown: Vec<String> = gpus.into_iter().take(3).collect();
        if n > 3 {
            shown.push(format!("+{} more", n - 3));
        }
        parts.push(format!(
            "{n} device{}: {}",
            if n == 1 { "" } else { "s" },
            shown.join(", ")
        ));
    }
    if let Some(v) = &f.kernel_driver_version {
        parts.push(format!("driver {v}"));
    }
    if let Some(v) = &f.rocm.version {
        parts.push(format!("ROCm {v}"));
    }
    if !f.vulkan.icds.is_empty() {
        parts.push(format!("{} ICD manifest(s)", f.vulkan.icds.len()));
    }
    for fw in &f.python.frameworks {
        parts.push(format!("{} {}", fw.name, fw.version));
    }
    let errs = f
        .signals
        .iter()
        .filter(|s| !crate::signals::is_noise(&s.id))
        .count();
    let noise = f.signals.len() - errs;
    if errs > 0 {
        parts.push(format!("{errs} error line(s)"));
    }
    if noise > 0 {
        parts.push(format!("{noise} harmless notice(s)"));
    }
    if parts.is_empty() {
        "nothing of note".into()
    } else {
        parts.join("; ")
    }
}

/// Splits "key: value" (first colon), returning the indent and trimmed parts.
pub(crate) fn kv(line: &str) -> Option<(usize, &str, &str)> {
    let indent = line.len() - line.trim_start().len();
    let (k, v) = line.trim().split_once(':')?;
    let k = k.trim();
    if k.is_empty() {
        return None;
    }
    Some((indent, k, v.trim()))
}

#[cfg(test)]
mod explain;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_amd;
#[cfg(test)]
mod tests_apps;
#[cfg(test)]
mod tests_python;
