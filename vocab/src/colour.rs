//! Whether greta colours what it prints: one decision for every table and
//! report. `--color auto|always|never` (set once, by `main`) wins; under
//! `auto`, colour only on a terminal, never when `NO_COLOR` is set to
//! anything (no-color.org) and never for `TERM=dumb`.

use std::ffi::OsStr;
use std::sync::OnceLock;

/// The `--color` flag's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl std::str::FromStr for ColorChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ColorChoice::Auto),
            "always" => Ok(ColorChoice::Always),
            "never" => Ok(ColorChoice::Never),
            _ => Err(format!(
                "unknown colour choice {s:?}; one of: auto, always, never"
            )),
        }
    }
}

static CHOICE: OnceLock<ColorChoice> = OnceLock::new();

/// Records the command line's choice (the first call wins: `main` makes it
/// before any output).
pub fn set_choice(c: ColorChoice) {
    let _ = CHOICE.set(c);
}

/// Whether output bound for a stream that `is_tty` may be coloured.
pub fn use_color(is_tty: bool) -> bool {
    decide(
        CHOICE.get().copied().unwrap_or_default(),
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("TERM").as_deref(),
        is_tty,
    )
}

/// The decision over its inputs (pure, for tests).
pub fn decide(
    choice: ColorChoice,
    no_color: Option<&OsStr>,
    term: Option<&OsStr>,
    is_tty: bool,
) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            let no = no_color.is_some_and(|v| !v.is_empty());
            let dumb = term.is_some_and(|t| t == "dumb");
            is_tty && !no && !dumb
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_terminal_no_color_and_term() {
        let a = ColorChoice::Auto;
        assert!(decide(a, None, Some(OsStr::new("xterm")), true));
        assert!(!decide(a, None, None, false));
        assert!(!decide(a, Some(OsStr::new("1")), None, true));
        // An empty NO_COLOR is unset (no-color.org).
        assert!(decide(a, Some(OsStr::new("")), None, true));
        assert!(!decide(a, None, Some(OsStr::new("dumb")), true));
    }

    #[test]
    fn always_and_never_override_everything() {
        for (nc, term, tty) in [(None, None, false), (Some("1"), Some("dumb"), true)] {
            let nc = nc.map(OsStr::new);
            let term = term.map(OsStr::new);
            assert!(decide(ColorChoice::Always, nc, term, tty));
            assert!(!decide(ColorChoice::Never, nc, term, tty));
        }
        assert_eq!("never".parse(), Ok(ColorChoice::Never));
        assert!("sometimes".parse::<ColorChoice>().is_err());
    }
}
