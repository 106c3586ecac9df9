//! The format-agnostic pass over every line of every pasted file, beside the
//! format readers: GPU identity (AMD marketing names, retail names and chip
//! codenames from the product table [`crate::products`], RADV device names,
//! PCI ids, NVIDIA and Intel product names), the ROCm release and the
//! Vulkan driver a line names. Game-launcher system information, Windows
//! device listings, issue forms and hand-written hardware lists say which
//! GPU a machine has in shapes no reader knows.
//!
//! What the scan finds is weaker evidence than a reader's: each fact goes
//! into `facts.text_scan` with its line, and a GPU it names is added only
//! when no reader of the file saw a GPU, or when the line gives a PCI id
//! (a Windows listing beside an application log). A word counts only on a
//! line that speaks of graphics hardware, so prose and source code raise
//! nothing.

use super::amd;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, ScanFact, Vendor, GPU_GFX, TEXT_SCAN};
use crate::merge;
use crate::products::{self, Product};
use greta_vocab::VkFamily;

/// A line longer than this is not a device listing; only its head is read
/// (keeps a 50 MB paste of one-line JSON linear and cheap).
const MAX_LINE: usize = 2048;

/// What the scan read in one file.
#[derive(Default)]
pub(super) struct Scan {
    gpus: Vec<(Gpu, bool, String)>,
    rocm_version: Option<(String, String)>,
    driver_version: Option<(String, String)>,
    vulkan: Vec<(VkFamily, String)>,
}

/// Words that make a line speak of graphics hardware.
const GPU_WORDS: &[&str] = &[
    "gpu", "graphics", "radeon", "vga", "display", "video", "card",
];
const VENDOR_WORDS: &[&str] = &["amd", "radeon", "ati ", "amdgpu", "[amd"];

/// lspci's classes of a card's functions that are not its GPU.
const OTHER_FUNCTIONS: &[&str] = &[
    "audio device",
    "audio controller",
    "usb controller",
    "serial bus controller",
    "encryption controller",
    "signal processing controller",
];

/// Every word any check of a line looks for (ASCII case ignored): a line
/// with none of them is skipped before it is lower-cased, so a long paste
/// of prose or source code costs one automaton pass per line.
const TRIGGERS: &[&str] = &[
    "gpu",
    "graphics",
    "radeon",
    "vga",
    "display",
    "video",
    "card",
    "amd",
    "ati ",
    "device",
    "1002:",
    "gfx",
    "rocm",
    "radv",
    "geforce",
    "gtx",
    "rtx",
    "quadro",
    "tesla",
    "intel",
    "hip version",
];

fn triggers() -> &'static aho_corasick::AhoCorasick {
    static T: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(TRIGGERS)
            .expect("the scan's trigger words build an automaton")
    })
}

pub(super) fn scan(text: &str, source: &str) -> Scan {
    let mut out = Scan::default();
    let triggers = triggers();
    // A record's member may need its neighbours (a JSON object's `"vendor"`
    // beside its `"name"`): the lines are kept, not only walked.
    let lines: Vec<&str> = lines_of(text).collect();
    for (n, raw) in lines.iter().enumerate() {
        let line = head(raw);
        if line.len() < 3 || !triggers.is_match(line) {
            continue;
        }
        // A link names what its page is about, not this machine's GPU
        // (`.../ROCmLibs-for-gfx1103-AMD780M-APU/wiki/...`).
        let linkless;
        let line = if line.contains("://") {
            linkless = without_links(line);
            linkless.as_str()
        } else {
            line
        };
        let lc = line.to_ascii_lowercase();
        // LLVM's target list (`r600       - AMD GPUs HD2XXX-HD6XXX`,
        // `amdgcn     - AMD GCN GPUs`) names architectures, not this
        // machine's GPU; "AMD GPUs (RX480 and R9 Nano)" in prose does.
        if lc.contains("- amd gpus") || lc.contains("- amd gcn gpus") {
            continue;
        }
        let ev = || format!("{source}:{}: {}", n + 1, line.trim());
        if out.rocm_version.is_none() {
            if let Some(v) = rocm_version(line)
                .or_else(|| hip_release(line, &lc))
                .or_else(|| build_path_release(&lc))
            {
                out.rocm_version = Some((v, ev()));
            }
        }
        let amdgpu = lc.contains("amdgpu");
        if out.driver_version.is_none() && amdgpu {
            if let Some(v) = amdgpu_driver_version(line, &lc) {
                out.driver_version = Some((v, ev()));
            }
        }
        if let Some(k) = vulkan_driver(line, &lc) {
            if !out.vulkan.iter().any(|(x, _)| *x == k) {
                out.vulkan.push((k, ev()));
            }
        }
        // lspci's line of a card's other function names the card's chip
        // ("Audio device [0403]: ... [Rembrandt/Strix] [1002:1640]"), not
        // a GPU of its own.
        if OTHER_FUNCTIONS.iter().any(|w| lc.contains(w)) {
            continue;
        }
        let gpu_word = GPU_WORDS.iter().any(|w| lc.contains(w));
        let vendor_word = VENDOR_WORDS.iter().any(|w| lc.contains(w));
        if gpu_word || vendor_word || ["device", "1002:", "gfx"].iter().any(|w| lc.contains(w)) {
            let mut found = amd_gpus(line, &lc, gpu_word, vendor_word);
            if found.is_empty() {
                found.extend(cpu_named_apu(line).or_else(|| generic_radeon(line, &lc)));
            }
            for (g, strong) in found {
                out.add(g, strong, ev());
            }
        }
        // A record's vendor member (`"vendor": "AMD"`) vouches for the
        // chip its name member gives (`"name": "Raphael"`, a codename
        // that is a product only beside AMD's name).
        if vendor_word && vendor_member(line) {
            for (m, name) in record_names(&lines, n) {
                let nlc = name.to_ascii_lowercase();
                for (g, _) in amd_gpus(name, &nlc, true, true) {
                    let line = head(lines[m]);
                    out.add(g, false, format!("{source}:{}: {}", m + 1, line.trim()));
                }
            }
        }
        // NVIDIA's brand words, before the line is split into words.
        let nvidia = ["geforce", "gtx", "rtx", "quadro", "tesla"]
            .iter()
            .any(|b| lc.contains(b));
        if let Some(g) = nvidia.then(|| nvidia_gpu(line)).flatten() {
            out.add(g, false, ev());
        }
        if lc.contains("intel") {
            let g = if lc.contains("graphics") || lc.contains("iris") {
                intel_gpu(line)
            } else {
                None
            };
            if let Some(g) = g.or_else(|| intel_onboard(line)) {
                out.add(g, false, ev());
            }
        }
    }
    out
}

fn head(s: &str) -> &str {
    if s.len() <= MAX_LINE {
        return s;
    }
    let mut end = MAX_LINE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Scan {
    /// One GPU per product: loose text repeats a GPU under several
    /// spellings (a name, its codename, its PCI id, the series of its
    /// card), so hits of one target, one device id, one name or a series
    /// and a device id of that series are one GPU; one Intel GPU per paste.
    fn add(&mut self, g: Gpu, strong: bool, ev: String) {
        let same = |x: &Gpu| {
            x.vendor == g.vendor
                && (x.vendor == Vendor::Intel
                    || (x.gfx.is_some() && x.gfx == g.gfx && !two_cards(x, &g))
                    || (x.device_id.is_some() && x.device_id == g.device_id)
                    || products::key_of(&x.name) == products::key_of(&g.name)
                    || of_chip(x, &g)
                    || of_chip(&g, x)
                    || in_series(x, &g)
                    || in_series(&g, x))
        };
        match self.gpus.iter_mut().find(|(x, _, _)| same(x)) {
            Some((x, s, _)) => {
                if x.device_id.is_none() || in_series(x, &g) {
                    x.device_id = g.device_id.or(x.device_id);
                }
                // A name the paste printed says more to its reader than
                // the pci.ids name of an id it printed, and any name more
                // than a bare target.
                if id_named(x) && !id_named(&g) && !x.name.contains(&g.name)
                    || target_named(x) && !target_named(&g)
                {
                    x.name = g.name;
                }
                if x.gfx.is_none() {
                    x.gfx = g.gfx;
                }
                *s |= strong;
            }
            None => self.gpus.push((g, strong, ev)),
        }
    }

    /// Folds the scan into the file's facts: GPUs when no reader saw one
    /// (or the line gave a PCI id), the ROCm release and the Vulkan drivers
    /// when no reader stated them; each kept in `text_scan` with its line.
    pub(super) fn apply(self, facts: &mut Facts) {
        // A row no reader could tell apart from any other (no name, id,
        // target or address) says a GPU is there, not which: the paste's
        // own words may name it.
        let readers_saw_gpu = facts.gpus.iter().any(|g| !anonymous(g));
        // A bare target is the weakest word: it names no GPU of its own
        // beside a GPU the scan found by name (an override shows there).
        let named = self
            .gpus
            .iter()
            .any(|(g, _, _)| g.vendor == Vendor::Amd && !target_named(g));
        let vendors: Vec<Vendor> = self.gpus.iter().map(|(g, _, _)| g.vendor).collect();
        let per_vendor = |v: Vendor| vendors.iter().filter(|&&x| x == v).count();
        for (g, strong, ev) in self.gpus {
            if readers_saw_gpu && !strong || named && target_named(&g) {
                continue;
            }
            // An id-bearing line beside a reader's GPU adds only a GPU no
            // reader saw (by device id or target).
            // (The scan's own GPUs were told apart in `add`.)
            let known = facts.gpus.iter().any(|x| {
                !x.seen_by.iter().all(|s| s == TEXT_SCAN)
                    && x.vendor == g.vendor
                    && ((x.device_id.is_some() && x.device_id == g.device_id)
                        || (x.gfx.is_some() && x.gfx == g.gfx))
            });
            if known {
                continue;
            }
            // A nameless row of this vendor takes the one GPU of its vendor
            // the paste names, when it is the only such row; with several
            // rows or several names which is which is unknown, and the rows
            // stay as the reader gave them.
            let rows: Vec<usize> = (0..facts.gpus.len())
                .filter(|&i| facts.gpus[i].vendor == g.vendor && anonymous(&facts.gpus[i]))
                .collect();
            let fact = ScanFact {
                fact: "gpu".into(),
                value: g.label(|| format!("{:?}", g.vendor).to_lowercase()),
                evidence: ev,
            };
            match rows[..] {
                [] => facts.gpus.push(g),
                // More GPUs named than rows: the rows are some of them,
                // which ones is unknown, and the named GPUs are the
                // machine's (a kernel log's faulting card beside a system
                // list naming the card and the processor's iGPU).
                _ if per_vendor(g.vendor) > rows.len()
                    && rows.iter().all(|&i| placeless(&facts.gpus[i])) =>
                {
                    for &i in rows.iter().rev() {
                        facts.gpus.remove(i);
                    }
                    facts.gpus.push(g);
                }
                [i] if per_vendor(g.vendor) == 1 => {
                    // The row's target is then the scan's word, not its
                    // reader's: rules that rest on it must know.
                    if let (None, Some(t)) = (&facts.gpus[i].gfx, &g.gfx) {
                        facts.text_scan.push(ScanFact {
                            fact: GPU_GFX.into(),
                            value: t.clone(),
                            evidence: fact.evidence.clone(),
                        });
                    }
                    merge::merge_into(&mut facts.gpus[i], g)
                }
                _ => continue,
            }
            facts.text_scan.push(fact);
        }
        if facts.rocm.version.is_none() {
            if let Some((v, ev)) = self.rocm_version {
                facts.text_scan.push(ScanFact {
                    fact: "rocm_version".into(),
                    value: v.clone(),
                    evidence: ev,
                });
                facts.rocm.version = Some(v);
            }
        }
        if facts.kernel_driver_version.is_none() {
            if let Some((v, ev)) = self.driver_version {
                facts.text_scan.push(ScanFact {
                    fact: "kernel_driver_version".into(),
                    value: v.clone(),
                    evidence: ev,
                });
                facts.kernel_driver_version = Some(v);
            }
        }
        for (k, ev) in self.vulkan {
            if !facts.vulkan.drivers.contains(&k) {
                facts.text_scan.push(ScanFact {
                    fact: "vulkan_driver".into(),
                    value: format!("{k:?}").to_lowercase(),
                    evidence: ev,
                });
                facts.vulkan.drivers.push(k);
            }
        }
    }
}

/// Whether `series` is named by a series of cards ("AMD Radeon HD 5700
/// Series") that the PCI device id of `card` belongs to (0x68b8, the HD
/// 5770): DirectX and Catalyst print both of one card, on two lines.
fn in_series(series: &Gpu, card: &Gpu) -> bool {
    // The cheap test first: the scan compares every hit with every GPU.
    if card.device_id.is_none() || !series.name.ends_with(" Series") {
        return false;
    }
    let (Some(s), Some(d)) = (products::in_name(&series.name), card.device_id) else {
        return false;
    };
    series.device_id.is_none_or(|x| x == s.device.unwrap_or(x))
        && s.device != Some(d)
        && products::of_device(d).any(|m| products::series_covers(s, m))
}

/// A reader's row that says a GPU is there but not which: no name, device
/// id or target (a kernel log's `amdgpu 0000:28:00.0: ring gfx_0.0.0
/// timeout`, old rocm-smi's `GPU[1] : Temperature: 74.0c`). Its address
/// tells it from another GPU of the same log, not what it is.
fn anonymous(g: &Gpu) -> bool {
    g.device_id.is_none() && g.gfx.is_none() && g.name.is_empty()
}

/// A row no runtime numbered (no KFD node, HIP index or ROCr UUID): what
/// it says of the machine is only that a GPU is there.
fn placeless(g: &Gpu) -> bool {
    g.kfd_node.is_none() && g.hip_index.is_none() && g.rocr_uuid.is_none()
}

/// The name the scan gives a GPU known only by a bare target ("AMD GPU
/// (gfx1151)"): any other name says more.
fn target_named(g: &Gpu) -> bool {
    g.name.starts_with("AMD GPU (")
}

/// Whether two names of one target are two cards: each names its own
/// product of its own PCI device ("RX480 and R9 Nano", both gfx803). A card
/// and its chip's codename (no one device), or two names of one device,
/// stay one GPU.
fn two_cards(a: &Gpu, b: &Gpu) -> bool {
    let (Some(p), Some(q)) = (products::in_name(&a.name), products::in_name(&b.name)) else {
        return false;
    };
    p.key != q.key && p.device.is_some() && q.device.is_some() && p.device != q.device
}

/// Whether `chip` is named by the chip of `card`'s PCI device: inxi's
/// `Device-1: AMD Cedar [...]` and its `chip-ID: 1002:68f9` (pci.ids:
/// "Cedar [Radeon HD 5000/6000/7350/8350 Series]") are one card.
fn of_chip(chip: &Gpu, card: &Gpu) -> bool {
    let Some(d) = card.device_id else {
        return false;
    };
    let Some(named) = products::in_name(&chip.name) else {
        return false;
    };
    amd::pci_name(amd::AMD, d)
        .and_then(products::in_name)
        .is_some_and(|p| p.key == named.key && !p.name.starts_with("AMD "))
}

/// A name the scan took from pci.ids for a printed device id, not from the
/// paste's words.
fn id_named(g: &Gpu) -> bool {
    g.device_id
        .and_then(|d| amd::pci_name(amd::AMD, d))
        .is_some_and(|n| g.name == n || g.name == format!("AMD Radeon Graphics [{n}]"))
}

/// Most products one line may name: a hardware list names a few GPUs
/// ("GPUs: Radeon RX 560X (PCI 0), Radeon Vega 8 (PCI 4)"), a longer run
/// is a support matrix, not a machine.
const MAX_PER_LINE: usize = 3;

/// The AMD GPUs a line names: the first as [`amd_gpu`] reads it, then, on a
/// line that speaks of GPUs, every further product of the table it names
/// ("GPU: 7900xtx, 7800xt"); none when it names more than
/// [`MAX_PER_LINE`].
fn amd_gpus(line: &str, lc: &str, gpu_word: bool, vendor_word: bool) -> Vec<(Gpu, bool)> {
    let Some(first) = amd_gpu(line, lc, gpu_word, vendor_word) else {
        return Vec::new();
    };
    let mut out = vec![first];
    if !gpu_word {
        return out;
    }
    // One product per item of the list: "Picasso/Raven 2 [Radeon Vega
    // Series / ...]" is one chip under two names.
    let ok = |p: &Product| allowed(p, lc, gpu_word, vendor_word);
    let found: Vec<&Product> = line
        .split([',', ';', '&', '+'])
        .flat_map(|item| item.split(" and "))
        .filter_map(|item| own_product(&products::key_word_spans(item), ok).map(|(_, _, p)| p))
        .collect();
    if found.len() > MAX_PER_LINE {
        return out;
    }
    for p in found.into_iter().skip(1) {
        out.push((product_gpu(p), false));
    }
    out
}

/// Names of another vendor's products: an AMD key right after one is that
/// vendor's ("Intel(R) HD Graphics 5500" is no Radeon HD 5500).
const FOREIGN: &[&str] = &["INTEL", "NVIDIA", "GEFORCE", "QUADRO", "MATROX", "ASPEED"];

/// The first product of the table `words` name that is AMD's: a key right
/// after another vendor's name is skipped and the search goes on.
fn own_product(
    words: &[products::KeyWord],
    ok: impl Fn(&Product) -> bool,
) -> Option<(usize, usize, &'static Product)> {
    let keys: Vec<String> = words.iter().map(|w| w.word.clone()).collect();
    let mut from = 0;
    while from < keys.len() {
        let (i, n, p) = products::find_where(&keys[from..], &ok)?;
        let i = from + i;
        if i > 0 && FOREIGN.contains(&keys[i - 1].as_str()) {
            from = i + 1;
            continue;
        }
        return Some((i, n, p));
    }
    None
}

/// A chip's codename followed by its products in brackets, as pci.ids
/// spells a device and lspci, clinfo and inxi print it ("Navi 23 [Radeon RX
/// 6650 XT]", "Rembrandt [Radeon 680M]"): the printed whole is the GPU's
/// name, not the codename alone.
fn printed_chip_name(
    line: &str,
    words: &[products::KeyWord],
    (i, n, p): (usize, usize, &Product),
) -> Option<String> {
    if p.name.starts_with("AMD ") || p.name.starts_with("ATI ") {
        return None;
    }
    let end = words[i + n - 1].end;
    let rest = &line[end..];
    let t = rest.trim_start();
    let close = t.strip_prefix('[')?.find(']')? + 1;
    let stop = end + (rest.len() - t.len()) + close + 1;
    Some(line[words[i].start..stop].trim().to_string())
}

/// A product of the table's row alone.
fn product_gpu(p: &Product) -> Gpu {
    Gpu {
        vendor: Vendor::Amd,
        vendor_id: Some(amd::AMD),
        integrated: p
            .gfx
            .as_deref()
            .filter(|g| amd::is_apu_target(g))
            .map(|_| true),
        name: p.name.clone(),
        device_id: p.device,
        gfx: p.gfx.clone(),
        seen_by: vec![TEXT_SCAN.into()],
        ..Default::default()
    }
}

/// An AMD GPU a line names: a product of the table, a RADV device name, or
/// an AMD PCI device id (`1002:731f`, `(0x744C)` beside AMD's name); the
/// flag says the line gave its PCI id.
fn amd_gpu(line: &str, lc: &str, gpu_word: bool, vendor_word: bool) -> Option<(Gpu, bool)> {
    let device = pci_device(lc, vendor_word);
    let radv = line.find("(RADV ").map(|p| {
        let name = line[..p].rsplit(':').next().unwrap_or("").trim();
        (name.to_string(), amd::gfx_from_radv_name(&line[p..]))
    });
    let words = products::key_word_spans(line);
    let hit = own_product(&words, |p| allowed(p, lc, gpu_word, vendor_word));
    let product = hit.map(|(_, _, p)| p);
    let token = amd::find_gfx(line)
        .filter(|_| (names_a_device(lc) || lone_target(line, lc)) && !build_targets(lc));
    if device.is_none() && radv.is_none() && product.is_none() && token.is_none() {
        return None;
    }
    let id_name = device.and_then(|d| amd::pci_name(amd::AMD, d)).map(|n| {
        if n.contains('[') {
            n.to_string()
        } else {
            format!("AMD Radeon Graphics [{n}]")
        }
    });
    let name = hit
        .and_then(|h| printed_chip_name(line, &words, h))
        .or_else(|| product.map(|p| p.name.clone()))
        .or_else(|| {
            radv.as_ref()
                .map(|(n, _)| n.clone())
                .filter(|n| !n.is_empty())
        })
        .or(id_name)
        .or_else(|| token.as_ref().map(|t| format!("AMD GPU ({t})")))?;
    let gfx = radv
        .and_then(|(_, g)| g)
        .or_else(|| token.clone())
        .or_else(|| product.and_then(|p| p.gfx.clone()))
        .or_else(|| device.and_then(amd::gfx_from_device_id));
    let device_id = device.or_else(|| product.and_then(|p| p.device));
    Some((
        Gpu {
            vendor: Vendor::Amd,
            vendor_id: Some(amd::AMD),
            integrated: gfx
                .as_deref()
                .filter(|g| amd::is_apu_target(g))
                .map(|_| true),
            name,
            device_id,
            gfx,
            seen_by: vec![TEXT_SCAN.into()],
            ..Default::default()
        },
        device.is_some(),
    ))
}

/// Whether a product's words stand where they name one: a key that begins
/// with a digit beside a word of graphics hardware, a codename of letters
/// only beside the vendor's name.
fn allowed(p: &Product, lc: &str, gpu_word: bool, vendor_word: bool) -> bool {
    if p.needs_vendor_word() {
        return vendor_word;
    }
    if p.needs_gpu_word() {
        return gpu_word || lc.contains("gpu");
    }
    gpu_word || vendor_word || lc.contains("device")
}

/// A bare `gfxNNNN` names a GPU on a line that says what it is (`Name:`,
/// `GPU arch : gfx1151`, an issue table's `GPU | ... (gfx1151, ...)`).
fn names_a_device(lc: &str) -> bool {
    ["gpu", "name", "arch", "device", "agent", "target", "card"]
        .iter()
        .any(|w| lc.contains(w))
}

/// A line that describes the machine (its OS, kernel or ROCm) with one
/// target in it names that target's GPU: "Lemonade 10.4.0, Ubuntu 26.04,
/// Linux 7.0.0-15, gfx1151". A build's target list names several, an
/// assignment (`AMDGPU_TARGETS=gfx1100`) chooses one.
fn lone_target(line: &str, lc: &str) -> bool {
    lc.matches("gfx").count() == 1
        && !line.contains('=')
        && !lc.contains("support")
        && [
            "linux", "ubuntu", "debian", "fedora", "windows", "kernel", "rocm",
        ]
        .iter()
        .any(|w| lc.contains(w))
}

/// A line whose gfx target is a build's list, not a GPU of this machine:
/// an assignment to a key of targets or architectures
/// (`AMDGPU_TARGETS=gfx1100`, `make GPU_TARGETS=gfx1201`,
/// `PYTORCH_ROCM_ARCH="gfx1030;gfx1100"`) or a compiler's target flag
/// (`--offload-arch=gfx90a`, `--offload-arch gfx942`).
fn build_targets(lc: &str) -> bool {
    let Some(p) = lc.find("gfx") else {
        return false;
    };
    let word_start = past_last(&lc[..p], char::is_whitespace);
    let word = &lc[word_start..p];
    if let Some((key, _)) = word.split_once(['=', ':']) {
        if key.contains("target") || key.contains("arch") {
            return true;
        }
    }
    let before = lc[..word_start].trim_end();
    let flag = before.rsplit(char::is_whitespace).next().unwrap_or("");
    flag.contains("offload-arch") || flag.contains("amdgpu-target") || flag == "-mcpu"
}

/// Where the text after the last character of `s` that `is` matches
/// begins (0: none matches): past that character's every byte, since it
/// may take several (U+FFFD of a mangled paste, a no-break space U+00A0),
/// where one byte past its first would cut it.
fn past_last(s: &str, is: impl Fn(char) -> bool) -> usize {
    s.char_indices()
        .rev()
        .find(|&(_, c)| is(c))
        .map_or(0, |(i, c)| i + c.len_utf8())
}

/// `line` without its links (`http://...`, `https://...`, up to the next
/// space, quote or closing bracket).
fn without_links(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(p) = rest.find("://") {
        // The scheme's letters, back to the character before them.
        let start = past_last(&rest[..p], |c| !c.is_ascii_alphabetic());
        let end = rest[p..]
            .find(|c: char| c.is_whitespace() || "\"'<>)]".contains(c))
            .map_or(rest.len(), |e| p + e);
        out.push_str(&rest[..start]);
        out.push(' ');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A member of a record: `"key": value` (JSON), `key: value`, `key =
/// value`, `Key=Value` (a list item's `- ` or `* ` dropped). The key is
/// short and of words; the value has its quotes and trailing comma
/// dropped.
fn member(line: &str) -> Option<(String, &str)> {
    let t = line
        .trim()
        .trim_start_matches(['-', '*', '>', ' ', '`'])
        .trim_start();
    let (key, value) = if let Some(r) = t.strip_prefix('"') {
        let (k, v) = r.split_once('"')?;
        (k, v.trim_start().strip_prefix(':')?)
    } else {
        let p = t.find([':', '='])?;
        (&t[..p], &t[p + 1..])
    };
    let key = key.trim();
    if key.is_empty()
        || key.len() > 40
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " _-.#()".contains(c))
    {
        return None;
    }
    let value = value
        .trim()
        .trim_end_matches(',')
        .trim_matches(['"', '\'', '`'])
        .trim();
    Some((key.to_ascii_lowercase(), value))
}

/// A record's member naming its vendor as AMD (`"vendor": "AMD"`, `Card
/// vendor: Advanced Micro Devices, Inc.`, WMI's `AdapterCompatibility`).
fn vendor_member(line: &str) -> bool {
    const KEYS: &[&str] = &[
        "vendor",
        "vendor name",
        "vendorname",
        "card vendor",
        "gpu vendor",
        "device vendor",
        "manufacturer",
        "adaptercompatibility",
    ];
    member(line).is_some_and(|(k, v)| {
        let v = v.to_ascii_lowercase();
        KEYS.contains(&k.as_str())
            && (v == "amd" || v.starts_with("amd ") || v.contains("advanced micro devices"))
    })
}

/// The name members of the record around line `at` (its lines up to a
/// blank line or a brace, at most 8 either way): (line, value).
fn record_names<'a>(lines: &[&'a str], at: usize) -> Vec<(usize, &'a str)> {
    const KEYS: &[&str] = &[
        "name",
        "device name",
        "devicename",
        "product",
        "product name",
        "model",
        "card name",
        "marketing name",
        "board name",
    ];
    let mut out = Vec::new();
    let mut look = |m: usize| -> bool {
        let l = lines[m];
        let t = l.trim();
        if t.is_empty() {
            return false;
        }
        if let Some((k, v)) = member(l) {
            if KEYS.contains(&k.as_str()) && !v.is_empty() {
                out.push((m, v));
            }
        }
        !(t.contains('{') || t.contains('}'))
    };
    for m in (at.saturating_sub(8)..at).rev() {
        if !look(m) {
            break;
        }
    }
    for m in at + 1..lines.len().min(at + 9) {
        if !look(m) {
            break;
        }
    }
    out
}

/// A GPU line that names an APU by its processor, the way KDE's system
/// information and fetch tools do (`Graphics Processor 2: AMD Ryzen 5 9600X
/// 6-Core Processor`, `GPU: AMD Ryzen 7 5700G with Radeon Graphics`): the
/// processor's integrated GPU, its model unknown. A processor on any other
/// key (`CPU:`, `Model:`) is no GPU.
fn cpu_named_apu(line: &str) -> Option<(Gpu, bool)> {
    let on_gpu_key = member(line).and_then(|(key, value)| {
        let key = key.trim_end_matches(|c: char| c.is_ascii_digit() || c == ' ' || c == '#');
        [
            "gpu",
            "igpu",
            "graphics",
            "graphics processor",
            "video card",
            "display adapter",
        ]
        .contains(&key)
        .then_some(value)
    });
    let name = match on_gpu_key {
        Some(value) => {
            let cpu = value.strip_prefix("AMD ").unwrap_or(value);
            (cpu.starts_with("Ryzen ") && cpu.contains(|c: char| c.is_ascii_digit()))
                .then(|| value.to_string())?
        }
        // "an AMD APU (Ryzen 4700g)", "my Ryzen 5 5600G APU": the word APU
        // beside a processor model.
        None => apu_processor(line)?,
    };
    Some((
        Gpu {
            vendor: Vendor::Amd,
            vendor_id: Some(amd::AMD),
            integrated: Some(true),
            name,
            seen_by: vec![TEXT_SCAN.into()],
            ..Default::default()
        },
        false,
    ))
}

/// The processor of a line that calls it an APU: "APU" as a word, and a
/// "Ryzen" model (a word with a digit within the next two) on the line;
/// "AMD APUs" in general name none.
fn apu_processor(line: &str) -> Option<String> {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || "(),;:[]".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    if !words.contains(&"APU") {
        return None;
    }
    let r = words.iter().position(|w| w.eq_ignore_ascii_case("ryzen"))?;
    // "Ryzen 4700g", "Ryzen 7 7840U": the model runs to the last word
    // with a digit of the next two.
    let model = words[r + 1..]
        .iter()
        .take(2)
        .rposition(|w| w.contains(|c: char| c.is_ascii_digit()))?;
    Some(format!("AMD {}", words[r..=r + 1 + model].join(" ")))
}

/// amdgpu.ids' generic name ("AMD Radeon Graphics", many APUs' and new
/// cards' name) printed as a device's name: quoted by the tool that printed
/// it (KoboldCpp's `[('AMD Radeon Graphics', '16304')]`) or a name or GPU
/// member's whole value. An AMD GPU, its model unknown; a processor's name
/// "... with Radeon Graphics" names none.
fn generic_radeon(line: &str, lc: &str) -> Option<(Gpu, bool)> {
    const NAMES: &[&str] = &["amd radeon graphics", "amd radeon(tm) graphics"];
    let quoted = NAMES.iter().any(|n| {
        lc.match_indices(n)
            .any(|(p, _)| p > 0 && matches!(lc.as_bytes()[p - 1], b'\'' | b'"'))
    });
    let valued = member(line).is_some_and(|(k, v)| {
        [
            "name",
            "device name",
            "gpu",
            "marketing name",
            "card name",
            "product",
        ]
        .contains(&k.as_str())
            && NAMES.contains(&v.to_ascii_lowercase().as_str())
    });
    (quoted || valued).then(|| {
        (
            Gpu {
                vendor: Vendor::Amd,
                vendor_id: Some(amd::AMD),
                name: "AMD Radeon Graphics".into(),
                seen_by: vec![TEXT_SCAN.into()],
                ..Default::default()
            },
            false,
        )
    })
}

/// `1002:731f`, or a hex id in parentheses beside AMD's name
/// (`AMD Radeon Graphics Processor (0x744C)`), when pci.ids calls that
/// device a GPU (not its audio or USB function).
fn pci_device(lc: &str, vendor_word: bool) -> Option<u16> {
    let hex4 = |s: &str| {
        let h: String = s.chars().take(4).collect();
        (h.len() == 4
            && h.bytes().all(|b| b.is_ascii_hexdigit())
            && !s[4..].starts_with(|c: char| c.is_ascii_hexdigit()))
        .then(|| u16::from_str_radix(&h, 16).ok())
        .flatten()
    };
    // Also KFD's and the modesetting line's `0x1002:0x164e`.
    let mut found = lc.match_indices("1002:").find_map(|(i, _)| {
        let rest = &lc[i + 5..];
        hex4(rest.strip_prefix("0x").unwrap_or(rest))
    });
    if found.is_none() && vendor_word {
        found = lc
            .match_indices("(0x")
            .find_map(|(i, _)| hex4(&lc[i + 3..]));
    }
    found.filter(|&d| {
        amd::pci_name(amd::AMD, d).is_some_and(|n| {
            let n = n.to_ascii_lowercase();
            ![
                "audio",
                "hdmi",
                "usb",
                "bridge",
                "controller",
                "psp",
                "ccp",
                "iommu",
            ]
            .iter()
            .any(|w| n.contains(w))
        })
    })
}

/// An NVIDIA product line (`NVIDIA GeForce RTX 4060 Laptop GPU`,
/// `GPU - GTX 1080ti`): a brand word followed by a model with a digit.
fn nvidia_gpu(line: &str) -> Option<Gpu> {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || ",;|()[]=\"<>".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    let i = words.iter().position(|w| {
        ["geforce", "gtx", "rtx", "quadro", "tesla"]
            .iter()
            .any(|b| w.eq_ignore_ascii_case(b))
    })?;
    let model = words.get(i + 1)?;
    if !model.chars().any(|c| c.is_ascii_digit()) {
        // "GeForce RTX 4060": the model is one further on.
        let next = words.get(i + 2)?;
        if !(next.chars().any(|c| c.is_ascii_digit())
            && ["rtx", "gtx"].iter().any(|b| model.eq_ignore_ascii_case(b)))
        {
            return None;
        }
    }
    let end = (i + 4).min(words.len());
    let mut name: Vec<&str> = words[i..end]
        .iter()
        .copied()
        .take_while(|w| !w.starts_with('(') && !w.contains(':'))
        .collect();
    if name.len() > 2 && !name[2].chars().any(|c| c.is_ascii_digit()) && name[2] != "Ti" {
        name.truncate(if name[1].chars().any(|c| c.is_ascii_digit()) {
            2
        } else {
            3
        });
    }
    let name = name.join(" ");
    Some(Gpu {
        vendor: Vendor::Nvidia,
        vendor_id: Vendor::Nvidia.pci_id(),
        name: if name.to_ascii_lowercase().starts_with("nvidia") {
            name
        } else {
            format!("NVIDIA {name}")
        },
        seen_by: vec![TEXT_SCAN.into()],
        ..Default::default()
    })
}

/// An Intel GPU: from `Intel` to `Graphics` and its model number
/// (`Intel(R) UHD Graphics 770`, `Intel(R) Iris(R) Xe Graphics`).
fn intel_gpu(line: &str) -> Option<Gpu> {
    let lc = line.to_ascii_lowercase();
    let start = lc.find("intel")?;
    let rel = lc[start..].find("graphics")?;
    let mut end = start + rel + "graphics".len();
    let tail = &line[end..];
    let num: String = tail
        .trim_start()
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    if num.chars().any(|c| c.is_ascii_digit()) {
        end += tail.len() - tail.trim_start().len() + num.len();
    }
    let name = line[start..end].trim();
    if name.len() > 60 || name.to_ascii_lowercase().contains("core") {
        return None;
    }
    Some(Gpu {
        vendor: Vendor::Intel,
        vendor_id: Vendor::Intel.pci_id(),
        name: name.to_string(),
        seen_by: vec![TEXT_SCAN.into()],
        ..Default::default()
    })
}

/// An Intel GPU people name by where it sits, not by its model: "intel
/// on-board card", "Intel onboard GPU", "intel integrated video", "Intel
/// iGPU". The word after the place must be a graphics word: "Intel onboard
/// LAN card" or "Intel integrated sound" names no GPU.
fn intel_onboard(line: &str) -> Option<Gpu> {
    const PLACE: &[&str] = &["on-board", "onboard", "integrated", "built-in", "internal"];
    const KIND: &[&str] = &["card", "gpu", "graphics", "video", "vga", "display"];
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || ",;:|()[]\"".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    let is = |w: &str, set: &[&str]| set.iter().any(|s| w.eq_ignore_ascii_case(s));
    let i = words
        .iter()
        .position(|w| w.eq_ignore_ascii_case("intel") || w.eq_ignore_ascii_case("intel(r)"))?;
    match (words.get(i + 1), words.get(i + 2)) {
        (Some(w), _) if w.eq_ignore_ascii_case("igpu") => {}
        (Some(p), Some(k)) if is(p, PLACE) && is(k, KIND) => {}
        _ => return None,
    }
    // Where it sits says it is the processor's GPU, not which one: the
    // paste's words ("intel on-board card") are no model name.
    Some(Gpu {
        vendor: Vendor::Intel,
        vendor_id: Vendor::Intel.pci_id(),
        name: "Intel integrated GPU".into(),
        integrated: Some(true),
        seen_by: vec![TEXT_SCAN.into()],
        ..Default::default()
    })
}

/// `ROCm 7.14`, `ROCm Version: 6.1.0`, `| ROCm | 7.1.1 (HIP ...) |`: the
/// word ROCm (as AMD writes it, not a wheel's `+rocm6.2`) and a release.
fn rocm_version(line: &str) -> Option<String> {
    let p = line.find("ROCm")?;
    if line[..p].ends_with(['+', '/', '-', '_', '.']) {
        return None;
    }
    let rest = &line[p + 4..];
    let rest = rest
        .trim_start_matches([' ', ':', '|', '\t', '='])
        .trim_start_matches("Version")
        .trim_start_matches("version")
        .trim_start_matches([' ', ':', '|', '\t', '='])
        .trim_start_matches(['v', 'V']);
    let v: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let v = v.trim_end_matches('.');
    let parts: Vec<&str> = v.split('.').collect();
    let ok = (2..=3).contains(&parts.len())
        && parts.iter().all(|x| !x.is_empty() && x.len() <= 3)
        && parts[0].parse::<u32>().is_ok_and(|m| (1..=20).contains(&m));
    ok.then(|| v.to_string())
}

/// The ROCm release of a HIP version a script prints beside its name
/// (`ROCM HIP version: 6.1.40093-f61212abc`, `HIP version: 5.7.31921`): a
/// HIP build number (major.minor.build) is its ROCm release's.
fn hip_release(line: &str, lc: &str) -> Option<String> {
    let p = lc.find("hip version")? + "hip version".len();
    let rest = line[p..].trim_start_matches([' ', ':', '\t', '=']);
    let v: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let parts: Vec<&str> = v.split('.').collect();
    let build = parts.len() == 3 && parts[2].len() >= 4 && parts.iter().all(|x| !x.is_empty());
    build.then(|| amd::rocm_release(&v))
}

/// The release in the path of AMD's release builds, which rocminfo and HIP
/// print in their errors (`/data/jenkins_workspace/compute-rocm-rel-2.9/...`).
fn build_path_release(lc: &str) -> Option<String> {
    let p = lc.find("compute-rocm-rel-")? + "compute-rocm-rel-".len();
    let v: String = lc[p..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let v = v.trim_end_matches('.');
    let parts: Vec<&str> = v.split('.').collect();
    ((2..=3).contains(&parts.len()) && parts.iter().all(|x| !x.is_empty() && x.len() <= 2))
        .then(|| v.to_string())
}

/// The amdgpu kernel driver's version an environment table or form states
/// beside its name: `| amdgpu driver | 6.16.6 (DKMS, ...) |`, `| amdgpu-dkms
/// | 1:6.8.5.60202-2041575.22.04 |` (the package version: epoch, release,
/// build), `amdgpu-dkms: 6.16.6-2255209.24.04`. A requirement (`>= 6.7.0`)
/// is no installed version.
fn amdgpu_driver_version(line: &str, lc: &str) -> Option<String> {
    let key = [
        "amdgpu-dkms",
        "amdgpu dkms",
        "amdgpu driver version",
        "amdgpu driver",
    ]
    .iter()
    .find_map(|k| lc.find(k).map(|p| p + k.len()))?;
    let rest = line[key..]
        .trim_start_matches([' ', '\t', '|', ':', '=', '`'])
        .trim_start_matches("version")
        .trim_start_matches([' ', '\t', '|', ':', '=', '`']);
    let rest = match rest.split_once(':') {
        Some((epoch, r)) if !epoch.is_empty() && epoch.bytes().all(|b| b.is_ascii_digit()) => r,
        _ => rest,
    };
    let v: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let parts: Vec<&str> = v.split('.').filter(|p| !p.is_empty()).take(3).collect();
    let ok = parts.len() >= 2
        && parts.iter().all(|p| p.len() <= 3)
        && parts[0].parse::<u32>().is_ok_and(|m| (1..=20).contains(&m));
    ok.then(|| parts.join("."))
}

/// The Vulkan driver a line names: RADV (`(RADV NAVI22)`, `radv 26.1.1`),
/// AMDVLK (`AMD open source driver`, its driverName), or vulkaninfo's own
/// fields quoted outside its output (`driverID = DRIVER_ID_MESA_RADV`,
/// `driverName = radv`), read as the vulkaninfo reader reads them.
fn vulkan_driver(line: &str, lc: &str) -> Option<VkFamily> {
    if lc.contains("driverid") || lc.contains("drivername") {
        let field = member(line).filter(|(k, _)| k == "driverid" || k == "drivername");
        if let Some((_, v)) = field {
            let k = super::vulkaninfo::kind_from_driver_id(v);
            if k != VkFamily::Other {
                return Some(k);
            }
        }
    }
    if lc.contains("(radv ")
        || lc.contains("radv 2")
        || lc.contains(": radv")
        || lc.contains("amd radv ")
    {
        return Some(VkFamily::Radv);
    }
    if lc.contains("amd open source driver") || lc.contains("amd open-source driver") {
        return Some(VkFamily::Amdvlk);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus(text: &str) -> Vec<(String, Option<String>)> {
        let mut f = Facts::default();
        scan(text, "t").apply(&mut f);
        f.gpus.into_iter().map(|g| (g.name, g.gfx)).collect()
    }

    #[test]
    fn a_gpu_name_alone_in_an_unknown_format_gives_the_gpu_and_its_target() {
        let g = gpus("Vulkan Drivers:  AMD Radeon RX 7800 XT (RADV NAVI32) (1.3.246)\n");
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].1.as_deref(), Some("gfx1101"));
        let g = gpus("GPU: Radeon Pro W7900\n");
        assert_eq!(
            g,
            vec![("AMD Radeon Pro W7900".into(), Some("gfx1100".into()))]
        );
        let g = gpus("iGPU: 680m\n");
        assert_eq!(g[0].1.as_deref(), Some("gfx1035"), "{g:?}");
    }

    /// Steam's 2012 system information names the card by its Catalyst
    /// series name only.
    #[test]
    fn a_series_name_is_a_gpu() {
        let g =
            gpus("Video Card:\n    Driver:  ATI Technologies Inc. ATI Radeon HD 5700 Series \n");
        assert_eq!(g, vec![("AMD Radeon HD 5700 Series".into(), None)]);
    }

    /// A browser's GPU page of a Windows machine (brave/browser-laptop
    /// #2579): DirectX's chip type carries the PCI id (0x68B8, pci.ids'
    /// "Juniper XT [Radeon HD 5770]"), its description the card's series.
    /// One card; the name is the one the paste printed.
    #[test]
    fn a_series_name_and_a_device_id_of_that_series_are_one_gpu() {
        let t = "> szChipType\tAMD Radeon Graphics Processor (0x68B8)\n\
                 > szDescription\tAMD Radeon HD 5700 Series\n\
                 > szDeviceId\t0x68B8\n";
        let mut f = Facts::default();
        scan(t, "t").apply(&mut f);
        assert_eq!(f.gpus.len(), 1, "{:?}", f.gpus);
        assert_eq!(f.gpus[0].name, "AMD Radeon HD 5700 Series");
        assert_eq!(f.gpus[0].device_id, Some(0x68b8));
        // Either order of the two lines.
        let t = "Card name: AMD Radeon HD 5700 Series\n\
                 Chip type: AMD Radeon Graphics Processor (0x68B8)\n";
        assert_eq!(gpus(t).len(), 1, "{:?}", gpus(t));
        // A card of another series stays a GPU of its own: an HD 6870
        // (0x6738) beside an HD 5700 Series.
        let t = "Card name: AMD Radeon HD 5700 Series\n\
                 Chip type: AMD Radeon Graphics Processor (0x6738)\n";
        assert_eq!(gpus(t).len(), 2, "{:?}", gpus(t));
    }

    /// ROC-smi#26: the prose names the cards, old rocm-smi lists a row
    /// per DRM card with no name (`GPU[1] : Temperature: 74.0c`; the Intel
    /// card's `GPU[0]` row carries no key). The one AMD row is the one AMD
    /// card the paste names; the Intel card is a GPU of its own.
    #[test]
    fn the_one_nameless_row_takes_the_one_name_of_its_vendor() {
        let t = "hi i have, intel on-board card and radeon r9 390x, i get command: \n\
                 GPU[0] \t\t: Unable to display temperature\n\
                 GPU[1] \t\t: Temperature: 74.0c\n";
        let mut f = super::super::rocmsmi::parse(t);
        assert_eq!(f.gpus.len(), 1, "{:?}", f.gpus);
        scan(t, "t").apply(&mut f);
        let mut got: Vec<(Vendor, String, Option<String>)> = f
            .gpus
            .iter()
            .map(|g| (g.vendor, g.name.clone(), g.gfx.clone()))
            .collect();
        got.sort_by_key(|g| g.1.clone());
        assert_eq!(
            got,
            [
                (Vendor::Amd, "AMD Radeon 390X".into(), Some("gfx701".into())),
                (Vendor::Intel, "Intel integrated GPU".into(), None),
            ]
        );
        assert!(
            f.gpus[0].seen_by.iter().any(|s| s == "rocm-smi"),
            "{:?}",
            f.gpus
        );
        // Two nameless rows and one name: which row it names is unknown.
        let t2 = "my radeon r9 390x card\n\
                  GPU[0] \t\t: Temperature: 40.0c\n\
                  GPU[1] \t\t: Temperature: 74.0c\n";
        let mut f = super::super::rocmsmi::parse(t2);
        scan(t2, "t").apply(&mut f);
        assert_eq!(f.gpus.len(), 2, "{:?}", f.gpus);
        assert!(f.gpus.iter().all(|g| g.name.is_empty()), "{:?}", f.gpus);
    }

    #[test]
    fn intel_named_by_where_it_sits() {
        let names = |t: &str| -> Vec<String> {
            let mut f = Facts::default();
            scan(t, "t").apply(&mut f);
            f.gpus.into_iter().map(|g| g.name).collect()
        };
        // Where it sits is no model: the GPU is named for what is known.
        assert_eq!(
            names("hi i have, intel on-board card and a GPU\n"),
            ["Intel integrated GPU"]
        );
        assert_eq!(
            names("Display: Intel iGPU (disabled in BIOS)\n"),
            ["Intel integrated GPU"]
        );
        for t in [
            "NIC: Intel onboard LAN card\n",
            "Intel integrated sound card works\n",
            "CPU: Intel Core i7 with a radeon card\n",
        ] {
            assert!(
                !names(t)
                    .iter()
                    .any(|n| n.to_lowercase().starts_with("intel")),
                "{t}"
            );
        }
    }

    #[test]
    fn one_gpu_under_several_spellings_is_one() {
        let t = "Graphics Adapter = AMD Radeon RX 7800 XT\n\
                 Adapter Type = AMD Radeon Graphics Processor (0x747E)\n\
                 Description = AMD Radeon RX 7800 XT\n";
        assert_eq!(gpus(t).len(), 1);
    }

    #[test]
    fn prose_and_cpu_names_are_no_gpu() {
        for t in [
            "Model: AMD Ryzen 5 5600G with Radeon Graphics\n",
            "The painter Raphael used 780 colours.\n",
            "We shipped 580 units in 2023, revision 6700.\n",
            "let device = 7900; // the RX field\n",
        ] {
            assert!(gpus(t).is_empty(), "{t}: {:?}", gpus(t));
        }
    }

    /// Environment tables of issues and notes: legacy-rocm-build#6626, and
    /// two other real tables (an ollama setup note, a multi-GPU host's
    /// baseline) spelling the package version.
    #[test]
    fn the_amdgpu_driver_version_of_an_environment_table() {
        let v = |l: &str| amdgpu_driver_version(l, &l.to_ascii_lowercase());
        assert_eq!(
            v("| amdgpu driver | 6.16.6 (DKMS, out-of-tree ROCm module) |").as_deref(),
            Some("6.16.6")
        );
        assert_eq!(
            v("| amdgpu-dkms | 6.16.6-2255209.24.04 |").as_deref(),
            Some("6.16.6")
        );
        assert_eq!(
            v("| amdgpu-dkms | 1:6.8.5.60202-2041575.22.04 |").as_deref(),
            Some("6.8.5")
        );
        assert_eq!(
            v("| amdgpu-dkms | `1:6.16.6.30200000-2238411.24.04` (driver release 30.20.0) |")
                .as_deref(),
            Some("6.16.6")
        );
        // A requirement, prose without a version: none.
        assert_eq!(v("| AMDGPU-DKMS | >= 6.7.0 | Follow steps below. |"), None);
        assert_eq!(v("the amdgpu driver crashed again"), None);
    }

    /// Real lines: a benchmark script (rocm_sdk_builder#185), rocminfo's
    /// error under ROCm 2.9 (legacy-rocm-build#930), two GPUs glued on one
    /// form line (legacy-rocm-build#4382), a hardware list line
    /// (legacy-rocm-build#669), a job log line (vllm-rocm#5).
    #[test]
    fn releases_and_several_gpus_wherever_they_stand() {
        let v = |l: &str| hip_release(l, &l.to_ascii_lowercase());
        assert_eq!(
            v("ROCM HIP version: 6.1.40093-f61212abc").as_deref(),
            Some("6.1")
        );
        assert_eq!(v("HIP version 6.2"), None, "no build number: no release");
        assert_eq!(
            build_path_release("hsa api call failure at: /data/jenkins_workspace/compute-rocm-rel-2.9/rocminfo/rocminfo.cc:1102")
                .as_deref(),
            Some("2.9")
        );
        let g = gpus("GPU: 7900xtx, 7800xt\n");
        let mut t: Vec<&str> = g.iter().map(|(_, t)| t.as_deref().unwrap_or("")).collect();
        t.sort();
        assert_eq!(t, ["gfx1100", "gfx1101"], "{g:?}");
        assert_eq!(
            gpus("- GPUs  : Radeon RX 560X (PCI 0), Radeon Vega 8 (PCI 4)\n").len(),
            2
        );
        // A support list is no machine.
        assert!(
            gpus("Supported GPUs: RX 7900 XTX, RX 7900 XT, RX 7800 XT, RX 7700 XT, W7900\n").len()
                <= 1
        );
        assert_eq!(
            gpus("Lemonade 10.4.0, Ubuntu 26.04, Linux 7.0.0-15, gfx1151... Freshly rebooted\n"),
            vec![("AMD GPU (gfx1151)".into(), Some("gfx1151".into()))]
        );
        // A build's target list names no GPU of this machine.
        assert!(gpus("Built for gfx900, gfx906 on Ubuntu 22.04\n").is_empty());
        // One chip under two names is one GPU.
        assert_eq!(
            gpus("GPU: AMD Picasso/Raven 2 [Radeon Vega Series / Radeon Vega Mobile Series]\n")
                .len(),
            1
        );
    }

    #[test]
    fn versions_and_drivers() {
        assert_eq!(rocm_version("ROCm 7.14"), Some("7.14".into()));
        assert_eq!(
            rocm_version("| ROCm | 7.1.1 (HIP 7.1.52802) |"),
            Some("7.1.1".into())
        );
        assert_eq!(rocm_version("torch 2.5.1+rocm6.2"), None);
        assert_eq!(rocm_version("ROCm is great"), None);
        let d = |l: &str| vulkan_driver(l, &l.to_ascii_lowercase());
        assert_eq!(d("driver : radv 24.3.1"), Some(VkFamily::Radv));
    }

    fn named(text: &str) -> Vec<(Vendor, String, Option<String>)> {
        let mut f = Facts::default();
        scan(text, "t").apply(&mut f);
        f.gpus
            .into_iter()
            .map(|g| (g.vendor, g.name, g.gfx))
            .collect()
    }

    /// A link's words name its page, not the machine
    /// (ROCmLibs-for-gfx1103-AMD780M-APU#11: a gfx1031 card, the guide's
    /// URL naming gfx1103).
    #[test]
    fn a_link_names_no_gpu() {
        let t = "Tried following the wiki\nhttps://github.com/likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU/wiki/Unlock-LM-Studio-on-Any-AMD-GPU-with-ROCm-Guide#using-amd-graphics-cards-with-lm-studio\n\nCopied the files, restarted LMS. The GPU (gfx1031) is still showing up as unsupported\n";
        assert_eq!(
            named(t),
            [(
                Vendor::Amd,
                "AMD GPU (gfx1031)".into(),
                Some("gfx1031".into())
            )]
        );
        assert_eq!(
            without_links("see <https://x.org/a_gfx90a> now"),
            "see < > now"
        );
    }

    /// A link right after a character of several bytes (U+FFFD where a
    /// paste lost a byte): the link's start is found on a character
    /// boundary, not one byte after the character's first.
    #[test]
    fn a_link_after_a_multibyte_character_is_cut_on_its_boundary() {
        assert_eq!(
            without_links("in\u{fffd}https://docs.nvidia.com/x.html for more"),
            "in\u{fffd}  for more"
        );
        assert_eq!(without_links("é://x y"), "é  y");
        assert_eq!(without_links("日本https://x"), "日本 ");
        // A build's target after a no-break or ideographic space.
        assert!(build_targets("make\u{a0}gpu_targets=gfx1100"));
        assert!(build_targets("--offload-arch\u{3000}gfx90a"));
        assert!(!build_targets("card:\u{a0}gfx1100"));
    }

    /// LLVM's target list names architectures; "AMD GPUs" in a sentence
    /// that names two cards of one target is two GPUs (fangq/mcxcl#23).
    #[test]
    fn two_cards_of_one_target_are_two_gpus() {
        assert!(
            named("    r600       - AMD GPUs HD2XXX-HD6XXX\n    amdgcn     - AMD GCN GPUs\n")
                .is_empty()
        );
        let g = named("on my 16.04 box with AMD GPUs (RX480 and R9 Nano), mcxcl does work well\n");
        assert_eq!(g.len(), 2, "{g:?}");
        assert!(
            g.iter().all(|(_, _, t)| t.as_deref() == Some("gfx803")),
            "{g:?}"
        );
        // A card and its chip's codename stay one GPU.
        assert_eq!(
            named("GPU: AMD Radeon RX 7800 XT (Navi 32)\nchip: Navi 32\n").len(),
            1
        );
    }

    /// WMI's `Caption=Intel(R) HD Graphics 5500` (zhimingshenjun/DD_Monitor#44)
    /// is Intel's GPU, not AMD's HD 5500 Series.
    #[test]
    fn another_vendors_product_is_not_amds() {
        let g =
            named("AdapterCompatibility=Intel Corporation\nCaption=Intel(R) HD Graphics 5500\n");
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].0, Vendor::Intel);
        // An AMD card after another vendor's is still AMD's.
        let g = named("GPUs: NVIDIA GeForce GTX 1080, AMD Radeon RX 580\n");
        assert!(g.iter().any(|x| x.2.as_deref() == Some("gfx803")), "{g:?}");
    }

    /// pci.ids spells a device as its chip and its products in brackets,
    /// and lspci, clinfo and inxi print it so: the printed whole is the
    /// name (clbr/radeontop#144, isc30/ryzen-gpu-passthrough-proxmox#119
    /// with the card's audio function on the next line, smxi/inxi#284 with
    /// the chip id further down).
    #[test]
    fn a_chip_and_its_bracketed_products_are_named_as_printed() {
        let g = named("This adds recognition for `VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 23 [Radeon RX 6650 XT] [1002:73ef] (rev c1)`.\n");
        assert_eq!(
            g,
            [(
                Vendor::Amd,
                "Navi 23 [Radeon RX 6650 XT]".into(),
                Some("gfx1032".into())
            )]
        );
        let t = "Tested in BeeLink Ser6 Pro with PVE 8.4.0 Win11\n\n> 74:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Rembrandt [Radeon 680M] [1002:1681] (rev c8)\n> 74:00.1 Audio device [0403]: Advanced Micro Devices, Inc. [AMD/ATI] Radeon High Definition Audio Controller [Rembrandt/Strix] [1002:1640]\n";
        assert_eq!(
            named(t),
            [(
                Vendor::Amd,
                "Rembrandt [Radeon 680M]".into(),
                Some("gfx1035".into())
            )]
        );
        let t = "  Device-1: AMD Cedar [Radeon HD 5000/6000/7350/8350 Series]\n    vendor: XFX Pine\n    bus-ID: 0a:00.0\n    chip-ID: 1002:68f9\n";
        let g = named(t);
        assert_eq!(g.len(), 1, "{g:?}");
        assert!(g[0].1.starts_with("Cedar"), "{g:?}");
    }

    /// A kernel log's GPU known by its address only takes the one GPU the
    /// paste names (pop-os/cosmic-epoch#3764); the target it gets is the
    /// scan's word, which rules resting on readers alone do not see.
    #[test]
    fn a_row_known_by_its_address_takes_the_one_name() {
        let t = "GPU: AMD ATI Radeon RX 5700 XT\n\nDmesg\n[  312.522692] amdgpu 0000:28:00.0: ring gfx_0.0.0 timeout, signaled seq=57638, emitted seq=57641\n";
        let mut f = super::super::dmesg::parse(t);
        assert_eq!(f.gpus.len(), 1);
        scan(t, "t").apply(&mut f);
        assert_eq!(f.gpus.len(), 1, "{:?}", f.gpus);
        let g = &f.gpus[0];
        assert_eq!(g.pci_address.as_deref(), Some("0000:28:00.0"));
        assert_eq!(g.gfx.as_deref(), Some("gfx1010"));
        assert!(g.name.contains("5700 XT"), "{}", g.name);
        let r = f.readers_only();
        assert_eq!(r.gpus.len(), 1);
        assert_eq!(r.gpus[0].gfx, None, "the target is the scan's");
    }

    /// More GPUs named than the log's nameless rows: the rows are among
    /// them and the named GPUs are the machine's (KDE's system information
    /// and a kernel log, HansKristian-Work/vkd3d-proton#3073).
    #[test]
    fn more_names_than_rows_are_the_machines_gpus() {
        let t = "- Graphics Processor 1: AMD Radeon RX 9070 XT\n- Graphics Processor 2: AMD Ryzen 5 9600X 6-Core Processor\n[  +0.000001] amdgpu 0000:03:00.0: ring gfx_0.0.0 timeout, signaled seq=13147780, emitted seq=13147783\n";
        let mut f = super::super::dmesg::parse(t);
        scan(t, "t").apply(&mut f);
        let mut got: Vec<(String, Option<String>, Option<bool>)> = f
            .gpus
            .iter()
            .map(|g| (g.name.clone(), g.gfx.clone(), g.integrated))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("AMD Radeon RX 9070 XT".into(), Some("gfx1201".into()), None),
                (
                    "AMD Ryzen 5 9600X 6-Core Processor".into(),
                    None,
                    Some(true)
                ),
            ]
        );
    }

    /// fastfetch's JSON without its indentation (fastfetch-cli/fastfetch#670):
    /// the chip codename "Raphael" is a product beside AMD's name, which
    /// stands on the record's `"vendor"` member.
    #[test]
    fn a_records_vendor_vouches_for_its_name() {
        let t = "},\n\"driver\": \"amdgpu\",\n\"name\": \"Raphael\",\n\"temperature\": null,\n\"type\": \"Unknown\",\n\"vendor\": \"AMD\"\n},\n{\n\"driver\": \"amdgpu\",\n\"name\": \"Radeon RX 7600\",\n\"vendor\": \"AMD\"\n}\n";
        let mut g: Vec<(String, Option<String>)> =
            named(t).into_iter().map(|(_, n, t)| (n, t)).collect();
        g.sort();
        assert_eq!(
            g,
            [
                ("AMD Radeon RX 7600".into(), Some("gfx1102".into())),
                ("Raphael".into(), Some("gfx1036".into())),
            ]
        );
        // A record of another vendor vouches for nothing.
        assert!(named("\"name\": \"Raphael\",\n\"vendor\": \"Intel\"\n").is_empty());
    }

    /// An APU named by its processor: on a GPU line (KDE, fetch tools) or
    /// called an APU (stable-diffusion-webui#15217: "an AMD APU (Ryzen
    /// 4700g)"); a processor on any other line, or APUs in general, none.
    #[test]
    fn an_apu_named_by_its_processor() {
        for (t, name) in [
            (
                "- Graphics Processor 2: AMD Ryzen 5 9600X 6-Core Processor\n",
                "AMD Ryzen 5 9600X 6-Core Processor",
            ),
            (
                "GPU: AMD Ryzen 7 5700G with Radeon Graphics\n",
                "AMD Ryzen 7 5700G with Radeon Graphics",
            ),
            (
                "machine with with an AMD APU (Ryzen 4700g) and a Nvidea GPU (tesla P40).\n",
                "AMD Ryzen 4700g",
            ),
            (
                "my laptop's AMD Ryzen 7 7840U APU with 32 GB\n",
                "AMD Ryzen 7 7840U",
            ),
        ] {
            let g = named(t);
            assert_eq!(
                g.iter().filter(|x| x.0 == Vendor::Amd).count(),
                1,
                "{t}: {g:?}"
            );
            assert!(g.iter().any(|x| x.1 == name), "{t}: {g:?}");
        }
        for t in [
            "CPU: AMD Ryzen 5 9600X 6-Core Processor\n",
            "Model: AMD Ryzen 5 5600G with Radeon Graphics\n",
            "ROCm does not support AMD APUs on Windows\n",
        ] {
            assert!(named(t).is_empty(), "{t}: {:?}", named(t));
        }
    }

    /// A build's target list chooses what to compile for; it names no GPU
    /// of this machine (ROCm/hip#3465's `AMDGPU_TARGETS=gfx1030`,
    /// LostRuins/koboldcpp#1798's `make ... GPU_TARGETS=gfx1201`). ollama's
    /// `gpu_type=gfx1150` does name one.
    #[test]
    fn a_build_target_list_names_no_gpu() {
        for t in [
            "AMDGPU_TARGETS=gfx1030\n",
            "`make LLAMA_HIPBLAS=1 GPU_TARGETS=gfx1201 -j$(nproc)`\n",
            "PYTORCH_ROCM_ARCH=gfx1030\n",
            "HCC_AMDGPU_TARGET=gfx1030\n",
            "cmake -DAMDGPU_TARGETS=gfx1100 -DGPU_TARGETS=gfx1100 ..\n",
            "hipcc --offload-arch=gfx90a kernel.cpp\n",
            "hipcc --offload-arch gfx942 -O3 device.hip\n",
        ] {
            assert!(named(t).is_empty(), "{t}: {:?}", named(t));
        }
        assert_eq!(
            named("msg=\"amdgpu is not supported\" gpu_type=gfx1150 gpu=0\n")[0]
                .2
                .as_deref(),
            Some("gfx1150")
        );
    }

    /// amdgpu.ids' generic name as a device's name (KoboldCpp's
    /// `Detected AMD GPU VRAM from rocminfo: [('AMD Radeon Graphics',
    /// '16304')] MB`, koboldcpp#1798): an AMD GPU of unknown model.
    #[test]
    fn the_generic_radeon_name_of_a_device_is_an_amd_gpu() {
        let g =
            named("Detected AMD GPU VRAM from rocminfo: [('AMD Radeon Graphics', '16304')] MB\n");
        assert_eq!(g, [(Vendor::Amd, "AMD Radeon Graphics".into(), None)]);
        assert_eq!(named("Marketing Name: AMD Radeon Graphics\n").len(), 1);
        assert!(named("the AMD Radeon Graphics driver page\n").is_empty());
    }

    /// vulkaninfo's fields quoted outside its output
    /// (GPUOpen-Drivers/AMDVLK#420) name the drivers as vulkaninfo does.
    #[test]
    fn vulkaninfo_fields_quoted_in_prose_name_their_driver() {
        let d = |l: &str| vulkan_driver(l, &l.to_ascii_lowercase());
        assert_eq!(
            d("  - `driverID = DRIVER_ID_MESA_RADV`"),
            Some(VkFamily::Radv)
        );
        assert_eq!(d("  - `driverName = radv`"), Some(VkFamily::Radv));
        assert_eq!(
            d("  - `driverID = DRIVER_ID_AMD_OPEN_SOURCE`"),
            Some(VkFamily::Amdvlk)
        );
        assert_eq!(d("driverName: NVIDIA"), Some(VkFamily::Nvidia));
    }

    /// A cut rocminfo names the agent by its target first, then its
    /// marketing name: the name is the product's.
    #[test]
    fn a_name_replaces_a_bare_target() {
        let t =
            "  Name:                    gfx1100\n  Marketing Name:          Radeon RX 7900 XTX\n";
        assert_eq!(
            named(t),
            [(
                Vendor::Amd,
                "AMD Radeon RX 7900 XTX".into(),
                Some("gfx1100".into())
            )]
        );
    }
}
