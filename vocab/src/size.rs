//! Sizes for people: one spelling of a byte count wherever greta prints
//! one (a plan's wheels, a lock's total, a bundle, the doctor's VRAM).

/// Bytes in binary units with one decimal (`512 B`, `1.5 KiB`, `3.0 MiB`,
/// `5.0 GiB`, up to TiB): downloads, caches, files.
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// Device memory as the doctor speaks of it: GiB with one decimal from
/// 1 GiB, else whole MiB (an APU's carve-out: `512 MiB`).
pub fn memory(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", b >> 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_are_in_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
        assert_eq!(bytes(5 << 30), "5.0 GiB");
        assert_eq!(bytes(3 << 40), "3.0 TiB");
        assert_eq!(bytes(u64::MAX), "16777216.0 TiB");
    }

    #[test]
    fn memory_is_gib_or_whole_mib() {
        assert_eq!(memory(512 << 20), "512 MiB");
        assert_eq!(memory((1 << 30) - 1), "1023 MiB");
        assert_eq!(memory(1 << 30), "1.0 GiB");
        assert_eq!(memory(192 << 30), "192.0 GiB");
    }
}
