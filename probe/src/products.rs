//! The AMD product table: marketing names, retail names and chip codenames
//! to gfx target and PCI device id. Generated from well-kept data (libdrm's
//! `amdgpu.ids`, pci.ids, `probe/gfx-targets.toml`) by
//! `scripts/gen-amd-products.py` into `probe/amd-products.tsv`; never typed
//! by hand. The format-agnostic scan of pasted text (`from::scan`) and the
//! gfx target a GPU's name implies both read it.

use std::collections::HashMap;
use std::sync::OnceLock;

const TABLE: &str = include_str!("../amd-products.tsv");

/// Words that name the vendor or the kind of device, not the product; the
/// generator drops the same ones when it builds a key.
const NOISE: &[&str] = &[
    "AMD",
    "ATI",
    "RADEON",
    "TM",
    "R",
    "GRAPHICS",
    "SERIES",
    "GPU",
    "PROCESSOR",
    "WITH",
    "GFX",
    "MOBILE",
    "OEM",
    "INSTINCT",
];

/// Most words a product name spans once its noise words are dropped
/// ("RX 7900 XTX" is 3, "Pro WX 7100" 3, "Ryzen Embedded R1606G Vega" 4).
const MAX_WORDS: usize = 4;

#[derive(Debug)]
pub struct Product {
    /// What tells it apart: "RX6700XT", "NAVI22", "780M".
    pub key: String,
    /// The target when every device of this name has the same one.
    pub gfx: Option<String>,
    /// The PCI device id when one device carries this name.
    pub device: Option<u16>,
    pub name: String,
}

impl Product {
    /// A key that starts with a digit ("780M", "8060S", "530") names a
    /// product only beside a word that says it is a GPU.
    pub fn needs_gpu_word(&self) -> bool {
        self.key.as_bytes()[0].is_ascii_digit()
    }

    /// A codename of letters only ("RAPHAEL", "PICASSO") is also an
    /// ordinary word: it names a chip only beside the vendor's name.
    pub fn needs_vendor_word(&self) -> bool {
        !self.key.bytes().any(|b| b.is_ascii_digit())
    }
}

fn parse(text: &str) -> Result<HashMap<String, Product>, String> {
    let mut out = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let [key, gfx, dev, name] = f[..] else {
            return Err(format!("amd-products.tsv:{}: not 4 fields", n + 1));
        };
        let gfx = (gfx != "-").then(|| gfx.to_string());
        if gfx
            .as_deref()
            .is_some_and(|g| crate::from::amd::find_gfx(g).as_deref() != Some(g))
        {
            return Err(format!("amd-products.tsv:{}: bad gfx {gfx:?}", n + 1));
        }
        let device = if dev == "-" {
            None
        } else {
            Some(
                u16::from_str_radix(dev, 16)
                    .map_err(|_| format!("amd-products.tsv:{}: bad device {dev}", n + 1))?,
            )
        };
        if key.is_empty() || key != key_of(name) {
            return Err(format!("amd-products.tsv:{}: bad key {key}", n + 1));
        }
        out.insert(
            key.to_string(),
            Product {
                key: key.to_string(),
                gfx,
                device,
                name: name.to_string(),
            },
        );
    }
    Ok(out)
}

fn table() -> &'static HashMap<String, Product> {
    static T: OnceLock<HashMap<String, Product>> = OnceLock::new();
    T.get_or_init(|| parse(TABLE).expect("embedded amd-products.tsv is valid"))
}

/// The words of `s` that can make up a key: letters and digits, upper case,
/// without the noise words.
pub fn key_words(s: &str) -> Vec<String> {
    key_word_spans(s).into_iter().map(|w| w.word).collect()
}

/// One word of [`key_word_spans`]: where it stands in the text (byte
/// offsets) and its upper-case form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyWord {
    pub start: usize,
    pub end: usize,
    pub word: String,
}

/// Vendor names people glue to a model ("AMD6500XT", "RadeonRX6600"): the
/// rest of the word is the model when it starts as one does.
const GLUED: &[&str] = &["AMD", "RADEON"];

/// [`key_words`] with where each word stands, so a reader of the text can
/// tell what stands around a product (a bracket after a chip name, another
/// vendor's name before it).
pub fn key_word_spans(s: &str) -> Vec<KeyWord> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
        match (c.is_ascii_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                start = None;
                let mut word = s[b..i].to_ascii_uppercase();
                let mut from = b;
                if let Some(g) = GLUED.iter().find(|g| {
                    word.len() > g.len()
                        && word.starts_with(*g)
                        && (word.as_bytes()[g.len()].is_ascii_digit()
                            || word[g.len()..].starts_with("RX"))
                }) {
                    word.drain(..g.len());
                    from += g.len();
                }
                if !NOISE.contains(&word.as_str()) {
                    out.push(KeyWord {
                        start: from,
                        end: i,
                        word,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// A name's key, as the generator builds it.
pub fn key_of(name: &str) -> String {
    key_words(name).concat()
}

/// The product `key` names; also a retail key written without its "RX"
/// ("6900XT", "6600xt": how people type them).
pub fn lookup(key: &str) -> Option<&'static Product> {
    let t = table();
    t.get(key).or_else(|| {
        let b = key.as_bytes();
        let typed = b.len() >= 5
            && b[0].is_ascii_digit()
            && b.last().is_some_and(u8::is_ascii_alphabetic)
            && !key.ends_with('M')
            && !key.ends_with('S');
        if typed {
            t.get(&format!("RX{key}"))
        } else {
            None
        }
    })
}

/// The longest product named by consecutive `words` (from [`key_words`]):
/// (first word, words used, product), the leftmost first.
/// Keys made only of digits ("370", "530": retail names of old cards) are
/// never matched in loose text: "HX 370" is a CPU, "1680 x 1050" a screen.
/// Nor is a key that joins a lone letter to the next word ("X" "1050").
pub fn find(words: &[String]) -> Option<(usize, usize, &'static Product)> {
    find_where(words, |_| true)
}

/// [`find`], skipping the products `ok` refuses (so a later name on the
/// line still counts).
pub fn find_where(
    words: &[String],
    ok: impl Fn(&Product) -> bool,
) -> Option<(usize, usize, &'static Product)> {
    let pre = prefixes();
    // Whether some key (or a retail key typed without its "RX") starts
    // with `key`: a longer run of words cannot match once none does, so a
    // line of prose costs one set lookup per word.
    let may_grow = |key: &str| {
        pre.contains(key)
            || (key.as_bytes()[0].is_ascii_digit() && pre.contains(&format!("RX{key}")))
    };
    for i in 0..words.len() {
        // A lone letter joins no next word ("X" "1050").
        let most = if words[i].len() == 1 {
            1
        } else {
            MAX_WORDS.min(words.len() - i)
        };
        let mut key = String::new();
        let mut best = None;
        for n in 1..=most {
            key.push_str(&words[i + n - 1]);
            if !may_grow(&key) {
                break;
            }
            if key.len() < 3 || key.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if let Some(p) = lookup(&key).filter(|p| ok(p)) {
                best = Some((i, n, p));
            }
        }
        if best.is_some() {
            return best;
        }
    }
    None
}

/// Every prefix of every key of the table.
fn prefixes() -> &'static std::collections::HashSet<String> {
    static P: OnceLock<std::collections::HashSet<String>> = OnceLock::new();
    P.get_or_init(|| {
        let mut set = std::collections::HashSet::new();
        for k in table().keys() {
            for end in 1..=k.len() {
                set.insert(k[..end].to_string());
            }
        }
        set
    })
}

/// The product a GPU's own name carries ("AMD Radeon RX 9070",
/// "AMD Radeon (TM) Pro WX 7100 Graphics", "Amethyst XT [Radeon R9 380X]").
pub fn in_name(name: &str) -> Option<&'static Product> {
    find(&key_words(name)).map(|(_, _, p)| p)
}

/// A series name ("AMD Radeon HD 5700 Series": the model number with its
/// last digits zero) and the products of its range it covers: Windows and
/// Catalyst print the series where pci.ids names the one card ("Juniper XT
/// [Radeon HD 5770]", device 0x68b8).
pub fn series_covers(series: &Product, member: &Product) -> bool {
    if !series.name.to_ascii_lowercase().ends_with(" series") || series.key == member.key {
        return false;
    }
    // Letters, model number, suffix: "HD", "5700", "" / "HD", "7600", "M".
    fn split(k: &str) -> (&str, &str, &str) {
        let a = k.find(|c: char| c.is_ascii_digit()).unwrap_or(k.len());
        let d = k[a..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(k.len(), |e| a + e);
        (&k[..a], &k[a..d], &k[d..])
    }
    let (sp, sd, ss) = split(&series.key);
    let (mp, md, ms) = split(&member.key);
    let stem = sd.trim_end_matches('0');
    !stem.is_empty()
        && stem.len() < sd.len()
        && sp == mp
        && sd.len() == md.len()
        && md.starts_with(stem)
        && ms == ss
}

/// The products pci.ids and libdrm name for PCI device `device`.
pub fn of_device(device: u16) -> impl Iterator<Item = &'static Product> {
    table().values().filter(move |p| p.device == Some(device))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_table_parses() {
        assert!(table().len() > 1000, "{}", table().len());
    }

    /// Independent references: AMD's product pages and the LLVM AMDGPU
    /// processor table for each of these cards.
    #[test]
    fn names_as_people_write_them() {
        for (name, gfx) in [
            ("AMD Radeon RX 6700 XT", "gfx1031"),
            ("Radeon 6900xt", "gfx1030"),
            ("RX6600XT", "gfx1032"),
            ("AMD Radeon RX 9070 XT", "gfx1201"),
            ("AMD Radeon RX 9060 XT", "gfx1200"),
            ("Radeon 8060S Graphics", "gfx1151"),
            ("AMD Radeon 780M Graphics", "gfx1103"),
            ("AMD Radeon(TM) Pro WX 7100 Graphics", "gfx803"),
            ("AMD Radeon Pro W7900", "gfx1100"),
            ("AMD Instinct MI300X", "gfx942"),
            ("navi22", "gfx1031"),
        ] {
            let p = in_name(name).unwrap_or_else(|| panic!("{name}: no product"));
            assert_eq!(p.gfx.as_deref(), Some(gfx), "{name}");
        }
        assert!(in_name("AMD Ryzen 7 5800X 8-Core Processor").is_none());
        assert!(in_name("the quick brown fox").is_none());
    }

    /// AMD's series names, as Catalyst/fglrx and Windows print them (Steam's
    /// 2012 system information: "ATI Radeon HD 5700 Series"; fglrxinfo,
    /// Ubuntu Forums 2009: "OpenGL renderer string: ATI Radeon HD 4800
    /// Series"): a product of the table, of no one device; TeraScale has no
    /// gfx target, and a series of several targets gives none.
    #[test]
    fn series_names_are_products_of_no_one_device() {
        for (name, key) in [
            ("ATI Radeon HD 5700 Series", "HD5700"),
            ("ATI Radeon HD 4800 Series", "HD4800"),
        ] {
            let p = in_name(name).unwrap_or_else(|| panic!("{name}: no product"));
            assert_eq!(
                (p.key.as_str(), p.gfx.as_deref(), p.device),
                (key, None, None)
            );
        }
        // RX 400: Polaris 10/11 only (gfx803); R9 300 spans Hawaii, Tonga, Fiji.
        assert_eq!(
            in_name("Radeon RX 400 Series")
                .and_then(|p| p.gfx.clone())
                .as_deref(),
            Some("gfx803")
        );
        assert_eq!(
            in_name("AMD Radeon R9 300 Series").map(|p| p.gfx.is_none()),
            Some(true)
        );
        // A card's own key is never a series: RX 6700 is a product.
        assert_eq!(
            in_name("AMD Radeon RX 6700")
                .and_then(|p| p.gfx.clone())
                .as_deref(),
            Some("gfx1031")
        );
    }

    /// pci.ids and AMD's spec pages: the HD 5770 and 5750 are HD 5700
    /// Series cards, the HD 5870 and a mobile HD 7670M are not.
    #[test]
    fn a_series_covers_the_cards_of_its_range() {
        let p = |k: &str| lookup(k).unwrap_or_else(|| panic!("{k}"));
        assert!(series_covers(p("HD5700"), p("HD5770")));
        assert!(series_covers(p("HD5700"), p("HD5750")));
        assert!(!series_covers(p("HD5700"), p("HD5870")));
        assert!(series_covers(p("HD7600M"), p("HD7670M")));
        assert!(!series_covers(p("HD7600"), p("HD7670M")));
        // A card is no series of itself nor of another card.
        assert!(!series_covers(p("HD5770"), p("HD5770")));
        assert!(!series_covers(p("HD5770"), p("HD5750")));
    }

    /// A model glued to the vendor's name, as people type it in issue
    /// forms ("Windows10 + AMD6500XT", stable-diffusion-webui-amdgpu#416;
    /// "RadeonRX6600"): the model is read; "amdgpu" or "AMDVLK" stay words.
    #[test]
    fn a_model_glued_to_the_vendor_name_is_the_model() {
        let gfx = |t: &str| find(&key_words(t)).and_then(|(_, _, p)| p.gfx.clone());
        assert_eq!(gfx("at Windows10 + AMD6500XT").as_deref(), Some("gfx1034"));
        assert_eq!(gfx("GPU: RadeonRX6600").as_deref(), Some("gfx1032"));
        assert_eq!(gfx("GPU: AMDRX580").as_deref(), Some("gfx803"));
        assert_eq!(key_words("amdgpu AMDVLK"), ["AMDGPU", "AMDVLK"]);
        let w = key_word_spans("x AMD6500XT [y]");
        assert_eq!(
            w,
            [
                KeyWord {
                    start: 0,
                    end: 1,
                    word: "X".into()
                },
                KeyWord {
                    start: 5,
                    end: 11,
                    word: "6500XT".into()
                },
                KeyWord {
                    start: 13,
                    end: 14,
                    word: "Y".into()
                },
            ]
        );
    }

    #[test]
    fn a_bad_table_is_refused_with_its_line() {
        let e = parse("RX6700XT\tgfx1031\t73df\n").unwrap_err();
        assert!(e.contains(":1:"), "{e}");
        let e = parse("RX6700XT\tgfxzz\t73df\tAMD Radeon RX 6700 XT\n").unwrap_err();
        assert!(e.contains("bad gfx"), "{e}");
    }
}
