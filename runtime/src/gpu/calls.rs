//! What the HIP and CUDA drivers do the same way around their library
//! calls: the objects a call creates through an out-parameter, the text it
//! writes into a buffer, the launch's argument list, the PCI identity in
//! sysfs. Each driver passes its own call and its own status check.

use super::driver::GpuError;
use std::ffi::{c_char, c_int, CStr};

/// Runs `f` with an out-parameter for a new object, `check`s its status and
/// returns the object as the address the [`super::driver::Driver`] handles
/// carry.
pub(crate) fn created<T, C>(
    check: impl FnOnce(C) -> Result<(), GpuError>,
    f: impl FnOnce(&mut *mut T) -> C,
) -> Result<usize, GpuError> {
    let mut h: *mut T = std::ptr::null_mut();
    check(f(&mut h))?;
    Ok(h as usize)
}

/// The text a call writes into a buffer of `N` chars, NUL included (it is
/// told `N - 1`, so the zeroed buffer always ends in a NUL).
pub(crate) fn out_text<const N: usize, E>(
    call: impl FnOnce(*mut c_char, c_int) -> Result<(), E>,
) -> Result<String, E> {
    let mut buf = [0 as c_char; N];
    call(buf.as_mut_ptr(), (N - 1) as c_int)?;
    // SAFETY: NUL-terminated within the zeroed buffer.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// A hexadecimal id (`vendor`, `device`) of the PCI device at `bus` from
/// sysfs; 0 where there is none.
pub(crate) fn pci_id(bus: &str, file: &str) -> u32 {
    pci_id_under(std::path::Path::new("/"), bus, file)
}

/// [`pci_id`] under `root`. The address is read by the one PCI address
/// parser and named as sysfs names its directories (CUDA gives upper-case
/// hex, `0000:C1:00.0`, which no sysfs directory is called), and an
/// attribute file is read within a small cap.
fn pci_id_under(root: &std::path::Path, bus: &str, file: &str) -> u32 {
    let Ok(at) = bus.parse::<greta_vocab::PciAddress>() else {
        return 0;
    };
    let at = greta_vocab::PciAddress {
        domain: Some(at.domain.unwrap_or(0)),
        ..at
    };
    let path = root.join(format!("sys/bus/pci/devices/{at}/{file}"));
    greta_fsread::text(&path, 4096)
        .ok()
        .and_then(|t| u32::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok())
        .unwrap_or(0)
}

/// Calls a kernel launch of the `cuLaunchKernel` shape (function, grid x y
/// z, block x y z, dynamic shared bytes, stream, parameters, extra; as
/// `hipModuleLaunchKernel`) with a [`super::driver::Dims`]. Expands to the
/// unsafe call: the caller's `unsafe` block carries its contract.
macro_rules! launch_kernel {
    ($call:expr, $f:expr, $dims:expr, $stream:expr, $params:expr) => {{
        let $crate::gpu::driver::Dims {
            grid: [gx, gy, gz],
            block: [bx, by, bz],
            shared_bytes,
        } = $dims;
        $call(
            $f,
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            shared_bytes,
            $stream,
            $params,
            std::ptr::null_mut(),
        )
    }};
}
pub(crate) use launch_kernel;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_text_reads_up_to_the_nul_and_passes_the_call_error_on() {
        let text = out_text::<16, ()>(|p, len| {
            assert_eq!(len, 15, "room for the NUL");
            for (i, b) in b"GPU 0\0junk".iter().enumerate() {
                // SAFETY: within the 16-char buffer.
                unsafe { *p.add(i) = *b as c_char };
            }
            Ok(())
        });
        assert_eq!(text, Ok("GPU 0".to_string()));
        // A call that writes all it was told to still ends in a NUL.
        let full = out_text::<4, ()>(|p, len| {
            for i in 0..len as usize {
                // SAFETY: within the buffer, the last char left alone.
                unsafe { *p.add(i) = b'x' as c_char };
            }
            Ok(())
        });
        assert_eq!(full, Ok("xxx".to_string()));
        assert_eq!(out_text::<8, &str>(|_, _| Err("failed")), Err("failed"));
    }

    /// The driver's spelling of an address (CUDA's upper case, an
    /// eight-digit domain, none) finds the sysfs directory; text that is no
    /// address, or a path out of sysfs, reads nothing.
    #[test]
    fn pci_ids_are_found_for_every_spelling_of_the_address() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("sys/bus/pci/devices/0000:c1:00.0");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("vendor"), "0x10de\n").unwrap();
        std::fs::write(d.join("device"), "0x2335\n").unwrap();
        for bus in [
            "0000:c1:00.0",
            "0000:C1:00.0",
            "00000000:C1:00.0",
            "c1:00.0",
        ] {
            assert_eq!(pci_id_under(t.path(), bus, "vendor"), 0x10de, "{bus}");
            assert_eq!(pci_id_under(t.path(), bus, "device"), 0x2335, "{bus}");
        }
        for bus in ["", "garbage", "0000:c1:00.0/../../../..", "0000:c2:00.0"] {
            assert_eq!(pci_id_under(t.path(), bus, "vendor"), 0, "{bus}");
        }
    }

    #[test]
    fn pci_ids_come_from_sysfs_and_are_0_where_missing() {
        assert_eq!(pci_id("0000:ff:ff.9-not-there", "vendor"), 0);
        // Any PCI device this machine has reads as its sysfs text says.
        let Some(dev) = std::fs::read_dir("/sys/bus/pci/devices")
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
        else {
            return;
        };
        let bus = dev.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(dev.path().join("vendor")).unwrap();
        let want = u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).unwrap();
        assert_ne!(want, 0);
        assert_eq!(pci_id(&bus, "vendor"), want);
    }
}
