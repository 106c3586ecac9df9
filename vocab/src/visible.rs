//! Text that came from outside greta (a driver's device name, a captured
//! machine, a pasted log, a lockfile) as people see it: every character
//! that would act on the terminal instead of showing is written as an
//! escape. An ESC starts colour, cursor and title sequences (`\e]0;…\a`
//! retitles the window), CR returns to the line's start and overwrites
//! what was said, U+202E reverses what follows ("PASS" reads "SSAP"), and
//! U+2028 breaks a line where no line ends. Shown, they read as
//! `\u{1b}]0;…\u{7}`, `\r`, `\u{202e}`, `\u{2028}`.
//!
//! Every human-output site that prints such a string prints it through
//! [`Visible`]; the JSON outputs keep the exact value (serde escapes what
//! JSON must).

use std::borrow::Cow;
use std::fmt;

/// `s` for a terminal: see the module docs. `format!("{}", Visible(s))`;
/// width and alignment (`{:<20}`) apply to the escaped text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visible<'a>(pub &'a str);

/// Whether `c` acts on a terminal or on the order of what is shown rather
/// than showing: C0 and C1 controls and DEL (`char::is_control`), the bidi
/// embeddings, overrides, isolates and marks (U+202A-202E, U+2066-2069,
/// U+200E, U+200F, U+061C), and the line and paragraph separators
/// (U+2028, U+2029).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// [`Visible`] as a string, borrowed when nothing needed escaping.
pub fn visible(s: &str) -> Cow<'_, str> {
    if s.chars().any(is_hidden) {
        Cow::Owned(Visible(s).to_string())
    } else {
        Cow::Borrowed(s)
    }
}

fn write_escaped(out: &mut impl fmt::Write, s: &str) -> fmt::Result {
    let mut shown = 0;
    for (i, c) in s.char_indices() {
        if !is_hidden(c) {
            continue;
        }
        out.write_str(&s[shown..i])?;
        match c {
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            c => write!(out, "\\u{{{:x}}}", u32::from(c))?,
        }
        shown = i + c.len_utf8();
    }
    out.write_str(&s[shown..])
}

impl fmt::Display for Visible<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_none() && f.precision().is_none() {
            return write_escaped(f, self.0);
        }
        let mut s = String::with_capacity(self.0.len());
        write_escaped(&mut s, self.0)?;
        f.pad(&s)
    }
}

/// [`Visible`] for text whose line breaks are its own (a tool's stderr, a
/// multi-line message): each line shown escaped, the `\n` between lines
/// kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VisibleLines<'a>(pub &'a str);

impl fmt::Display for VisibleLines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, line) in self.0.split('\n').enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write_escaped(f, line)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_unchanged_and_borrowed() {
        for s in [
            "AMD Radeon 760M (RADV GFX1103_R1)",
            "C:\\Users\\ann\\rocm",
            "Grafikkarte für €5 — ✓",
            "",
        ] {
            assert_eq!(Visible(s).to_string(), s);
            assert!(matches!(visible(s), Cow::Borrowed(_)));
        }
    }

    /// Each class the module names, against the escape written by hand.
    #[test]
    fn every_hidden_class_is_escaped() {
        let cases = [
            ("\u{1b}]0;owned\u{7}", "\\u{1b}]0;owned\\u{7}"),
            ("\u{1b}[2J\u{1b}[H", "\\u{1b}[2J\\u{1b}[H"),
            ("FAIL\rPASS", "FAIL\\rPASS"),
            ("a\nb\tc", "a\\nb\\tc"),
            ("\u{0}\u{7f}", "\\u{0}\\u{7f}"),
            // C1: CSI and OSC as single code points.
            ("\u{9b}31m\u{9d}x", "\\u{9b}31m\\u{9d}x"),
            ("\u{202e}SSAP", "\\u{202e}SSAP"),
            (
                "\u{202a}\u{202b}\u{202c}\u{202d}",
                "\\u{202a}\\u{202b}\\u{202c}\\u{202d}",
            ),
            (
                "\u{2066}\u{2067}\u{2068}\u{2069}",
                "\\u{2066}\\u{2067}\\u{2068}\\u{2069}",
            ),
            ("\u{200e}\u{200f}\u{61c}", "\\u{200e}\\u{200f}\\u{61c}"),
            ("a\u{2028}b\u{2029}", "a\\u{2028}b\\u{2029}"),
        ];
        for (raw, shown) in cases {
            assert_eq!(Visible(raw).to_string(), shown, "{raw:?}");
            assert_eq!(visible(raw), shown);
        }
    }

    #[test]
    fn nothing_hidden_survives_any_character() {
        // Every scalar value below U+3000 (all the classes live there).
        let all: String = (0..0x3000u32).filter_map(char::from_u32).collect();
        let shown = Visible(&all).to_string();
        assert!(!shown.chars().any(is_hidden));
        // Neighbours of the classes are shown as they are.
        for c in [
            '\u{202f}', '\u{2065}', '\u{206a}', '\u{200d}', '\u{a0}', ' ',
        ] {
            assert!(!is_hidden(c), "{c:?}");
        }
    }

    #[test]
    fn lines_keep_their_breaks_and_nothing_else() {
        assert_eq!(
            VisibleLines("a\u{1b}[2J\r\nb\u{202e}\n").to_string(),
            "a\\u{1b}[2J\\r\nb\\u{202e}\n"
        );
        assert_eq!(VisibleLines("plain\ntext").to_string(), "plain\ntext");
    }

    #[test]
    fn width_applies_to_the_escaped_text() {
        assert_eq!(format!("[{:<8}]", Visible("a\rb")), "[a\\rb    ]");
        assert_eq!(format!("[{:>3}]", Visible("x")), "[  x]");
    }
}
