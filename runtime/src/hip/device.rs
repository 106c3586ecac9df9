//! Which HIP GPU is there, what it is, and — when there is none — why.

use super::error::{check, error_name, HipError};
use hip_sys::hiprt::{self, hipDeviceAttribute_t, hipError_t};
use serde::Serialize;
use std::path::Path;

/// What greta records about a HIP device (also what the results file shows).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HipDeviceInfo {
    pub ordinal: i32,
    pub name: String,
    /// Full target id as the runtime reports it, e.g. `gfx90a:sramecc+:xnack-`.
    pub gcn_arch_name: String,
    /// The processor part of the target id (`gfx90a`): what kernels are built for.
    pub gfx: String,
    pub compute_units: u32,
    pub total_memory_bytes: u64,
    pub warp_size: u32,
    pub max_shared_memory_per_block: u64,
    pub max_threads_per_block: u32,
    pub max_grid: [u32; 3],
    /// An APU sharing system memory (e.g. Radeon 760M) rather than a discrete card.
    pub integrated: bool,
    /// `0000:c1:00.0`, when the runtime reports it.
    pub pci_bus_id: String,
    /// PCI vendor/device ids read from sysfs at `pci_bus_id` (0 when unknown).
    pub pci_vendor_id: u32,
    pub pci_device_id: u32,
    /// 32 hex digits, empty when the runtime has none.
    pub uuid: String,
    /// `hipRuntimeGetVersion`, e.g. 50221153 for ROCm 5.2.
    pub runtime_version: i32,
    pub driver_version: i32,
}

/// `gfx90a:sramecc+:xnack-` → `gfx90a`: kernels built for the bare processor
/// run whatever the xnack/sramecc mode, so that is what greta compiles for.
pub fn processor_of(target_id: &str) -> &str {
    target_id.split(':').next().unwrap_or(target_id).trim()
}

/// Number of HIP devices, or [`HipError::NoDevice`] explaining why there are none.
pub fn device_count() -> Result<i32, HipError> {
    let mut n: libc::c_int = 0;
    // SAFETY: plain out-parameter call.
    let e = unsafe { hiprt::hipGetDeviceCount(&mut n) };
    if e == hipError_t::hipErrorNoDevice || (e == hipError_t::hipSuccess && n == 0) {
        let detail = if e == hipError_t::hipSuccess {
            "hipGetDeviceCount returned 0 devices".to_string()
        } else {
            format!(
                "hipGetDeviceCount returned {} ({})",
                error_name(e),
                e as i32
            )
        };
        return Err(HipError::NoDevice {
            detail,
            why: diagnose_no_device(Path::new("/"), &env_snapshot()),
        });
    }
    check("hipGetDeviceCount", e)?;
    Ok(n)
}

fn attribute(attr: hipDeviceAttribute_t, ordinal: i32) -> Result<i32, HipError> {
    let mut v: libc::c_int = 0;
    // SAFETY: out-parameter call on an ordinal below hipGetDeviceCount.
    check("hipDeviceGetAttribute", unsafe {
        hiprt::hipDeviceGetAttribute(&mut v, attr, ordinal)
    })?;
    Ok(v)
}

/// `hipDeviceProp_t` grew and was renamed (R0600) in ROCm 6 while the
/// bindings describe the 5.x layout, so the runtime writes into a buffer far
/// larger than any known layout, and only the name fields are read from it —
/// and checked — while numbers come from `hipDeviceGetAttribute`.
#[repr(C)]
union PropsBuffer {
    props: std::mem::ManuallyDrop<hiprt::hipDeviceProp_t>,
    _room: [u8; 16384],
}

pub fn query(ordinal: i32) -> Result<HipDeviceInfo, HipError> {
    // SAFETY: zeroed POD buffer larger than hipDeviceProp_t of any ROCm version.
    let mut buf: Box<PropsBuffer> = Box::new(unsafe { std::mem::zeroed() });
    // SAFETY: the runtime fills at most sizeof(its hipDeviceProp_t) bytes.
    check("hipGetDeviceProperties", unsafe {
        hiprt::hipGetDeviceProperties(&mut *buf.props, ordinal)
    })?;
    // SAFETY: the union was zeroed, so both arrays are NUL-terminated within bounds.
    let (name, arch) = unsafe {
        let p = &*buf.props;
        (c_chars(&p.name), c_chars(&p.gcnArchName))
    };
    let arch = if arch.starts_with("gfx") {
        arch
    } else {
        // Layout mismatch (a future ROCm) or an old runtime: the name is
        // still first; the target is derived from the legacy number.
        let legacy =
            attribute(hipDeviceAttribute_t::hipDeviceAttributeGcnArch, ordinal).unwrap_or(0);
        if legacy > 0 {
            format!("gfx{legacy}")
        } else {
            return Err(HipError::Device(format!(
                "device {ordinal} ({name}) reports no gcnArchName; this ROCm's hipDeviceProp_t layout is not one greta knows"
            )));
        }
    };
    let mut runtime_version = 0;
    let mut driver_version = 0;
    // SAFETY: out-parameter calls.
    unsafe {
        check(
            "hipRuntimeGetVersion",
            hiprt::hipRuntimeGetVersion(&mut runtime_version),
        )?;
        check(
            "hipDriverGetVersion",
            hiprt::hipDriverGetVersion(&mut driver_version),
        )?;
    }
    let mut total: usize = 0;
    // SAFETY: out-parameter call.
    check("hipDeviceTotalMem", unsafe {
        hiprt::hipDeviceTotalMem(&mut total, ordinal)
    })?;
    let pci_bus_id = pci_bus_id(ordinal);
    let sysfs = |f: &str| -> u32 {
        std::fs::read_to_string(format!(
            "/sys/bus/pci/devices/{}/{f}",
            pci_bus_id.to_lowercase()
        ))
        .ok()
        .and_then(|t| u32::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok())
        .unwrap_or(0)
    };
    let a = |attr| attribute(attr, ordinal);
    use hipDeviceAttribute_t as A;
    Ok(HipDeviceInfo {
        max_threads_per_block: a(A::hipDeviceAttributeMaxThreadsPerBlock)? as u32,
        max_grid: [
            a(A::hipDeviceAttributeMaxGridDimX)? as u32,
            a(A::hipDeviceAttributeMaxGridDimY)? as u32,
            a(A::hipDeviceAttributeMaxGridDimZ)? as u32,
        ],
        integrated: a(A::hipDeviceAttributeIntegrated).unwrap_or(0) != 0,
        pci_vendor_id: sysfs("vendor"),
        pci_device_id: sysfs("device"),
        pci_bus_id,
        uuid: uuid(ordinal),
        ordinal,
        name,
        gfx: processor_of(&arch).to_string(),
        gcn_arch_name: arch,
        compute_units: attribute(
            hipDeviceAttribute_t::hipDeviceAttributeMultiprocessorCount,
            ordinal,
        )? as u32,
        total_memory_bytes: total as u64,
        warp_size: attribute(hipDeviceAttribute_t::hipDeviceAttributeWarpSize, ordinal)? as u32,
        max_shared_memory_per_block: attribute(
            hipDeviceAttribute_t::hipDeviceAttributeMaxSharedMemoryPerBlock,
            ordinal,
        )? as u64,
        runtime_version,
        driver_version,
    })
}

fn pci_bus_id(ordinal: i32) -> String {
    let mut buf = [0 as libc::c_char; 64];
    // SAFETY: the runtime writes at most `len` bytes, NUL included.
    let e = unsafe {
        hiprt::hipDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as libc::c_int - 1, ordinal)
    };
    if e == hipError_t::hipSuccess {
        c_chars(&buf)
    } else {
        String::new()
    }
}

fn uuid(ordinal: i32) -> String {
    // SAFETY: zeroed POD out-parameter.
    let mut u: hiprt::hipUUID = unsafe { std::mem::zeroed() };
    // SAFETY: out-parameter call.
    if unsafe { hiprt::hipDeviceGetUuid(&mut u, ordinal) } != hipError_t::hipSuccess {
        return String::new();
    }
    let hex: String = u
        .bytes
        .iter()
        .map(|&b| format!("{:02x}", b as u8))
        .collect();
    if hex.chars().all(|c| c == '0') {
        String::new()
    } else {
        hex
    }
}

fn c_chars(a: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = a
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// The HIP runtime's version as `major.minor.patch` (from 50221153 → 5.2.21153).
pub fn version_string(v: i32) -> String {
    format!("{}.{}.{}", v / 10_000_000, (v / 100_000) % 100, v % 100_000)
}

/// Environment variables that hide GPUs from HIP.
pub fn env_snapshot() -> Vec<(String, String)> {
    [
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
        "GPU_DEVICE_ORDINAL",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
    .collect()
}

/// Explains an empty device list from what the machine shows under `root`
/// (`/` live; a fake tree in tests): the KFD device node, the KFD topology's
/// GPU nodes, render nodes, and variables that hide devices.
pub fn diagnose_no_device(root: &Path, env: &[(String, String)]) -> String {
    let mut why = Vec::new();
    let kfd = root.join("dev/kfd");
    let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
    let gpu_nodes: Vec<String> = std::fs::read_dir(&nodes)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::read_to_string(e.path().join("properties")).ok())
                .filter_map(|p| gfx_of_kfd_properties(&p))
                .collect()
        })
        .unwrap_or_default();
    if !root.join("sys/class/kfd").exists() && !kfd.exists() {
        why.push(
            "the amdgpu kernel driver's compute interface (KFD) is absent: /dev/kfd and /sys/class/kfd do not exist \
             (no AMD GPU in this machine, amdgpu not loaded, or a container started without --device /dev/kfd --device /dev/dri)"
                .to_string(),
        );
    } else if !kfd.exists() {
        why.push(
            "/sys/class/kfd exists but /dev/kfd does not (a container without --device /dev/kfd?)"
                .to_string(),
        );
    } else {
        match std::fs::OpenOptions::new().read(true).write(true).open(&kfd) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => why.push(format!(
                "{} exists but this user cannot open it ({e}): add the user to the render and video groups and log in again",
                kfd.display()
            )),
            _ => {}
        }
        if gpu_nodes.is_empty() {
            why.push(format!(
                "the KFD topology ({}) lists no GPU node (CPU agents only)",
                nodes.display()
            ));
        } else {
            why.push(format!(
                "the KFD topology lists GPU node(s) {}, yet HIP found none",
                gpu_nodes.join(", ")
            ));
        }
    }
    for (k, v) in env {
        why.push(format!("{k}={v} is set and may hide devices"));
    }
    why.join("; ")
}

/// `gfx_target_version 90010` → `gfx90a`; CPU nodes (0) → None.
pub fn gfx_of_kfd_properties(text: &str) -> Option<String> {
    let v: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("gfx_target_version "))
        .and_then(|v| v.trim().parse().ok())?;
    if v == 0 {
        return None;
    }
    let (major, minor, step) = (v / 10000, (v / 100) % 100, v % 100);
    Some(format!("gfx{major}{minor}{step:x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_ids() {
        assert_eq!(processor_of("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(processor_of("gfx1103"), "gfx1103");
        assert_eq!(version_string(50221153), "5.2.21153");
        assert_eq!(version_string(60342134), "6.3.42134");
        assert_eq!(
            gfx_of_kfd_properties("cpu_cores_count 8\ngfx_target_version 0\n"),
            None
        );
        assert_eq!(
            gfx_of_kfd_properties("gfx_target_version 90010\n").as_deref(),
            Some("gfx90a")
        );
        assert_eq!(
            gfx_of_kfd_properties("gfx_target_version 90402\n").as_deref(),
            Some("gfx942")
        );
        assert_eq!(
            gfx_of_kfd_properties("gfx_target_version 110003\n").as_deref(),
            Some("gfx1103")
        );
    }

    #[test]
    fn no_kfd_at_all_is_explained() {
        let root = tempfile::tempdir().unwrap();
        let why = diagnose_no_device(root.path(), &[]);
        assert!(
            why.contains("/dev/kfd and /sys/class/kfd do not exist"),
            "{why}"
        );
        let why = diagnose_no_device(root.path(), &[("HIP_VISIBLE_DEVICES".into(), "-1".into())]);
        assert!(why.contains("HIP_VISIBLE_DEVICES=-1 is set"), "{why}");
    }

    #[test]
    fn kfd_with_cpu_nodes_only_is_explained() {
        let root = tempfile::tempdir().unwrap();
        let node = root.path().join("sys/class/kfd/kfd/topology/nodes/0");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("properties"), "gfx_target_version 0\n").unwrap();
        std::fs::create_dir_all(root.path().join("dev")).unwrap();
        std::fs::write(root.path().join("dev/kfd"), "").unwrap();
        let why = diagnose_no_device(root.path(), &[]);
        assert!(why.contains("lists no GPU node"), "{why}");
        let gpu = root.path().join("sys/class/kfd/kfd/topology/nodes/1");
        std::fs::create_dir_all(&gpu).unwrap();
        std::fs::write(
            gpu.join("properties"),
            "simd_count 1216\ngfx_target_version 90402\n",
        )
        .unwrap();
        let why = diagnose_no_device(root.path(), &[]);
        assert!(
            why.contains("GPU node(s) gfx942, yet HIP found none"),
            "{why}"
        );
    }

    #[test]
    fn this_machine_has_no_hip_device_and_says_why() {
        // No AMD GPU exists where these tests run; on a machine with one this
        // test instead checks that the query returns a plausible device.
        match device_count() {
            Err(e) => {
                let msg = e.to_string();
                assert!(e.is_no_device(), "{msg}");
                assert!(
                    msg.starts_with("no HIP device found: hipGetDeviceCount returned"),
                    "{msg}"
                );
            }
            Ok(n) => {
                assert!(n > 0);
                let info = query(0).unwrap();
                assert!(
                    info.gfx.starts_with("gfx") && info.compute_units > 0,
                    "{info:?}"
                );
            }
        }
    }
}
