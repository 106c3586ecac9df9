//! A setting and why it is in effect (after rustup's `ActiveSource`): every
//! value a user can set three ways says which way won, so `-v`, `--json`
//! and error messages can answer "why is this the value?".
use serde::Serialize;
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

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
            Err(std::env::VarError::NotUnicode(v)) => {
                Err(format!("{env}=\"{}\": not UTF-8", os_text(&v)))
            }
            _ => Ok(Setting {
                value: default(),
                source: Source::BuiltIn,
            }),
        }
    }
}

impl Setting<PathBuf> {
    /// A path setting: the flag's path, else the variable's, read as bytes
    /// (a path may be any bytes, UTF-8 or not; empty counts as unset);
    /// `None` when neither is set.
    pub fn path(flag: Option<(&Path, &'static str)>, env: &'static str) -> Option<Self> {
        if let Some((p, name)) = flag {
            return Some(Setting {
                value: p.to_path_buf(),
                source: Source::Flag { name },
            });
        }
        std::env::var_os(env)
            .filter(|v| !v.is_empty())
            .map(|v| Setting {
                value: PathBuf::from(v),
                source: Source::Env { name: env },
            })
    }

    /// A path from the variable `env` that greta hands on as text (a
    /// library to open and name in messages, a cache directory named in
    /// results): empty counts as unset, and a value that is not UTF-8 or
    /// holds a control character is refused with an error that names the
    /// variable and shows its bytes escaped ([`os_text`]).
    pub fn text_path(env: &'static str) -> Result<Option<Self>, String> {
        let Some(s) = Setting::path(None, env) else {
            return Ok(None);
        };
        let shown = || format!("{env}=\"{}\"", os_text(s.value.as_os_str()));
        match s.value.to_str() {
            None => Err(format!("{}: not UTF-8; name a path in UTF-8", shown())),
            Some(t) if t.chars().any(char::is_control) => Err(format!(
                "{}: holds a control character; name a path without one",
                shown()
            )),
            Some(_) => Ok(Some(s)),
        }
    }

    /// A directory from the variable `env` that greta searches or hands on
    /// (`ROCM_PATH`, `CUDA_HOME`, `MESA_SHADER_CACHE_DIR`): a
    /// [`text_path`](Setting::text_path) that is also absolute (a relative
    /// one would mean wherever greta happens to run) and names a directory,
    /// a link to one, or nothing yet (it may be made). A FIFO, a device or
    /// a regular file there is refused, saying what it is; nothing is
    /// opened to find out (`stat` never blocks on a FIFO). Err names the
    /// variable and shows its value escaped.
    pub fn dir_path(env: &'static str) -> Result<Option<Self>, String> {
        let Some(s) = Setting::text_path(env)? else {
            return Ok(None);
        };
        let shown = format!("{env}=\"{}\"", os_text(s.value.as_os_str()));
        if !s.value.is_absolute() {
            return Err(format!(
                "{shown}: not an absolute path; name an absolute directory"
            ));
        }
        match std::fs::metadata(&s.value) {
            Ok(m) if !m.is_dir() => Err(format!(
                "{shown}: is a {}, not a directory",
                crate::kind_of(m.file_type())
            )),
            _ => Ok(Some(s)),
        }
    }
}

/// `s` for a message: its UTF-8 as it is, every other byte as `\xNN` and
/// every control character escaped (`\n`), so a path or a variable that
/// is not UTF-8 shows what it holds (not `�`) and none moves a terminal.
pub fn os_text(s: &OsStr) -> String {
    let mut out = String::new();
    for chunk in s.as_encoded_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
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
    fn a_path_setting_is_any_bytes_and_shows_them_escaped() {
        use std::os::unix::ffi::OsStrExt;
        let raw = OsStr::from_bytes(b"/tmp/\xff\xfebad\n\xc3\xa9");
        std::env::set_var("GRETA_VOCAB_TEST_PATH", raw);
        let s = Setting::path(None, "GRETA_VOCAB_TEST_PATH").unwrap();
        assert_eq!(s.value.as_os_str(), raw);
        assert_eq!(
            s.source.to_string(),
            "set by the environment variable GRETA_VOCAB_TEST_PATH"
        );
        assert_eq!(os_text(raw), "/tmp/\\xff\\xfebad\\né");
        let flag = Setting::path(Some((Path::new("/f"), "--dir")), "GRETA_VOCAB_TEST_PATH");
        assert_eq!(flag.unwrap().value, Path::new("/f"));
        std::env::set_var("GRETA_VOCAB_TEST_PATH_EMPTY", "");
        assert!(Setting::path(None, "GRETA_VOCAB_TEST_PATH_EMPTY").is_none());
        // A string setting that is not UTF-8 says so with the same bytes.
        std::env::set_var("GRETA_VOCAB_TEST_C", raw);
        let e =
            Setting::resolve(None, "GRETA_VOCAB_TEST_C", |s| s.parse::<u32>(), || 1).unwrap_err();
        assert_eq!(
            e,
            "GRETA_VOCAB_TEST_C=\"/tmp/\\xff\\xfebad\\né\": not UTF-8"
        );
    }

    /// A path handed on as text: refused when not UTF-8 or holding a
    /// control character, the value shown escaped; a plain one is kept.
    #[test]
    fn a_text_path_refuses_bytes_and_control_characters_naming_the_variable() {
        use std::os::unix::ffi::OsStrExt;
        std::env::set_var("GRETA_VOCAB_TEST_TP1", OsStr::from_bytes(b"/lib/\xffx.so"));
        assert_eq!(
            Setting::text_path("GRETA_VOCAB_TEST_TP1").unwrap_err(),
            "GRETA_VOCAB_TEST_TP1=\"/lib/\\xffx.so\": not UTF-8; name a path in UTF-8"
        );
        std::env::set_var("GRETA_VOCAB_TEST_TP2", "/c\n\u{1b}[2Jd");
        assert_eq!(
            Setting::text_path("GRETA_VOCAB_TEST_TP2").unwrap_err(),
            "GRETA_VOCAB_TEST_TP2=\"/c\\n\\u{1b}[2Jd\": holds a control character; name a path without one"
        );
        std::env::set_var("GRETA_VOCAB_TEST_TP3", "/opt/é cache");
        let s = Setting::text_path("GRETA_VOCAB_TEST_TP3").unwrap().unwrap();
        assert_eq!(s.value, Path::new("/opt/é cache"));
        assert_eq!(
            s.source,
            Source::Env {
                name: "GRETA_VOCAB_TEST_TP3"
            }
        );
        assert_eq!(Setting::text_path("GRETA_VOCAB_TEST_TP_UNSET"), Ok(None));
    }

    /// A directory setting: a text path, absolute, and a directory (or a
    /// link to one, or nothing yet); a FIFO, a file or a device there is
    /// named as what it is.
    #[test]
    fn a_dir_path_is_absolute_and_a_directory_or_nothing_yet() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path in our temporary directory.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let file = t.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(t.path(), &link).unwrap();
        let refused = [
            (fifo.as_os_str(), "is a FIFO, not a directory"),
            (file.as_os_str(), "is a regular file, not a directory"),
            (
                OsStr::new("/dev/null"),
                "is a character device, not a directory",
            ),
            (OsStr::new("opt/rocm"), "not an absolute path"),
            (OsStr::new("./rocm"), "not an absolute path"),
            (OsStr::new("/opt/\u{1b}[2J"), "holds a control character"),
            (OsStr::from_bytes(b"/opt/\xff"), "not UTF-8"),
        ];
        for (i, (value, why)) in refused.iter().enumerate() {
            let var: &'static str = format!("GRETA_VOCAB_TEST_DIR{i}").leak();
            std::env::set_var(var, value);
            let e = Setting::dir_path(var).unwrap_err();
            let shown = format!("{var}=\"{}\": {why}", os_text(value));
            assert!(e.starts_with(&shown), "{e} / {shown}");
        }
        let kept = [
            t.path().to_path_buf(),
            link.clone(),
            t.path().join("not/yet"),
        ];
        for (i, value) in kept.iter().enumerate() {
            let var: &'static str = format!("GRETA_VOCAB_TEST_DIR_OK{i}").leak();
            std::env::set_var(var, value);
            let s = Setting::dir_path(var).unwrap().unwrap();
            assert_eq!((&s.value, s.source), (value, Source::Env { name: var }));
        }
        std::env::set_var("GRETA_VOCAB_TEST_DIR_EMPTY", "");
        assert_eq!(Setting::dir_path("GRETA_VOCAB_TEST_DIR_EMPTY"), Ok(None));
        assert_eq!(Setting::dir_path("GRETA_VOCAB_TEST_DIR_UNSET"), Ok(None));
    }

    #[test]
    fn a_bad_variable_is_an_error_naming_it() {
        std::env::set_var("GRETA_VOCAB_TEST_B", "many");
        let e =
            Setting::resolve(None, "GRETA_VOCAB_TEST_B", |s| s.parse::<u32>(), || 1).unwrap_err();
        assert!(e.starts_with("GRETA_VOCAB_TEST_B=\"many\": "), "{e}");
    }
}
