//! Kernel log (`dmesg`, `journalctl -k`): which GPUs amdgpu/KFD touched and
//! whether they initialised. The failure lines themselves (ip discovery,
//! `kgd2kfd_probe failed`, ...) are signals.

use super::amd::{self, parse_id};
use super::nvrm;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, KernelDriver, Vendor};

/// The kernel message of one log line, without whatever the tool that
/// showed the log put before it, in any order and nesting: dmesg's
/// `[    1.234]` stamp, `dmesg -H`'s `[Dez26 08:58]` / `[  +0,000007]`,
/// a `<6>` priority, journald/syslog's `Jun 6 08:00:03 host kernel: ` (also
/// with ISO times), `dmesg -x`'s `kern  :info  : `, `talosctl dmesg`'s
/// `host: kern:    info: [2026-01-06T19:44:53.769Z]: `, a bare `kernel: `
/// and `grep -n`'s `3118:`. Lines pasted with `dmesg -t` or `journalctl -o
/// cat` have none of these and are returned as they are.
pub(crate) fn strip_stamp(l: &str) -> &str {
    let mut t = l.trim_start();
    // Each pass removes one layer; a layer never grows the line, so this ends.
    for _ in 0..8 {
        let before = t.len();
        t = strip_line_number(t);
        t = strip_priority(t);
        t = strip_bracket_stamp(t);
        t = strip_kern_level(t);
        t = strip_kernel_tag(t);
        if t.len() == before {
            break;
        }
    }
    t
}

/// `grep -n`'s `3118:` (not a time such as `12:58:23`).
fn strip_line_number(t: &str) -> &str {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 || t.as_bytes().get(digits) != Some(&b':') {
        return t;
    }
    let rest = &t[digits + 1..];
    let b = rest.as_bytes();
    let time_like = b.len() >= 3 && b[0].is_ascii_digit() && b[1].is_ascii_digit() && b[2] == b':';
    if time_like {
        t
    } else {
        rest.trim_start()
    }
}

/// Syslog's `<6>` priority.
fn strip_priority(t: &str) -> &str {
    let b = t.as_bytes();
    // Bytes, not a str slice: the fifth byte may sit inside a multi-byte
    // character (a fuzzed paste panicked on `t[..5]`).
    if b.len() >= 3 && b[0] == b'<' && b[1].is_ascii_digit() {
        if let Some(p) = b[..b.len().min(5)].iter().position(|&c| c == b'>') {
            if b[1..p].iter().all(u8::is_ascii_digit) {
                return t[p + 1..].trim_start();
            }
        }
    }
    t
}

/// A leading stamp in brackets: `[ 1.234]`, `[Dez26 08:58]`, `[  +0,000007]`,
/// `[2026-01-06T19:44:53.769Z]:`. Never a driver's own tag (`[drm:...]`,
/// `[gfxhub]`): a stamp holds a digit and only stamp characters.
fn strip_bracket_stamp(t: &str) -> &str {
    if !t.starts_with('[') {
        return t;
    }
    let Some(p) = t.find(']') else { return t };
    let inner = t[1..p].trim();
    let stamp = !inner.is_empty()
        && inner.len() <= 40
        && inner.bytes().any(|b| b.is_ascii_digit())
        && !inner.starts_with("drm")
        && inner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b" .,:+-_/".contains(&b));
    if !stamp {
        return t;
    }
    let rest = t[p + 1..].trim_start();
    rest.strip_prefix(':').unwrap_or(rest).trim_start()
}

/// `kern  :info  : ` (`dmesg -x`) and `host: kern:    info: ` (talosctl).
fn strip_kern_level(t: &str) -> &str {
    let Some(p) = t.find("kern") else { return t };
    // Only a host name (one word and its colon) may come before it.
    let head = t[..p].trim_end();
    if !(head.is_empty() || (head.ends_with(':') && !head[..head.len() - 1].contains(' '))) {
        return t;
    }
    let r = t[p + 4..].trim_start();
    let Some(r) = r.strip_prefix(':') else {
        return t;
    };
    let r = r.trim_start();
    let level = r.bytes().take_while(u8::is_ascii_alphabetic).count();
    if level == 0 || level > 7 {
        return t;
    }
    let after = r[level..].trim_start();
    match after.strip_prefix(':') {
        Some(rest) => rest.trim_start(),
        None => t,
    }
}

/// journald/syslog's `Jun 6 08:00:03 host kernel: ` (any time format, no
/// `[` or message before it) and a bare `kernel: `.
fn strip_kernel_tag(t: &str) -> &str {
    if let Some(r) = t.strip_prefix("kernel: ") {
        return r;
    }
    if let Some(p) = t.find(" kernel: ") {
        let head = &t[..p];
        // A stamp and a host, never a message ("amdgpu: ... kernel: ").
        if !head.contains('[') && !head.contains(": ") && head.split_whitespace().count() <= 5 {
            return &t[p + 9..];
        }
    }
    t
}

/// A kernel message only the GPU drivers print.
fn is_driver_message(s: &str) -> bool {
    s.starts_with("kfd kfd")
        || s.starts_with("[drm] amdgpu ")
        || s.starts_with("[drm] initializing kernel modesetting (")
        || s.starts_with("[drm] Initialized amdgpu")
        || s.starts_with("NVRM")
        || is_wsl_gpu_message(s)
        || s.starts_with("amdgpu: ")
        || s.strip_prefix("amdgpu ")
            .is_some_and(|r| is_bdf(r.split(": ").next().unwrap_or("")))
}

/// The WSL2 kernel's GPU paravirtualisation driver (dxgkrnl, `/dev/dxg`):
/// "hv_vmbus: registering driver dxgkrnl", "misc dxg: dxgk: ...". Only a
/// WSL2 kernel prints these; there ROCm and CUDA reach the GPU through
/// /dev/dxg, never /dev/kfd.
fn is_wsl_gpu_message(s: &str) -> bool {
    s.starts_with("misc dxg:") || s.starts_with("hv_vmbus: registering driver dxgkrnl")
}

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "dmesg",
    label: "dmesg",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[
        "kfd kfd",
        "[drm",
        "NVRM",
        "amdgpu",
        "misc dxg:",
        "hv_vmbus: registering driver dxgkrnl",
        "Linux version",
    ]],
};

pub fn recognise(text: &str) -> bool {
    lines_of(text).any(|l| {
        let s = strip_stamp(l);
        is_driver_message(s)
            || ((s.len() != l.trim_start().len())
                && (s.starts_with("[drm") || s.starts_with("Linux version")))
    })
}

fn is_bdf(s: &str) -> bool {
    s.parse::<greta_vocab::PciAddress>()
        .is_ok_and(|a| a.domain.is_some())
}

/// What one `initializing kernel modesetting (...)` line says about a GPU.
struct Modeset<'a> {
    /// Chip codename (None for `IP DISCOVERY`).
    code: Option<&'a str>,
    device: u16,
    subsystem: Option<(u16, u16)>,
    revision: Option<u8>,
}

/// "(POLARIS10 0x1002:0x67DF 0x1DA2:0xE366 0xE7)" / "(IP DISCOVERY 0x1002:0x744C ...)".
fn modeset(s: &str) -> Option<Modeset<'_>> {
    let p = s.find("initializing kernel modesetting (")? + 33;
    let inner = s[p..].split(')').next()?;
    let words: Vec<&str> = inner.split_whitespace().collect();
    let ids = words
        .iter()
        .position(|w| w.starts_with("0x") && w.contains(':'))?;
    let pair = |w: &str| -> Option<(u16, u16)> {
        let (a, b) = w.split_once(':')?;
        Some((parse_id(a)? as u16, parse_id(b)? as u16))
    };
    let (v, d) = pair(words[ids])?;
    if v != amd::AMD {
        return None;
    }
    let code = (ids == 1 && words[0] != "IP").then(|| words[0]);
    let sub = words.get(ids + 1).and_then(|w| pair(w));
    let rev = words
        .get(ids + 2)
        .and_then(|w| parse_id(w))
        .map(|r| r as u8);
    Some(Modeset {
        code,
        device: d,
        subsystem: sub,
        revision: rev,
    })
}

/// "VRAM: 1024M 0x0000..." (old `drmn0:` and current `amdgpu BDF: amdgpu:` forms).
fn vram_mib(s: &str) -> Option<u64> {
    let p = s.find("VRAM: ")? + 6;
    let w = s[p..].split_whitespace().next()?;
    w.strip_suffix('M')?.parse().ok()
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut amdgpu = AmdgpuLines::default();
    let mut nvidia = nvrm::NvidiaGpus::default();
    let mut by_kfd: Vec<Gpu> = Vec::new();
    for (i, l) in lines_of(text).enumerate() {
        let s = strip_stamp(l);
        driver_line(s, &mut f);
        nvidia.line(s);
        if f.wsl.is_none() && is_wsl_gpu_message(s) {
            f.wsl = Some(true);
        }
        if f.kernel_driver_version.is_none() && s.starts_with("NVRM") && s.contains("API mismatch")
        {
            // The loaded module's version, wrapped over the next lines (read
            // once: every later message says the same).
            let message = nvrm_message(text, i);
            if let Some(v) = nvrm::mismatch_module_version(&message) {
                f.kernel_driver_version.get_or_insert(v);
            }
        }
        if let Some(rest) = s.strip_prefix("kfd kfd: ") {
            by_kfd.extend(kfd_device(rest).map(|d| Gpu {
                vendor: Vendor::Amd,
                vendor_id: Some(amd::AMD),
                device_id: Some(d),
                seen_by: vec!["dmesg:kfd".into()],
                ..Gpu::default()
            }));
            continue;
        }
        amdgpu.line(s);
    }
    // KFD lines name device ids without addresses; when amdgpu lines give the
    // addresses they describe the same GPUs, so only one list is kept.
    let (amd_gpus, amd_named) = amdgpu.finish();
    let (nv_gpus, nv_named) = nvidia.finish();
    let named = if amd_gpus.is_empty() {
        by_kfd.len()
    } else {
        amd_named
    } + nv_named;
    f.gpus = if amd_gpus.is_empty() {
        by_kfd
    } else {
        amd_gpus
    };
    f.gpus.extend(nv_gpus);
    if named > super::MAX_LISTED {
        f.cut.insert("GPUs", named);
    }
    for g in &mut f.gpus {
        if g.integrated.is_none() && g.gfx.is_none() && looks_integrated(g) {
            g.integrated = Some(true);
        }
    }
    f
}

/// What a line says of the kernel and its GPU drivers: the kernel version,
/// amdgpu loaded (and its dkms version), NVIDIA's module version.
fn driver_line(s: &str, f: &mut Facts) {
    if let Some(rest) = s.strip_prefix("Linux version ") {
        f.kernel_version = rest.split_whitespace().next().map(String::from);
    }
    if s.contains("Initialized amdgpu") || s.starts_with("[drm] amdgpu kernel modesetting enabled")
    {
        f.drivers.push(KernelDriver {
            name: "amdgpu".into(),
            loaded: true,
            version: None,
        });
    }
    // AMD's dkms driver says its version: "[drm] amdgpu version: 6.2.4"
    if let Some(v) = s.strip_prefix("[drm] amdgpu version: ") {
        let v = v.trim().to_string();
        f.kernel_driver_version.get_or_insert(v.clone());
        f.drivers.push(KernelDriver {
            name: "amdgpu".into(),
            loaded: true,
            version: Some(v),
        });
    }
    if s.starts_with("NVRM") && s.contains("Kernel Module") {
        let v = nvrm::banner_version(s);
        if v.is_some() {
            f.kernel_driver_version = v.clone();
        }
        f.drivers.push(KernelDriver {
            name: "nvidia".into(),
            loaded: true,
            version: v,
        });
    }
}

/// The NVRM message that starts on line `start` with the continuation lines
/// the log wrapped it over (lines without a prefix of their own that start
/// with `NVRM:`), joined with spaces.
fn nvrm_message(text: &str, start: usize) -> String {
    let mut lines = lines_of(text).skip(start);
    let mut out = lines.next().map(strip_stamp).unwrap_or("").to_string();
    for l in lines.take(6) {
        let t = l.trim_start();
        if !t.starts_with("NVRM:") || strip_stamp(l).len() != t.len() {
            break;
        }
        out.push(' ');
        out.push_str(t);
    }
    out
}

/// The AMD device id of KFD's topology line: `Topology: Add GPU node
/// [0x1002:0x164e]` (vendor first, as kernels of 2025 print it) or `Add dGPU
/// node [0x73ff:0x1002]` (device first, as earlier ones did); a CPU's `Add
/// APU node [0x0:0x0]` names none.
fn kfd_topology_device(s: &str) -> Option<u16> {
    let p = s.find("Topology: Add ")?;
    let rest = &s[p..];
    let ids = rest[rest.find(" node [")? + " node [".len()..]
        .split_once(']')?
        .0;
    let (a, b) = ids.split_once(':')?;
    let hex = |x: &str| u16::from_str_radix(x.trim().trim_start_matches("0x"), 16).ok();
    let (a, b) = (hex(a)?, hex(b)?);
    match (a == amd::AMD, b == amd::AMD) {
        (true, false) => Some(b),
        (false, true) => Some(a),
        _ => None,
    }
}

/// The device id a `kfd kfd: ` line names: "DID 7340 is missing in
/// supported_devices", "added device 1002:74b5", "skipped device 1002:67c4,
/// PCI rejects atomics".
fn kfd_device(rest: &str) -> Option<u16> {
    if let Some(r) = rest.strip_prefix("DID ") {
        return r
            .split_whitespace()
            .next()
            .and_then(|h| u16::from_str_radix(h, 16).ok());
    }
    let p = rest
        .find("added device ")
        .or_else(|| rest.find("skipped device "))?;
    rest[p..]
        .split_once("device ")
        .map_or("", |(_, r)| r)
        .split(|c: char| c.is_whitespace() || c == ',')
        .next()
        .and_then(|ids| ids.split_once(':'))
        .and_then(|(_, d)| u16::from_str_radix(d, 16).ok())
}

/// The PCI address an amdgpu line names ("amdgpu 0000:03:00.0: ...",
/// "amdgpu: probe of 0000:05:00.0 failed with error -22"); what it returns
/// for other lines is no address ([`is_bdf`] says so).
fn line_bdf(s: &str) -> String {
    if let Some(rest) = s.strip_prefix("amdgpu ") {
        rest.split(':')
            .take(3)
            .collect::<Vec<_>>()
            .join(":")
            .trim()
            .to_string()
    } else if let Some(p) = s.find("probe of ") {
        s[p + 9..]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string()
    } else {
        String::new()
    }
}

/// A line of amdgpu giving up on a device.
fn fails_bring_up(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    [
        "invalid ip discovery",
        "fatal error during gpu init",
        "amdgpu_device_ip_init failed",
        "discovery failed",
        "failed to load ucode",
    ]
    .iter()
    .any(|m| l.contains(m))
}

/// "[drm] amdgpu: 512M of VRAM memory ready" -> 512 (`kind` VRAM or GTT).
fn ready_mib(s: &str, kind: &str) -> Option<u64> {
    let p = s.find(&format!("M of {kind} memory ready"))?;
    let head = &s[..p];
    // The digits just before; counted in bytes, since the character before
    // them may be several bytes long (a fuzzed paste panicked on `i + 1`).
    let digits = head.bytes().rev().take_while(u8::is_ascii_digit).count();
    head[head.len() - digits..].parse().ok()
}

/// An integrated GPU by its memory when nothing named the chip: amdgpu
/// gives an APU a small carve-out (512 MiB or less by default) and a GTT
/// many times larger (half of RAM); no discrete GPU amdgpu drives has that.
fn looks_integrated(g: &Gpu) -> bool {
    matches!((g.vram_bytes, g.gtt_bytes), (Some(v), Some(t)) if v <= 512 << 20 && t >= 4 << 30)
}

/// The GPUs amdgpu's own lines describe, in the order they appear: at
/// most [`super::MAX_LISTED`]; what lines name beyond goes to one spill
/// slot (dropped at the end) and is counted.
#[derive(Default)]
struct AmdgpuLines {
    gpus: Vec<Gpu>,
    /// The GPU the last line that named one belongs to: an address-less
    /// line (VRAM size, a modesetting line) continues it.
    last: Option<usize>,
    /// Each address's GPU, and the GPUs no address has named yet in
    /// order: a log naming many GPUs stays linear.
    at: std::collections::HashMap<String, usize>,
    unaddressed: std::collections::BTreeSet<usize>,
    /// Addresses beyond the limit, and address-less GPUs beyond it.
    beyond: std::collections::HashSet<String>,
    beyond_unaddressed: usize,
}

impl AmdgpuLines {
    fn line(&mut self, s: &str) {
        let bdf = line_bdf(s);
        let addressed = is_bdf(&bdf);
        let mut cur = self.last;
        if addressed {
            let i = self.at_address(&bdf);
            if s.contains("failed with error") {
                self.gpus[i].kernel_driver = None;
            }
            cur = Some(i);
            self.last = Some(i);
        }
        if let Some(m) = modeset(s) {
            // A new modesetting line without an address is a new GPU unless
            // the GPU of the last address has no id yet.
            let i = match cur.filter(|&i| {
                self.gpus[i].device_id.is_none() || self.gpus[i].device_id == Some(m.device)
            }) {
                Some(i) if addressed || self.gpus[i].device_id.is_none() => i,
                _ => self.push(None),
            };
            let g = &mut self.gpus[i];
            g.device_id = Some(m.device);
            if let Some((sv, sd)) = m.subsystem.filter(|s| *s != (0, 0)) {
                g.subsystem_vendor_id = Some(sv);
                g.subsystem_device_id = Some(sd);
            }
            g.revision = m.revision;
            if let Some(gfx) = m.code.and_then(amd::gfx_from_chip) {
                g.gfx = Some(gfx);
            }
            self.last = Some(i);
            return;
        }
        // KFD adding the GPU to its topology names its id, not its address:
        // the GPU whose bring-up lines stand around it ("amdgpu: Topology:
        // Add GPU node [0x1002:0x164e]").
        if let Some(d) = kfd_topology_device(s) {
            let i = match cur.or(self.last) {
                Some(i) if self.gpus[i].device_id.is_none() => i,
                // A GPU a modesetting line already named.
                _ if self.gpus.iter().any(|g| g.device_id == Some(d)) => return,
                _ => self.push(None),
            };
            self.gpus[i].device_id = Some(d);
            self.gpus[i].vendor_id = Some(amd::AMD);
            self.last = Some(i);
            return;
        }
        // A bring-up failure names a GPU even when no line gave its address
        // ("amdgpu: get invalid ip discovery binary signature").
        if self.gpus.is_empty() && s.starts_with("amdgpu") && fails_bring_up(s) {
            let i = self.push(None);
            self.gpus[i].kernel_driver = None;
            self.last = Some(i);
        }
        // The chip, when no modesetting line named it: a firmware file
        // (`amdgpu/carrizo_pfp.bin`, `amdgpu/gc_11_0_0_mes.bin`) or the ATOM
        // BIOS part name (`113-RAVEN-114`).
        let implied = if s.contains("amdgpu/") {
            amd::gfx_from_firmware(s)
        } else if s.contains("ATOM BIOS: ") {
            amd::gfx_from_atom_bios(s)
        } else {
            None
        };
        if let Some(gfx) = implied {
            let i = match cur.or(self.last) {
                Some(i) => i,
                None => self.push(None),
            };
            self.gpus[i].gfx.get_or_insert(gfx);
            self.last = Some(i);
        }
        if let (Some(i), Some(mb)) = (cur.or(self.last), vram_mib(s)) {
            if s.contains("drmn") || s.contains("amdgpu") {
                self.gpus[i].vram_bytes.get_or_insert(mb << 20);
            }
        }
        // "[drm] amdgpu: 512M of VRAM memory ready", "... 12288M of GTT
        // memory ready.": amdgpu's own sizes, pasted even without the lines
        // that name the device.
        for (kind, is_vram) in [("VRAM", true), ("GTT", false)] {
            let Some(mb) = ready_mib(s, kind) else {
                continue;
            };
            let i = match cur.or(self.last) {
                Some(i) => i,
                None => self.push(None),
            };
            let g = &mut self.gpus[i];
            if is_vram {
                g.vram_bytes.get_or_insert(mb << 20);
            } else {
                g.gtt_bytes.get_or_insert(mb << 20);
            }
            self.last = Some(i);
        }
    }

    /// The GPU at `bdf`: the one already there, else one an earlier
    /// address-less modesetting line named, else a new one.
    fn at_address(&mut self, bdf: &str) -> usize {
        if let Some(&i) = self.at.get(bdf) {
            return i;
        }
        match self.unaddressed.pop_first() {
            Some(i) => {
                self.gpus[i].pci_address = Some(bdf.to_string());
                self.at.insert(bdf.to_string(), i);
                i
            }
            None => self.push(Some(bdf.to_string())),
        }
    }

    fn push(&mut self, pci_address: Option<String>) -> usize {
        let i = self.gpus.len();
        if i >= super::MAX_LISTED {
            match pci_address {
                Some(a) => {
                    self.beyond.insert(a);
                }
                None => self.beyond_unaddressed += 1,
            }
            // The spill slot: what the lines say of GPUs beyond the limit
            // lands here and goes at the end.
            if i == super::MAX_LISTED {
                self.gpus.push(Gpu::default());
            }
            return super::MAX_LISTED;
        }
        match &pci_address {
            Some(a) => {
                self.at.insert(a.clone(), i);
            }
            None => {
                self.unaddressed.insert(i);
            }
        }
        self.gpus.push(Gpu {
            vendor: Vendor::Amd,
            vendor_id: Some(amd::AMD),
            pci_address,
            kernel_driver: Some("amdgpu".to_string()),
            seen_by: vec!["dmesg".into()],
            ..Gpu::default()
        });
        i
    }

    /// The GPUs, and how many the lines named in all.
    fn finish(mut self) -> (Vec<Gpu>, usize) {
        self.gpus.truncate(super::MAX_LISTED);
        let named = self.gpus.len() + self.beyond.len() + self.beyond_unaddressed;
        (self.gpus, named)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_priority_tag_next_to_a_multibyte_character_is_not_a_panic() {
        // `<123` then a two-byte character across byte 5.
        assert_eq!(strip_priority("<123\u{e9}> x"), "<123\u{e9}> x");
        assert_eq!(strip_priority("<6>amdgpu: x"), "amdgpu: x");
        assert_eq!(strip_priority("<12>\u{e9}"), "\u{e9}");
    }

    /// KFD's topology line gives the id of the GPU whose bring-up lines
    /// stand around it (a Bazzite journal, ublue-os/bazzite#5729: the
    /// Raphael iGPU at 12:00.0 beside a card at 03:00.0), in either order
    /// of its ids, and never a second GPU for one a modesetting line named.
    #[test]
    fn the_kfd_topology_line_names_its_gpu() {
        let t = "Sep 03 23:07:26 bazzite kernel: amdgpu 0000:12:00.0: kiq ring mec 2 pipe 1 q 0\n\
                 Sep 03 23:07:26 bazzite kernel: amdgpu: Virtual CRAT table created for GPU\n\
                 Sep 03 23:07:26 bazzite kernel: amdgpu: Topology: Add GPU node [0x1002:0x164e]\n\
                 Sep 04 14:42:30 HOSTNAME kernel: amdgpu 0000:03:00.0: [drm] REG_WAIT timeout 1us * 100 tries - dcn32_program_compbuf_size line:147\n";
        let f = parse(t);
        let got: Vec<_> = f
            .gpus
            .iter()
            .map(|g| (g.pci_address.as_deref(), g.device_id))
            .collect();
        assert_eq!(
            got,
            [
                (Some("0000:12:00.0"), Some(0x164e)),
                (Some("0000:03:00.0"), None)
            ]
        );
        assert_eq!(
            kfd_topology_device("amdgpu: Topology: Add dGPU node [0x73ff:0x1002]"),
            Some(0x73ff)
        );
        assert_eq!(
            kfd_topology_device("amdgpu: Topology: Add APU node [0x0:0x0]"),
            None
        );
        let named = "[    2.1] amdgpu 0000:28:00.0: amdgpu: initializing kernel modesetting (NAVI10 0x1002:0x731F 0x1DA2:0xE411 0xC1).\n\
                     [    2.9] amdgpu: Topology: Add dGPU node [0x731f:0x1002]\n";
        assert_eq!(parse(named).gpus.len(), 1);
    }

    #[test]
    fn memory_ready_lines_size_the_gpu() {
        let f = parse("[    4.258469] [drm] amdgpu: 512M of VRAM memory ready\n[    4.258473] [drm] amdgpu: 12288M of GTT memory ready.\n");
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].vram_bytes, Some(512 << 20));
        assert_eq!(f.gpus[0].gtt_bytes, Some(12288 << 20));
        assert_eq!(f.gpus[0].integrated, Some(true));
        // A discrete card's sizes are not an APU's.
        let d = parse("[drm] amdgpu: 24560M of VRAM memory ready\n[drm] amdgpu: 15999M of GTT memory ready.\n");
        assert_eq!(d.gpus[0].integrated, None);
    }

    /// The id of the signal `line` raises, if any.
    fn signal(line: &str) -> Option<&'static str> {
        crate::signals::classify(line).map(|s| s.id.as_str())
    }

    #[test]
    fn kernel_driver_failures_of_every_family_are_signals() {
        for (line, id) in [
            // pre-gfx9 amdgpu fault report (Requiem4Eternity/Appstream#91,
            // Lucretia/vulkan-overlay#31).
            ("May 29 12:42:58 k8snode231 kernel: amdgpu 0005:01:00.0: GPU fault detected: 146 0x0000480c for process Media1251 pid 19092 thread appstream:cs0 pid 19111", "gpu-page-fault"),
            ("[   54.018787] amdgpu 0000:01:00.0:   VM_CONTEXT1_PROTECTION_FAULT_STATUS 0x020C4001", "gpu-page-fault"),
            // a hung job killed without a reset (freebsd/drm-kmod#78's title).
            ("[drm ERROR :amdgpu_job_timedout] ring gfx timeout, but soft recovered", "gpu-ring-timeout"),
            // KFD of 4.15-4.19 kernels refusing a GPU, in both spellings
            // (ROCm legacy#558 and #538).
            ("[    2.705392] amdgpu 0000:02:00.0: kfd not supported on this ASIC", "kfd-unsupported-device"),
            ("[    1.172206] kfd2kgd: kfd not supported on this ASIC", "kfd-unsupported-device"),
            // NVIDIA: both wrappings of the mismatch, and NVML's spelling.
            ("Aug 26 14:08:07 nyasara-linux kernel: NVRM: API mismatch: the client has the version 367.44, but", "nvidia-api-mismatch"),
            ("[    9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)", "nvidia-api-mismatch"),
            ("Failed to initialize NVML: Driver/library version mismatch", "nvidia-api-mismatch"),
            ("[   23.991672] NVRM: GPU 0000:07:00.0: RmInitAdapter failed! (0x61:0x56:1770)", "nvidia-init-failed"),
            ("[188549.976351] NVRM: The NVIDIA probe routine was not called for 3 device(s).", "nvidia-init-failed"),
            ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.", "nvidia-init-failed"),
            ("\tKernel driver in use: nouveau", "nouveau-bound"),
            ("               NVRM: fallen off the bus and is not responding to commands.", "gpu-fallen-off-bus"),
            ("[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.", "gpu-fallen-off-bus"),
            ("NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus", "gpu-fallen-off-bus"),
            // Other Xids (tinygrad#6947, leptonai/gpud#46, open-gpu-kernel-modules#829).
            ("[22859.081860] NVRM: Xid (PCI:0000:01:00): 31, pid=14292, name=python, Ch 00000030, intr 00000000. MMU Fault: ENGINE HOST0 HUBCLIENT_ESC faulted @ 0x10_00200000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ", "nvidia-xid"),
            ("[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter", "nvidia-xid"),
            ("[605633.376794] NVRM: Xid (PCI:0000:06:00): 120, GSP task exception: store access page fault (cause:0xf) @ pc:0x13ebd80, partition:2#0, task:3", "nvidia-xid"),
            // WSL2's dxgkrnl notices are harmless (microsoft/WSL#11293, #40715).
            ("[    1.272072] misc dxg: dxgk: dxgkio_query_adapter_info: Ioctl failed: -22", "noise-wsl-dxg-ioctl"),
            ("[    3.897712] misc dxg: dxgk: dxgkio_is_feature_enabled:    Ioctl failed: -22  (EINVAL)", "noise-wsl-dxg-ioctl"),
            // The kernel refusing the module: Secure Boot (acidanthera/bugtracker#2237),
            // lockdown (bottlerocket-os/bottlerocket#4218), a module for
            // another kernel (ROCm legacy#671).
            ("mar 06 15:10:43 CS3003NS gdm3[7055]: modprobe: ERROR: could not insert 'nvidia': Key was rejected by service", "gpu-module-load-refused"),
            ("[    5.881035] driverdog[2088]: modprobe: ERROR: could not insert 'nvidia_uvm': Operation not permitted", "gpu-module-load-refused"),
            ("modprobe: ERROR: could not insert 'amdkfd': Exec format error", "gpu-module-load-refused"),
            // DKMS, AMD's and NVIDIA's, apt's and dkms autoinstall's words.
            ("Consult /var/lib/dkms/amdgpu/6.12.12-2164967.24.04/build/make.log for more information.", "gpu-dkms-build-failed"),
            ("Consult /var/lib/dkms/nvidia/390.157/build/make.log for more information.", "gpu-dkms-build-failed"),
            ("dkms autoinstall on 6.8.0-44-generic/x86_64 failed for amdgpu(10)", "gpu-dkms-package-failed"),
            // nomodeset, from the installer, the kernel and a command line.
            ("nomodeset detected in kernel parameters. amdgpu requires KMS", "kernel-nomodeset"),
            // amdgpu's own spelling before 5.x (M-Bab/linux-kernel-amdgpu-binaries#45).
            ("[    1.027502] [drm:amdgpu_init [amdgpu]] *ERROR* VGACON disables amdgpu kernel modesetting.", "kernel-nomodeset"),
            ("[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-5.3.18-150300.59.76-default root=LABEL=ROOT nomodeset plymouth.enable=0", "kernel-cmdline-nomodeset"),
            ("BOOT_IMAGE=/boot/vmlinuz-5.3.18-150300.59.76-default root=LABEL=ROOT nomodeset plymouth.enable=0 rd.kiwi.oem.maxdisk=5000G", "kernel-cmdline-nomodeset"),
        ] {
            assert_eq!(signal(line), Some(id), "{line}");
        }
    }

    #[test]
    fn other_drivers_and_healthy_builds_are_no_gpu_driver_failure() {
        for line in [
            // Another module refused (lwfinger/rtl8723au#58, tuxedo-keyboard#186).
            "modprobe :ERROR :could not insert '8723au': required  key not available",
            "Aug 04 19:34:09 linux-tuxedo dkms.systemd[1627]: modprobe: ERROR: could not insert 'clevo_acpi': Key was rejected by service",
            // Another module's dkms failure, and a successful amdgpu build (ROCm legacy#738).
            "Consult /var/lib/dkms/vboxhost/7.0.8_OSE/build/make.log for more information.",
            "make -j16 KERNELRELEASE=4.15.0-20-generic -j16 kdir=/lib/modules/4.15.0-20-generic/build -C /lib/modules/4.15.0-20-generic/build M=/var/lib/dkms/amdgpu/2.2-31/build...........",
            "Creating symlink /var/lib/dkms/amdgpu/2.2-31/source ->",
            // dpkg's own line also precedes "dependency problems" (no build at all).
            "dpkg: error processing package amdgpu-dkms (--configure):",
            // A command line without nomodeset (nixos-rocm/nixos-rocm#7), and
            // nouveau's own KMS switch.
            "Kernel command line: BOOT_IMAGE=(hd0,msdos1)/nix/store/vbj7khxrkgr410xs6pv4pmpggqf6sia2-linux-4.13.0-kfd-roc-1.8.2/bzImage loglevel=4",
            "Kernel command line: BOOT_IMAGE=/vmlinuz root=/dev/sda1 nouveau.modeset=0",
            // The module finding no GPU of its own, or already loaded.
            "modprobe: ERROR: could not insert 'nvidia': No such device",
            "modprobe: ERROR: could not insert 'amdgpu': File exists",
            // The module loading fine, and a driver in use that is not nouveau.
            "[    6.252567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.148.06  Mon May  5 11:36:21 UTC 2025",
            "\tKernel driver in use: nvidia",
        ] {
            assert_eq!(signal(line), None, "{line}");
        }
    }

    #[test]
    fn nvrm_lines_name_the_gpu_and_the_loaded_module() {
        // NVSentinel#155: the banner's "Open Kernel Module for x86_64" spelling.
        let f = parse("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n               NVRM: (PCI ID: 10de:26b5) installed in this system has\n               NVRM: fallen off the bus and is not responding to commands.\n[ 1843.439669] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025\n");
        assert_eq!(f.kernel_driver_version.as_deref(), Some("570.158.01"));
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].vendor, Vendor::Nvidia);
        assert_eq!(f.gpus[0].pci_address.as_deref(), Some("0000:b3:00.0"));
        assert_eq!(f.gpus[0].device_id, Some(0x26b5));
        // An API mismatch wrapped by journald gives the loaded module's version
        // (nvidia-docker#182), not the client's.
        let j = parse("Aug 26 14:08:07 nyasara-linux kernel: NVRM: API mismatch: the client has the version 367.44, but\n                                      NVRM: this kernel module has the version 367.35.  Please\n                                      NVRM: make sure that this kernel module and all NVIDIA driver\n");
        assert_eq!(j.kernel_driver_version.as_deref(), Some("367.35"));
        // The next stamped message is not a continuation: no version from it.
        let k = parse("[   12.014918] NVRM: API mismatch: the client has the version 570.153.02, but\n[   12.014919] NVRM: this kernel module has the version 570.144.  Please\n");
        assert_eq!(k.kernel_driver_version, None);
        // AMD and NVIDIA GPUs of one log are both kept.
        let both = parse("[    4.1] amdgpu 0000:03:00.0: amdgpu: VRAM: 8192M 0x0000008000000000\n[    5.2] NVRM: GPU 0000:07:00.0: RmInitAdapter failed! (0x61:0x56:1770)\n");
        let vendors: Vec<Vendor> = both.gpus.iter().map(|g| g.vendor).collect();
        assert_eq!(vendors, [Vendor::Amd, Vendor::Nvidia]);
    }

    #[test]
    fn a_wsl2_kernel_log_is_a_dmesg_of_a_wsl_machine() {
        // microsoft/WSL#11293: only dxgkrnl lines, a working GPU.
        let t = "[    0.265917] hv_vmbus: registering driver dxgkrnl\n[    1.265648] misc dxg: dxgk: dxgkio_is_feature_enabled: Ioctl failed: -22\n";
        assert!(recognise(t));
        assert_eq!(parse(t).wsl, Some(true));
        // A native kernel's log says nothing about WSL.
        let native = "[    4.1] amdgpu 0000:03:00.0: amdgpu: VRAM: 8192M 0x0000008000000000\n";
        assert_eq!(parse(native).wsl, None);
        // Hyper-V's other vmbus drivers are no GPU message.
        assert!(!recognise(
            "[    0.2] hv_vmbus: registering driver hv_netvsc\n"
        ));
    }

    #[test]
    fn every_log_prefix_is_stripped() {
        let msg = "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!";
        for l in [
            "[ 2385.929254] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "<6>[ 2385.929254] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "Oct  7 12:58:23 Ubuntu-Desktop kernel: [ 2237.944732] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "nov 04 13:30:18 odys25 kernel: amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "2024-05-26T18:09:55+02:00 fedora kernel: amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "[Dez26 08:58] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "[  +0,000007] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "kern  :info  : [    4.123] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "192.168.0.35: kern:    info: [2026-01-06T19:44:53.769694477Z]: amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "3118:192.168.0.35: kern: warning: [2026-01-06T19:44:54.899360477Z]: amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "kernel: amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
            "   amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
        ] {
            assert_eq!(strip_stamp(l), msg, "{l}");
        }
        // Driver tags and times are not stamps.
        let tag = "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 timeout";
        assert_eq!(strip_stamp(tag), tag);
        assert_eq!(strip_stamp("[gfxhub] page fault"), "[gfxhub] page fault");
        assert_eq!(strip_stamp("12:58:23 x"), "12:58:23 x");
        let inner = "amdgpu: note kernel: x";
        assert_eq!(strip_stamp(inner), inner);
    }

    /// amdgpu's RAS spellings of an uncorrectable error, from the MI50 of
    /// ROCm/legacy-rocm-build#1886 and the MI300X node of #4021 (ATHUB),
    /// and the per-block count spelling amdgpu_ras.c prints; the all-clear,
    /// MI300's ACA bank dump (#4021; amdgpu_aca.c prints it for correctable
    /// banks too) and the normal boot lines of an ECC-capable Instinct
    /// (#4017) are not.
    #[test]
    fn ras_uncorrectable_lines_and_their_all_clear() {
        let id = |l: &str| crate::signals::classify(l).map(|s| s.id.as_str());
        for l in [
            "[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
            "[126748.505383] amdgpu 0000:e6:00.0: {1}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
            "amdgpu 0000:0b:00.0: 1048560 uncorrectable hardware errors detected in umc block",
        ] {
            assert_eq!(id(l), Some("gpu-ras-uncorrectable"), "{l}");
        }
        for l in [
            "amdgpu 0000:c3:00.0: amdgpu: no uncorrectable hardware errors detected in umc block",
            "[ 8390.823777] amdgpu 0000:9e:00.0: {1}[Hardware Error]: Accelerator Check Architecture events logged",
            "[76914.190522] amdgpu 0000:9d:00.0: {1}socket: 6, die: 1, 1533 new correctable hardware errors detected in xgmi_wafl block",
            "amdgpu 0000:01:00.0: amdgpu: 0 uncorrectable hardware errors detected in umc block",
            "[    7.276963] amdgpu 0000:c5:00.0: amdgpu: MEM ECC is active.",
            "[    7.290116] amdgpu 0000:c5:00.0: amdgpu: RAS INFO: ras initialized successfully, hardware ability[7fff] ras_mask[7fff]",
        ] {
            assert_ne!(id(l), Some("gpu-ras-uncorrectable"), "{l}");
        }
    }
}
