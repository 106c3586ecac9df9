//! `greta report`: a result file drawn as its page or (bit 1 of the first
//! byte) as a history of two runs. Bit 0 of the first byte picks what the
//! rest is: clear, a result file's bytes (seeds: real results); set, the
//! knobs of a generated result (how many devices, how many gates each and
//! whether each device names its own, one field made huge from the
//! input's own bytes, shared or missing UUIDs, odd rates), written as JSON
//! and read back. Blind byte mutation never grows a file to a thousand
//! devices or a megabyte name; the knobs reach those sizes in one step.
//! Most knob values give small results (a fuzzer needs many executions a
//! second); the top bit of a count's byte makes it large.
//!
//! Asserts what the reader promises: a file is refused or drawn, never a
//! panic; every page is whole; and a page's size is linear in the file's
//! (the grid and a history table are capped in cells), so a defect that
//! makes a page grow faster than its input fails here even when it is
//! fast enough not to hang.

use greta_report::{render_history, render_runs, Run, FILE_CAP};
use greta_smoke::results::Report;
use std::sync::OnceLock;

/// A real lavapipe result of the default profile: the generator's model.
const BASE: &str = include_str!("../../report/tests/data/lavapipe-default.json");
/// Most devices a generated result holds: past greta's cap of 1,024.
const MAX_DEVICES: usize = 1100;
/// Most gates in all in a generated result (each is drawn several times).
const MAX_GATES: usize = 12_000;
/// Largest generated field: big enough that the file nears its cap.
const MAX_TEXT: usize = 6 << 20;

pub fn report(data: &[u8]) {
    let Some((&tag, rest)) = data.split_first() else {
        return;
    };
    let json = if tag & 1 == 0 {
        rest.to_vec()
    } else {
        generated(rest)
    };
    // `greta report` reads a file through `read_run`, which refuses one
    // over the cap before parsing it.
    if json.len() as u64 > FILE_CAP {
        return;
    }
    let Ok(run) = Run::parse(&json, None) else {
        return;
    };
    // The page, or (bit 1) the history: charts cost the most per input.
    if tag & 2 == 0 {
        let page = render_runs(std::slice::from_ref(&run), &[]);
        whole(&page, json.len(), "the page");
    } else {
        let mut later = run.clone();
        later.report.started_at = "2026-12-01T00:00:00Z".into();
        let history = render_history(&[run, later], &[], "fuzz");
        whole(&history, 2 * json.len(), "the history");
    }
}

/// A page is whole, and at most linear in the `input` bytes it was drawn
/// from: a constant per input byte, plus what the capped grid and history
/// tables may add however small the input.
fn whole(page: &str, input: usize, what: &str) {
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"),
        "{what} is not a whole page"
    );
    // The grid's and a history table's caps (100,000 cells each), at
    // some 256 bytes a cell. Text that repeats is cut (greta-report's
    // `label`); the most found per byte of a file is some 20 bytes of page
    // (gate ids of 256 apostrophes, each drawn escaped in 11 places). At
    // 32x a file at its cap draws under 600 MB, whose string stays under
    // the 1 GiB single allocation the replay allows.
    let cells = 2 * 100_000 * 256;
    let bound = 32 * input + cells + (1 << 20);
    assert!(
        page.len() <= bound,
        "{what}: {} bytes from {input} bytes of results (at most {bound})",
        page.len()
    );
}

/// The model result, parsed once per process (a clone per input).
fn base() -> &'static Report {
    static PARSED: OnceLock<Report> = OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(BASE).expect("the model result parses"))
}

/// Stands in the result for the huge text while it is serialised (see
/// [`generated`]); nothing else in a generated result holds these
/// private-use characters.
const HOLE: &str = "\u{E000}greta-fuzz-text\u{E000}";

/// The huge text of a generated result: `alphabet`'s characters, cycled
/// to `len` characters.
struct Text {
    alphabet: String,
    len: usize,
}

impl Text {
    /// The text itself (what [`Text::json`] must equal the escaping of).
    #[cfg(test)]
    fn whole(&self) -> String {
        let n = self.alphabet.chars().count();
        let mut t = self.alphabet.repeat(self.len / n);
        t.extend(self.alphabet.chars().take(self.len % n));
        t
    }

    /// The text as a JSON string's contents, as serde_json escapes it:
    /// escaping goes character by character, so this is the alphabet's
    /// escaping repeated (a copy per repeat, not a serialiser's work per
    /// character).
    fn json(&self) -> String {
        let esc = |s: &str| {
            let q = serde_json::to_string(s).expect("a string serialises");
            q[1..q.len() - 1].to_string()
        };
        let n = self.alphabet.chars().count();
        let tail: String = self.alphabet.chars().take(self.len % n).collect();
        let mut t = esc(&self.alphabet).repeat(self.len / n);
        t.push_str(&esc(&tail));
        t
    }
}

/// The result the knobs in `k` describe, as greta writes results (its
/// JSON). Megabytes of text serialised character by character were most
/// of this target's time, and they are the harness's work, not the
/// reader's: the result is serialised with [`HOLE`] in the text's place,
/// and the text's JSON ([`Text::json`]) spliced in, the very bytes
/// `to_json` writes of the whole text (tested below).
fn generated(k: &[u8]) -> Vec<u8> {
    let (r, text) = model(k, HOLE);
    let json = r.to_json();
    match json.find(HOLE) {
        Some(at) => {
            let text = text.json();
            let mut out = Vec::with_capacity(json.len() + text.len());
            out.extend_from_slice(&json.as_bytes()[..at]);
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(&json.as_bytes()[at + HOLE.len()..]);
            out
        }
        // No such field in this result (no device, no gate).
        None => json.into_bytes(),
    }
}

/// The result of knobs `k` with `filler` in the huge text's field, and
/// that text: `k[0..2]` devices, `k[2]` gates per device, `k[3]` flags,
/// `k[4..8]` the huge field's length, `k[8]` which field, the rest its
/// characters. A count is small unless the top bit of its last byte is
/// set.
fn model(k: &[u8], filler: &str) -> (Report, Text) {
    let byte = |i: usize| k.get(i).copied().unwrap_or(0);
    let mut r = base().clone();
    let devices = if byte(1) & 0x80 != 0 {
        usize::from(u16::from_le_bytes([byte(0), byte(1) & 0x7f])) % (MAX_DEVICES + 1)
    } else {
        usize::from(byte(0)) % 9
    };
    let flags = byte(3);
    let one = r.devices[0].clone();
    let per_device = if byte(2) & 0x80 != 0 {
        usize::from(byte(2) & 0x7f).min(MAX_GATES / devices.max(1))
    } else {
        usize::from(byte(2)) % 12
    };
    let len = u32::from_le_bytes([byte(4), byte(5), byte(6), byte(7) & 0x7f]) as usize;
    let text_len = if byte(7) & 0x80 != 0 {
        len % MAX_TEXT
    } else {
        len % 4096
    };
    let field = byte(8);
    // The huge text: the input's remaining bytes (hostile characters
    // included), repeated.
    let alphabet = String::from_utf8_lossy(k.get(9..).unwrap_or_default()).into_owned();
    let text = Text {
        alphabet: if alphabet.is_empty() {
            "x".into()
        } else {
            alphabet
        },
        len: text_len,
    };
    let odd = [0.0, -1.0, 1e308, 5e-324, f64::MAX, 1e-9, 123.456];
    r.devices = (0..devices)
        .map(|i| {
            let mut d = one.clone();
            d.index = if flags & 16 != 0 { 0 } else { i };
            if flags & 2 != 0 {
                // Every device the same UUID (cloned or replayed devices).
                d.device.uuid = one.device.uuid;
            } else if flags & 4 != 0 {
                d.device.uuid = None;
            } else {
                let mut u = [0u8; 16];
                u[..8].copy_from_slice(&(i as u64).to_le_bytes());
                d.device.uuid = hex(&u).parse().ok();
            }
            let gates = one.gates.iter().cycle().take(per_device);
            d.gates = gates
                .enumerate()
                .map(|(gi, g)| {
                    let mut g = g.clone();
                    if flags & 1 != 0 {
                        g.id = format!("{}-{i}", g.id);
                    } else {
                        g.id = format!("{}-{gi}", g.id);
                    }
                    if flags & 8 != 0 {
                        if let Some(m) = g.metrics.as_mut() {
                            m.rate = Some(odd[(i + gi) % odd.len()]);
                        }
                    }
                    g
                })
                .collect();
            d
        })
        .collect();
    let target = usize::from(byte(2)) % r.devices.len().max(1);
    match field % 10 {
        0 => {
            if let Some(d) = r.devices.get_mut(target) {
                d.device.name = filler.to_string();
            }
        }
        1 => {
            if let Some(g) = r.devices.get_mut(target).and_then(|d| d.gates.first_mut()) {
                g.id = filler.to_string();
            }
        }
        2 => {
            if let Some(g) = r.devices.get_mut(target).and_then(|d| d.gates.first_mut()) {
                g.reason = Some(filler.to_string());
            }
        }
        3 => {
            if let Some(d) = r.devices.get_mut(target) {
                d.notes.push(filler.to_string());
            }
        }
        4 => r.greta_version = filler.to_string(),
        5 => r.host.hostname = Some(filler.to_string()),
        6 => r.started_at = filler.to_string(),
        7 => r.profile = filler.to_string(),
        8 => {
            if let Some(d) = r.devices.get_mut(target) {
                d.validation_messages.push(filler.to_string());
            }
        }
        _ => {
            if let Some(d) = r.devices.get_mut(target) {
                d.device.driver_info = filler.to_string();
            }
        }
    }
    (r, text)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The knobs reach what they claim: 1,000 devices of their own gate
    /// ids, and a name of a few MB.
    #[test]
    fn the_generator_reaches_many_devices_and_huge_names() {
        let mut k = vec![0u8; 9];
        k[..2].copy_from_slice(&(1000u16 | 0x8000).to_le_bytes());
        k[2] = 0x80 | 11;
        k[3] = 1;
        let r: greta_smoke::results::Report = serde_json::from_slice(&generated(&k)).unwrap();
        assert_eq!(r.devices.len(), 1000);
        assert!(r.devices.iter().all(|d| d.gates.len() == 11));
        assert_ne!(r.devices[0].gates[0].id, r.devices[1].gates[0].id);
        let mut k = vec![1, 0, 3, 0];
        k.extend((3_000_000u32 | 0x8000_0000).to_le_bytes());
        k.push(0);
        k.extend("\u{1b}\r\n\"<&'".bytes());
        let r: greta_smoke::results::Report = serde_json::from_slice(&generated(&k)).unwrap();
        assert_eq!(r.devices.len(), 1);
        assert_eq!(r.devices[0].gates.len(), 3);
        assert_eq!(r.devices[0].device.name.chars().count(), 3_000_000);
        assert!(r.devices[0].device.name.starts_with("\u{1b}\r\n\"<&'"));
        // Without the top bits: small.
        let r: greta_smoke::results::Report =
            serde_json::from_slice(&generated(&[200, 3, 100, 0, 255, 255, 255, 127, 0])).unwrap();
        assert!(r.devices.len() < 9 && r.devices[0].gates.len() < 12);
        assert!(r.devices[0].device.name.len() < 4096);
        for tag in [1, 3] {
            report(&[&[tag][..], &k].concat());
        }
    }

    /// The spliced result is, byte for byte, what `to_json` writes of the
    /// whole text in its field: every field, hostile alphabets (quotes,
    /// backslashes, control characters, U+2028, bytes that are not UTF-8,
    /// the placeholder's own characters), lengths that do and do not end
    /// on a whole alphabet, none, and a result with no device to hold it.
    #[test]
    fn the_spliced_text_is_what_to_json_writes_of_the_whole_text() {
        let alphabets: [&[u8]; 6] = [
            b"",
            b"x",
            b"\x1b\r\n\"<&'\\",
            "a\u{2028}b\u{7f}c\u{E000}".as_bytes(),
            b"\xff\xfe\xc3",
            b"\x00\x01\x1f/",
        ];
        let mut checked = 0;
        for field in 0..10u8 {
            for (a, alphabet) in alphabets.iter().enumerate() {
                for (devices, len) in [
                    (3u8, 0u32),
                    (1, 1),
                    (2, 4095),
                    (5, 70_001 | 1 << 31),
                    (0, 9),
                ] {
                    let mut k = vec![devices, 0, 4, 0];
                    k.extend(len.to_le_bytes());
                    k.push(field);
                    k.extend_from_slice(alphabet);
                    let (_, text) = model(&k, "");
                    let (whole, _) = model(&k, &text.whole());
                    assert_eq!(
                        String::from_utf8(generated(&k)).unwrap(),
                        whole.to_json(),
                        "field {field}, alphabet {a}, {devices} devices, length {len}"
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 10 * 6 * 5);
    }
}
