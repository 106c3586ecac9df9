//! The readers of `--from`: one per format, each a [`Reader`] (how its
//! text is recognised, what it reads), all listed in [`READERS`]. The
//! engine (`parse_text`) runs every reader whose markers a text carries and
//! merges what they read; nothing else branches on a format. Adding a
//! format is one file (its recognise and parse, and a `const READER`
//! beside them) and one line in the list (docs/extending.md).

use super::shared_lines::lines_of;
use super::*;
use crate::facts::Facts;
use serde::Serialize;

/// What a piece of text was recognised as (its reader's name, as the JSON
/// `formats` spells it). One file may carry several (a terminal session
/// with `export` lines and `vulkaninfo` output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Format(&'static str);

impl Format {
    /// Nothing of a known format, but a line with a known error signature.
    pub const APP_LOG: Format = Format("app-log");
    /// Nothing of a known format, but the format-agnostic scan read a GPU,
    /// a version or a driver from it.
    pub const TEXT_SCAN: Format = Format("text-scan");

    /// The reader's name (`rocminfo`, `vulkaninfo-summary`).
    pub fn name(self) -> &'static str {
        self.0
    }

    /// What the check list calls it.
    pub fn label(self) -> &'static str {
        match self {
            Format::APP_LOG => "application log",
            Format::TEXT_SCAN => "GPU names and versions in unrecognised text",
            _ => READERS
                .iter()
                .find(|r| r.format() == self)
                .map_or(self.0, |r| r.label()),
        }
    }
}

/// One format: how its text is recognised and what it reads.
pub trait Reader: Sync {
    fn format(&self) -> Format;
    /// What the check list calls it.
    fn label(&self) -> &'static str;
    /// Whether `text` carries this format's markers.
    fn detect(&self, text: &str) -> bool;
    /// What `text` says; `source` names it in evidence ("rocminfo.txt").
    fn parse(&self, text: &str, source: &str) -> Facts;
    /// A text this reader detects is read by no other (a JSON manifest).
    fn alone(&self) -> bool {
        false
    }
    /// Strings one of which (ASCII case ignored) every text this reader
    /// detects contains: texts without any are not offered to `detect`
    /// (one automaton pass over a paste decides for every reader). Empty:
    /// every text is offered.
    fn markers(&self) -> &'static [&'static [&'static str]] {
        &[]
    }
}

/// A reader made of its format's two functions: what nearly every format
/// module declares as its `READER`.
pub struct Fns {
    pub name: &'static str,
    pub label: &'static str,
    pub detect: fn(&str) -> bool,
    pub parse: fn(&str, &str) -> Facts,
    pub alone: bool,
    /// [`Reader::markers`]: lists of strings (a module's own key lists
    /// serve as they are).
    pub markers: &'static [&'static [&'static str]],
}

impl Reader for Fns {
    fn format(&self) -> Format {
        Format(self.name)
    }
    fn label(&self) -> &'static str {
        self.label
    }
    fn detect(&self, text: &str) -> bool {
        (self.detect)(text)
    }
    fn parse(&self, text: &str, source: &str) -> Facts {
        (self.parse)(text, source)
    }
    fn alone(&self) -> bool {
        self.alone
    }
    fn markers(&self) -> &'static [&'static [&'static str]] {
        self.markers
    }
}

/// Every reader, most specific first (the order of a file's `formats`).
pub const READERS: &[&dyn Reader] = &[
    &icd_json::ICD_READER,
    &icd_json::LAYER_READER,
    &rocminfo::READER,
    &vulkaninfo::READER,
    &vulkaninfo::SUMMARY_READER,
    &vulkaninfo::DEVICE_SELECT_READER,
    &vulkaninfo::LOADER_LOG_READER,
    &llama::READER,
    &ollama::READER,
    &packages::READER,
    &amdsmi::READER,
    &rocmsmi::READER,
    &clinfo::READER,
    &dmesg::READER,
    &collect_env::READER,
    &jax_env::READER,
    &kfd_props::READER,
    &ls_dev::READER,
    &env_dump::READER,
    &lspci::READER,
    &lshw::READER,
    &nvidia_smi::READER,
    &hipconfig::READER,
    &mesa_gl::READER,
    &hipinfo::READER,
    &agent_enum::READER,
    &module_version::READER,
    &k8s_labels::READER,
];

/// Every format whose markers `text` carries, in [`READERS`] order; a
/// reader that reads alone ends the list.
pub fn recognise(text: &str) -> Vec<Format> {
    let mut out = recognise_readers(text);
    if out.is_empty() && lines_of(text).any(|l| crate::signals::classify(l).is_some()) {
        out.push(Format::APP_LOG);
    }
    out
}

/// [`recognise`] without the application-log fallback (`parse_text`
/// decides that from the signals it scans anyway).
pub(super) fn recognise_readers(text: &str) -> Vec<Format> {
    let offered = offered(text);
    let mut out = Vec::new();
    for (r, offer) in READERS.iter().zip(offered) {
        if offer && r.detect(text) {
            if r.alone() {
                return vec![r.format()];
            }
            out.push(r.format());
        }
    }
    out
}

/// Which readers `text` is offered to: those without markers, and those
/// one of whose markers it contains. One pass of one automaton over the
/// text, which stops once every reader is decided: a 16 MiB paste of
/// prose costs one scan instead of one per reader.
fn offered(text: &str) -> Vec<bool> {
    let (ac, owner) = markers();
    let mut offer: Vec<bool> = READERS.iter().map(|r| r.markers().is_empty()).collect();
    let mut left = offer.iter().filter(|o| !**o).count();
    for m in ac.find_overlapping_iter(text) {
        let r = owner[m.pattern().as_usize()];
        if !offer[r] {
            offer[r] = true;
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    offer
}

/// The automaton of every reader's markers (ASCII case ignored, so it
/// finds at least what a case-sensitive `contains` finds), and the reader
/// each pattern belongs to.
fn markers() -> &'static (aho_corasick::AhoCorasick, Vec<usize>) {
    static M: std::sync::OnceLock<(aho_corasick::AhoCorasick, Vec<usize>)> =
        std::sync::OnceLock::new();
    M.get_or_init(|| {
        let mut pats = Vec::new();
        let mut owner = Vec::new();
        for (i, r) in READERS.iter().enumerate() {
            for m in r.markers().iter().flat_map(|l| l.iter()) {
                pats.push(*m);
                owner.push(i);
            }
        }
        let ac = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(&pats)
            .expect("the readers' markers build an automaton");
        (ac, owner)
    })
}

/// The reader of `f`.
pub fn reader(f: Format) -> Option<&'static dyn Reader> {
    READERS.iter().copied().find(|r| r.format() == f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are unique and spelled as the JSON has always spelled them
    /// (kebab-case), labels say something.
    #[test]
    fn readers_are_named_once() {
        for (i, r) in READERS.iter().enumerate() {
            let n = r.format().name();
            assert!(
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{n}"
            );
            assert!(!r.label().is_empty(), "{n}");
            assert!(
                READERS[i + 1..].iter().all(|q| q.format() != r.format()),
                "{n} twice"
            );
            assert_ne!(r.format(), Format::APP_LOG);
            assert_ne!(r.format(), Format::TEXT_SCAN);
        }
    }

    /// The markers only spare work: on every file of both corpora (real
    /// pastes of every format) the readers offered by the automaton detect
    /// exactly what every reader's own `detect` does.
    #[test]
    fn markers_never_hide_a_format() {
        let unfiltered = |t: &str| -> Vec<Format> {
            let mut out = Vec::new();
            for r in READERS {
                if r.detect(t) {
                    if r.alone() {
                        return vec![r.format()];
                    }
                    out.push(r.format());
                }
            }
            out
        };
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        let mut files = 0;
        for corpus in ["fixtures", "unseen-formats"] {
            for dir in std::fs::read_dir(root.join(corpus)).unwrap() {
                let dir = dir.unwrap().path();
                if !dir.is_dir() {
                    continue;
                }
                for f in std::fs::read_dir(&dir).unwrap() {
                    let f = f.unwrap().path();
                    let name = f.file_name().unwrap().to_string_lossy().to_string();
                    if name == "expect.toml" || name.ends_with(".md") || !f.is_file() {
                        continue;
                    }
                    let Ok(text) = super::super::decode(&std::fs::read(&f).unwrap()) else {
                        continue;
                    };
                    let text = super::super::quoted::unquote(&text);
                    assert_eq!(
                        recognise_readers(&text),
                        unfiltered(&text),
                        "{}",
                        f.display()
                    );
                    files += 1;
                }
            }
        }
        assert!(files > 250, "only {files} files");
    }

    /// Every reader recognises a real paste of its format, read by
    /// `parse_text` through the registry; the samples are lines of the
    /// fixture corpus.
    #[test]
    fn every_reader_recognises_its_format() {
        let samples: &[(&str, &str)] = &[
            ("icd-manifest", "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"libvulkan_radeon.so\", \"api_version\": \"1.3.289\"}}"),
            ("layer-manifest", "{\"file_format_version\": \"1.1.0\", \"layer\": {\"name\": \"VK_LAYER_AMD_switchable_graphics_64\", \"disable_environment\": {\"DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1\": \"1\"}}}"),
            ("rocminfo", "ROCk module is loaded\n=====================\nHSA System Attributes\n=====================\n"),
            ("vulkaninfo", "Device Properties and Extensions:\n==================================\nGPU0:\nVkPhysicalDeviceProperties:\n"),
            ("vulkaninfo-summary", "Devices:\n========\nGPU0:\n\tapiVersion         = 1.3.289\n\tdeviceName         = AMD Radeon RX 7900 XTX (RADV NAVI31)\n\tdriverID           = DRIVER_ID_MESA_RADV\n"),
            ("vulkan-device-select", "selectable devices:\n  GPU 0: 1002:744c \"AMD Radeon RX 7900 XTX (RADV NAVI31)\" discrete GPU 0000:03:00.0\n"),
            ("vulkan-loader-log", "ERROR: [Loader Message] Code 0 : vkCreateInstance: Found no drivers!\n"),
            ("llama-cpp", "ggml_vulkan: 0 = AMD Radeon RX 7900 XTX (RADV NAVI31) (radv) | uma: 0 | fp16: 1 | warp size: 64\n"),
            ("ollama", "time=2024-10-01T10:00:00.000Z level=INFO source=types.go:107 msg=\"inference compute\" id=0 library=rocm variant=\"\" compute=gfx1100 driver=6.3 name=1002:744c total=\"24.0 GiB\" available=\"23.9 GiB\"\n"),
            ("packages", "ii  rocm-core  6.2.0.60200-66~22.04  amd64  Radeon Open Compute (ROCm) Runtime software stack\n"),
            ("amd-smi", "+------------------------------------------------------------------------------+\n| AMD-SMI 24.6.2+2b02a07       amdgpu version: 6.8.5    ROCm version: 6.2.0    |\n"),
            ("rocm-smi", "========================= ROCm System Management Interface =========================\n"),
            ("clinfo", "Number of platforms                               1\n  Platform Name                                   AMD Accelerated Parallel Processing\n"),
            ("dmesg", "[    2.345678] [drm] amdgpu kernel modesetting enabled.\n[    2.400000] amdgpu 0000:03:00.0: amdgpu: Fetched VBIOS from VFCT\n"),
            ("collect-env", "PyTorch version: 2.5.1+rocm6.2\nIs debug build: False\nROCM used to build PyTorch: 6.2.41133-dd7f95766\nIs CUDA available: True\n"),
            ("jax-env", "jax:    0.4.35\njaxlib: 0.4.35\nnumpy:  2.1.3\npython: 3.12.7\ndevice info: cpu-1, 1 local devices\"\n"),
            ("kfd-properties", "cpu_cores_count 0\nsimd_count 192\ngfx_target_version 110000\nvendor_id 4098\ndevice_id 29772\n"),
            ("device-node-listing", "crw-rw---- 1 root render 235, 0 Nov 29 10:00 /dev/kfd\n"),
            ("env-dump", "HSA_OVERRIDE_GFX_VERSION=10.3.0\nROCR_VISIBLE_DEVICES=0\n"),
            ("lspci", "03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX] [1002:744c] (rev c8)\n"),
            ("lshw", "  *-display\n       product: Navi 31 [Radeon RX 7900 XT/7900 XTX]\n       vendor: Advanced Micro Devices, Inc. [AMD/ATI]\n       bus info: pci@0000:03:00.0\n"),
            ("nvidia-smi", "+-----------------------------------------------------------------------------+\n| NVIDIA-SMI 550.54.14              Driver Version: 550.54.14      CUDA Version: 12.4     |\n"),
            ("hipconfig", "HIP version  : 6.2.41133-dd7f95766\n\n== hipconfig\nHIP_PATH     : /opt/rocm-6.2.0\nROCM_PATH    : /opt/rocm-6.2.0\nHIP_PLATFORM : amd\n"),
            ("open-gl-renderer", "OpenGL renderer string: AMD Radeon RX 7900 XTX (radeonsi, navi31, LLVM 18.1.8, DRM 3.57, 6.8.0-45-generic)\n"),
            ("hip-info", "device#                           0\nName:                             AMD Radeon RX 7900 XTX\ntotalGlobalMem:                   23.98 GB\nmultiProcessorCount:              48\ngcnArchName:                      gfx1100\n"),
            ("agent-enumerator", "$ rocm_agent_enumerator\ngfx000\ngfx1100\n"),
            ("module-version", "$ cat /sys/module/amdgpu/version\n6.8.5\n"),
            ("kubernetes-node-labels", "    amd.com/gpu.device-id: 74b5\n    amd.com/gpu.driver-version: 6.8.5\n    beta.amd.com/gpu.device-id.74b5: \"8\"\n"),
        ];
        assert_eq!(samples.len(), READERS.len());
        for r in READERS {
            let name = r.format().name();
            let (_, text) = samples
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("no sample for {name}"));
            assert!(r.detect(text), "{name} does not detect its sample");
            let (formats, _) = super::super::parse_text(text, "sample.txt");
            assert!(formats.contains(&r.format()), "{name}: {formats:?}");
            assert!(reader(r.format()).is_some());
        }
    }
}
