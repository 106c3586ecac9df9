//! A generated part of a docs file, between a begin and an end marker: the
//! every-target tests and the MI300X table compare theirs with what they
//! computed, and `GRETA_UPDATE_DOCS=1` rewrites it in place.
use greta_vocab::EnvVars;
use std::path::Path;

/// What the file holds against what the test computed.
pub enum DocsPart {
    /// The same text.
    Same,
    /// It differed and `GRETA_UPDATE_DOCS` rewrote it.
    Rewritten,
    /// It differs: what the file holds between the markers (both included).
    Differs(String),
}

/// Compares the part of `path` from `begin` to `end` (both included) with
/// `want`, or rewrites it when `GRETA_UPDATE_DOCS` is set. Errs when the
/// file cannot be read or written, or lacks a marker.
pub fn compare(path: &Path, begin: &str, end: &str, want: &str) -> Result<DocsPart, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (Some(b), Some(e)) = (text.find(begin), text.find(end)) else {
        return Err(format!(
            "{} lacks the markers {begin:?} … {end:?}",
            path.display()
        ));
    };
    let have = &text[b..e + end.len()];
    if have == want {
        return Ok(DocsPart::Same);
    }
    if std::env::var_os(EnvVars::GRETA_UPDATE_DOCS).is_none() {
        return Ok(DocsPart::Differs(have.to_string()));
    }
    let new = format!("{}{want}{}", &text[..b], &text[e + end.len()..]);
    std::fs::write(path, new).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("rewrote the generated part of {}", path.display());
    Ok(DocsPart::Rewritten)
}
