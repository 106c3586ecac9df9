//! Applying remedies and undoing them: every file checked to be as the
//! plan read it, an undo record written before the first change, each
//! write atomic, and on a failure the changes already made put back, so
//! the machine is as it was.

use super::plan::ASIDE;
use super::{host, Change};
use anyhow::{bail, Context, Result};
use greta_fsread::output::{self, Purpose};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const CAP: u64 = 4 << 20;
pub const SCHEMA: &str = "greta.doctor-fix-undo/v1";

/// What `--fix --undo` reads: the changes, in the order they were made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UndoRecord {
    pub schema: String,
    pub changes: Vec<Recorded>,
    /// The directories the fix created for its files, parents first:
    /// `--undo` removes each one that is empty again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<String>,
}

/// One change as recorded (the plan's [`Change`], owned and readable).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Recorded {
    Write {
        path: String,
        before: Option<String>,
        after: String,
    },
    Move {
        from: String,
        to: String,
    },
}

impl From<&Change> for Recorded {
    fn from(c: &Change) -> Recorded {
        match c {
            Change::Write {
                path,
                before,
                after,
            } => Recorded::Write {
                path: path.clone(),
                before: before.clone(),
                after: after.clone(),
            },
            Change::Move { from, to } => Recorded::Move {
                from: from.clone(),
                to: to.clone(),
            },
        }
    }
}

fn current(dir: &Path, abs: &str) -> Result<Option<String>> {
    greta_fsread::text_if_exists(&host(dir, abs), CAP)
        .with_context(|| format!("{abs}: cannot read it"))
}

/// The file is as `want` says (`None`: absent), or an error naming it.
fn expect(dir: &Path, abs: &str, want: Option<&str>, when: &str) -> Result<()> {
    if current(dir, abs)?.as_deref() != want {
        bail!("{abs} changed {when}; nothing was changed (run greta doctor --fix again)");
    }
    Ok(())
}

fn write(dir: &Path, abs: &str, text: Option<&str>) -> Result<()> {
    let p = host(dir, abs);
    match text {
        Some(t) => {
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("{abs}: cannot create its directory"))?;
            }
            output::write(&p, t.as_bytes(), Purpose::Config).with_context(|| abs.to_string())
        }
        None => std::fs::remove_file(&p).with_context(|| format!("{abs}: cannot remove it")),
    }
}

fn rename(dir: &Path, from: &str, to: &str) -> Result<()> {
    let (f, t) = (host(dir, from), host(dir, to));
    if let Some(parent) = t.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("{to}: cannot create its directory"))?;
    }
    std::fs::rename(&f, &t).with_context(|| format!("cannot move {from} to {to}"))
}

fn forward(dir: &Path, c: &Recorded) -> Result<()> {
    match c {
        Recorded::Write { path, after, .. } => write(dir, path, Some(after)),
        Recorded::Move { from, to } => rename(dir, from, to),
    }
}

fn back(dir: &Path, c: &Recorded) -> Result<()> {
    match c {
        Recorded::Write { path, before, .. } => write(dir, path, before.as_deref()),
        Recorded::Move { from, to } => rename(dir, to, from),
    }
}

/// The directories missing under `dir` for the files `rec` writes or
/// moves to, parents first, once each (paths as on the machine).
fn missing_dirs(dir: &Path, rec: &[Recorded]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in rec {
        let target = match c {
            Recorded::Write { path, .. } => path,
            Recorded::Move { to, .. } => to,
        };
        let mut chain: Vec<&Path> = Path::new(target.as_str())
            .ancestors()
            .skip(1)
            .filter(|a| a.parent().is_some())
            .collect();
        chain.reverse();
        for a in chain {
            let a = a.to_string_lossy().into_owned();
            if !host(dir, &a).exists() && !out.contains(&a) {
                out.push(a);
            }
        }
    }
    out
}

/// Removes the `created` directories that are empty, deepest first; one
/// that holds something now stays (it is not the fix's any more).
fn remove_created(dir: &Path, created: &[String]) {
    for d in created.iter().rev() {
        let _ = std::fs::remove_dir(host(dir, d));
    }
}

fn records_dir(dir: &Path) -> PathBuf {
    host(dir, &format!("{ASIDE}/undo"))
}

/// Applies `changes` under `dir`; returns the undo record's path. Each
/// file must still be as the plan read it. On a failure the changes made
/// are put back and the record removed: the machine is as before.
pub fn apply(dir: &Path, changes: &[Change]) -> Result<PathBuf> {
    let rec: Vec<Recorded> = changes.iter().map(Recorded::from).collect();
    for c in &rec {
        match c {
            Recorded::Write { path, before, .. } => {
                expect(dir, path, before.as_deref(), "since doctor read it")?
            }
            Recorded::Move { from, to } => {
                if !host(dir, from).is_file() {
                    bail!("{from} is gone since doctor read it; nothing was changed");
                }
                if host(dir, to).exists() {
                    bail!("{to} exists already (a fix not undone?); nothing was changed");
                }
            }
        }
    }
    let rdir = records_dir(dir);
    std::fs::create_dir_all(&rdir)
        .with_context(|| format!("{}: cannot create it", rdir.display()))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let path = rdir.join(format!("undo-{stamp:024}.json"));
    let created = missing_dirs(dir, &rec);
    let record = UndoRecord {
        schema: SCHEMA.into(),
        changes: rec.clone(),
        created_dirs: created.clone(),
    };
    let text = serde_json::to_string_pretty(&record)?;
    output::write(&path, text.as_bytes(), Purpose::Config)
        .with_context(|| format!("{}: the undo record", path.display()))?;
    for (i, c) in rec.iter().enumerate() {
        if let Err(e) = forward(dir, c) {
            let mut left = Vec::new();
            for done in rec[..i].iter().rev() {
                if let Err(b) = back(dir, done) {
                    left.push(format!("{b:#}"));
                }
            }
            if left.is_empty() {
                remove_created(dir, &created);
                let _ = std::fs::remove_file(&path);
                return Err(e.context("the changes made before it were put back"));
            }
            return Err(e.context(format!(
                "putting back the changes made before it failed too ({}); the undo record {} holds them",
                left.join("; "),
                path.display()
            )));
        }
    }
    Ok(path)
}

/// Undoes the newest fix under `dir` not undone yet: every file must be as
/// that fix left it (else nothing is changed). Returns the record's path
/// and what was put back.
pub fn undo(dir: &Path) -> Result<(PathBuf, Vec<Recorded>)> {
    let rdir = records_dir(dir);
    let mut names: Vec<String> = match std::fs::read_dir(&rdir) {
        Ok(r) => r
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("undo-") && n.ends_with(".json"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| rdir.display().to_string()),
    };
    names.sort();
    let Some(name) = names.pop() else {
        bail!("no fix to undo: {} holds no undo record", rdir.display());
    };
    let path = rdir.join(&name);
    let text = greta_fsread::text(&path, CAP).with_context(|| path.display().to_string())?;
    let record: UndoRecord = serde_json::from_str(&text)
        .with_context(|| format!("{}: not an undo record", path.display()))?;
    if record.schema != SCHEMA {
        bail!(
            "{}: schema {:?}, not {SCHEMA}",
            path.display(),
            record.schema
        );
    }
    for c in &record.changes {
        match c {
            Recorded::Write { path: p, after, .. } => {
                if current(dir, p)?.as_deref() != Some(after.as_str()) {
                    bail!(
                        "{p} was changed since the fix wrote it: undoing would overwrite that change, so nothing was undone; put back by hand what you want of {} (the record of the fix, kept)",
                        path.display()
                    );
                }
            }
            Recorded::Move { from, to } => {
                if !host(dir, to).is_file() || host(dir, from).exists() {
                    bail!(
                        "{from} or {to} changed since the fix moved it; nothing was undone (the record of the fix, kept: {})",
                        path.display()
                    );
                }
            }
        }
    }
    for c in record.changes.iter().rev() {
        back(dir, c)?;
    }
    remove_created(dir, &record.created_dirs);
    let done = rdir.join(name.replace(".json", ".undone"));
    std::fs::rename(&path, &done).with_context(|| path.display().to_string())?;
    Ok((done, record.changes))
}
