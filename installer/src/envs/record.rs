//! Wheel `RECORD` files: CSV rows of (path, hash, size), as the wheel spec
//! and PEP 376 define them. Read and written with the csv crate, so a path
//! with a comma or a quote is quoted the way pip, uv and installer expect.

/// One row of a RECORD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    /// `sha256=<urlsafe base64>`, or empty (RECORD itself, .pyc files).
    pub hash: String,
    /// Bytes as text, or empty.
    pub size: String,
    /// 1-based line in the file, for error messages.
    pub line: usize,
}

fn reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes())
}

/// Every row of `text`; `Err((line, why))` for a row that is not CSV or
/// has other than three fields.
pub fn parse(text: &str) -> Result<Vec<Entry>, (usize, String)> {
    let mut out = Vec::new();
    let mut rows = reader(text);
    let mut rec = csv::StringRecord::new();
    loop {
        // csv counts lines in a u64; a text this crate reads is capped far
        // below usize::MAX lines.
        let line_of = |p: &csv::Position| usize::try_from(p.line()).unwrap_or(usize::MAX);
        let line = line_of(rows.position());
        match rows.read_record(&mut rec) {
            Ok(false) => return Ok(out),
            Ok(true) => {}
            Err(e) => {
                let at = e.position().map_or(line, line_of);
                return Err((at, format!("not CSV: {e}")));
            }
        }
        let line = rec.position().map_or(line, line_of);
        if rec.len() != 3 {
            return Err((line, format!("{} fields, a RECORD row has 3", rec.len())));
        }
        out.push(Entry {
            path: rec[0].to_string(),
            hash: rec[1].to_string(),
            size: rec[2].to_string(),
            line,
        });
    }
}

/// One RECORD row, quoted as needed, with a trailing newline.
pub fn row(path: &str, hash: &str, size: u64) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let size = size.to_string();
    // Writing to a Vec cannot fail, and the fields are valid UTF-8.
    w.write_record([path, hash, size.as_str()])
        .expect("writing to memory");
    String::from_utf8(w.into_inner().expect("flushing to memory")).expect("UTF-8 in, UTF-8 out")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_quoted_and_empty_fields() {
        let text = "torch/__init__.py,sha256=abc,123\n\"odd,name\"\"q.py\",sha256=x,12\ntorch-2.dist-info/RECORD,,\n";
        let rows = parse(text).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            (rows[0].path.as_str(), rows[0].size.as_str()),
            ("torch/__init__.py", "123")
        );
        assert_eq!(rows[1].path, "odd,name\"q.py");
        assert_eq!(rows[1].line, 2);
        assert_eq!((rows[2].hash.as_str(), rows[2].size.as_str()), ("", ""));
    }

    #[test]
    fn a_bad_row_names_its_line() {
        let err = parse("a,b,1\nonly,two\n").unwrap_err();
        assert_eq!(err.0, 2, "{err:?}");
        assert!(err.1.contains("2 fields"), "{err:?}");
        let err = parse("a,b,1\n\"open quote,x,1\n").unwrap_err();
        assert_eq!(err.0, 2, "{err:?}");
    }

    #[test]
    fn rows_round_trip() {
        for path in ["../../../bin/f2py", "a,b.py", "q\"uote.py"] {
            let text = row(path, "sha256=zz", 42);
            assert!(text.ends_with('\n'));
            let back = parse(&text).unwrap();
            assert_eq!(
                back,
                vec![Entry {
                    path: path.into(),
                    hash: "sha256=zz".into(),
                    size: "42".into(),
                    line: 1
                }]
            );
        }
    }
}
