//! Where greta keeps its files on a user's machine: the one reading of
//! `XDG_CACHE_HOME`, `XDG_DATA_HOME` and `HOME` (six places each had their
//! own, and they had drifted: one took a relative `XDG_CACHE_HOME`, one
//! ignored it, one fell back to `/tmp`).
//!
//! The XDG Base Directory rules: a variable that is unset, empty or not an
//! absolute path is ignored ("if an implementation encounters a relative
//! path in any of these variables it should consider the path invalid");
//! then `$HOME/.cache` or `$HOME/.local/share`, where `HOME` must itself be
//! absolute. With neither, there is no directory, and the caller says so.
//!
//! The environment is passed in, so the same rule answers for this process
//! ([`process_env`]) and for a captured machine (the probe reading a
//! snapshot's `.greta/env`).

use std::ffi::OsString;
use std::path::PathBuf;

/// Which base directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `$XDG_CACHE_HOME`, else `$HOME/.cache`: what can be made again
    /// (wheels, compiled kernels, pipeline and tuning caches).
    Cache,
    /// `$XDG_DATA_HOME`, else `$HOME/.local/share`: what the user made
    /// (environments, smoke results).
    Data,
}

impl Base {
    fn variable(self) -> &'static str {
        match self {
            Base::Cache => "XDG_CACHE_HOME",
            Base::Data => "XDG_DATA_HOME",
        }
    }

    fn under_home(self) -> &'static [&'static str] {
        match self {
            Base::Cache => &[".cache"],
            Base::Data => &[".local", "share"],
        }
    }

    /// The variables this base is read from, for a message that says what
    /// to set: `XDG_CACHE_HOME or HOME`.
    pub fn read_from(self) -> String {
        format!("{} or HOME", self.variable())
    }
}

/// The environment of this process, as [`greta_dir`] reads it.
pub fn process_env(key: &str) -> Option<OsString> {
    std::env::var_os(key)
}

fn absolute(v: Option<OsString>) -> Option<PathBuf> {
    v.map(PathBuf::from).filter(|p| p.is_absolute())
}

/// The base directory on a machine whose environment `env` reads.
pub fn base_dir(base: Base, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    base_dir_from(base, env).map(|(d, _)| d)
}

/// [`base_dir`] and the variable it came from (`XDG_DATA_HOME`, `HOME`),
/// for a message about its value.
pub fn base_dir_from(
    base: Base,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Option<(PathBuf, &'static str)> {
    if let Some(d) = absolute(env(base.variable())) {
        return Some((d, base.variable()));
    }
    let mut home = absolute(env("HOME"))?;
    home.extend(base.under_home());
    Some((home, "HOME"))
}

/// `<base>/greta`: greta's own directory under the base.
pub fn greta_root(base: Base, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    base_dir(base, env).map(|b| b.join("greta"))
}

/// `<base>/greta/<sub>`: where greta keeps `sub` (`envs`, `smoke`,
/// `gpu-kernels`, ...).
pub fn greta_dir(base: Base, sub: &str, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    greta_root(base, env).map(|b| b.join(sub))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn xdg_first_then_home_and_only_absolute_paths() {
        /// The environment, then the cache and data dirs it gives.
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, Option<&'a str>);
        let cases: &[Case] = &[
            (
                &[
                    ("XDG_CACHE_HOME", "/c"),
                    ("XDG_DATA_HOME", "/d"),
                    ("HOME", "/h"),
                ],
                Some("/c/greta/x"),
                Some("/d/greta/x"),
            ),
            (
                &[("HOME", "/h")],
                Some("/h/.cache/greta/x"),
                Some("/h/.local/share/greta/x"),
            ),
            // Empty and relative XDG values are ignored, as the spec says.
            (
                &[
                    ("XDG_CACHE_HOME", ""),
                    ("XDG_DATA_HOME", "rel"),
                    ("HOME", "/h"),
                ],
                Some("/h/.cache/greta/x"),
                Some("/h/.local/share/greta/x"),
            ),
            // A relative HOME names no directory either.
            (&[("HOME", "h")], None, None),
            (&[("HOME", "")], None, None),
            (&[], None, None),
        ];
        for (vars, cache, data) in cases {
            let env = at(vars);
            assert_eq!(
                greta_dir(Base::Cache, "x", &env),
                cache.map(PathBuf::from),
                "{vars:?}"
            );
            assert_eq!(
                greta_dir(Base::Data, "x", &env),
                data.map(PathBuf::from),
                "{vars:?}"
            );
        }
        assert_eq!(Base::Data.read_from(), "XDG_DATA_HOME or HOME");
        let from = |vars: &[(&str, &str)]| base_dir_from(Base::Data, &at(vars)).map(|(_, v)| v);
        assert_eq!(
            from(&[("XDG_DATA_HOME", "/d"), ("HOME", "/h")]),
            Some("XDG_DATA_HOME")
        );
        assert_eq!(
            from(&[("XDG_DATA_HOME", "d"), ("HOME", "/h")]),
            Some("HOME")
        );
        assert_eq!(from(&[]), None);
    }
}
