//! `lshw -C display` (also `-class display`, `-c video`): one `*-display`
//! block per display device, with its product, vendor, `pci@` bus address
//! and `driver=` of the bound kernel driver. lshw translates its field
//! names (German `Produkt:`/`Hersteller:`/`Bus-Informationen:`), so fields
//! are found by what they hold, never by their name: the bus field holds
//! `pci@`, the configuration `driver=`, the vendor a GPU vendor's name, and
//! the product is the field just before the vendor (lshw's fixed order).

use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, Vendor};

/// A block header: "  *-display", "  *-display:0", "*-display UNCLAIMED".
fn display_header(l: &str) -> bool {
    l.trim_start().starts_with("*-display")
}

/// The `seen_by` of a block that shows the bound driver (or that none is).
pub const SHOWS_DRIVER: &str = "lshw-driver";

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "lshw",
    label: "lshw -C display",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&["*-display"]],
};

pub fn recognise(text: &str) -> bool {
    lines_of(text).any(display_header) && text.contains("pci@")
}

/// The value of a `key: value` field line.
fn value(l: &str) -> &str {
    l.split_once(':').map_or("", |(_, v)| v.trim())
}

/// The vendor a vendor field names.
fn vendor_of(v: &str) -> Option<Vendor> {
    if v.contains("Advanced Micro Devices") || v.contains("[AMD/ATI]") {
        Some(Vendor::Amd)
    } else if v.contains("NVIDIA") {
        Some(Vendor::Nvidia)
    } else if v.starts_with("Intel Corporation") {
        Some(Vendor::Intel)
    } else {
        None
    }
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let lines: Vec<&str> = lines_of(text).collect();
    let mut i = 0;
    while i < lines.len() {
        if !display_header(lines[i]) {
            i += 1;
            continue;
        }
        // The block: its field lines, up to the next `*-` header.
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].trim_start().starts_with("*-") {
            end += 1;
        }
        let block = &lines[start..end];
        // lshw marks a device no driver claimed UNCLAIMED on its header.
        let unclaimed = lines[start - 1].contains("UNCLAIMED");
        i = end;
        let Some(vi) = block.iter().position(|l| vendor_of(value(l)).is_some()) else {
            continue;
        };
        let vendor = vendor_of(value(block[vi])).unwrap_or(Vendor::Other);
        let product = vi
            .checked_sub(1)
            .map(|p| value(block[p]).to_string())
            .unwrap_or_default();
        let address = block.iter().find_map(|l| {
            let p = l.find("pci@")? + 4;
            let a = l[p..].split_whitespace().next()?;
            (a.len() == 12).then(|| a.to_ascii_lowercase())
        });
        // A BMC's VGA device (ASPEED, Matrox) never gets here: its vendor
        // is none of the GPU vendors above.
        let driver = block.iter().find_map(|l| {
            let p = l.find("driver=")? + 7;
            l[p..].split_whitespace().next().map(String::from)
        });
        super::limits::push_gpu(
            &mut f,
            Gpu {
                vendor,
                vendor_id: vendor.pci_id(),
                name: product,
                pci_address: address,
                // The bound driver is known where lshw shows it: `driver=`, or
                // UNCLAIMED (none). A claimed block cut before its
                // configuration line shows a GPU, not its driver.
                seen_by: vec![if driver.is_some() || unclaimed {
                    SHOWS_DRIVER.into()
                } else {
                    "lshw".into()
                }],
                kernel_driver: driver,
                ..Gpu::default()
            },
        );
    }
    // A terminal session shows what it asked and where the answer ended:
    // lshw's list of every display device, ended by the next prompt,
    // inspected all of them. Only virtual or BMC adapters there: no GPU.
    if f.gpus.is_empty() && whole_listing_without_gpu(&lines) {
        f.scanned.push("pci".into());
    }
    f
}

/// The command after a shell prompt: `zwl@ubuntu:~$ sudo lshw -c video`,
/// `[me@box ~]$ lshw`, `root@host:/# lshw`, `$ lshw`.
fn command_at_prompt(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let i = t.find(['$', '#'])?;
    let (prompt, rest) = (&t[..i], &t[i + 1..]);
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let host = prompt.contains('@') || prompt.contains(':') || prompt.contains('~');
    let ok = prompt.is_empty()
        || (!prompt.contains(' ') && host)
        || (prompt.starts_with('[') && prompt.ends_with(']') && prompt.contains('@'));
    ok.then(|| rest.trim())
}

/// `lshw`, `lshw -c video`, `sudo lshw -C display`, `lshw -class display`:
/// every display device, with nothing (a pipe, a redirect) that could drop
/// one.
fn lists_every_display(cmd: &str) -> bool {
    if cmd.contains(['|', '>', '<', ';', '&']) {
        return false;
    }
    let mut w = cmd.split_whitespace().peekable();
    if w.peek() == Some(&"sudo") {
        w.next();
    }
    if w.next() != Some("lshw") {
        return false;
    }
    while let Some(a) = w.next() {
        match a {
            "-c" | "-C" | "-class" | "--class" => {
                let class = w.next().unwrap_or("");
                if !["video", "display"].contains(&class.to_ascii_lowercase().as_str()) {
                    return false;
                }
            }
            "-numeric" | "-sanitize" | "-quiet" | "-notime" => {}
            _ => return false,
        }
    }
    true
}

/// A display adapter that is no GPU: a hypervisor's emulated one (VMware
/// SVGA, VirtualBox, QEMU's QXL/Bochs/Cirrus/virtio, Hyper-V) or a server
/// BMC's.
fn no_gpu_adapter(block: &[&str]) -> bool {
    const VIRTUAL: &[&str] = &[
        "VMware",
        "VirtualBox",
        "InnoTek",
        "Red Hat",
        "QEMU",
        "Bochs",
        "Cirrus",
        "Hyper-V",
        "Parallels",
    ];
    block.iter().any(|l| {
        let v = value(l);
        VIRTUAL.iter().any(|w| v.contains(w)) || super::amd::is_bmc_display(None, v)
    })
}

/// Whether the paste holds a run of an lshw command that lists every
/// display device ([`lists_every_display`]), its output ended by the next
/// prompt (pasted whole), with at least one `*-display` block and every
/// block a [`no_gpu_adapter`].
fn whole_listing_without_gpu(lines: &[&str]) -> bool {
    let prompts: Vec<usize> = (0..lines.len())
        .filter(|&i| command_at_prompt(lines[i]).is_some())
        .collect();
    prompts.windows(2).any(|w| {
        let cmd = command_at_prompt(lines[w[0]]).unwrap_or("");
        let out = &lines[w[0] + 1..w[1]];
        let heads: Vec<usize> = (0..out.len()).filter(|&i| display_header(out[i])).collect();
        lists_every_display(cmd)
            && !heads.is_empty()
            && heads.iter().enumerate().all(|(n, &h)| {
                let end = heads.get(n + 1).copied().unwrap_or(out.len());
                no_gpu_adapter(&out[h + 1..end])
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn german_and_english_field_names_give_the_same_gpu() {
        // ROCm legacy#538 (German) and the English names lshw prints by default.
        let de = "  *-display                 \n       Beschreibung: VGA compatible controller\n       Produkt: Curacao XT / Trinidad XT [Radeon R7 370 / R9 270X/370X]\n       Hersteller: Advanced Micro Devices, Inc. [AMD/ATI]\n       Physische ID: 0\n       Bus-Informationen: pci@0000:01:00.0\n       Konfiguration: driver=amdgpu latency=0\n";
        let en = "  *-display\n       description: VGA compatible controller\n       product: Curacao XT / Trinidad XT [Radeon R7 370 / R9 270X/370X]\n       vendor: Advanced Micro Devices, Inc. [AMD/ATI]\n       physical id: 0\n       bus info: pci@0000:01:00.0\n       configuration: driver=amdgpu latency=0\n";
        for t in [de, en] {
            assert!(recognise(t));
            let f = parse(t);
            assert_eq!(f.gpus.len(), 1, "{t}");
            let g = &f.gpus[0];
            assert_eq!(g.vendor, Vendor::Amd);
            assert!(g.name.contains("R9 270X"), "{}", g.name);
            assert_eq!(g.pci_address.as_deref(), Some("0000:01:00.0"));
            assert_eq!(g.kernel_driver.as_deref(), Some("amdgpu"));
        }
    }

    #[test]
    fn a_virtual_display_adapter_is_no_gpu_and_blocks_do_not_bleed() {
        // ROCm legacy#1626: a VMware guest's SVGA adapter.
        let vm = "*-display                 \n       description: VGA compatible controller\n       product: SVGA II Adapter\n       vendor: VMware\n       bus info: pci@0000:00:0f.0\n       configuration: driver=vmwgfx latency=64\n";
        assert!(parse(vm).gpus.is_empty());
        // Two blocks: each keeps its own driver (the second has none).
        let two = "  *-display:0\n       product: GA102 [GeForce RTX 3090]\n       vendor: NVIDIA Corporation\n       bus info: pci@0000:01:00.0\n       configuration: driver=nvidia latency=0\n  *-display:1 UNCLAIMED\n       product: Navi 31 [Radeon RX 7900 XT/7900 XTX]\n       vendor: Advanced Micro Devices, Inc. [AMD/ATI]\n       bus info: pci@0000:03:00.0\n";
        let f = parse(two);
        assert_eq!(f.gpus.len(), 2);
        assert_eq!(f.gpus[0].kernel_driver.as_deref(), Some("nvidia"));
        assert_eq!(f.gpus[1].vendor, Vendor::Amd);
        assert_eq!(f.gpus[1].kernel_driver, None);
        assert!(!recognise("*-display but no bus\n"));
    }

    /// ROCm/legacy-rocm-build#1505: a VMware guest's session. `lshw -c
    /// video` ran and the next prompt ends its output: every display device
    /// is the SVGA adapter, so the bus holds no GPU. Cut before the next
    /// prompt, piped, or listing a real GPU, it proves nothing of the kind.
    #[test]
    fn a_whole_listing_of_only_a_virtual_adapter_inspected_the_bus() {
        let block = "  *-display                 \n       description: VGA compatible controller\n       product: SVGA II Adapter\n       vendor: VMware\n       physical id: f\n       bus info: pci@0000:00:0f.0\n       configuration: driver=vmwgfx latency=64\n";
        let session = format!(
            "zwl@ubuntu:~$ sudo lshw -c video\n[sudo] password for zwl: \n{block}zwl@ubuntu:~$ lspci | grep AMD/ATI\n"
        );
        let f = parse(&session);
        assert!(f.gpus.is_empty());
        assert_eq!(f.scanned, ["pci"]);
        // Cut: no prompt after the output.
        assert!(parse(&format!("zwl@ubuntu:~$ sudo lshw -c video\n{block}"))
            .scanned
            .is_empty());
        // A pipe may have dropped a device; a block alone asked nothing.
        let piped = session.replace("lshw -c video", "lshw -c video | head -8");
        assert!(parse(&piped).scanned.is_empty());
        assert!(parse(block).scanned.is_empty());
        // An adapter of a vendor greta does not know is not taken as none.
        let other = session.replace("vendor: VMware", "vendor: Moore Threads");
        assert!(parse(&other).scanned.is_empty());
        // A GPU in the listing: it is a GPU, and the bus is not "read".
        let amd = session.replace(
            "vendor: VMware",
            "vendor: Advanced Micro Devices, Inc. [AMD/ATI]",
        );
        let f = parse(&amd);
        assert_eq!((f.gpus.len(), f.scanned.len()), (1, 0));
        assert_eq!(
            command_at_prompt("[me@box ~]$ lshw -C display"),
            Some("lshw -C display")
        );
        assert_eq!(command_at_prompt("The $ price"), None);
    }

    /// UNCLAIMED: no driver bound, which lshw states (ROCm/amdgpu#41, an
    /// OpenStack guest; an Ubuntu Forums post of 2014-12-02, a Kaveri APU
    /// with no driver, is the same spelling). A claimed block cut before
    /// its configuration line does not say which driver is bound.
    #[test]
    fn unclaimed_is_a_gpu_with_no_driver() {
        let kaveri = "  *-display UNCLAIMED     \n       description: VGA compatible controller\n       product: Kaveri\n       vendor: Advanced Micro Devices, Inc. [AMD/ATI]\n       physical id: 1\n       bus info: pci@0000:00:01.0\n       version: 00\n       configuration: latency=0\n";
        let g = &parse(kaveri).gpus[0];
        assert_eq!(
            (g.kernel_driver.as_deref(), g.seen_by.as_slice()),
            (None, &[SHOWS_DRIVER.to_string()][..])
        );
        let t = "   *-display:1 UNCLAIMED\n         description: VGA compatible controller\n         product: Amethyst XT [Radeon R9 M295X Mac Edition / R9 380X]\n         vendor: Advanced Micro Devices, Inc. [AMD/ATI]\n         physical id: 5\n         bus info: pci@0000:00:05.0\n";
        let g = &parse(t).gpus[0];
        assert_eq!(g.kernel_driver, None);
        assert_eq!(g.seen_by, [SHOWS_DRIVER]);
        let cut = t.replace(" UNCLAIMED", "");
        assert_eq!(parse(&cut).gpus[0].seen_by, ["lshw"]);
        let bound = format!("{cut}         configuration: driver=amdgpu latency=0\n");
        assert_eq!(parse(&bound).gpus[0].seen_by, [SHOWS_DRIVER]);
    }
}
