//! NVIDIA's management library (libnvidia-ml), opened at run time through
//! the same search as libcuda and cuBLAS ([`crate::locate`]), never
//! linked: greta starts on machines without it. Only functions of the
//! stable NVML C API are called, each looked up by name; one a driver does
//! not export leaves its fact `None` rather than failing the rest.
//! `nvmlDeviceGetCurrentClocksEventReasons` (drivers from 535) falls back to
//! its older name `nvmlDeviceGetCurrentClocksThrottleReasons`.

use super::{Counter, Limits, Link, LinkState, Reading, Source};
use crate::locate::{self, open_first, Loaded, SearchEnv};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::Arc;

type Ret = c_int;
type Dev = *mut c_void;
const SUCCESS: Ret = 0;

// nvml.h: nvmlClocksEventReason* bit values.
const REASON_APP_CLOCKS: u64 = 0x2;
const REASON_SW_POWER_CAP: u64 = 0x4;
const REASON_HW_SLOWDOWN: u64 = 0x8;
const REASON_SYNC_BOOST: u64 = 0x10;
const REASON_SW_THERMAL: u64 = 0x20;
const REASON_HW_THERMAL: u64 = 0x40;
const REASON_HW_POWER_BRAKE: u64 = 0x80;
const REASON_DISPLAY_CLOCK: u64 = 0x100;

// nvml.h enums.
const CLOCK_SM: c_uint = 1;
const CLOCK_MEM: c_uint = 2;
const TEMPERATURE_GPU: c_uint = 0;
const ECC_CORRECTED: c_uint = 0;
const ECC_UNCORRECTED: c_uint = 1;
const ECC_VOLATILE: c_uint = 0;
const ECC_AGGREGATE: c_uint = 1;

/// NVML's clock-event reasons folded into greta's families. "GPU idle" is
/// no limit; a hardware slowdown (the board's power brake or thermal
/// signal, not told apart by NVML), sync boost, application or display
/// clocks are `other`.
pub fn limits_of_reasons(bits: u64) -> Limits {
    Limits {
        power: bits & (REASON_SW_POWER_CAP | REASON_HW_POWER_BRAKE) != 0,
        thermal: bits & (REASON_SW_THERMAL | REASON_HW_THERMAL) != 0,
        current: false,
        other: bits
            & (REASON_HW_SLOWDOWN | REASON_SYNC_BOOST | REASON_APP_CLOCKS | REASON_DISPLAY_CLOCK)
            != 0,
    }
}

struct Fns {
    shutdown: unsafe extern "C" fn() -> Ret,
    count: unsafe extern "C" fn(*mut c_uint) -> Ret,
    by_index: unsafe extern "C" fn(c_uint, *mut Dev) -> Ret,
    error_string: Option<unsafe extern "C" fn(Ret) -> *const c_char>,
    uuid: Option<unsafe extern "C" fn(Dev, *mut c_char, c_uint) -> Ret>,
    reasons: Option<unsafe extern "C" fn(Dev, *mut u64) -> Ret>,
    power: Option<unsafe extern "C" fn(Dev, *mut c_uint) -> Ret>,
    limit: Option<unsafe extern "C" fn(Dev, *mut c_uint) -> Ret>,
    temp: Option<unsafe extern "C" fn(Dev, c_uint, *mut c_uint) -> Ret>,
    clock: Option<unsafe extern "C" fn(Dev, c_uint, *mut c_uint) -> Ret>,
    ecc: Option<unsafe extern "C" fn(Dev, c_uint, c_uint, *mut u64) -> Ret>,
    remapped: Option<
        unsafe extern "C" fn(Dev, *mut c_uint, *mut c_uint, *mut c_uint, *mut c_uint) -> Ret,
    >,
    cur_gen: Option<unsafe extern "C" fn(Dev, *mut c_uint) -> Ret>,
    cur_width: Option<unsafe extern "C" fn(Dev, *mut c_uint) -> Ret>,
    max_gen: Option<unsafe extern "C" fn(Dev, *mut c_uint) -> Ret>,
    max_width: Option<unsafe extern "C" fn(Dev, *mut c_uint) -> Ret>,
}

/// The opened and initialised NVML.
pub struct Nvml {
    f: Fns,
    pub loaded: Loaded,
    // Last: the functions above point into it.
    _lib: libloading::Library,
}

// SAFETY: NVML is documented thread-safe; the struct holds only function
// pointers into a library that stays loaded while it lives.
unsafe impl Send for Nvml {}
// SAFETY: as above.
unsafe impl Sync for Nvml {}

/// Looks `name` up as a `T` (a C function pointer type).
///
/// # Safety
/// `T` must be the symbol's real signature.
unsafe fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
    let z = format!("{name}\0");
    // SAFETY: the caller vouches for the type.
    unsafe { lib.get::<T>(z.as_bytes()) }.ok().map(|s| *s)
}

impl Nvml {
    /// Opens libnvidia-ml (the loader's names) and calls `nvmlInit_v2`.
    pub fn open() -> Result<Nvml, String> {
        let candidates = locate::by_names(
            &SearchEnv::live(),
            &["libnvidia-ml.so.1", "libnvidia-ml.so"],
        );
        let (lib, loaded) = open_first("NVML", &candidates)
            .map_err(|looked| format!("NVML not found: {}", looked.join("; ")))?;
        // SAFETY: each type below is the NVML C signature of that name.
        let f = unsafe {
            let need = |n: &str| format!("{}: {n} missing", loaded.path.display());
            let init: unsafe extern "C" fn() -> Ret =
                sym(&lib, "nvmlInit_v2").ok_or_else(|| need("nvmlInit_v2"))?;
            let ret = init();
            if ret != SUCCESS {
                return Err(format!("nvmlInit_v2 failed: NVML error {ret}"));
            }
            Fns {
                shutdown: sym(&lib, "nvmlShutdown").ok_or_else(|| need("nvmlShutdown"))?,
                count: sym(&lib, "nvmlDeviceGetCount_v2")
                    .ok_or_else(|| need("nvmlDeviceGetCount_v2"))?,
                by_index: sym(&lib, "nvmlDeviceGetHandleByIndex_v2")
                    .ok_or_else(|| need("nvmlDeviceGetHandleByIndex_v2"))?,
                error_string: sym(&lib, "nvmlErrorString"),
                uuid: sym(&lib, "nvmlDeviceGetUUID"),
                reasons: sym(&lib, "nvmlDeviceGetCurrentClocksEventReasons")
                    .or_else(|| sym(&lib, "nvmlDeviceGetCurrentClocksThrottleReasons")),
                power: sym(&lib, "nvmlDeviceGetPowerUsage"),
                limit: sym(&lib, "nvmlDeviceGetEnforcedPowerLimit"),
                temp: sym(&lib, "nvmlDeviceGetTemperature"),
                clock: sym(&lib, "nvmlDeviceGetClockInfo"),
                ecc: sym(&lib, "nvmlDeviceGetTotalEccErrors"),
                remapped: sym(&lib, "nvmlDeviceGetRemappedRows"),
                cur_gen: sym(&lib, "nvmlDeviceGetCurrPcieLinkGeneration"),
                cur_width: sym(&lib, "nvmlDeviceGetCurrPcieLinkWidth"),
                max_gen: sym(&lib, "nvmlDeviceGetMaxPcieLinkGeneration"),
                max_width: sym(&lib, "nvmlDeviceGetMaxPcieLinkWidth"),
            }
        };
        Ok(Nvml {
            f,
            loaded,
            _lib: lib,
        })
    }

    fn err(&self, what: &str, ret: Ret) -> String {
        let text = self
            .f
            .error_string
            // SAFETY: nvmlErrorString returns a static C string (or null).
            .map(|e| unsafe { e(ret) })
            .filter(|p| !p.is_null())
            // SAFETY: non-null, NUL-terminated, static.
            .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("NVML error {ret}"));
        format!("{what}: {text}")
    }

    /// `nvmlDeviceGetCount_v2`: every GPU NVML sees.
    pub fn count(&self) -> Result<u32, String> {
        let mut n: c_uint = 0;
        // SAFETY: a valid out pointer.
        let ret = unsafe { (self.f.count)(&mut n) };
        if ret != SUCCESS {
            return Err(self.err("nvmlDeviceGetCount_v2", ret));
        }
        Ok(n)
    }

    fn handle(&self, index: u32) -> Result<Dev, String> {
        let mut h: Dev = std::ptr::null_mut();
        // SAFETY: a valid out pointer.
        let ret = unsafe { (self.f.by_index)(index, &mut h) };
        if ret != SUCCESS {
            return Err(self.err(&format!("nvmlDeviceGetHandleByIndex_v2({index})"), ret));
        }
        Ok(h)
    }

    /// NVML's index of the GPU whose UUID is `uuid` (8-4-4-4-12 hex, as
    /// CUDA and Vulkan give it; NVML's own form adds a `GPU-` prefix).
    pub fn index_of_uuid(&self, uuid: &str) -> Option<u32> {
        let f = self.f.uuid?;
        (0..self.count().ok()?).find(|&i| {
            let Ok(h) = self.handle(i) else { return false };
            // NVML_DEVICE_UUID_V2_BUFFER_SIZE is 96.
            let mut buf = [0 as c_char; 96];
            // SAFETY: a handle from NVML and a buffer of the stated length.
            if unsafe { f(h, buf.as_mut_ptr(), buf.len() as c_uint) } != SUCCESS {
                return false;
            }
            // SAFETY: NVML NUL-terminates within the buffer on success.
            let got = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
            got.trim_start_matches("GPU-").eq_ignore_ascii_case(uuid)
        })
    }

    /// One value of a `fn(dev, *mut c_uint)` query; `None` when the function
    /// is absent or the device does not support it.
    fn uint(f: Option<unsafe extern "C" fn(Dev, *mut c_uint) -> Ret>, h: Dev) -> Option<u32> {
        let mut v: c_uint = 0;
        // SAFETY: a handle from NVML and a valid out pointer.
        (unsafe { f?(h, &mut v) } == SUCCESS).then_some(v)
    }

    fn arg_uint(
        f: Option<unsafe extern "C" fn(Dev, c_uint, *mut c_uint) -> Ret>,
        h: Dev,
        arg: c_uint,
    ) -> Option<u32> {
        let mut v: c_uint = 0;
        // SAFETY: as above.
        (unsafe { f?(h, arg, &mut v) } == SUCCESS).then_some(v)
    }

    /// One reading of GPU `index` (NVML's numbering).
    pub fn reading(&self, index: u32) -> Result<Reading, String> {
        let h = self.handle(index)?;
        let reasons = self.f.reasons.and_then(|f| {
            let mut bits = 0u64;
            // SAFETY: as above.
            (unsafe { f(h, &mut bits) } == SUCCESS).then_some(bits)
        });
        let link = match (
            Self::uint(self.f.cur_gen, h),
            Self::uint(self.f.cur_width, h),
        ) {
            (Some(gen), Some(width)) => Some(LinkState { gen, width }),
            _ => None,
        };
        Ok(Reading {
            device: format!("nvml:{index}"),
            power_w: Self::uint(self.f.power, h).map(|mw| f64::from(mw) / 1e3),
            power_limit_w: Self::uint(self.f.limit, h).map(|mw| f64::from(mw) / 1e3),
            temp_c: Self::arg_uint(self.f.temp, h, TEMPERATURE_GPU).map(f64::from),
            sm_mhz: Self::arg_uint(self.f.clock, h, CLOCK_SM),
            mem_mhz: Self::arg_uint(self.f.clock, h, CLOCK_MEM),
            limits: reasons.map(limits_of_reasons),
            link,
        })
    }

    /// The link now and the most the device can train to.
    pub fn link(&self, index: u32) -> Option<Link> {
        let h = self.handle(index).ok()?;
        Some(Link {
            current: LinkState {
                gen: Self::uint(self.f.cur_gen, h)?,
                width: Self::uint(self.f.cur_width, h)?,
            },
            max: LinkState {
                gen: Self::uint(self.f.max_gen, h)?,
                width: Self::uint(self.f.max_width, h)?,
            },
        })
    }

    /// ECC counts (uncorrected and corrected, volatile and aggregate) and
    /// remapped rows. A device without ECC reports none; the second list
    /// names queries that failed for another reason.
    pub fn counters(&self, index: u32) -> (Vec<Counter>, Vec<String>) {
        let mut out = Vec::new();
        let mut bad = Vec::new();
        let h = match self.handle(index) {
            Ok(h) => h,
            Err(e) => return (out, vec![e]),
        };
        let device = format!("nvml:{index}");
        let mut push = |block: &str, kind: &str, value: u64| {
            out.push(Counter {
                device: device.clone(),
                block: block.into(),
                kind: kind.into(),
                value,
            })
        };
        if let Some(ecc) = self.f.ecc {
            for (et, en) in [
                (ECC_UNCORRECTED, "uncorrected"),
                (ECC_CORRECTED, "corrected"),
            ] {
                for (ct, cn) in [(ECC_VOLATILE, "volatile"), (ECC_AGGREGATE, "aggregate")] {
                    let mut v = 0u64;
                    // SAFETY: as above.
                    match unsafe { ecc(h, et, ct, &mut v) } {
                        SUCCESS => push("ECC", &format!("{en} ({cn})"), v),
                        // NOT_SUPPORTED: no ECC on this device (or it is off).
                        3 => {}
                        ret => bad.push(self.err("nvmlDeviceGetTotalEccErrors", ret)),
                    }
                }
            }
        }
        if let Some(rr) = self.f.remapped {
            let (mut corr, mut unc, mut pending, mut failed) = (0, 0, 0, 0);
            // SAFETY: as above.
            match unsafe { rr(h, &mut corr, &mut unc, &mut pending, &mut failed) } {
                SUCCESS => {
                    push("remapped rows", "correctable", u64::from(corr));
                    push("remapped rows", "uncorrectable", u64::from(unc));
                    push("remapped rows", "pending", u64::from(pending));
                    push("remapped rows", "remapping failed", u64::from(failed));
                }
                3 => {}
                ret => bad.push(self.err("nvmlDeviceGetRemappedRows", ret)),
            }
        }
        (out, bad)
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: paired with the nvmlInit_v2 of `open`.
        unsafe { (self.f.shutdown)() };
    }
}

/// NVML as a sampler source: every GPU it counts.
pub struct NvmlSource {
    nvml: Arc<Nvml>,
    indices: Vec<u32>,
}

impl NvmlSource {
    pub fn new(nvml: Arc<Nvml>) -> Result<NvmlSource, String> {
        let count = nvml.count()?;
        Ok(NvmlSource {
            nvml,
            indices: (0..count).collect(),
        })
    }

    /// Only the GPU of NVML index `index`.
    pub fn only(nvml: Arc<Nvml>, index: u32) -> NvmlSource {
        NvmlSource {
            nvml,
            indices: vec![index],
        }
    }
}

impl Source for NvmlSource {
    fn sample(&mut self) -> Vec<Reading> {
        self.indices
            .iter()
            .filter_map(|&i| self.nvml.reading(i).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_fold_into_families() {
        assert_eq!(
            limits_of_reasons(0x1),
            Limits::default(),
            "idle is no limit"
        );
        let l = limits_of_reasons(0x4);
        assert!(l.power && !l.thermal && !l.other);
        assert!(limits_of_reasons(0x80).power);
        assert!(limits_of_reasons(0x20).thermal && limits_of_reasons(0x40).thermal);
        assert!(limits_of_reasons(0x8).other && !limits_of_reasons(0x8).power);
    }
}
