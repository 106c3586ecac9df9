//! `nvidia-smi` (the default table) and `nvidia-smi -q`: driver version and
//! GPUs by PCI address, for the NVIDIA half of mixed or contrast machines.

use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, KernelDriver, Vendor};
use greta_vocab::PciAddress;

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "nvidia-smi",
    label: "nvidia-smi",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&["NVIDIA-SMI ", "Driver Version", "NVIDIA "]],
};

pub fn recognise(text: &str) -> bool {
    text.contains("NVIDIA-SMI ")
        || (text.contains("Product Name") && text.contains("Driver Version"))
        || lines_of(text).any(|l| list_entry(l).is_some())
        || (header_field(text, "Driver Version") && header_field(text, "CUDA Version"))
}

/// A line that starts with nvidia-smi's header field `key` followed by ':'
/// ("Driver Version: 570.133.07" retyped from the table, or `-q`'s
/// "Driver Version                            : 515.65.01").
fn header_field(text: &str, key: &str) -> bool {
    lines_of(text).any(|l| {
        l.trim_start()
            .strip_prefix(key)
            .is_some_and(|r| r.trim_start().starts_with(':'))
    })
}

/// One GPU of `nvidia-smi -L` ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)")
/// or of tools that print the same listing (gpu_burn's "GPU 0: NVIDIA H100
/// 80GB HBM3 ...", job logs that elide the UUID as "(...)"): (index, name).
fn list_entry(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("GPU ")?;
    let (idx, rest) = rest.split_once(": ")?;
    if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rest = rest.strip_prefix("NVIDIA ").map(|_| rest)?;
    let name = match rest.find(" (") {
        Some(p) => &rest[..p],
        None => rest.trim_end_matches('.').trim_end(),
    };
    (name.len() > "NVIDIA ".len()).then_some((idx, name))
}

fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let p = text.find(key)? + key.len();
    text[p..]
        .trim_start_matches([' ', ':'])
        .split_whitespace()
        .next()
}

/// "00000000:01:00.0" -> "0000:01:00.0"; anything else is no address.
fn bdf(s: &str) -> Option<String> {
    s.parse::<PciAddress>()
        .ok()
        .filter(|a| a.domain.is_some())
        .map(|a| a.to_string())
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    if let Some(v) = after(text, "Driver Version") {
        f.kernel_driver_version = Some(v.to_string());
        f.drivers.push(KernelDriver {
            name: "nvidia".into(),
            loaded: true,
            version: Some(v.into()),
        });
    }
    let gpu = |name: String, addr: Option<String>| Gpu {
        vendor: Vendor::Nvidia,
        name,
        pci_address: addr,
        vendor_id: Some(super::amd::NVIDIA),
        kernel_driver: Some("nvidia".into()),
        seen_by: vec!["nvidia-smi".into()],
        ..Gpu::default()
    };
    // -q form: "Product Name : NVIDIA A100-SXM4-80GB" ... "Bus Id : 00000000:07:00.0"
    let mut pending: Option<Gpu> = None;
    for l in lines_of(text) {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("Product Name") {
            if let Some(g) = pending.take() {
                super::limits::push_gpu(&mut f, g);
            }
            pending = Some(gpu(
                v.trim_start_matches([' ', ':']).trim().to_string(),
                None,
            ));
        } else if let (Some(g), Some(v)) = (pending.as_mut(), t.strip_prefix("Bus Id")) {
            g.pci_address = bdf(v.trim_start_matches([' ', ':']));
        }
    }
    if let Some(g) = pending.take() {
        super::limits::push_gpu(&mut f, g);
    }
    if !f.gpus.is_empty() {
        return f;
    }
    // Table form: "|   0  NVIDIA GeForce RTX 3090     Off |   00000000:01:00.0  On |"
    for l in lines_of(text) {
        let cells: Vec<&str> = l.split('|').collect();
        if cells.len() < 4 {
            continue;
        }
        let c1 = cells[1].trim();
        let mut words = c1.split_whitespace();
        let Some(idx) = words.next() else { continue };
        if !idx.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(addr) = cells[2].split_whitespace().next().and_then(bdf) else {
            continue;
        };
        let rest: Vec<&str> = words.collect();
        // The persistence/TCC column ("Off", "On", "WDDM") ends the name.
        let name_words = match rest.last() {
            Some(&("Off" | "On" | "WDDM" | "TCC")) => &rest[..rest.len() - 1],
            _ => &rest[..],
        };
        super::limits::push_gpu(&mut f, gpu(name_words.join(" "), Some(addr)));
    }
    if !f.gpus.is_empty() {
        return f;
    }
    // List form, one GPU per index.
    let mut seen = std::collections::HashSet::new();
    for (idx, name) in lines_of(text).filter_map(list_entry) {
        if seen.insert(idx) {
            super::limits::push_gpu(&mut f, gpu(name.to_string(), None));
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nvidia-smi -L`'s own spelling and gpu_burn's (wilicc/gpu-burn#92:
    /// "GPU 6: NVIDIA H100 80GB HBM3 ...") and a job log's "(...)" elision
    /// (huggingface/huggingface_hub#4134) all name the GPU; an index seen
    /// twice is one GPU, and non-NVIDIA "GPU 0:" lines are not read.
    #[test]
    fn list_lines_name_one_gpu_per_index() {
        let text = "GPU 0: NVIDIA H100 80GB HBM3 ...\n...\nGPU 6: NVIDIA H100 80GB HBM3 ...\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1b2c)\nGPU 1: NVIDIA H200 (...)\nGPU 2: AMD Radeon RX 7900 XTX\nGPU 3: NVIDIA \n";
        assert!(recognise(text));
        let f = parse(text);
        let names: Vec<&str> = f.gpus.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "NVIDIA H100 80GB HBM3",
                "NVIDIA H100 80GB HBM3",
                "NVIDIA H200"
            ]
        );
        assert!(f.gpus.iter().all(|g| g.vendor == Vendor::Nvidia));
        assert!(!recognise(
            "GPU 0: AMD Radeon Graphics\nGPU utilisation: 5%\n"
        ));
    }

    /// nvidia-smi's header fields as people retype them outside the table
    /// (vllm-project/production-stack#528: "Driver Version: 570.133.07" /
    /// "CUDA Version: 12.8") and the head of `nvidia-smi -q` cut before its
    /// GPU section (NVIDIA/nvidia-docker#1674: "Driver Version : 515.65.01"
    /// / "CUDA Version : 11.7") still give the driver version; either field
    /// alone, or another tool's "Driver version", does not.
    #[test]
    fn header_field_lines_give_the_driver_version() {
        for (text, want) in [
            ("Driver Version: 570.133.07\nCUDA Version: 12.8\n", "570.133.07"),
            (
                "==============NVSMI LOG==============\n\nTimestamp                                 : Wed Sep  7 15:26:42 2022\nDriver Version                            : 515.65.01\nCUDA Version                              : 11.7\n",
                "515.65.01",
            ),
        ] {
            assert!(recognise(text), "{text}");
            assert_eq!(parse(text).kernel_driver_version.as_deref(), Some(want));
        }
        assert!(!recognise("Driver Version: 570.133.07\n"));
        assert!(!recognise("  Driver version                                  3635.0 (HSA1.1,LC)\nCUDA Version: 12.8\n"));
    }

    /// CUDA error 802 in the spellings of gpu_burn (wilicc/gpu-burn#92),
    /// PyTorch (huggingface/huggingface_hub#4134) and cuda-samples
    /// (pytorch/pytorch#35710); Fabric Manager's own NV_WARN_NOTHING_TO_DO
    /// on PCIe cards (NVIDIA/gpu-operator#610) is not it.
    #[test]
    fn cuda_802_spellings_are_the_fabric_signal() {
        let id = |l: &str| crate::signals::classify(l).map(|s| s.id.as_str());
        for l in [
            "  what():  Error (gpu_burn-drv.cpp:298): system not yet initialized",
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized",
            "CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) \"cudaSetDevice(currentDevice)\" ",
        ] {
            assert_eq!(id(l), Some("nvidia-fabric-not-ready"), "{l}");
        }
        let fm = "11月 15 14:15:47 leon-NF5468M6 nv-fabricmanager[4177]: request to query NVSwitch device information from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]";
        assert_eq!(id(fm), None);
    }
}
