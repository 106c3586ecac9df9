//! amdgpu's `gpu_metrics` sysfs file: a binary table whose first four bytes
//! (`struct metrics_table_header`: u16 structure_size, u8 format_revision,
//! u8 content_revision) name the struct that follows. The layouts are those
//! of `struct gpu_metrics_vF_C` in the Linux kernel's
//! `drivers/gpu/drm/amd/include/kgd_pp_interface.h` (natural C alignment,
//! no packing, little-endian); the offsets below were worked out from that
//! header field by field and each claimed version is tested against a blob
//! built from its struct.
//!
//! Claimed: v1.3 (Radeon dGPUs; ASIC-independent throttle bits), v1.4 and
//! v1.5 (MI300-class), v2.1 and v2.2 (APUs; v2.2 adds the ASIC-independent
//! bits). v1.6 is not claimed: its layout changed between kernel releases
//! under the same version number. An unclaimed version is an error that
//! names it, never a guess.
//!
//! The kernel fills the table with 0xFF before the firmware's values go in,
//! so an all-ones field means "not reported" and decodes to `None`.

use super::Limits;

/// What greta takes from one `gpu_metrics` table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuMetrics {
    pub format: u8,
    pub content: u8,
    /// Hotspot (junction) temperature, °C (v1.x only: the v2.x units are
    /// not stated in the header, so hwmon is read for those).
    pub temp_hotspot_c: Option<f64>,
    /// Socket power, W (v1.x only, as above).
    pub socket_power_w: Option<f64>,
    pub gfxclk_mhz: Option<u32>,
    pub uclk_mhz: Option<u32>,
    /// The ASIC-dependent `throttle_status` as read (kept for the record;
    /// its bits differ per chip, so nothing is concluded from it).
    pub throttle_status: Option<u32>,
    /// The ASIC-independent `indep_throttle_status` folded into families
    /// (v1.3, v2.2); `None` for versions without it.
    pub limits: Option<Limits>,
    /// PCIe lanes and speed in 0.1 GT/s as the firmware reports them.
    pub pcie_width: Option<u32>,
    pub pcie_speed_dgts: Option<u32>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetricsError {
    #[error("gpu_metrics: {len} bytes, shorter than its 4-byte header")]
    NoHeader { len: usize },
    #[error("gpu_metrics v{format}.{content}: a version greta does not decode (decoded: v1.3, v1.4, v1.5, v2.1, v2.2)")]
    Unsupported { format: u8, content: u8 },
    #[error("gpu_metrics v{format}.{content}: header says {declared} bytes, file has {len}; the struct is {expected} bytes")]
    Size {
        format: u8,
        content: u8,
        declared: u16,
        len: usize,
        expected: usize,
    },
}

/// Field offsets of one claimed layout.
struct Layout {
    size: usize,
    /// v1.x: Celsius and Watts (u16).
    temp_hotspot: Option<usize>,
    socket_power: Option<usize>,
    gfxclk: usize,
    uclk: usize,
    throttle: usize,
    indep: Option<usize>,
    pcie_width: Option<usize>,
    pcie_speed: Option<usize>,
}

fn layout(format: u8, content: u8) -> Option<Layout> {
    Some(match (format, content) {
        (1, 3) => Layout {
            size: 120,
            temp_hotspot: Some(6),
            socket_power: Some(22),
            gfxclk: 54,
            uclk: 58,
            throttle: 68,
            indep: Some(112),
            pcie_width: Some(74),
            pcie_speed: Some(76),
        },
        (1, 4) => Layout {
            size: 288,
            temp_hotspot: Some(4),
            socket_power: Some(10),
            gfxclk: 240,
            uclk: 280,
            throttle: 40,
            indep: None,
            pcie_width: Some(48),
            pcie_speed: Some(50),
        },
        // As v1.4 with jpeg_activity[32] (u16) after vcn_activity, and the
        // two PCIe NAK counters (u32) after the replay counters.
        (1, 5) => Layout {
            size: 360,
            temp_hotspot: Some(4),
            socket_power: Some(10),
            gfxclk: 312,
            uclk: 352,
            throttle: 104,
            indep: None,
            pcie_width: Some(112),
            pcie_speed: Some(114),
        },
        (2, 1) | (2, 2) => Layout {
            size: if content == 1 { 120 } else { 128 },
            temp_hotspot: None,
            socket_power: None,
            gfxclk: 76,
            uclk: 80,
            throttle: 108,
            indep: (content == 2).then_some(120),
            pcie_width: None,
            pcie_speed: None,
        },
        _ => return None,
    })
}

fn u16_at(b: &[u8], at: usize) -> Option<u32> {
    let v = u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?);
    (v != u16::MAX).then_some(u32::from(v))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let v = u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?);
    (v != u32::MAX).then_some(v)
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let v = u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?);
    (v != u64::MAX).then_some(v)
}

/// The ASIC-independent throttle bits (`SMU_THROTTLER_*_BIT` in the
/// kernel's `drivers/gpu/drm/amd/pm/swsmu/inc/amdgpu_smu.h`): power 0-7
/// (PPT0-3, SPL, FPPT, SPPT, SPPT_APU), current 16-23 (TDC, EDC, APCC),
/// temperature 32-47 (TEMP_*, VRHOT, PROCHOT), other 56-57 (PPM, FIT).
pub(crate) fn indep_limits(bits: u64) -> Limits {
    let any = |lo: u32, hi: u32| (lo..=hi).any(|b| bits & (1u64 << b) != 0);
    Limits {
        power: any(0, 7),
        current: any(16, 23),
        thermal: any(32, 47),
        other: any(56, 57),
    }
}

/// Decodes a `gpu_metrics` blob by its header.
pub fn decode(b: &[u8]) -> Result<GpuMetrics, MetricsError> {
    if b.len() < 4 {
        return Err(MetricsError::NoHeader { len: b.len() });
    }
    let declared = u16::from_le_bytes([b[0], b[1]]);
    let (format, content) = (b[2], b[3]);
    let l = layout(format, content).ok_or(MetricsError::Unsupported { format, content })?;
    if usize::from(declared) != l.size || b.len() < l.size {
        return Err(MetricsError::Size {
            format,
            content,
            declared,
            len: b.len(),
            expected: l.size,
        });
    }
    Ok(GpuMetrics {
        format,
        content,
        temp_hotspot_c: l.temp_hotspot.and_then(|o| u16_at(b, o)).map(f64::from),
        socket_power_w: l.socket_power.and_then(|o| u16_at(b, o)).map(f64::from),
        gfxclk_mhz: u16_at(b, l.gfxclk),
        uclk_mhz: u16_at(b, l.uclk),
        throttle_status: u32_at(b, l.throttle),
        limits: l.indep.and_then(|o| u64_at(b, o)).map(indep_limits),
        pcie_width: l.pcie_width.and_then(|o| u16_at(b, o)),
        pcie_speed_dgts: l.pcie_speed.and_then(|o| u16_at(b, o)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of `size` bytes filled with 0xFF as the kernel does
    /// (`smu_cmn_init_soft_gpu_metrics`), then the header.
    fn blank(size: u16, f: u8, c: u8) -> Vec<u8> {
        let mut b = vec![0xFF; usize::from(size)];
        b[..2].copy_from_slice(&size.to_le_bytes());
        b[2] = f;
        b[3] = c;
        b
    }
    fn put16(b: &mut [u8], at: usize, v: u16) {
        b[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }
    fn put32(b: &mut [u8], at: usize, v: u32) {
        b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn put64(b: &mut [u8], at: usize, v: u64) {
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }

    // The offsets written here are counted independently from the kernel's
    // struct text (listed per field), not copied from `layout`.

    /// struct gpu_metrics_v1_3: hotspot is the 2nd u16 after the header
    /// (4+2), average_socket_power the 10th (4+9*2=22), then u64 energy @24,
    /// u64 system_clock_counter @32, 7 average clocks @40..54,
    /// current_gfxclk @54, socclk @56, uclk @58, ... throttle_status @68,
    /// fan @72, pcie width @74, speed @76, padding @78, 2 u32 @80, hbm[4]
    /// @88, u64 firmware_timestamp @96, 3 voltages + padding1 @104..112,
    /// u64 indep_throttle_status @112; sizeof 120.
    #[test]
    fn v1_3_radeon_dgpu() {
        let mut b = blank(120, 1, 3);
        put16(&mut b, 6, 91);
        put16(&mut b, 22, 287);
        put16(&mut b, 54, 2480);
        put16(&mut b, 58, 1250);
        put32(&mut b, 68, 0x10);
        put16(&mut b, 74, 16);
        put16(&mut b, 76, 160);
        put64(&mut b, 112, 1 << 4 | 1 << 36); // SPL + TEMP_HOTSPOT
        let m = decode(&b).unwrap();
        assert_eq!(m.temp_hotspot_c, Some(91.0));
        assert_eq!(m.socket_power_w, Some(287.0));
        assert_eq!((m.gfxclk_mhz, m.uclk_mhz), (Some(2480), Some(1250)));
        assert_eq!(m.throttle_status, Some(0x10));
        assert_eq!((m.pcie_width, m.pcie_speed_dgts), (Some(16), Some(160)));
        let l = m.limits.unwrap();
        assert!(l.power && l.thermal && !l.current && !l.other);
    }

    /// struct gpu_metrics_v1_4: 3 temps @4..10, curr_socket_power @10,
    /// 2 activities @12..16, vcn_activity[4] @16..24, u64 energy @24, u64
    /// clock counter @32, throttle_status @40, gfxclk_lock @44, pcie width
    /// @48 speed @50, xgmi @52..56, 2 u32 acc @56..64, 5 u64 pcie @64..104,
    /// xgmi read/write [8] u64 @104..232, u64 fw ts @232, current_gfxclk[8]
    /// @240, socclk[4] @256, vclk0[4] @264, dclk0[4] @272, uclk @280,
    /// padding @282; sizeof 288 (284 rounded to 8).
    #[test]
    fn v1_4_mi300() {
        let mut b = blank(288, 1, 4);
        put16(&mut b, 4, 78);
        put16(&mut b, 10, 702);
        put32(&mut b, 40, 0);
        put16(&mut b, 48, 16);
        put16(&mut b, 50, 320);
        put16(&mut b, 240, 2100);
        put16(&mut b, 280, 1300);
        let m = decode(&b).unwrap();
        assert_eq!(m.socket_power_w, Some(702.0));
        assert_eq!(m.temp_hotspot_c, Some(78.0));
        assert_eq!((m.gfxclk_mhz, m.uclk_mhz), (Some(2100), Some(1300)));
        assert_eq!((m.pcie_width, m.pcie_speed_dgts), (Some(16), Some(320)));
        assert_eq!(m.throttle_status, Some(0));
        assert_eq!(m.limits, None, "v1.4 has no ASIC-independent bits");
    }

    /// struct gpu_metrics_v1_5: as v1.4 plus jpeg_activity[32] u16 @24..88,
    /// so u64 energy @88, counter @96, throttle_status @104, lock @108, pcie
    /// width @112 speed @114, xgmi @116..120, 2 u32 @120..128, 5 u64
    /// @128..168, 2 u32 NAK @168..176, xgmi [8]+[8] u64 @176..304, fw ts
    /// @304, current_gfxclk[8] @312, socclk @328, vclk0 @336, dclk0 @344,
    /// uclk @352, padding @354; sizeof 360 (356 rounded to 8).
    #[test]
    fn v1_5_mi300() {
        let mut b = blank(360, 1, 5);
        put16(&mut b, 10, 650);
        put32(&mut b, 104, 0);
        put16(&mut b, 112, 8);
        put16(&mut b, 114, 160);
        put16(&mut b, 312, 1900);
        put16(&mut b, 352, 1300);
        let m = decode(&b).unwrap();
        assert_eq!(m.socket_power_w, Some(650.0));
        assert_eq!((m.pcie_width, m.pcie_speed_dgts), (Some(8), Some(160)));
        assert_eq!((m.gfxclk_mhz, m.uclk_mhz), (Some(1900), Some(1300)));
        assert_eq!(m.temp_hotspot_c, None, "left at 0xFFFF: not reported");
    }

    /// struct gpu_metrics_v2_1 / v2_2: temps gfx,soc @4,6, core[8] @8..24,
    /// l3[2] @24..28, 2 activities @28..32, u64 counter @32, 4 powers @40..48,
    /// core_power[8] @48..64, 6 average clocks @64..76, current_gfxclk @76,
    /// socclk @78, uclk @80, fclk, vclk, dclk @82..88, coreclk[8] @88..104,
    /// l3clk[2] @104..108, throttle_status @108, fan_pwm @112, padding[3]
    /// @114..120 (v2.1 ends: 120); v2.2 adds u64 indep_throttle_status @120
    /// (128).
    #[test]
    fn v2_1_and_v2_2_apu() {
        let mut b = blank(120, 2, 1);
        put16(&mut b, 76, 2700);
        put16(&mut b, 80, 2800);
        put32(&mut b, 108, 0x4);
        let m = decode(&b).unwrap();
        assert_eq!((m.gfxclk_mhz, m.uclk_mhz), (Some(2700), Some(2800)));
        assert_eq!((m.throttle_status, m.limits), (Some(4), None));

        let mut b = blank(128, 2, 2);
        put16(&mut b, 76, 800);
        put64(&mut b, 120, 1 << 16); // TDC_GFX
        let m = decode(&b).unwrap();
        assert_eq!(m.gfxclk_mhz, Some(800));
        let l = m.limits.unwrap();
        assert!(l.current && !l.power && !l.thermal);
    }

    #[test]
    fn unknown_version_short_blob_and_wrong_size_are_errors() {
        assert_eq!(decode(&[1, 0]), Err(MetricsError::NoHeader { len: 2 }));
        assert!(matches!(
            decode(&blank(1664, 1, 6)),
            Err(MetricsError::Unsupported {
                format: 1,
                content: 6
            })
        ));
        let mut b = blank(120, 1, 3);
        b.truncate(100);
        let e = decode(&b).unwrap_err();
        assert!(e.to_string().contains("file has 100"), "{e}");
        // A header that lies about the size (v1.5 declared as 328 bytes).
        let b = blank(328, 1, 5);
        assert!(matches!(decode(&b), Err(MetricsError::Size { .. })));
    }
}
