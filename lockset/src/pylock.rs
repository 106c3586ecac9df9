//! PEP 751 lockfiles (`pylock.<name>.toml`): read, validate, and report
//! problems at their line. Only the parts greta installs from are modelled:
//! packages with wheels (greta never builds an sdist).

use super::marker;
use super::source::{Fields, Source};
use anyhow::Result;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use toml_edit::{Item, Value};
use uv_pep508::MarkerTree;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Wheel {
    /// The wheel file name (PEP 751 `name`, else the URL's last segment).
    pub filename: String,
    /// Serialised with any credentials hidden.
    #[serde(serialize_with = "greta_vocab::url_secrets::serialize_redacted_opt")]
    pub url: Option<String>,
    pub path: Option<String>,
    pub size: Option<u64>,
    /// Lowercase hex sha256; None when the entry lacks one (`check` fails it).
    pub sha256: Option<String>,
    /// Where the hash came from when the file says so (comment above or on the entry).
    pub line: usize,
    /// 1-based line of the wheel's `sha256` value (the entry's line when it
    /// has none): a download that hashes otherwise is traced to it.
    #[serde(skip)]
    pub hash_line: usize,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Package {
    /// Normalised (PEP 503) name.
    pub name: String,
    pub version: Option<String>,
    /// The marker as written (None: applies everywhere).
    pub marker_text: Option<String>,
    #[serde(skip)]
    pub marker: Option<MarkerTree>,
    pub requires_python: Option<String>,
    /// Serialised with any credentials hidden.
    #[serde(serialize_with = "greta_vocab::url_secrets::serialize_redacted_opt")]
    pub index: Option<String>,
    pub wheels: Vec<Wheel>,
    /// An sdist/vcs/directory/archive source is present (greta ignores it).
    pub other_sources: Vec<String>,
    pub line: usize,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Lockfile {
    pub path: PathBuf,
    pub lock_version: String,
    pub created_by: String,
    pub requires_python: Option<String>,
    /// PEP 751 `extras`: the extras the file can install (here each GPU
    /// target's device wheels, `device-gfx942`, selected by markers
    /// `'device-gfx942' in extras`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extras: Vec<String>,
    pub packages: Vec<Package>,
    /// sha256 of the file's bytes (recorded in env receipts).
    pub sha256: greta_vocab::Sha256,
    /// The leading comment block (how the file was made).
    pub header: String,
}

// Wheel names are the vocabulary's (the installer's fetcher, receipts and
// gates compare the same names).
pub use greta_vocab::{normalize_name, url_filename};

impl Lockfile {
    pub fn load(path: &Path) -> crate::Result<Lockfile> {
        let src = Source::load(path)?;
        Ok(Self::from_source(&src)?)
    }

    pub fn parse(path: &Path, text: String) -> crate::Result<Lockfile> {
        let src = Source::parse(path, text)?;
        Ok(Self::from_source(&src)?)
    }

    fn from_source(src: &Source) -> Result<Lockfile> {
        let root = Fields::new(src, src.root(), "lockfile");
        let lock_version = root.str("lock-version")?;
        if !lock_version.starts_with("1.") {
            return Err(src.err_at(
                root.value_span("lock-version"),
                format!("lock-version {lock_version:?}: this greta reads PEP 751 lock-version 1.x"),
            ));
        }
        let created_by = root.str("created-by")?;
        let requires_python = root.opt_str("requires-python")?;
        if let Some(rp) = &requires_python {
            uv_pep440::VersionSpecifiers::from_str(rp).map_err(|e| {
                src.err_at(
                    root.value_span("requires-python"),
                    format!("requires-python {rp:?}: {e}"),
                )
            })?;
        }
        let pkgs = match src.root().get("packages") {
            Some(Item::ArrayOfTables(a)) => a,
            Some(Item::Value(Value::Array(a))) if a.is_empty() => {
                return Err(src.err_at(a.span(), "`packages` is empty"));
            }
            Some(i) => {
                return Err(src.err_at(
                    i.span(),
                    "`packages` must be an array of tables ([[packages]])",
                ))
            }
            None => return Err(src.err_at(None, "no [[packages]] entries")),
        };
        let markers = marker::Budget::per_file();
        let mut packages = Vec::new();
        for t in pkgs.iter() {
            packages.push(parse_package(src, t, &markers)?);
        }
        let sha256 = greta_vocab::Sha256(Sha256::digest(src.text().as_bytes()).into());
        let header = src
            .text()
            .lines()
            .take_while(|l| l.trim_start().starts_with('#') || l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        let extras = Fields::new(src, src.root(), "lockfile")
            .str_list("extras")?
            .into_iter()
            .map(|(e, span)| {
                e.parse::<uv_normalize::ExtraName>()
                    .map(|n| n.to_string())
                    .map_err(|err| src.err_at(span, format!("extras: {e:?}: {err}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Lockfile {
            path: src.path.clone(),
            lock_version,
            created_by,
            requires_python,
            extras,
            packages,
            sha256,
            header,
        })
    }

    pub fn wheel_count(&self) -> usize {
        self.packages.iter().map(|p| p.wheels.len()).sum()
    }
}

fn parse_package(src: &Source, t: &toml_edit::Table, markers: &marker::Budget) -> Result<Package> {
    let line = src.line_of(t.span());
    let f = Fields::new(src, t, format!("[[packages]] at line {line}"));
    let raw_name = f.str("name")?;
    let name = normalize_name(&raw_name);
    let f = Fields::new(src, t, format!("package {raw_name}"));
    let version = f
        .opt_parsed("version", uv_pep440::Version::from_str)?
        .map(|(v, _)| v);
    let (marker_text, marker) = match f.opt_str("marker")? {
        Some(text) => match marker::parse(&text, markers) {
            Ok(m) => (Some(text), Some(m)),
            Err(e) => {
                return Err(src.err_at(
                    Some(src.inside_string(f.value_span("marker"), &text, e.offset)),
                    format!("{}: marker {}: {}", f.what, marker::shown(&text), e.message),
                ))
            }
        },
        None => (None, None),
    };
    let requires_python = f
        .opt_parsed("requires-python", uv_pep440::VersionSpecifiers::from_str)?
        .map(|(rp, _)| rp);
    let index = f.opt_str("index")?;
    let mut other_sources = Vec::new();
    for k in ["sdist", "vcs", "directory", "archive"] {
        if t.contains_key(k) {
            other_sources.push(k.to_string());
        }
    }
    let mut wheels = Vec::new();
    match t.get("wheels") {
        None => {}
        Some(Item::Value(Value::Array(a))) => {
            for v in a.iter() {
                let Some(wt) = v.as_inline_table() else {
                    return Err(src.err_at(
                        v.span(),
                        format!("{}: each wheels entry must be an inline table", f.what),
                    ));
                };
                wheels.push(parse_wheel(src, &f.what, wt, v.span())?);
            }
        }
        Some(Item::ArrayOfTables(a)) => {
            for wt in a.iter() {
                let it = wt.clone().into_inline_table();
                wheels.push(parse_wheel(src, &f.what, &it, wt.span())?);
            }
        }
        Some(i) => {
            return Err(src.err_at(
                i.span(),
                format!("{}: `wheels` must be an array of tables", f.what),
            ))
        }
    }
    if wheels.is_empty() && other_sources.is_empty() {
        return Err(src.err_at(
            t.span(),
            format!("{}: no wheels and no other source", f.what),
        ));
    }
    Ok(Package {
        name,
        version,
        marker_text,
        marker,
        requires_python,
        index,
        wheels,
        other_sources,
        line,
    })
}

fn parse_wheel(
    src: &Source,
    what: &str,
    t: &toml_edit::InlineTable,
    span: Option<std::ops::Range<usize>>,
) -> Result<Wheel> {
    let at = |k: &str| t.get(k).and_then(|v| v.span()).or(span.clone());
    let get_str = |k: &str| -> Result<Option<String>> {
        match t.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.value().clone())),
            Some(_) => Err(src.err_at(at(k), format!("{what}: wheel `{k}` must be a string"))),
        }
    };
    let url = get_str("url")?;
    let path = get_str("path")?;
    let name = get_str("name")?;
    let filename = match (&name, &url, &path) {
        (Some(n), _, _) => n.clone(),
        (None, Some(u), _) => url_filename(u),
        (None, None, Some(p)) => p.rsplit('/').next().unwrap_or(p).to_string(),
        (None, None, None) => {
            return Err(src.err_at(
                span,
                format!("{what}: a wheel needs `url`, `path` or `name`"),
            ))
        }
    };
    if url.is_none() && path.is_none() {
        return Err(src.err_at(
            span,
            format!("{what}: wheel {filename} has neither `url` nor `path`"),
        ));
    }
    if let Some(why) = greta_vocab::unsafe_file_name(&filename) {
        let from = if name.is_some() {
            ""
        } else {
            " (its URL's last segment, percent-decoded)"
        };
        return Err(src.err_at(
            t.get("name")
                .or(t.get("url"))
                .or(t.get("path"))
                .and_then(|v| v.span())
                .or(span),
            format!("{what}: wheel file name {filename:?}{from} holds {why}"),
        ));
    }
    if !filename.ends_with(".whl") || super::tags::WheelTags::parse(&filename).is_none() {
        return Err(src.err_at(t.get("name").or(t.get("url")).and_then(|v| v.span()).or(span), format!("{what}: `{filename}` is not a wheel file name (name-version-pytag-abitag-platform.whl)")));
    }
    let size = match t.get("size") {
        None => None,
        Some(Value::Integer(i)) if *i.value() >= 0 => Some(*i.value() as u64),
        Some(_) => {
            return Err(src.err_at(
                at("size"),
                format!("{what}: wheel `size` must be a non-negative integer"),
            ))
        }
    };
    let mut hash_span = span.clone();
    let sha256 = match t.get("hashes") {
        None => None,
        Some(Value::InlineTable(h)) => match h.get("sha256") {
            None => None,
            Some(Value::String(s)) => {
                hash_span = s.span().or(hash_span);
                let v = s.value().to_ascii_lowercase();
                if v.len() != 64 || !v.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(src.err_at(
                        s.span(),
                        format!("{what}: sha256 of {filename} must be 64 hex digits"),
                    ));
                }
                Some(v)
            }
            Some(v) => {
                return Err(src.err_at(v.span(), format!("{what}: hashes.sha256 must be a string")))
            }
        },
        Some(v) => {
            return Err(src.err_at(
                v.span(),
                format!("{what}: `hashes` must be a table like {{ sha256 = \"...\" }}"),
            ))
        }
    };
    Ok(Wheel {
        filename,
        url,
        path,
        size,
        sha256,
        line: src.line_of(span),
        hash_line: src.line_of(hash_span),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalise() {
        assert_eq!(normalize_name("Jax_ROCm7.Plugin"), "jax-rocm7-plugin");
        assert_eq!(normalize_name("typing__extensions"), "typing-extensions");
        assert_eq!(normalize_name("Pytorch_Triton.ROCm"), "pytorch-triton-rocm");
        assert_eq!(normalize_name("jax"), "jax");
        // Not a project name: lowercased, matching nothing normalised.
        assert_eq!(normalize_name("Not A Name"), "not a name");
    }

    /// A wheel's file name is judged after percent-decoding: `%00`, `%0A`
    /// and `%2F` in its URL passed as part of a valid-looking name. Refused
    /// at the entry's `url` (or `name`), saying what it holds.
    #[test]
    fn wheel_names_with_decoded_control_characters_or_separators_are_refused() {
        let h = "ab".repeat(32);
        for (entry, why) in [
            (
                "url = \"https://e/x-1-py3-none-any%00.whl\"",
                "a control character",
            ),
            (
                "url = \"https://e/x-1-py3-none-any.whl%0A\"",
                "a control character",
            ),
            (
                "url = \"https://e/..%2Fx-1-py3-none-any.whl\"",
                "a path separator",
            ),
            (
                "url = \"https://e/x-1-py3-none-any.whl\", name = \"x-1-py3-none-any\\u001b.whl\"",
                "a control character",
            ),
        ] {
            let text = format!(
                "lock-version = \"1.0\"\ncreated-by = \"t\"\n\n[[packages]]\nname = \"x\"\nversion = \"1\"\nwheels = [\n  {{ {entry}, hashes = {{ sha256 = \"{h}\" }} }},\n]\n"
            );
            let e = Lockfile::parse(Path::new("pylock.t.toml"), text.clone()).unwrap_err();
            let e = e.source_error().expect("a SourceError");
            let key = if entry.contains("name =") {
                "name = "
            } else {
                "url = "
            };
            let col = text.lines().nth(7).unwrap().find(key).unwrap() + key.len() + 1;
            assert_eq!((e.line, e.col), (8, col), "{e}");
            assert!(e.message.contains(why), "{e}");
        }
    }

    /// Loading is linear in the packages: each entry's line was counted
    /// from the start of the file, and 8,000 packages took more than 8
    /// times as long as 2,000. The same test times N and 4N packages (the
    /// best of three each, so a busy machine does not decide it): linear
    /// is about 4 times, quadratic 16; the bound is 8.
    #[test]
    fn loading_is_linear_in_the_packages() {
        fn lockfile(n: usize) -> String {
            let h = "ab".repeat(32);
            let mut t = String::from("lock-version = \"1.0\"\ncreated-by = \"t\"\n");
            for i in 0..n {
                t.push_str(&format!(
                    "\n[[packages]]\nname = \"p{i}\"\nversion = \"1\"\nmarker = \"sys_platform == 'linux'\"\nwheels = [{{ url = \"https://e/p{i}-1-py3-none-any.whl\", size = 1, hashes = {{ sha256 = \"{h}\" }} }}]\n"
                ));
            }
            t
        }
        fn best(n: usize) -> std::time::Duration {
            let text = lockfile(n);
            (0..3)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let l = Lockfile::parse(Path::new("pylock.t.toml"), text.clone()).unwrap();
                    assert_eq!(l.packages.len(), n);
                    assert_eq!(l.packages[n - 1].line, 3 + 6 * (n - 1) + 1);
                    t.elapsed()
                })
                .min()
                .unwrap()
        }
        let (small, big) = (best(2000), best(8000));
        assert!(
            big < small * 8,
            "2,000 packages: {small:?}; 8,000: {big:?} ({:.1} times)",
            big.as_secs_f64() / small.as_secs_f64()
        );
    }

    /// The line of each wheel's sha256 is kept, so that a
    /// download that hashes otherwise names it (an entry without one: its
    /// own line).
    #[test]
    fn each_wheel_keeps_the_line_of_its_hash() {
        let h = "ab".repeat(32);
        let text = format!(
            "lock-version = \"1.0\"\ncreated-by = \"t\"\n\n[[packages]]\nname = \"x\"\nversion = \"1\"\nwheels = [\n  {{ url = \"https://e/x-1-py3-none-any.whl\", hashes = {{ sha256 = \"{h}\" }} }},\n\n  {{ url = \"https://e/x-1-py2-none-any.whl\", size = 3, hashes = {{ sha256 = \"{h}\" }} }},\n  {{ url = \"https://e/x-1-py1-none-any.whl\" }},\n]\n"
        );
        let l = Lockfile::parse(Path::new("pylock.t.toml"), text).unwrap();
        let lines: Vec<(usize, usize)> = l.packages[0]
            .wheels
            .iter()
            .map(|w| (w.line, w.hash_line))
            .collect();
        assert_eq!(lines, vec![(8, 8), (10, 10), (11, 11)]);
    }
}
