//! A setting and why it is in effect (after rustup's `ActiveSource`): every
//! value a user can set three ways says which way won, so `-v`, `--json`
//! and error messages can answer "why is this the value?".
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

/// Where a setting's value came from, in precedence order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// A command-line flag (`--lock-dir`).
    Flag { name: &'static str },
    /// An environment variable (`GRETA_LOCK_DIR`).
    Env { name: &'static str },
    /// A file (a bundle's manifest, a config file), at a line when known.
    File { path: PathBuf, line: Option<usize> },
    /// Built into the binary.
    BuiltIn,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag { name } => write!(f, "set by {name}"),
            Source::Env { name } => write!(f, "set by the environment variable {name}"),
            Source::File {
                path,
                line: Some(l),
            } => write!(f, "set in {}:{l}", path.display()),
            Source::File { path, line: None } => write!(f, "set in {}", path.display()),
            Source::BuiltIn => f.write_str("built in (nothing set it)"),
        }
    }
}

/// A value with its [`Source`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Setting<T> {
    /// The first of: the flag's value, the variable's (read here, empty
    /// counts as unset, `parse` may refuse it), the default. A refused
    /// variable is an error that names it, never silently the default.
    pub fn resolve<E: fmt::Display>(
        flag: Option<(T, &'static str)>,
        env: &'static str,
        parse: impl FnOnce(&str) -> Result<T, E>,
        default: impl FnOnce() -> T,
    ) -> Result<Setting<T>, String> {
        if let Some((value, name)) = flag {
            return Ok(Setting {
                value,
                source: Source::Flag { name },
            });
        }
        match std::env::var(env) {
            Ok(v) if !v.trim().is_empty() => match parse(v.trim()) {
                Ok(value) => Ok(Setting {
                    value,
                    source: Source::Env { name: env },
                }),
                Err(e) => Err(format!("{env}={v:?}: {e}")),
            },
            Err(std::env::VarError::NotUnicode(v)) => Err(format!("{env}={v:?}: not UTF-8")),
            _ => Ok(Setting {
                value: default(),
                source: Source::BuiltIn,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each test uses its own variable: tests run in parallel threads.
    #[test]
    fn flag_beats_env_beats_default_and_each_says_so() {
        let parse = |s: &str| s.parse::<u32>();
        std::env::set_var("GRETA_VOCAB_TEST_A", "7");
        let s = Setting::resolve(Some((3, "--jobs")), "GRETA_VOCAB_TEST_A", parse, || 1).unwrap();
        assert_eq!(
            (s.value, s.source.to_string()),
            (3, "set by --jobs".to_string())
        );
        let s = Setting::resolve(None, "GRETA_VOCAB_TEST_A", parse, || 1).unwrap();
        assert_eq!(s.value, 7);
        assert_eq!(
            s.source.to_string(),
            "set by the environment variable GRETA_VOCAB_TEST_A"
        );
        let s = Setting::resolve(None, "GRETA_VOCAB_TEST_UNSET", parse, || 1).unwrap();
        assert_eq!((s.value, s.source), (1, Source::BuiltIn));
    }

    #[test]
    fn a_bad_variable_is_an_error_naming_it() {
        std::env::set_var("GRETA_VOCAB_TEST_B", "many");
        let e =
            Setting::resolve(None, "GRETA_VOCAB_TEST_B", |s| s.parse::<u32>(), || 1).unwrap_err();
        assert!(e.starts_with("GRETA_VOCAB_TEST_B=\"many\": "), "{e}");
    }
}
