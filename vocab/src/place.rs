//! `file:line:col`: where in a text file a complaint points, printed as
//! compilers print it so an editor or a terminal jumps there. Every message
//! that names a place in a file (matrix.toml, the pylock files, tools.toml,
//! a wheel's RECORD, smoke's floors, specs and baselines, a facts JSON)
//! prints it through [`Place`]. Lines and columns count from 1; a column
//! found from a byte offset counts characters.

use std::fmt;

/// A place in a text file: `file:line:col`, or `file:line` where only the
/// line is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place<F> {
    pub file: F,
    pub line: usize,
    pub col: Option<usize>,
}

impl<F: fmt::Display> Place<F> {
    pub fn new(file: F, line: usize, col: usize) -> Place<F> {
        Place {
            file,
            line,
            col: Some(col),
        }
    }

    /// A whole line (`file:line`).
    pub fn line(file: F, line: usize) -> Place<F> {
        Place {
            file,
            line,
            col: None,
        }
    }

    /// Where byte `offset` of `text` is (past the end: the end).
    pub fn at_offset(file: F, text: &str, offset: usize) -> Place<F> {
        let (line, col) = line_col(text, offset);
        Place::new(file, line, col)
    }
}

impl<F: fmt::Display> fmt::Display for Place<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        match self.col {
            Some(c) => write!(f, ":{c}"),
            None => Ok(()),
        }
    }
}

/// Byte offset to 1-based (line, column in characters); an offset past the
/// end, or inside a character, counts as the end or that character's start.
/// One place asked of a text; a text asked for many places builds a
/// [`LineStarts`] once instead.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = char_floor(text, offset);
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (line, column(text, line_start, offset))
}

/// Where each line of a text starts, found once: every place asked of the
/// text after that is a binary search. Counting each place's line from the
/// start of the file made loading a lockfile quadratic in its entries (8,000
/// packages took more than 8 times as long as 2,000).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineStarts(Vec<usize>);

impl LineStarts {
    pub fn new(text: &str) -> LineStarts {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineStarts(starts)
    }

    /// 1-based line of byte `offset` (past the end: the last line).
    pub fn line(&self, offset: usize) -> usize {
        // starts[0] == 0 <= offset, so at least one start precedes it.
        self.0.partition_point(|&s| s <= offset)
    }

    /// As [`line_col`], for `text`, the text this was built from.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = char_floor(text, offset);
        let line = self.line(offset);
        let start = self.0.get(line - 1).copied().unwrap_or(0).min(offset);
        (line, column(text, start, offset))
    }
}

/// `offset` clamped to `text` and moved back to a character's start.
fn char_floor(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// 1-based column of `offset` in the line starting at `line_start`.
fn column(text: &str, line_start: usize, offset: usize) -> usize {
    text[line_start..offset].chars().count() + 1
}

/// 1-based (line, column) of the first occurrence of `needle` in `text`;
/// (1, 1) when it is not there.
pub fn find(text: &str, needle: &str) -> (usize, usize) {
    text.find(needle).map_or((1, 1), |off| line_col(text, off))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one_and_columns_in_characters() {
        let t = "a = 1\nbé = 2\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 6), (2, 1));
        // after "bé" (3 bytes) the column is 3 characters in
        assert_eq!(line_col(t, 9), (2, 3));
        // inside "é": its start
        assert_eq!(line_col(t, 8), (2, 2));
        assert_eq!(line_col(t, 999), (3, 1));
        assert_eq!(find(t, "= 2"), (2, 4));
        assert_eq!(find(t, "absent"), (1, 1));
    }

    /// The index answers what the one-shot count answers, at every byte
    /// (line ends, multi-byte characters, past the end).
    #[test]
    fn line_starts_agree_with_counting_from_the_start() {
        for t in [
            "",
            "\n",
            "a",
            "a = 1\nbé = 2\n",
            "\n\nx\né\n\ny",
            "no newline at end",
        ] {
            let idx = LineStarts::new(t);
            for off in 0..=t.len() + 2 {
                assert_eq!(idx.line_col(t, off), line_col(t, off), "{t:?} at {off}");
                assert_eq!(
                    idx.line(off.min(t.len())),
                    line_col(t, off).0,
                    "{t:?} at {off}"
                );
            }
        }
    }

    #[test]
    fn places_print_as_compilers_print_them() {
        assert_eq!(Place::new("m.toml", 3, 7).to_string(), "m.toml:3:7");
        assert_eq!(Place::line("RECORD", 12).to_string(), "RECORD:12");
        let p = std::path::Path::new("/l/pylock.cpu.toml");
        assert_eq!(
            Place::at_offset(p.display(), "a\nbé = [", 8).to_string(),
            "/l/pylock.cpu.toml:2:6"
        );
    }
}
