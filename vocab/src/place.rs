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
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
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
