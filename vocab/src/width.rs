//! Output that fits the terminal, one mechanism for every report greta
//! prints (the smoke table, the doctor, the lines on stderr): the
//! terminal's width, the width text takes on it (colour codes take none),
//! and lines wrapped with a hanging indent. A pipe or a file gets every
//! line whole.

/// Characters a cell takes on screen: its colour codes take none.
pub fn visible_width(s: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (false, _) => n += 1,
            (true, 'm') => in_escape = false,
            (true, _) => {}
        }
    }
    n
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
            .break_words(true);
        let pad = " ".repeat(start);
        textwrap::wrap(text, opts).join(&format!("\n{pad}"))
    } else {
        let opts = textwrap::Options::new(width.max(MIN_TEXT + 4))
            .initial_indent("    ")
            .subsequent_indent("    ")
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
        .break_words(true);
    textwrap::wrap(line, opts).join("\n")
}

/// The width of the terminal a report goes to (stdout, else stderr, where
/// a table goes with --json), or none when neither is a terminal: a log
/// file or a pipe gets every line whole.
pub fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    let of =
        |t: Option<(terminal_size::Width, terminal_size::Height)>| t.map(|(w, _)| w.0 as usize);
    if std::io::stdout().is_terminal() {
        of(terminal_size::terminal_size_of(std::io::stdout()))
    } else if std::io::stderr().is_terminal() {
        of(terminal_size::terminal_size_of(std::io::stderr()))
    } else {
        None
    }
    .filter(|w| *w >= 20)
}

/// The width of the terminal on stderr, where progress and errors go;
/// none when stderr is not a terminal.
pub fn stderr_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(std::io::stderr())
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
}
