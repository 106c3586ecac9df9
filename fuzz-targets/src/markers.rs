//! `lock_markers`: lockfile markers built to exhaust the marker parser and
//! the marker algebra, and raw marker text. A run of 15,000 nested
//! parentheses overflowed uv-pep508's recursive parser, and 5,000 terms
//! `'device-gfxN' in extras` made its algebra allocate more than 4 GB; blind
//! byte mutation rarely builds either, so generators do: deep nesting
//! (balanced or not), long chains of terms, `(a and b) or ...` pairs whose
//! decision diagram grows exponentially, random trees, and one file of many
//! such markers (fresh names per package, or shared).
//!
//! Every marker goes through `Lockfile::parse`, the path of `greta lock
//! show`. A refusal must be a `file:line:col` error on a line of the file;
//! an accepted marker must be the very tree uv-pep508 makes of it (trees are
//! canonical); a marker refused for its syntax must be refused by uv-pep508
//! too. Time and memory are the drivers' to bound (AFL++'s `-t`, the
//! harness's allocator, the replay test's hang limit).
use crate::Words;
use greta_lockset::{marker_bounds, Lockfile};
use std::io;
use std::path::Path;
use std::str::FromStr;
use uv_pep508::MarkerTree;

/// The most packages (each with a marker) in one generated lockfile.
const MAX_PACKAGES: usize = 12;
/// Generated chains and nesting go this far past greta's bounds (128
/// comparisons, 32 parentheses) and no further: the crashing inputs were
/// 5,000 and 15,000.
const MAX_CHAIN: usize = 6_000;
const MAX_NEST: usize = 20_000;

/// The first byte picks: even, the rest of the input is one marker's text;
/// odd, it drives the generators.
pub fn lock_markers(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let markers = if mode % 2 == 0 {
        vec![String::from_utf8_lossy(rest).into_owned()]
    } else {
        generate(&mut Words(rest))
    };
    let text = lockfile(&markers);
    match Lockfile::parse(Path::new("pylock.fuzz.toml"), text.clone()) {
        Ok(l) => {
            assert_eq!(l.packages.len(), markers.len());
            for (p, m) in l.packages.iter().zip(&markers) {
                let ours = p.marker.expect("every package has a marker");
                // Within greta's bounds, so safe for uv-pep508 to read; the
                // same combinations in the same order, so its algebra only
                // finds what greta's made.
                let theirs = MarkerTree::from_str(m)
                    .unwrap_or_else(|e| panic!("greta accepted {m:?}, uv-pep508 refuses it: {e}"));
                assert!(ours == theirs, "greta's tree of {m:?} is not uv-pep508's");
            }
        }
        Err(e) => {
            let se = e
                .source_error()
                .unwrap_or_else(|| panic!("a refusal without file:line:col: {e:#}"));
            assert!(
                (1..=text.lines().count() + 1).contains(&se.line) && se.col >= 1,
                "{se} is outside the file"
            );
            // The marker of package i is on line 7 + 6 i.
            let Some(m) = se
                .line
                .checked_sub(7)
                .filter(|l| l.is_multiple_of(6))
                .and_then(|l| markers.get(l / 6))
            else {
                panic!("{se}: not a marker's line");
            };
            let bound = [
                "nested deeper than",
                "more than 128 comparisons",
                "longer than",
                "too large an expression",
                "no comparison uv evaluates",
            ];
            // Refused for its syntax: uv-pep508 reads it as far as greta did
            // (the same structure, within the same bounds) and refuses it.
            if !bound.iter().any(|b| se.message.contains(b)) {
                assert!(
                    MarkerTree::from_str(m).is_err(),
                    "greta refused {m:?} ({se}), uv-pep508 reads it"
                );
            }
        }
    }
}

/// A lockfile of one package per marker, the marker of package i on line
/// 7 + 6 i.
fn lockfile(markers: &[String]) -> String {
    let h = "ab".repeat(32);
    let mut t = String::from("lock-version = \"1.0\"\ncreated-by = \"fuzz\"\n\n");
    for (i, m) in markers.iter().enumerate() {
        t.push_str(&format!(
            "[[packages]]\nname = \"p{i}\"\nversion = \"1\"\nmarker = {}\nwheels = [{{ url = \"https://e.example/p{i}-1-py3-none-any.whl\", hashes = {{ sha256 = \"{h}\" }} }}]\n\n",
            toml_string(m)
        ));
    }
    t
}

/// `s` as a TOML basic string (on one line).
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The markers of one lockfile, from the generators.
fn generate(w: &mut Words) -> Vec<String> {
    let flags = w.u8();
    let packages = 1 + usize::from(w.u8()) % MAX_PACKAGES;
    let shape = w.u8();
    let n = usize::from(w.u8()) | usize::from(w.u8()) << 8;
    // The generators read at most 4 KiB (a tree's nodes, a chain's choices).
    let seed = &w.0[..w.0.len().min(4096)];
    let marker = |p: usize| {
        // Each package reads the same bytes: the same marker, with names
        // fresh to it when the flag says (new nodes for the algebra).
        let mut w = Words(seed);
        let g = Gen {
            flags,
            suffix: if flags & 1 != 0 {
                format!("-p{p}")
            } else {
                String::new()
            },
        };
        match shape % 5 {
            0 => g.nested(&mut w, n % (MAX_NEST + 1)),
            1 => g.chain(&mut w, n % (MAX_CHAIN + 1)),
            2 => g.pairs(n % 256),
            3 => g.tree(&mut w, 0),
            _ => g.chain_of_groups(&mut w, n % 512),
        }
    };
    let first = marker(0);
    // Longer than greta reads: refused in the first package, whatever
    // follows (the others are the same marker, at most renamed, so just as
    // long). The file holds that package alone, so that the TOML reader is
    // not made to read the same megabytes again for nothing.
    if first.len() > marker_bounds::MAX_BYTES {
        return vec![first];
    }
    std::iter::once(first)
        .chain((1..packages).map(marker))
        .collect()
}

/// Whether this process has less than one lockfile's share of the marker
/// algebra's work left (`greta_lockset::marker_bounds::PROCESS_WORK`): a
/// next lockfile could then be refused for what the ones before it cost,
/// not for itself. A harness that runs input after input in one process
/// starts a fresh one here, so that each input is judged as greta judges
/// one file.
pub fn lock_markers_process_spent() -> bool {
    marker_bounds::process_work_left() < marker_bounds::FILE_WORK
}

struct Gen {
    flags: u8,
    /// Appended to every extra's name (fresh names per package).
    suffix: String,
}

impl Gen {
    fn sep(&self) -> &'static str {
        if self.flags & 8 != 0 {
            " \t\n "
        } else {
            " "
        }
    }

    /// One comparison, of the kinds lockfiles carry.
    fn leaf(&self, w: &mut Words, i: usize) -> String {
        let pick = w.u8();
        let n = if self.flags & 2 != 0 {
            i
        } else {
            usize::from(w.u8())
        };
        let q = if self.flags & 4 != 0 { '"' } else { '\'' };
        let s = &self.suffix;
        match pick % 8 {
            0 | 1 => format!("{q}device-gfx{n}{s}{q} in extras"),
            2 => {
                let op = ["==", "!=", "<", "<=", ">", ">=", "~=", "==="][usize::from(w.u8()) % 8];
                format!("python_version {op} {q}3.{}{q}", n % 20)
            }
            3 => format!(
                "sys_platform == {q}{}{q}",
                ["linux", "win32", "darwin"][n % 3]
            ),
            4 => format!("{q}e{n}{s}{q} not in extras"),
            5 => format!("extra == {q}x{n}{s}{q}"),
            6 => format!("python_full_version >= {q}3.{}.{}{q}", n % 16, n % 7),
            _ => format!("platform_machine in {q}x86_64 aarch64{q}"),
        }
    }

    fn op(&self, w: &mut Words) -> &'static str {
        if w.u8() & 1 == 0 {
            "and"
        } else {
            "or"
        }
    }

    /// `((((leaf))))`, `depth` deep, its closing run short by a byte's
    /// worth when the flag says.
    fn nested(&self, w: &mut Words, depth: usize) -> String {
        let short = if self.flags & 16 != 0 {
            usize::from(w.u8() % 4)
        } else {
            0
        };
        let leaf = self.leaf(w, 0);
        format!(
            "{}{leaf}{}",
            "(".repeat(depth),
            ")".repeat(depth.saturating_sub(short))
        )
    }

    /// `t0 op t1 op ... t(n-1)`.
    fn chain(&self, w: &mut Words, n: usize) -> String {
        let mut m = self.leaf(w, 0);
        for i in 1..n.max(1) {
            let op = self.op(w);
            m.push_str(&format!(
                "{}{op}{}{}",
                self.sep(),
                self.sep(),
                self.leaf(w, i)
            ));
        }
        m
    }

    /// `(a0 and b0) or (a1 and b1) or ...`: with every `a` ordered before
    /// every `b`, the decision diagram doubles with each pair.
    fn pairs(&self, k: usize) -> String {
        let s = &self.suffix;
        (0..k.max(1))
            .map(|i| format!("('a{i:03}{s}' in extras and 'b{i:03}{s}' in extras)"))
            .collect::<Vec<_>>()
            .join(" or ")
    }

    /// A chain of parenthesised chains: `(t and t) or (t or t or t) ...`.
    fn chain_of_groups(&self, w: &mut Words, n: usize) -> String {
        let mut parts = Vec::new();
        for g in 0..n.max(1) {
            let len = 1 + usize::from(w.u8() % 4);
            parts.push(format!("({})", self.chain(w, len)));
            if w.0.is_empty() && g > 0 {
                break;
            }
        }
        let mut m = parts.remove(0);
        for p in parts {
            let op = self.op(w);
            m.push_str(&format!(" {op} {p}"));
        }
        m
    }

    /// A random tree, as deep as the bytes say (up to 48 levels: past
    /// greta's 32, and the generator's own recursion stays small).
    fn tree(&self, w: &mut Words, depth: usize) -> String {
        let b = w.u8();
        if depth >= 48 || w.0.is_empty() || b.is_multiple_of(3) {
            return self.leaf(w, depth);
        }
        let kids = 2 + usize::from(b % 3);
        let op = self.op(w);
        let parts: Vec<String> = (0..kids).map(|_| self.tree(w, depth + 1)).collect();
        format!("({})", parts.join(&format!(" {op} ")))
    }
}

/// The seeds of `lock_markers`: every distinct marker of the shipped
/// lockfiles (raw), and the generator inputs under `fuzz/seeds/marker-*.bin`.
pub fn seeds(repo: &Path) -> io::Result<Vec<(String, Vec<u8>)>> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let lock = repo.join("lock");
    let mut files: Vec<_> = std::fs::read_dir(&lock)?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<_>>()?;
    files.sort();
    for f in files {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
        if !name.is_some_and(|n| n.starts_with("pylock.") && n.ends_with(".toml")) {
            continue;
        }
        let text = std::fs::read_to_string(&f)?;
        for line in text.lines() {
            let Some(m) = line
                .strip_prefix("marker = \"")
                .and_then(|l| l.strip_suffix('"'))
            else {
                continue;
            };
            if seen.insert(m.to_string()) {
                let mut seed = vec![0];
                seed.extend_from_slice(m.as_bytes());
                let rel = f.strip_prefix(repo).unwrap_or(&f).display().to_string();
                out.push((format!("{rel}#marker{}", seen.len()), seed));
            }
        }
    }
    let dir = repo.join("fuzz/seeds");
    let mut gen: Vec<_> = std::fs::read_dir(&dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<_>>()?;
    gen.sort();
    for f in gen {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.is_some_and(|n| n.starts_with("marker-") && n.ends_with(".bin")) {
            let rel = f.strip_prefix(repo).unwrap_or(&f).display().to_string();
            out.push((rel, std::fs::read(&f)?));
        }
    }
    Ok(out)
}
