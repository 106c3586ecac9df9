//! What a CUBIN (NVRTC's output for a real architecture) says about each
//! kernel in it, read from its ELF sections: the registers and the stack
//! frame from the `.nv.info` attributes ptxas writes for the driver
//! (`EIATTR_REGCOUNT`, `EIATTR_FRAME_SIZE`: a symbol's index, then the
//! figure), and the static shared memory a block takes from the size of the
//! kernel's `.nv.shared.<kernel>` section (on sm_90 that includes the 1 KiB
//! the architecture reserves in every block). Every kernel has a
//! `.nv.info.<kernel>` section. NVIDIA documents none of this; the layout
//! (a format byte, an attribute byte, a 16-bit value or size, then for
//! `EIFMT_SVAL` that many bytes) is what cuobjdump prints and what open
//! CUBIN tools read.

use object::read::elf::ElfFile64;
use object::{Object, ObjectSection, ObjectSymbol, SymbolIndex};
use std::collections::BTreeMap;

const EIFMT_SVAL: u8 = 0x04;
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_REGCOUNT: u8 = 0x2f;

/// One kernel as the CUBIN describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CubinKernel {
    pub name: String,
    /// Registers per thread; `None` when the CUBIN has no EIATTR_REGCOUNT for it.
    pub registers: Option<u64>,
    /// Stack frame per thread (local memory: spills and local arrays).
    pub frame_bytes: Option<u64>,
    /// Static shared memory per block (0 without a `.nv.shared.` section).
    pub shared_bytes: u64,
}

/// One `.nv.info` attribute: its number and, for `EIFMT_SVAL`, its bytes
/// (other formats carry a 16-bit value, kept as its two bytes).
fn attributes(data: &[u8]) -> Result<Vec<(u8, &[u8])>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < data.len() {
        let head = data
            .get(at..at + 4)
            .ok_or_else(|| format!("an attribute cut short at byte {at}"))?;
        let (format, attr) = (head[0], head[1]);
        let half = &head[2..4];
        at += 4;
        if format == EIFMT_SVAL {
            let n = usize::from(u16::from_le_bytes([half[0], half[1]]));
            let value = data.get(at..at + n).ok_or_else(|| {
                format!(
                    "attribute {attr:#x} at byte {} says {n} bytes, past the end",
                    at - 4
                )
            })?;
            out.push((attr, value));
            at += n;
        } else {
            out.push((attr, half));
        }
    }
    Ok(out)
}

/// `(symbol index, figure)` of a per-symbol attribute.
fn of_symbol(value: &[u8]) -> Option<(usize, u64)> {
    let word = |i: usize| -> Option<u32> {
        Some(u32::from_le_bytes(value.get(i..i + 4)?.try_into().ok()?))
    };
    Some((word(0)? as usize, u64::from(word(4)?)))
}

/// The kernels of `cubin`, by name.
pub fn kernels(cubin: &[u8]) -> Result<Vec<CubinKernel>, String> {
    let file = ElfFile64::<object::Endianness>::parse(cubin)
        .map_err(|e| format!("not an ELF CUBIN: {e}"))?;
    let mut by_name: BTreeMap<String, CubinKernel> = BTreeMap::new();
    let mut shared: BTreeMap<String, u64> = BTreeMap::new();
    let mut info: Option<&[u8]> = None;
    for s in file.sections() {
        let Ok(name) = s.name() else { continue };
        if let Some(k) = name.strip_prefix(".nv.info.") {
            by_name.insert(
                k.to_string(),
                CubinKernel {
                    name: k.to_string(),
                    ..CubinKernel::default()
                },
            );
        } else if let Some(k) = name.strip_prefix(".nv.shared.") {
            shared.insert(k.to_string(), s.size());
        } else if name == ".nv.info" {
            info = Some(s.data().map_err(|e| format!("reading .nv.info: {e}"))?);
        }
    }
    if by_name.is_empty() {
        return Err("no .nv.info.<kernel> section: a CUBIN without kernels".into());
    }
    let info = info.ok_or("no .nv.info section")?;
    for (attr, value) in attributes(info).map_err(|e| format!(".nv.info: {e}"))? {
        if attr != EIATTR_REGCOUNT && attr != EIATTR_FRAME_SIZE {
            continue;
        }
        let (sym, figure) = of_symbol(value).ok_or_else(|| {
            format!(
                ".nv.info: attribute {attr:#x} holds {} bytes, not 8",
                value.len()
            )
        })?;
        let name = file
            .symbol_by_index(SymbolIndex(sym))
            .and_then(|s| s.name().map(str::to_string))
            .map_err(|e| format!(".nv.info: attribute {attr:#x} names symbol {sym}: {e}"))?;
        // Device functions that were not inlined have figures too: only
        // the kernels' are kept.
        if let Some(k) = by_name.get_mut(&name) {
            let slot = if attr == EIATTR_REGCOUNT {
                &mut k.registers
            } else {
                &mut k.frame_bytes
            };
            *slot = Some(figure);
        }
    }
    for (name, k) in by_name.iter_mut() {
        k.shared_bytes = shared.get(name).copied().unwrap_or(0);
    }
    Ok(by_name.into_values().collect())
}

/// Each kernel's machine code (its `.text.<kernel>` section), by name: what
/// runs, without the notes around it. NVRTC 13 records its options in the
/// CUBIN's notes (`.note.nv.tkinfo`), so a build with `-v` differs from
/// the same build without it in those bytes and nowhere in the code.
pub fn code(cubin: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let file = ElfFile64::<object::Endianness>::parse(cubin)
        .map_err(|e| format!("not an ELF CUBIN: {e}"))?;
    let mut out = BTreeMap::new();
    for s in file.sections() {
        let Ok(name) = s.name() else { continue };
        if let Some(k) = name.strip_prefix(".text.") {
            let data = s.data().map_err(|e| format!("reading {name}: {e}"))?;
            out.insert(k.to_string(), data.to_vec());
        }
    }
    if out.is_empty() {
        return Err("no .text.<kernel> section: a CUBIN without kernels".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_read_by_their_format_and_a_cut_one_is_refused() {
        // REGCOUNT (SVAL: symbol 8, 64 registers), MAXREG_COUNT (HVAL 255),
        // an NVAL, FRAME_SIZE (SVAL: symbol 7, 16 bytes).
        let mut b = vec![0x04, 0x2f, 8, 0, 8, 0, 0, 0, 64, 0, 0, 0];
        b.extend([0x03, 0x1b, 0xff, 0x00, 0x01, 0x35, 0, 0]);
        b.extend([0x04, 0x11, 8, 0, 7, 0, 0, 0, 16, 0, 0, 0]);
        let a = attributes(&b).unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!((a[0].0, of_symbol(a[0].1)), (0x2f, Some((8, 64))));
        assert_eq!(a[1], (0x1b, &[0xff, 0x00][..]));
        assert_eq!((a[3].0, of_symbol(a[3].1)), (0x11, Some((7, 16))));
        // A size past the end, a header cut short: errors, no panic.
        assert!(attributes(&[0x04, 0x2f, 9, 0, 1, 2])
            .unwrap_err()
            .contains("past the end"));
        assert!(attributes(&[0x04, 0x2f, 8])
            .unwrap_err()
            .contains("cut short"));
        assert_eq!(of_symbol(&[1, 0, 0]), None);
        assert!(attributes(&[]).unwrap().is_empty());
    }

    #[test]
    fn what_is_not_a_cubin_is_an_error() {
        assert!(kernels(b"").unwrap_err().contains("not an ELF CUBIN"));
        assert!(kernels(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]).is_err());
    }
}
