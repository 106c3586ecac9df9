//! Parsed TOML with positions: every complaint about `matrix.toml` or a
//! `pylock.*.toml` names `file:line:col`, so a user can jump to the mistake.

use greta_vocab::place::{line_col, LineStarts};
use greta_vocab::Place;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml_edit::{ImDocument, Item, Table, Value};

/// An error at a place in a file. Kept as a concrete type (inside
/// `anyhow::Error`) so callers and tests can downcast and read the position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    pub file: PathBuf,
    /// 1-based line and column (column counts characters).
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = Place::new(self.file.display(), self.line, self.col);
        write!(f, "{at}: {}", self.message)
    }
}

impl std::error::Error for SourceError {}

/// A TOML document that remembers its file and text for positions.
pub struct Source {
    pub path: PathBuf,
    pub doc: ImDocument<String>,
    /// Found once: each entry's line is asked for (a lockfile of thousands
    /// of packages), and counting from the start each time was quadratic.
    lines: LineStarts,
}

impl Source {
    /// Read and parse; a syntax error becomes a [`SourceError`] at its place.
    pub fn load(path: &Path) -> anyhow::Result<Source> {
        let text = crate::read::text_capped(path, crate::read::MAX_DATA_FILE)?;
        Self::parse(path, text)
    }

    pub fn parse(path: &Path, text: String) -> anyhow::Result<Source> {
        match ImDocument::parse(text.clone()) {
            Ok(doc) => Ok(Source {
                path: path.to_path_buf(),
                lines: LineStarts::new(doc.raw()),
                doc,
            }),
            Err(e) => {
                let (line, col) = line_col(&text, e.span().map(|s| s.start).unwrap_or(0));
                Err(SourceError {
                    file: path.to_path_buf(),
                    line,
                    col,
                    message: format!("TOML syntax: {}", e.message().trim()),
                }
                .into())
            }
        }
    }

    pub fn text(&self) -> &str {
        self.doc.raw()
    }

    pub fn root(&self) -> &Table {
        self.doc.as_table()
    }

    /// An error located at `span` (or at the start of the file when unknown).
    pub fn err_at(&self, span: Option<Range<usize>>, message: impl Into<String>) -> anyhow::Error {
        let (line, col) = self
            .lines
            .line_col(self.text(), span.map(|s| s.start).unwrap_or(0));
        SourceError {
            file: self.path.clone(),
            line,
            col,
            message: message.into(),
        }
        .into()
    }

    /// Where byte `offset` of a string value's text is in the file, when
    /// the value is written as it reads (no escapes): the string's own
    /// position otherwise.
    pub fn inside_string(
        &self,
        span: Option<Range<usize>>,
        value: &str,
        offset: usize,
    ) -> Range<usize> {
        let Some(span) = span else { return 0..0 };
        let raw = self.text().get(span.clone()).unwrap_or("");
        let verbatim = raw.len() == value.len() + 2
            && raw.get(1..raw.len() - 1) == Some(value)
            && offset <= value.len();
        let at = if verbatim {
            span.start + 1 + offset
        } else {
            span.start
        };
        at..at
    }

    /// 1-based line of a span, for "why" texts that cite the lockfile.
    pub fn line_of(&self, span: Option<Range<usize>>) -> usize {
        self.lines.line(span.map(|s| s.start).unwrap_or(0))
    }
}

/// One `key = "value"` of a table of strings, with the value's position.
pub type MapEntry = (String, String, Option<Range<usize>>);

/// Typed accessors on a table that report wrong or missing fields at their
/// position. `ctx` is the span of the table itself, used when a key is absent.
pub struct Fields<'a> {
    pub src: &'a Source,
    pub table: &'a Table,
    pub what: String,
}

impl<'a> Fields<'a> {
    pub fn new(src: &'a Source, table: &'a Table, what: impl Into<String>) -> Self {
        Fields {
            src,
            table,
            what: what.into(),
        }
    }

    pub fn span(&self) -> Option<Range<usize>> {
        self.table.span()
    }

    pub fn value_span(&self, key: &str) -> Option<Range<usize>> {
        match self.table.get(key) {
            Some(Item::Value(v)) => v.span(),
            Some(i) => i.span(),
            None => self.table.span(),
        }
    }

    fn missing(&self, key: &str) -> anyhow::Error {
        self.src.err_at(
            self.table.span(),
            format!("{}: missing required key `{key}`", self.what),
        )
    }

    fn wrong(&self, key: &str, want: &str) -> anyhow::Error {
        self.src.err_at(
            self.value_span(key),
            format!("{}: `{key}` must be {want}", self.what),
        )
    }

    pub fn opt_str(&self, key: &str) -> anyhow::Result<Option<String>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Item::Value(Value::String(s))) => Ok(Some(s.value().clone())),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    /// `key`'s text, when present, with what `parse` made of it; a text it
    /// refuses is an error at the value: `<what>: <key> "<text>": <why>`.
    pub fn opt_parsed<T, E: std::fmt::Display>(
        &self,
        key: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> anyhow::Result<Option<(String, T)>> {
        let Some(text) = self.opt_str(key)? else {
            return Ok(None);
        };
        match parse(&text) {
            Ok(v) => Ok(Some((text, v))),
            Err(e) => Err(self.err(self.value_span(key), format!("{key} {text:?}: {e}"))),
        }
    }

    pub fn str(&self, key: &str) -> anyhow::Result<String> {
        self.opt_str(key)?.ok_or_else(|| self.missing(key))
    }

    pub fn opt_u64(&self, key: &str) -> anyhow::Result<Option<u64>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Item::Value(Value::Integer(i))) if *i.value() >= 0 => Ok(Some(*i.value() as u64)),
            Some(_) => Err(self.wrong(key, "a non-negative integer")),
        }
    }

    /// An error at `span` naming this table: `<what>: <message>`.
    pub fn err(
        &self,
        span: Option<Range<usize>>,
        message: impl std::fmt::Display,
    ) -> anyhow::Error {
        self.src.err_at(span, format!("{}: {message}", self.what))
    }

    /// A table of strings (`key.name = "text"`), in its order; absent means
    /// empty. `must` completes "`key` must ..." when it is not a table.
    pub fn str_map(&self, key: &str, must: &str) -> anyhow::Result<Vec<MapEntry>> {
        let Some(item) = self.table.get(key) else {
            return Ok(Vec::new());
        };
        let Some(tbl) = item.as_table_like() else {
            return Err(self.err(item.span(), format!("`{key}` must {must}")));
        };
        tbl.iter()
            .map(|(k, v)| match v.as_str() {
                Some(s) => Ok((k.to_string(), s.to_string(), v.span())),
                None => Err(self.err(v.span(), format!("{key}.{k} must be a string"))),
            })
            .collect()
    }

    /// An array of strings; absent means empty.
    pub fn str_list(&self, key: &str) -> anyhow::Result<Vec<(String, Option<Range<usize>>)>> {
        match self.table.get(key) {
            None => Ok(Vec::new()),
            Some(Item::Value(Value::Array(a))) => a
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok((s.value().clone(), v.span())),
                    _ => Err(self.src.err_at(
                        v.span(),
                        format!("{}: `{key}` must hold only strings", self.what),
                    )),
                })
                .collect(),
            Some(_) => Err(self.wrong(key, "an array of strings")),
        }
    }

    /// Keys present that the schema does not know: reported, since a typo'd
    /// key silently ignored is how a profile ends up half-configured.
    pub fn deny_unknown(&self, known: &[&str]) -> anyhow::Result<()> {
        for (k, _) in self.table.iter() {
            if !known.contains(&k) {
                let span = self
                    .table
                    .key(k)
                    .and_then(|key| key.span())
                    .or_else(|| self.value_span(k));
                return Err(self.src.err_at(
                    span,
                    format!(
                        "{}: unknown key `{k}` (known: {})",
                        self.what,
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_has_position() {
        let e = Source::parse(Path::new("x.toml"), "a = 1\nb = [1,\n".to_string())
            .err()
            .unwrap();
        let se = e.downcast_ref::<SourceError>().unwrap();
        assert_eq!(se.file, PathBuf::from("x.toml"));
        assert!(se.line >= 2, "{se}");
    }
}
