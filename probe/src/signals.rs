//! Error signatures recognised line by line in any text (command output,
//! dmesg, application logs). The table is data (`probe/signals.toml`): adding
//! a newly seen error message is a data change, not a code change.
//!
//! Harmless noise is matched first and recorded with an id starting with
//! `noise-`, so a line such as turnip's `VK_ERROR_INCOMPATIBLE_DRIVER` probe
//! failure can never be mistaken for a real Vulkan failure.

use crate::facts::Signal;
use aho_corasick::AhoCorasick;
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
    /// Where the signature comes from (ERRORS.md entry or fixture): for
    /// the reader of signals.toml, so no code reads it.
    #[serde(default, rename = "ref")]
    #[allow(dead_code)]
    pub reference: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignalFile {
    signal: Vec<Signature>,
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
    &matcher().sigs
}

/// Every pattern of every signature in one Aho-Corasick automaton, so a
/// line costs one scan however many signatures there are (a 16 MiB log is
/// hundreds of thousands of lines) and lines with no pattern at all are
/// dismissed at once.
struct Matcher {
    sigs: Vec<Signature>,
    ac: AhoCorasick,
    /// Per signature: pattern ids of all / any / none.
    ids: Vec<[Vec<usize>; 3]>,
    patterns: usize,
}

fn matcher() -> &'static Matcher {
    static M: OnceLock<Matcher> = OnceLock::new();
    M.get_or_init(|| build(parse_table(SIGNALS_TOML).expect("embedded signals.toml is valid")))
}

fn build(sigs: Vec<Signature>) -> Matcher {
    let mut patterns: Vec<String> = Vec::new();
    let mut id_of = |p: &String| match patterns.iter().position(|x| x == p) {
        Some(i) => i,
        None => {
            patterns.push(p.clone());
            patterns.len() - 1
        }
    };
    let ids = sigs
        .iter()
        .map(|s| {
            [
                s.all.iter().map(&mut id_of).collect(),
                s.any.iter().map(&mut id_of).collect(),
                s.none.iter().map(&mut id_of).collect(),
            ]
        })
        .collect();
    // A DFA: the scan searches whole pastes with it (16 MiB), where its
    // one table lookup per byte beats the NFA's transitions.
    let ac = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(&patterns)
        .expect("signal patterns build an automaton");
    Matcher {
        sigs,
        ac,
        ids,
        patterns: patterns.len(),
    }
}

impl Matcher {
    fn classify(&self, line: &str) -> Option<&Signature> {
        // Most lines match no pattern: they cost no table.
        let mut hits = self.ac.find_overlapping_iter(line).peekable();
        hits.peek()?;
        let mut hit = vec![false; self.patterns];
        for m in hits {
            hit[m.pattern().as_usize()] = true;
        }
        self.sigs
            .iter()
            .zip(&self.ids)
            .find_map(|(s, [all, any, none])| {
                crate::clauses::hold(all, any, none, |&i| hit[i]).then_some(s)
            })
    }
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
    ("hip-no-device", "doctor's live HIP check (libamdhip64 in a child of greta) found no HIP device; the text is HIP's reason"),
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
    matcher().classify(line)
}

/// The lines of `text` (as `str::lines` splits them, with their numbers
/// from 1) that contain one of the signatures' patterns: the automaton's
/// search skips the others without splitting them, so a long paste of
/// prose costs one search, not one per line.
fn candidate_lines<'a>(text: &'a str) -> impl Iterator<Item = (usize, &'a str)> + 'a {
    let ac = &matcher().ac;
    let bytes = text.as_bytes();
    let (mut pos, mut number, mut counted) = (0usize, 1usize, 0usize);
    std::iter::from_fn(move || {
        let hit = ac.find(&text[pos..])?;
        let at = pos + hit.start();
        let start = bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let end = bytes[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |p| at + p);
        number += bytes[counted..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        counted = start;
        pos = (end + 1).min(text.len());
        let line = &text[start..end];
        Some((number, line.strip_suffix('\r').unwrap_or(line)))
    })
}

/// Scans `text` line by line; `source` names the file or command.
pub fn scan(text: &str, source: &str) -> Vec<Signal> {
    let mut out = Vec::new();
    let mut counts: HashMap<&'static str, usize> = HashMap::new();
    for (number, line) in candidate_lines(text) {
        let i = number - 1;
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

    /// A traced call on a render node refused with EPERM (the device
    /// plugin's cgroup, ROCm/k8s-device-plugin#65), in strace's two usual
    /// calls; the same call refused for another reason is not it.
    #[test]
    fn a_render_node_refused_with_eperm() {
        let id = |l: &str| classify(l).map(|s| s.id.as_str());
        for l in [
            r#"access("/dev/dri/renderD128", F_OK)     = -1 EPERM (Operation not permitted)"#,
            r#"openat(AT_FDCWD, "/dev/dri/renderD129", O_RDWR|O_CLOEXEC) = -1 EPERM (Operation not permitted)"#,
        ] {
            assert_eq!(id(l), Some("device-node-eperm"), "{l}");
        }
        assert_ne!(
            id(
                r#"openat(AT_FDCWD, "/dev/dri/renderD128", O_RDWR) = -1 ENOENT (No such file or directory)"#
            ),
            Some("device-node-eperm")
        );
    }

    /// The search that skips lines without a pattern finds exactly the
    /// lines, numbers and signatures a walk over every line finds: on every
    /// file of both paste corpora, and on line ends of every kind.
    #[test]
    fn skipping_lines_finds_what_every_line_finds() {
        let naive = |t: &str| -> Vec<(usize, String)> {
            t.lines()
                .enumerate()
                .filter_map(|(i, l)| classify(l).map(|s| (i + 1, s.id.clone())))
                .collect()
        };
        let fast = |t: &str| -> Vec<(usize, String)> {
            candidate_lines(t)
                .filter_map(|(n, l)| classify(l).map(|s| (n, s.id.clone())))
                .collect()
        };
        let mut texts: Vec<String> = vec![
            "ROCk module is NOT loaded, possibly no GPU devices".into(),
            "x\r\nROCk module is NOT loaded, possibly no GPU devices\r\n\r\nhipErrorNoBinaryForGpu\r".into(),
            "\n\nhipErrorNoBinaryForGpu\nplain\nROCk module is NOT loaded, possibly no GPU devices\n".into(),
            String::new(),
        ];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        for corpus in ["fixtures", "unseen-formats"] {
            for dir in std::fs::read_dir(root.join(corpus)).unwrap() {
                let dir = dir.unwrap().path();
                for f in std::fs::read_dir(&dir).into_iter().flatten() {
                    let f = f.unwrap().path();
                    if let Ok(t) = std::fs::read_to_string(&f) {
                        texts.push(t);
                    }
                }
            }
        }
        assert!(texts.len() > 300);
        let mut lines = 0;
        for t in &texts {
            let want = naive(t);
            lines += want.len();
            assert_eq!(fast(t), want, "{}", &t[..t.len().min(200)]);
        }
        assert!(lines > 100, "the corpora have signal lines: {lines}");
    }
    use super::*;

    #[test]
    fn embedded_table_is_valid() {
        assert!(parse_table(SIGNALS_TOML).is_ok());
        assert!(table().len() > 30);
    }

    #[test]
    fn automaton_agrees_with_plain_substring_matching() {
        // Reference: the obvious lowercase + contains evaluation, on every
        // line of every fixture file.
        let plain = |line: &str| {
            let lc = line.to_lowercase();
            table().iter().find(|s| {
                crate::clauses::hold(&s.all, &s.any, &s.none, |p| lc.contains(p.as_str()))
            })
        };
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut lines = 0;
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(t) = std::fs::read_to_string(&p) {
                    for l in t.lines() {
                        lines += 1;
                        assert_eq!(classify(l).map(|s| &s.id), plain(l).map(|s| &s.id), "{l}");
                    }
                }
            }
        }
        assert!(lines > 1000);
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
    fn hip_no_binary_spellings() {
        // HIP's own log line when the fat binary has no code object for the
        // GPU (llama.cpp#19949, a gfx1152 iGPU), and the error name older
        // runtimes return for it (fixtures/ERRORS.md, legacy-rocm-build#1525).
        for l in [
            ":1:hip_fatbin.cpp           :687 : 114369963532 us:  No compatible code objects found for: gfx1152, value of HIP_FORCE_SPIRV_CODEOBJECT: 0",
            "ERROR：\"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\"",
            "hip_code_object.cpp:92: guarantee(false && \"hipErrorNoBinaryForGpu: Coudn't find binary for current devices!\")",
        ] {
            assert_eq!(classify(l).unwrap().id, "hip-no-binary", "{l}");
        }
    }

    #[test]
    fn hip_invalid_image_spellings() {
        // hipErrorInvalidImage by its message (llama.cpp#23934), and its
        // sibling hipErrorInvalidKernelFile as hip-tests print it when the
        // code objects are for another gfx family (rocm-systems#3221).
        for l in [
            "ROCm error: device kernel image is invalid",
            "  Error: invalid kernel file",
        ] {
            assert_eq!(classify(l).unwrap().id, "hip-invalid-image", "{l}");
        }
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

    /// The NVIDIA driver older than the CUDA runtime, in the CUDA runtime's
    /// words and in PyTorch's ("The NVIDIA driver on your system is too old
    /// (found version N)": lllyasviel/Fooocus#1313 as a RuntimeError,
    /// IEIT-Yuan/Yuan-2.0#65 as a "CUDA initialization" UserWarning).
    #[test]
    fn cuda_driver_too_old_spellings() {
        for l in [
            "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version",
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver.",
            "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:124: UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11000). Please update your GPU driver",
        ] {
            assert_eq!(classify(l).unwrap().id, "cuda-driver-too-old", "{l}");
        }
    }

    /// Docker or the NVIDIA container hook could not hand the GPU to a
    /// container: docker's own words with the driver name empty, "nvidia"
    /// or left out (NVIDIA/nvidia-docker#1034, psalias2006/gpu-hot#18,
    /// NVIDIA/nvidia-docker#1642) and nvidia-container-cli failing to load
    /// the host driver's NVML (canonical/docker-snap#148). The hook's
    /// "driver/library version mismatch" stays the driver's mismatch.
    #[test]
    fn nvidia_container_toolkit_spellings() {
        for l in [
            r#"docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]]."#,
            r#"Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]]"#,
            "docker: Error response from daemon: could not select device driver with capabilities: [[gpu]].",
            "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown.",
        ] {
            assert_eq!(classify(l).unwrap().id, "nvidia-container-toolkit", "{l}");
        }
        let l = "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown.";
        assert_eq!(classify(l).unwrap().id, "nvidia-api-mismatch");
    }

    /// ollama counted no GPU memory at all: the whole logfmt line
    /// (ollama/ollama#17222) and a grep of the field alone (ollama/ollama
    /// #14927's `grep total_vram`).
    #[test]
    fn ollama_no_gpu_memory_spellings() {
        for l in [
            r#"level=INFO source=routes.go:2054 msg="vram-based default context" total_vram="0 B" default_num_ctx=4096"#,
            r#"total_vram="0 B""#,
        ] {
            assert_eq!(classify(l).unwrap().id, "ollama-no-gpu-memory", "{l}");
        }
        let l = r#"level=INFO source=routes.go:2054 msg="vram-based default context" total_vram="15.9 GiB" default_num_ctx=8192"#;
        assert!(classify(l).is_none());
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
