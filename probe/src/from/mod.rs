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

pub mod amd;
pub mod amdsmi;
pub mod clinfo;
pub mod collect_env;
pub mod dmesg;
pub mod env_dump;
pub mod hipconfig;
pub mod icd_json;
pub mod kfd_props;
pub mod llama;
pub mod ls_dev;
pub mod lspci;
pub mod nvidia_smi;
pub mod ollama;
pub mod packages;
pub mod rocminfo;
pub mod rocmsmi;
pub mod vulkaninfo;

use crate::facts::Facts;
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// At most this much of one file is read (16 MiB): a full `vulkaninfo` is a
/// few hundred KB, and a runaway log must not take the doctor down with it.
pub const MAX_READ: u64 = 16 << 20;

/// What a piece of text was recognised as. One file may carry several (a
/// terminal session with `export` lines and `vulkaninfo` output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Rocminfo,
    Vulkaninfo,
    VulkaninfoSummary,
    VulkanDeviceSelect,
    VulkanLoaderLog,
    LlamaCpp,
    Ollama,
    Packages,
    AmdSmi,
    RocmSmi,
    Clinfo,
    Dmesg,
    CollectEnv,
    IcdManifest,
    LayerManifest,
    KfdProperties,
    DeviceNodeListing,
    EnvDump,
    Lspci,
    NvidiaSmi,
    Hipconfig,
    AppLog,
}

impl Format {
    pub fn label(self) -> &'static str {
        match self {
            Format::Rocminfo => "rocminfo",
            Format::Vulkaninfo => "vulkaninfo",
            Format::VulkaninfoSummary => "vulkaninfo --summary",
            Format::VulkanDeviceSelect => "MESA_VK_DEVICE_SELECT=list",
            Format::VulkanLoaderLog => "Vulkan loader messages",
            Format::LlamaCpp => "llama.cpp/ggml log",
            Format::Ollama => "ollama log",
            Format::Packages => "package list (dpkg/rpm/pacman/dkms)",
            Format::AmdSmi => "amd-smi",
            Format::RocmSmi => "rocm-smi",
            Format::Clinfo => "clinfo",
            Format::Dmesg => "dmesg",
            Format::CollectEnv => "collect_env (PyTorch/vLLM)",
            Format::IcdManifest => "Vulkan ICD manifest",
            Format::LayerManifest => "Vulkan layer manifest",
            Format::KfdProperties => "KFD node properties",
            Format::DeviceNodeListing => "ls -l of device nodes",
            Format::EnvDump => "environment variables",
            Format::Lspci => "lspci",
            Format::NvidiaSmi => "nvidia-smi",
            Format::Hipconfig => "hipconfig",
            Format::AppLog => "application log",
        }
    }
}

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
                report.formats = formats;
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
        files.push(report);
    }
    let mut facts = crate::merge::merge(parts);
    implied_gfx(&mut facts);
    facts.sources = vec![format!(
        "from:{}",
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    )];
    Ok(FromRun { facts, files })
}

/// What the pastes imply when no tool printed an AMD GPU's target (issue 25
/// class 6): its PCI device id, else a marketing name only one chip
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
            .or_else(|| amd::gfx_from_marketing_name(&g.name));
        if g.integrated.is_none() && g.gfx.as_deref().is_some_and(amd::is_apu_target) {
            g.integrated = Some(true);
        }
    }
}

fn known_formats() -> String {
    "rocminfo, vulkaninfo, vulkaninfo --summary, amd-smi, rocm-smi, clinfo, dmesg, collect_env, \
     ICD/layer manifest JSON, KFD properties, ls -l /dev/kfd, env dumps, lspci, lshw, nvidia-smi, hipconfig, \
     ollama/llama.cpp logs, dpkg/rpm/pacman/dkms package lines, logs with known errors"
        .to_string()
}

fn read_capped(p: &Path) -> Result<(u64, bool, Vec<u8>), FromError> {
    let err = |error| FromError::Read {
        path: p.display().to_string(),
        error,
    };
    if p == Path::new("-") {
        // `rocminfo 2>&1 | greta doctor --from -`. Standard input's
        // description is shared with the shell, so it is not made
        // non-blocking: poll says when a read will not block.
        let buf = read_waiting(0, from_wait().map_err(err)?).map_err(err)?;
        let truncated = buf.len() as u64 > MAX_READ;
        let mut buf = buf;
        buf.truncate(MAX_READ as usize);
        return Ok((buf.len() as u64, truncated, buf));
    }
    let meta = std::fs::metadata(p).map_err(err)?;
    if meta.is_dir() {
        return Err(FromError::Directory {
            path: p.display().to_string(),
        });
    }
    let mut buf = Vec::new();
    if meta.is_file() {
        let f = std::fs::File::open(p).map_err(err)?;
        // One byte more than the cap tells "exactly 16 MiB" from "more".
        f.take(MAX_READ + 1).read_to_end(&mut buf).map_err(err)?;
    } else {
        // A pipe (`--from <(rocminfo)`), a FIFO, a terminal or a device:
        // opened without blocking (a FIFO's open waits for a writer) and
        // read with a bounded wait for each next byte (`from_wait`).
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(p)
            .map_err(err)?;
        buf = read_waiting(f.as_raw_fd(), from_wait().map_err(err)?).map_err(err)?;
    }
    let truncated = buf.len() as u64 > MAX_READ;
    buf.truncate(MAX_READ as usize);
    Ok((meta.len().max(buf.len() as u64), truncated, buf))
}

/// How long a pipe or FIFO may stay silent (no writer yet, or a writer
/// that neither writes nor closes) before `--from` gives up on it:
/// `GRETA_FROM_WAIT_S`, default 60 s (a slow `rocminfo` takes seconds).
pub const FROM_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

fn from_wait() -> std::io::Result<std::time::Duration> {
    greta_vocab::number::env_duration(
        greta_vocab::EnvVars::GRETA_FROM_WAIT_S,
        greta_vocab::number::Unit::Secs,
        std::time::Duration::from_secs(3600),
    )
    .map(|d| d.unwrap_or(FROM_WAIT))
    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

/// Reads `fd` to its end (at most [`MAX_READ`] + 1 bytes), waiting at most
/// `wait` for each next chunk; a longer silence is a `TimedOut` error that
/// says what was waited for.
fn read_waiting(fd: std::os::fd::RawFd, wait: std::time::Duration) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
    while buf.len() as u64 <= MAX_READ {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "waited {} s for {}: a pipe or FIFO is read until its writer closes it \
                     (GRETA_FROM_WAIT_S sets the wait)",
                    wait.as_secs(),
                    if buf.is_empty() {
                        "a writer to open it and write"
                    } else {
                        "more data or the end from its writer"
                    }
                ),
            ));
        }
        let want = chunk.len().min((MAX_READ + 1) as usize - buf.len());
        // SAFETY: reads at most `want` bytes into `chunk`.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), want) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if matches!(
                e.kind(),
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
            ) {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n as usize]);
    }
    Ok(buf)
}

/// Bytes to text: binary and empty input are refused with a reason; bad
/// UTF-8 is replaced; ANSI colour codes (rocminfo prints them) and CRs go.
pub fn decode(raw: &[u8]) -> Result<String, String> {
    // PowerShell's `>` writes UTF-16 with a byte-order mark.
    let utf16 = |be: bool| {
        let units: Vec<u16> = raw[2..]
            .chunks_exact(2)
            .map(|c| {
                if be {
                    u16::from_be_bytes([c[0], c[1]])
                } else {
                    u16::from_le_bytes([c[0], c[1]])
                }
            })
            .collect();
        String::from_utf16_lossy(&units)
    };
    if raw.starts_with(&[0xff, 0xfe]) {
        return decode(utf16(false).as_bytes());
    }
    if raw.starts_with(&[0xfe, 0xff]) {
        return decode(utf16(true).as_bytes());
    }
    if raw.iter().all(|b| b.is_ascii_whitespace()) {
        return Err("empty file".into());
    }
    let head = &raw[..raw.len().min(8192)];
    let ctrl = head
        .iter()
        .filter(|&&b| b == 0 || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x1b | 0x0c)))
        .count();
    if head.contains(&0) || ctrl * 20 > head.len() {
        return Err("binary data, not text: give the tool's text output".into());
    }
    let text = String::from_utf8_lossy(raw);
    let text = if text.contains('\u{1b}') {
        strip_ansi(&text)
    } else {
        text.into_owned()
    };
    Ok(if text.contains('\r') {
        text.replace('\r', "")
    } else {
        text
    })
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // CSI: parameters then one final byte in @..~
                for n in chars.by_ref() {
                    if ('@'..='~').contains(&n) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Recognises `text` and runs every matching parser; `source` names it in
/// evidence ("rocminfo.txt:2").
pub fn parse_text(text: &str, source: &str) -> (Vec<Format>, Facts) {
    let formats = recognise(text);
    let mut parts = Vec::new();
    for f in &formats {
        let part = match f {
            Format::Rocminfo => rocminfo::parse(text),
            Format::Vulkaninfo | Format::VulkaninfoSummary => vulkaninfo::parse(text),
            Format::VulkanDeviceSelect => vulkaninfo::parse_device_select(text),
            Format::VulkanLoaderLog => vulkaninfo::parse_loader_log(text),
            Format::LlamaCpp => llama::parse(text),
            Format::Ollama => ollama::parse(text),
            Format::Packages => packages::parse(text),
            Format::AmdSmi => amdsmi::parse(text),
            Format::RocmSmi => rocmsmi::parse(text),
            Format::Clinfo => clinfo::parse(text),
            Format::Dmesg => dmesg::parse(text),
            Format::CollectEnv => collect_env::parse(text),
            Format::IcdManifest | Format::LayerManifest => icd_json::parse(text, source),
            Format::KfdProperties => kfd_props::parse(text),
            Format::DeviceNodeListing => ls_dev::parse(text),
            Format::EnvDump => env_dump::parse(text),
            Format::Lspci => lspci::parse(text),
            Format::NvidiaSmi => nvidia_smi::parse(text),
            Format::Hipconfig => hipconfig::parse(text),
            Format::AppLog => Facts::default(),
        };
        parts.push(part);
    }
    // Environment assignments inside terminal sessions count wherever they are.
    if !formats.contains(&Format::EnvDump) {
        parts.push(env_dump::parse_exports(text));
    }
    let mut facts = crate::merge::merge(parts);
    facts.signals = crate::signals::scan(text, source);
    refused_gpus(&mut facts, text);
    bench_devices(&mut facts, text);
    empty_device_list(&mut facts, text, source);
    if formats.contains(&Format::Rocminfo) {
        rocminfo_crash(&mut facts, text, source);
    }
    if facts.rocm.version.is_none() {
        if let Some(v) = torch_version_hip(text) {
            facts.rocm.version = Some(amd::rocm_release(&v));
            facts.rocm.hip_version = Some(v);
        } else {
            facts.rocm.version = rocm_path_version(text);
        }
    }
    if facts.wsl.is_none() && shows_wsl(text) {
        facts.wsl = Some(true);
    }
    (formats, facts)
}

/// The device line of ROCm's benchmark clients (rocblas-bench,
/// hipblaslt-bench, ...): `Device ID 0 : AMD Radeon VII gfx906:sramecc+:xnack-`.
fn bench_devices(facts: &mut Facts, text: &str) {
    let mut seen: Vec<&str> = Vec::new();
    for l in text.lines() {
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
        if seen.contains(&idx) {
            continue;
        }
        seen.push(idx);
        facts.gpus.push(crate::facts::Gpu {
            vendor: crate::facts::Vendor::Amd,
            vendor_id: Some(amd::AMD),
            name,
            integrated: amd::is_apu_target(&gfx).then_some(true),
            gfx: Some(gfx),
            seen_by: vec!["rocm-bench".into()],
            ..Default::default()
        });
    }
}

/// `llama-server --list-devices` printing `Available devices:` and no
/// device after it (the next line is a prompt, or the paste ends): the
/// ggml backends found no device at all, recorded as `vk-app-no-devices`
/// for a Vulkan build (the paste names Vulkan), as llama.cpp's own "No
/// devices found" line would be.
fn empty_device_list(facts: &mut Facts, text: &str, source: &str) {
    if !text.to_ascii_lowercase().contains("vulkan") {
        return;
    }
    let lines: Vec<&str> = text.lines().collect();
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
/// shell's `Segmentation fault` (or an abort) is the runtime crashing
/// (issue 25 class 8), recorded as the `hsa-runtime-crash` signal.
fn rocminfo_crash(facts: &mut Facts, text: &str, source: &str) {
    let crash = text.lines().enumerate().find(|(_, l)| {
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
/// listed it (issue 25 class 3): ollama's `gpu_type=gfx1150` (never its
/// list of supported types), lemonade's `Unsupported GPU: gfx950`.
fn refused_gpus(facts: &mut Facts, text: &str) {
    let mut found: Vec<String> = Vec::new();
    for s in &facts.signals {
        if !matches!(s.id.as_str(), "app-gpu-refused" | "tool-gfx-unsupported") {
            continue;
        }
        // The whole line: a signal keeps only its first 300 characters, and
        // a log pasted as one line has the GPU far beyond them.
        let line = s
            .line
            .and_then(|n| text.lines().nth(n.saturating_sub(1)))
            .unwrap_or(&s.text);
        let lc = line.to_ascii_lowercase();
        let named = ["gpu_type=", "unsupported gpu: "]
            .iter()
            .find_map(|m| lc.find(m).map(|p| &lc[p + m.len()..]))
            .and_then(|rest| amd::find_gfx(rest.split_whitespace().next().unwrap_or("")));
        if let Some(g) = named {
            if !found.contains(&g) {
                found.push(g);
            }
        }
    }
    for g in found {
        if facts
            .gpus
            .iter()
            .any(|x| x.gfx.as_deref() == Some(g.as_str()))
        {
            continue;
        }
        facts.gpus.push(crate::facts::Gpu {
            vendor: crate::facts::Vendor::Amd,
            vendor_id: Some(amd::AMD),
            integrated: amd::is_apu_target(&g).then_some(true),
            gfx: Some(g),
            seen_by: vec!["app".into()],
            ..Default::default()
        });
    }
}

/// `torch.version.hip` asked in a Python session (`>>> torch.version.hip`
/// then `'3.0.19493-36529b1'`, or `print(torch.version.hip)` then the bare
/// version): the HIP/ROCm build the wheel was made with.
fn torch_version_hip(text: &str) -> Option<String> {
    let mut lines = text.lines();
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
fn rocm_path_version(text: &str) -> Option<String> {
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

/// What WSL2 leaves in any paste (issue 25 class 4): its kernel's name
/// (`5.15.167.4-microsoft-standard-WSL2` in uname, a log or a path), the
/// paravirtual GPU device `/dev/dxg`, ROCm's WSL bridge `librocdxg`, and
/// rocminfo's own notice. There is no KFD there, by design.
fn shows_wsl(text: &str) -> bool {
    const HINTS: &[&str] = &[
        "microsoft-standard-wsl",
        "wsl environment detected",
        "/dev/dxg",
        "librocdxg",
        "libdxcore.so",
        "/usr/lib/wsl/lib",
    ];
    text.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        HINTS.iter().any(|h| l.contains(h))
    })
}

/// Every format whose markers `text` carries, most specific first.
pub fn recognise(text: &str) -> Vec<Format> {
    let mut out = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        if let Some(f) = icd_json::recognise(text) {
            return vec![f];
        }
    }
    let has = |s: &str| text.contains(s);
    if rocminfo::recognise(text) {
        out.push(Format::Rocminfo);
    }
    if has("Device Properties and Extensions") || has("VkPhysicalDeviceProperties:") {
        out.push(Format::Vulkaninfo);
    } else if vulkaninfo::has_device_blocks(text)
        || has("VULKANINFO")
        || has("Vulkan Instance Version")
    {
        out.push(Format::VulkaninfoSummary);
    }
    if has("selectable devices:") {
        out.push(Format::VulkanDeviceSelect);
    }
    if !out
        .iter()
        .any(|f| matches!(f, Format::Vulkaninfo | Format::VulkaninfoSummary))
        && vulkaninfo::recognise_loader_log(text)
    {
        out.push(Format::VulkanLoaderLog);
    }
    if llama::recognise(text) {
        out.push(Format::LlamaCpp);
    }
    if ollama::recognise(text) {
        out.push(Format::Ollama);
    }
    if packages::recognise(text) {
        out.push(Format::Packages);
    }
    if amdsmi::recognise(text) {
        out.push(Format::AmdSmi);
    }
    if rocmsmi::recognise(text) {
        out.push(Format::RocmSmi);
    }
    if clinfo::recognise(text) {
        out.push(Format::Clinfo);
    }
    if dmesg::recognise(text) {
        out.push(Format::Dmesg);
    }
    if collect_env::recognise(text) {
        out.push(Format::CollectEnv);
    }
    if kfd_props::recognise(text) {
        out.push(Format::KfdProperties);
    }
    if ls_dev::recognise(text) {
        out.push(Format::DeviceNodeListing);
    }
    if env_dump::recognise(text) {
        out.push(Format::EnvDump);
    }
    if lspci::recognise(text) {
        out.push(Format::Lspci);
    }
    if nvidia_smi::recognise(text) {
        out.push(Format::NvidiaSmi);
    }
    if hipconfig::recognise(text) {
        out.push(Format::Hipconfig);
    }
    if out.is_empty() && text.lines().any(|l| crate::signals::classify(l).is_some()) {
        out.push(Format::AppLog);
    }
    out
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
mod tests {
    use super::*;

    #[test]
    fn binary_and_empty_are_refused() {
        assert!(decode(b"").is_err());
        assert!(decode(b" \n\t\n").is_err());
        assert!(decode(b"\x7fELF\x02\x01\x01\0\0\0\0").is_err());
        let noise: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 32) as u8).collect();
        assert!(decode(&noise).is_err());
        assert_eq!(
            decode(b"\x1b[31mROCk module is NOT loaded\x1b[0m\r\n").unwrap(),
            "ROCk module is NOT loaded\n"
        );
    }

    #[test]
    fn utf16_with_bom_is_text() {
        let mut raw = vec![0xff, 0xfe];
        for u in "ROCk module is loaded\r\n".encode_utf16() {
            raw.extend_from_slice(&u.to_le_bytes());
        }
        assert_eq!(decode(&raw).unwrap(), "ROCk module is loaded\n");
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let t = decode(b"Device Name \xff\xfe gfx1103\n").unwrap();
        assert!(t.contains("gfx1103"));
    }

    #[test]
    fn wsl_is_seen_in_any_paste() {
        for t in [
            "Linux PC 5.15.167.4-microsoft-standard-WSL2 #1 SMP x86_64 GNU/Linux\n",
            "crw-rw-rw- 1 root root 10, 125 Jun 1 10:00 /dev/dxg\n",
            "hsa_signal_store_screlease not found - /opt/rocm-7.2.1/lib/librocdxg.so: undefined symbol\n",
        ] {
            assert_eq!(parse_text(t, "x").1.wsl, Some(true), "{t}");
        }
        assert_eq!(parse_text("Linux box 6.8.0-45-generic\n", "x").1.wsl, None);
    }

    #[test]
    fn an_empty_device_list_is_no_vulkan_device() {
        let none = "docker run ... llama.cpp:server-vulkan\n# ./llama-server --list-devices\nAvailable devices:\n";
        assert!(parse_text(none, "x")
            .1
            .signals
            .iter()
            .any(|s| s.id == "vk-app-no-devices"));
        let one = "server-vulkan\nAvailable devices:\nVulkan0: AMD Radeon 780M Graphics (RADV PHOENIX) (29696 MiB, 28598 MiB free)\n";
        assert!(!parse_text(one, "x")
            .1
            .signals
            .iter()
            .any(|s| s.id == "vk-app-no-devices"));
    }

    #[test]
    fn benchmark_clients_name_their_device() {
        let t = "Device ID 0 : AMD Radeon VII gfx906:sramecc+:xnack-\nrocblaslt warning: No paths matched x\n";
        let f = parse_text(t, "x").1;
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].name, "AMD Radeon VII");
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx906"));
        assert!(parse_text("Device ID 0 : something else\n", "x")
            .1
            .gpus
            .is_empty());
    }

    #[test]
    fn rocminfo_that_segfaults_is_an_hsa_crash() {
        let f = parse_text(
            "$ rocminfo\nROCk module is loaded\nSegmentation fault\n",
            "r.txt",
        )
        .1;
        assert!(f
            .signals
            .iter()
            .any(|s| s.id == "hsa-runtime-crash" && s.line == Some(3)));
        // Not every paste with a segfault: only rocminfo's.
        let g = parse_text("python3 train.py\nSegmentation fault\n", "x").1;
        assert!(!g.signals.iter().any(|s| s.id == "hsa-runtime-crash"));
    }

    #[test]
    fn a_refusal_names_its_gpu() {
        let t = "Error: Cannot install llamacpp:rocm on this system: Unsupported GPU: gfx950\n";
        let f = parse_text(t, "x").1;
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx950"));
        let t = "level=WARN msg=\"amdgpu is not supported (supported types:[gfx1103])\" gpu_type=gfx1150 gpu=0\n";
        let f = parse_text(t, "x").1;
        assert_eq!(f.gpus.len(), 1, "{:?}", f.gpus);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1150"));
    }

    #[test]
    fn rocm_version_from_an_install_path() {
        let t = "OSError: /opt/rocm-7.1.1/lib/libamdhip64.so.7: undefined symbol: hsa_x\n";
        assert_eq!(parse_text(t, "x").1.rocm.version.as_deref(), Some("7.1.1"));
        // Two releases: neither is "the" version.
        let two = "/opt/rocm-6.0.0/lib/a.so\n/opt/rocm-5.7.1/lib/b.so\n";
        assert_eq!(rocm_path_version(two), None);
        assert_eq!(rocm_path_version("/opt/rocm-/x /opt/rocm-7"), None);
    }

    #[test]
    fn torch_version_hip_in_a_python_session() {
        let f = parse_text(
            ">>> import torch\n>>> torch.version.hip\n'3.0.19493-36529b1'\n",
            "x",
        )
        .1;
        assert_eq!(f.rocm.version.as_deref(), Some("3.0"));
        assert_eq!(f.rocm.hip_version.as_deref(), Some("3.0.19493-36529b1"));
        let f = parse_text("print(torch.version.hip)\n6.2.41133-dd7f95766\n", "x").1;
        assert_eq!(f.rocm.version.as_deref(), Some("6.2"));
        assert_eq!(
            parse_text(">>> torch.version.hip\n>>> None\n", "x")
                .1
                .rocm
                .version,
            None
        );
    }

    #[test]
    fn unrelated_text_is_not_recognised() {
        assert!(recognise("hello world\nthis is a shopping list\n").is_empty());
        assert!(recognise("{\"not\": \"a manifest\"}").is_empty());
    }
}
