//! The tools greta pins beside the profiles (`lock/tools.toml`): today the
//! uv wheel per architecture that greta bootstraps where no uv is on PATH.
//! The lock set reads and checks it (`greta lock check`), the installer
//! fetches and unpacks it; both parse it here, as strictly as a wheel pin.

use crate::{PinnedWheel, Sha256};
use serde::Deserialize;
use std::path::Path;

/// The file's name in a lock directory (and in a bundle).
pub const TOOLS_FILE: &str = "tools.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsFile {
    schema: u32,
    uv: UvPin,
}

/// `[uv]` of `lock/tools.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UvPin {
    pub version: String,
    /// Where the pins were read from (for people).
    #[serde(default)]
    pub source: Option<String>,
    pub wheels: Vec<ToolWheel>,
}

/// `[[uv.wheels]]`: one architecture's wheel.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolWheel {
    /// `std::env::consts::ARCH` of the machines this wheel runs on.
    pub arch: String,
    pub filename: String,
    pub url: String,
    pub size: u64,
    pub sha256: Sha256,
}

impl UvPin {
    /// Parses the text of a tools file; `shown` is the path errors name
    /// (`tools.toml:3:7: ...`). Every wheel is checked as a wheel pin is;
    /// http is allowed here (loopback test indexes), `greta lock check`
    /// refuses it in what ships.
    pub fn parse(text: &str, shown: &Path) -> anyhow::Result<UvPin> {
        let f: ToolsFile = toml::from_str(text).map_err(|e| {
            let shown = shown.display();
            match e.span() {
                Some(s) => {
                    let at = crate::Place::at_offset(shown, text, s.start);
                    anyhow::anyhow!("{at}: {}", e.message())
                }
                None => anyhow::anyhow!("{shown}: {}", e.message()),
            }
        })?;
        if f.schema != 1 {
            anyhow::bail!(
                "{}: schema {}, this greta reads 1",
                shown.display(),
                f.schema
            );
        }
        if f.uv.wheels.is_empty() {
            anyhow::bail!("{}: [uv] pins no wheels", shown.display());
        }
        for w in &f.uv.wheels {
            f.uv.artifact(w)
                .validate()
                .map_err(|e| e.context(format!("{}: [[uv.wheels]] {}", shown.display(), w.arch)))?;
        }
        Ok(f.uv)
    }

    /// The wheel of `w` as the fetcher and the cache speak of it.
    pub fn artifact(&self, w: &ToolWheel) -> PinnedWheel {
        PinnedWheel {
            name: "uv".into(),
            version: self.version.clone(),
            filename: w.filename.clone(),
            url: w.url.clone(),
            sha256: w.sha256,
            size: Some(w.size),
            at: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    fn file(filename: &str) -> String {
        format!(
            "schema = 1\n[uv]\nversion = \"0.9.0\"\n[[uv.wheels]]\narch = \"x86_64\"\nfilename = \"{filename}\"\nurl = \"https://x/{filename}\"\nsize = 1\nsha256 = \"{SHA}\"\n"
        )
    }

    #[test]
    fn a_good_pin_parses() {
        let p = UvPin::parse(
            &file("uv-0.9.0-py3-none-linux_x86_64.whl"),
            Path::new("t.toml"),
        )
        .unwrap();
        assert_eq!(p.wheels.len(), 1);
        assert_eq!(p.artifact(&p.wheels[0]).name, "uv");
    }

    #[test]
    fn an_sdist_or_bad_schema_or_unknown_key_is_refused_at_its_place() {
        let e = UvPin::parse(&file("uv-0.9.0.tar.gz"), Path::new("t.toml")).unwrap_err();
        let s = format!("{e:#}");
        assert!(s.starts_with("t.toml: [[uv.wheels]] x86_64: "), "{s}");
        assert!(s.contains("is not a wheel"), "{s}");
        let e = UvPin::parse(
            &file("x.whl").replace("schema = 1", "schema = 2"),
            Path::new("t"),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "t: schema 2, this greta reads 1");
        let e = UvPin::parse(&format!("{}extra = 1\n", file("x.whl")), Path::new("t")).unwrap_err();
        assert!(
            e.to_string().starts_with("t:10:1: unknown field `extra`"),
            "{e}"
        );
    }

    /// Columns count characters, as every other `file:line:col`
    /// greta prints (this one counted bytes: `ü` made it one further).
    #[test]
    fn the_column_counts_characters() {
        let text = file("x.whl").replace("arch = \"x86_64\"", "arch = \"ü\" x");
        let e = UvPin::parse(&text, Path::new("t")).unwrap_err();
        assert!(e.to_string().starts_with("t:5:12: "), "{e}");
    }
}
