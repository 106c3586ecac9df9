//! Output that fits the terminal, one mechanism for every report greta
//! prints (the smoke table, the doctor, the lines on stderr): the
//! terminal's width, the width text takes on it (colour codes take none),
//! and lines wrapped with a hanging indent. Lines break at spaces only:
//! a path or a command that fits a line is never split at its `/` or
//! `-` (one longer than a line is cut where the line ends). A pipe or a
//! file gets every line whole.

/// Columns a cell takes on screen: its colour codes take none, a wide
/// character (CJK, most emoji) two; the count textwrap wraps by.
pub fn visible_width(s: &str) -> usize {
    textwrap::core::display_width(s)
}

/// `text` in at most `cols` columns: whole when it fits, else its start
/// and a `…` where it was cut (a gate's or a file's name says most in its
/// first characters). For a line that must stay one line (a progress
/// bar's message), where [`wrap_line`] would make two. Plain text: a
/// colour code would be counted as the characters it is made of.
pub fn elide(text: &str, cols: usize) -> std::borrow::Cow<'_, str> {
    if visible_width(text) <= cols {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut used = 0;
    // Room for the ellipsis (one column) is kept back.
    for c in text.chars() {
        let w = textwrap::core::display_width(c.encode_utf8(&mut [0; 4]));
        if used + w + 1 > cols {
            break;
        }
        used += w;
        out.push(c);
    }
    if cols > 0 {
        out.push('…');
    }
    std::borrow::Cow::Owned(out)
}

/// The narrowest room worth wrapping text into beside other columns.
pub const MIN_TEXT: usize = 24;

/// `text` (the last cell, starting at column `start`) wrapped to `width`:
/// beside the columns when at least [`MIN_TEXT`] remain, each further line
/// indented to `start`; else from the next line on, indented by four.
pub fn hanging(text: &str, start: usize, width: usize) -> String {
    if width >= start + MIN_TEXT {
        let opts = textwrap::Options::new(width - start)
            .subsequent_indent("")
            .word_separator(textwrap::WordSeparator::AsciiSpace)
            .word_splitter(textwrap::WordSplitter::NoHyphenation)
            .break_words(true);
        let pad = " ".repeat(start);
        textwrap::wrap(text, opts).join(&format!("\n{pad}"))
    } else {
        let opts = textwrap::Options::new(width.max(MIN_TEXT + 4))
            .initial_indent("    ")
            .subsequent_indent("    ")
            .word_separator(textwrap::WordSeparator::AsciiSpace)
            .word_splitter(textwrap::WordSplitter::NoHyphenation)
            .break_words(true);
        format!("\n{}", textwrap::wrap(text, opts).join("\n"))
    }
}

/// A line of free text (a header, a note, a finding) no wider than `width`,
/// its continuation lines indented by `indent` more than its own indent.
pub fn wrap_line(line: &str, width: Option<usize>, indent: usize) -> String {
    let Some(w) = width else {
        return line.to_string();
    };
    if visible_width(line) <= w {
        return line.to_string();
    }
    let own = line.len() - line.trim_start().len();
    let pad = " ".repeat(own + indent);
    let opts = textwrap::Options::new(w)
        .subsequent_indent(&pad)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(true);
    textwrap::wrap(line, opts).join("\n")
}

/// The width of the terminal on stdout, where results go; none when
/// stdout is not a terminal: `greta doctor > file` or `| less` gets every
/// line whole, whatever stderr is.
pub fn stdout_width() -> Option<usize> {
    width_of(std::io::stdout())
}

/// The width of the terminal on stderr, where progress and errors go (and
/// a table with `--json`); none when stderr is not a terminal.
pub fn stderr_width() -> Option<usize> {
    width_of(std::io::stderr())
}

/// A terminal's columns, if `stream` is one at least 20 columns wide
/// (`terminal_size_of` answers only for a terminal).
fn width_of(stream: impl std::os::fd::AsFd) -> Option<usize> {
    terminal_size::terminal_size_of(stream)
        .map(|(w, _)| w.0 as usize)
        .filter(|w| *w >= 20)
}

/// Every line of `text` through [`wrap_line`].
pub fn wrap_lines(text: &str, width: Option<usize>, indent: usize) -> String {
    if width.is_none() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for l in text.split_inclusive('\n') {
        let (line, nl) = match l.strip_suffix('\n') {
            Some(x) => (x, "\n"),
            None => (l, ""),
        };
        out.push_str(&wrap_line(line, width, indent));
        out.push_str(nl);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_wraps_with_a_hanging_indent_and_colour_takes_no_columns() {
        let line = format!("  \x1b[1mfix:\x1b[0m {}", "word ".repeat(30));
        let w = wrap_line(&line, Some(40), 4);
        let lines: Vec<&str> = w.lines().collect();
        assert!(lines.len() > 3, "{w}");
        for l in &lines {
            assert!(visible_width(l) <= 40, "{l:?}");
        }
        for l in &lines[1..] {
            assert!(l.starts_with("      word"), "{l:?}");
        }
        // No terminal: whole.
        assert_eq!(wrap_line(&line, None, 4), line);
        assert_eq!(visible_width("\x1b[31mab\x1b[0m"), 2);
    }

    #[test]
    fn a_path_that_fits_a_line_is_not_split_at_its_slashes() {
        let path = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153";
        let line =
            format!("  ✓ HIP runtime: no HIP device found (runtime {path}, as libamdhip64.so)");
        let w = wrap_line(&line, Some(60), 4);
        assert!(w.lines().any(|l| l.trim_start().starts_with(path)), "{w}");
        for l in w.lines() {
            assert!(visible_width(l) <= 60, "{l:?}");
        }
        // Longer than a line: cut where the line ends, nothing lost.
        let long = "/a".repeat(40);
        let w = wrap_line(&long, Some(30), 4);
        assert_eq!(w.replace("\n", "").replace(' ', ""), long);
        for l in w.lines() {
            assert!(visible_width(l) <= 30, "{l:?}");
        }
    }

    #[test]
    fn a_wide_character_takes_two_columns_and_is_wrapped_by_them() {
        // 30 CJK characters: 60 columns, more than 40 although 30 chars.
        let line = "数".repeat(30);
        assert_eq!(visible_width(&line), 60);
        let w = wrap_line(&line, Some(40), 4);
        assert!(w.lines().count() == 2, "{w}");
        for l in w.lines() {
            assert!(visible_width(l) <= 40, "{l:?}");
        }
    }

    #[test]
    fn elide_keeps_the_start_and_marks_the_cut_in_columns() {
        assert_eq!(elide("torch", 5), "torch");
        assert_eq!(elide("torch-2.5.1.whl", 8), "torch-2…");
        assert_eq!(visible_width(&elide("torch-2.5.1.whl", 8)), 8);
        // Wide characters are counted by their columns, never split.
        let e = elide("数数数数数", 6);
        assert_eq!(e, "数数…");
        assert!(visible_width(&e) <= 6);
        assert_eq!(elide("abc", 0), "");
    }
}
