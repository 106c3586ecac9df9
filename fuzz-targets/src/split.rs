//! Ways of reading structure out of a fuzzer's bytes.

/// Splits an input into `n` parts at the separator line `\n--8<--\n` (the
/// seed corpus is written that way, see `scripts/fuzz.sh`); missing parts
/// are empty.
pub fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    const SEP: &[u8] = b"\n--8<--\n";
    let mut out = Vec::with_capacity(n);
    let mut rest = data;
    while out.len() + 1 < n {
        match rest.windows(SEP.len()).position(|w| w == SEP) {
            Some(i) => {
                out.push(&rest[..i]);
                rest = &rest[i + SEP.len()..];
            }
            None => break,
        }
    }
    out.push(rest);
    out.resize(n, &[][..]);
    out
}

/// A little-endian u32 reader over the input; zero once it runs out.
pub struct Words<'a>(pub &'a [u8]);

impl Words<'_> {
    pub fn u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        let n = self.0.len().min(4);
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        u32::from_le_bytes(b)
    }
    pub fn u8(&mut self) -> u8 {
        let v = self.0.first().copied().unwrap_or(0);
        self.0 = self.0.get(1..).unwrap_or(&[]);
        v
    }
}
