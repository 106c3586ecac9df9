//! `greta env list | remove NAME`.

use crate::envs::receipt::Receipt;
use crate::envs::EnvRoot;
use crate::exit::Exit;
use anyhow::Result;
use greta_vocab::Visible;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// List greta envs with their profile and receipt.
    List {
        /// Machine-readable list on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Remove an env (waits for no one: fails if an install holds it).
    Remove { name: String },
}

/// `greta env list --json` (schema greta.envs/v1). Fields in the order
/// the output has always had them (alphabetical, as `json!` wrote them).
#[derive(serde::Serialize)]
struct EnvList<'a> {
    dir: &'a Path,
    envs: Vec<EnvEntry<'a>>,
    schema: &'static str,
}

#[derive(serde::Serialize)]
#[serde(untagged)]
enum EnvEntry<'a> {
    Receipt {
        backend: &'a greta_vocab::Backend,
        created: &'a str,
        lock_sha256: &'a greta_vocab::Sha256,
        name: &'a str,
        path: &'a Path,
        profile: &'a str,
        python: &'a str,
        wheels: usize,
    },
    Unusable {
        error: String,
        name: &'a str,
        path: &'a Path,
    },
}

/// `2026-11-22T09:41:07Z` as `2026-11-22 09:41` (the receipts' time is
/// UTC); anything else as it is.
fn to_the_minute(rfc3339: &str) -> String {
    let b = rfc3339.as_bytes();
    if b.len() >= 16 && b[10] == b'T' && b[13] == b':' && rfc3339.is_char_boundary(16) {
        format!("{} {}", &rfc3339[..10], &rfc3339[11..16])
    } else {
        rfc3339.to_string()
    }
}

/// The env the shell has activated (its `bin/activate` sets VIRTUAL_ENV,
/// as the frameworks smoke reads it).
fn active_env() -> Option<PathBuf> {
    let v = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty())?;
    std::fs::canonicalize(v).ok()
}

/// The listing as aligned columns under a header, the envs' directory said
/// once above them, the active env marked.
fn render(
    dir: &Path,
    envs: &[(String, PathBuf, Result<Receipt>)],
    active: Option<&Path>,
) -> String {
    let head = ["NAME", "PROFILE", "PYTHON", "WHEELS", "CREATED (UTC)"];
    let mut rows: Vec<[String; 5]> = vec![head.map(String::from)];
    let mut notes: Vec<String> = vec![String::new()];
    for (name, path, r) in envs {
        let is_active = active.is_some_and(|a| std::fs::canonicalize(path).is_ok_and(|p| p == a));
        let mark = if is_active {
            "(active)".to_string()
        } else {
            String::new()
        };
        // Names and receipts are files on disk: shown, never acted on by the terminal.
        match r {
            Ok(r) => {
                rows.push([
                    Visible(name).to_string(),
                    Visible(&r.profile).to_string(),
                    Visible(&r.python.version).to_string(),
                    r.wheels.len().to_string(),
                    Visible(&to_the_minute(&r.created)).to_string(),
                ]);
                notes.push(mark);
            }
            Err(e) => {
                rows.push([
                    Visible(name).to_string(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
                let why = format!("no valid receipt: {}", Visible(&format!("{e:#}")));
                notes.push(if mark.is_empty() {
                    why
                } else {
                    format!("{mark} {why}")
                });
            }
        }
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..5).map(width).collect();
    let mut out = format!("greta envs in {}:\n", Visible(&dir.display().to_string()));
    for (row, note) in rows.iter().zip(&notes) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            // Numbers to the right, words to the left.
            if i == 3 {
                line += &format!("{}{cell}  ", " ".repeat(pad));
            } else {
                line += &format!("{cell}{}  ", " ".repeat(pad));
            }
        }
        line += note;
        out += line.trim_end();
        out.push('\n');
    }
    out
}

pub fn run(args: Args) -> Result<Exit> {
    let root = EnvRoot::default_root()?;
    match args.command {
        Command::List { json } => {
            let envs = root.list()?;
            if json {
                let list = EnvList {
                    dir: &root.dir,
                    envs: envs
                        .iter()
                        .map(|(name, path, r)| match r {
                            Ok(r) => EnvEntry::Receipt {
                                backend: &r.backend,
                                created: &r.created,
                                lock_sha256: &r.lockfile.sha256,
                                name,
                                path,
                                profile: &r.profile,
                                python: &r.python.version,
                                wheels: r.wheels.len(),
                            },
                            Err(e) => EnvEntry::Unusable {
                                error: format!("{e:#}"),
                                name,
                                path,
                            },
                        })
                        .collect(),
                    schema: "greta.envs/v1",
                };
                crate::out::print_json(&list)?;
            } else if envs.is_empty() {
                crate::outln!("no greta envs under {}", root.dir.display());
            } else {
                crate::out::text(format_args!(
                    "{}",
                    render(&root.dir, &envs, active_env().as_deref())
                ));
            }
            Ok(Exit::Pass)
        }
        Command::Remove { name } => {
            let p = root.remove(&name)?;
            crate::errln!("removed {}", p.display());
            Ok(Exit::Pass)
        }
    }
}
