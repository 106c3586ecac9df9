//! Wheel file names and project names, as PEP 427/503 spell them: the
//! lock set reads them from lockfiles, the installer from indexes, receipts
//! and installed metadata; one reading for all.

/// PEP 503 name normalisation (`Jax_ROCm7.Plugin` -> `jax-rocm7-plugin`),
/// by uv's implementation. Text that is no valid project name is only
/// lowercased: it then matches no normalised name, which is what callers
/// comparing names need.
pub fn normalize_name(n: &str) -> String {
    n.parse::<uv_normalize::PackageName>()
        .map(|p| p.to_string())
        .unwrap_or_else(|_| n.to_ascii_lowercase())
}

/// Last path segment of a URL, percent-decoded (`torch-2.7.1%2Brocm6.3-...`).
pub fn url_filename(url: &str) -> String {
    let last = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .rsplit('/')
        .next()
        .unwrap_or(url);
    let bytes = last.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() && last.is_char_boundary(i + 3) {
            if let Ok(b) = u8::from_str_radix(&last[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What makes `name` unfit to be a file greta writes (in its cache, a
/// bundle, an env), if anything: a control character (a NUL cuts the path
/// short, a newline forges a line of any listing), a path separator, or a
/// leading dot. Checked after percent-decoding: a URL's `%00`, `%0A` and
/// `%2F` are exactly these.
pub fn unsafe_file_name(name: &str) -> Option<&'static str> {
    if name.chars().any(char::is_control) {
        Some("a control character")
    } else if name.contains(['/', '\\']) {
        Some("a path separator")
    } else if name.starts_with('.') {
        Some("a leading dot")
    } else {
        None
    }
}

/// The tag triples a wheel file name declares (compressed sets expanded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelTags {
    pub name: String,
    pub version: String,
    pub tags: Vec<(String, String, String)>,
}

impl WheelTags {
    /// `name-version(-build)?-py-abi-plat.whl`; None when it is not one.
    pub fn parse(filename: &str) -> Option<WheelTags> {
        let stem = filename.strip_suffix(".whl")?;
        let parts: Vec<&str> = stem.split('-').collect();
        if parts.len() != 5 && parts.len() != 6 {
            return None;
        }
        if parts.iter().any(|p| p.is_empty()) {
            return None;
        }
        let n = parts.len();
        let (py, abi, plat) = (parts[n - 3], parts[n - 2], parts[n - 1]);
        let mut tags = Vec::new();
        for p in py.split('.') {
            for a in abi.split('.') {
                for pl in plat.split('.') {
                    tags.push((p.to_string(), a.to_string(), pl.to_string()));
                }
            }
        }
        Some(WheelTags {
            name: parts[0].to_string(),
            version: parts[1].to_string(),
            tags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_filenames_decode() {
        assert_eq!(
            url_filename("https://download.pytorch.org/whl/rocm6.3/torch-2.7.1%2Brocm6.3-cp312-cp312-manylinux_2_28_x86_64.whl"),
            "torch-2.7.1+rocm6.3-cp312-cp312-manylinux_2_28_x86_64.whl"
        );
        assert_eq!(
            url_filename("https://x/a/b-1-py3-none-any.whl#sha256=00"),
            "b-1-py3-none-any.whl"
        );
        assert_eq!(url_filename("https://x/a%2"), "a%2");
    }

    /// Percent-escapes are decoded before the name is judged: `%00`,
    /// `%0A` and `%2F` passed a check of the raw URL text.
    #[test]
    fn decoded_control_characters_and_separators_are_unsafe() {
        for (url, why) in [
            (
                "https://h/x-1-py3-none-any%00.whl",
                Some("a control character"),
            ),
            (
                "https://h/x-1-py3-none-any.whl%0A",
                Some("a control character"),
            ),
            (
                "https://h/x%1B%5B2J-1-py3-none-any.whl",
                Some("a control character"),
            ),
            (
                "https://h/..%2F..%2Fx-1-py3-none-any.whl",
                Some("a path separator"),
            ),
            (
                "https://h/x%5C-1-py3-none-any.whl",
                Some("a path separator"),
            ),
            ("https://h/.x-1-py3-none-any.whl", Some("a leading dot")),
            ("https://h/x-1%2Blocal-py3-none-any.whl", None),
            ("https://h/x-1-py3-none-any.whl", None),
        ] {
            assert_eq!(unsafe_file_name(&url_filename(url)), why, "{url}");
        }
    }

    #[test]
    fn parses_compressed_tags() {
        let w = WheelTags::parse(
            "triton-3.9.0-cp312-abi3-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        )
        .unwrap();
        assert_eq!(w.name, "triton");
        assert_eq!(w.tags.len(), 2);
        assert!(WheelTags::parse("foo-1.0.tar.gz").is_none());
        assert!(WheelTags::parse("foo-1.0-py3-none.whl").is_none());
    }
}
