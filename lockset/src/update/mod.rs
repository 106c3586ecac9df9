//! `greta lock update PROFILE`: resolution is uv's job (`uv pip compile
//! --format pylock.toml`, once per supported Python); greta merges the
//! per-Python results into one PEP 751 file with `python_version` markers,
//! drops sdists (greta installs wheels only), keeps the comments of entries
//! that survive, validates the result and replaces the file atomically. When
//! uv fails (a dead index, an unsatisfiable pin) the old file stays as it was.
//!
//! `--seed-pins FILE` is for indexes that cannot be reached: packages whose
//! exact wheels (URL + sha256) are recorded in FILE are taken from there,
//! and everything else is resolved by uv on the remaining indexes; see
//! docs/profiles.md for what that does and does not prove.

mod io;
mod markers;

use super::matrix::{parse_xy, Profile};
use super::pylock::{normalize_name, url_filename, Lockfile};
use super::resolve::resolve_lock;
use super::tags::{Interpreter, WheelTags};
use anyhow::{bail, Context, Result};
use greta_vocab::url_secrets::redact;
pub use io::write_atomic;
use io::{run_capture, today};
pub use markers::combine_markers;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

/// The platform every profile is resolved for (the torch wheels' floor).
pub const PYTHON_PLATFORM: &str = "x86_64-manylinux_2_28";

/// How `greta lock update` resolves (the command line's options, less the
/// profile and the uv binary, which the caller has already found).
#[derive(Debug, Clone)]
pub struct Options {
    /// Take wheels recorded in this pins file (TOML [[pin]] with profile,
    /// name, version, filename, url, sha256) for packages whose index is
    /// unreachable; uv resolves the rest.
    pub seed_pins: Option<PathBuf>,
    /// Only consider distributions uploaded before this date (RFC 3339).
    pub exclude_newer: Option<String>,
    /// Limit for each uv run, seconds (capped at a week where used).
    pub timeout: u64,
}

/// Resolve and merge; returns the new lockfile text (validated, not written).
pub fn build(p: &Profile, uv: &Path, a: &Options) -> crate::Result<String> {
    Ok(resolve_merged(p, uv, a)?)
}

fn resolve_merged(p: &Profile, uv: &Path, a: &Options) -> Result<String> {
    let pins = match &a.seed_pins {
        Some(f) => load_pins(f, p)?,
        None => BTreeMap::new(),
    };
    let old = p
        .lock_dir
        .read(&p.lockfile_name)
        .ok()
        .flatten()
        .and_then(|t| t.parse::<DocumentMut>().ok());
    let uv_version = run_capture(uv, &["--version".into()], Duration::from_secs(30))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "uv".into());
    let tmp = tempfile::tempdir()?;
    let mut per_python: Vec<(String, DocumentMut)> = Vec::new();
    let mut commands = Vec::new();
    for py in &p.python {
        if p.incomplete.contains_key(py) {
            continue;
        }
        let devices = p.device_extras();
        if devices.is_empty() {
            let (doc, cmd) = compile_for(p, uv, a, py, None, &pins, tmp.path())?;
            commands.push(cmd);
            per_python.push((py.clone(), doc));
            continue;
        }
        // One resolution per GPU target (the requirements with that
        // target's device extra), merged into one document for this Python
        // whose device-only entries carry `'<extra>' in extras`.
        let mut per_device = Vec::new();
        for d in &devices {
            let (doc, cmd) = compile_for(p, uv, a, py, Some(d), &pins, tmp.path())?;
            commands.push(cmd);
            per_device.push((d.clone(), doc));
        }
        per_python.push((py.clone(), merge_devices(py, &per_device)?));
    }
    if per_python.is_empty() {
        bail!("profile {} has no lockable Python version", p.name);
    }
    let merged = merge(
        p,
        &per_python,
        &pins,
        old.as_ref(),
        &uv_version,
        &commands,
        a.seed_pins.as_deref(),
    )?;
    // Validate exactly what would be written.
    let lock = Lockfile::parse(&p.lockfile, merged.clone())
        .context("the merged lockfile does not parse (bug)")?;
    for (py, _) in &per_python {
        let interp = Interpreter::synthetic(py, Some(super::check::CHECK_GLIBC))?;
        resolve_lock(&lock, &interp)
            .with_context(|| format!("merged lockfile does not resolve for Python {py}"))?;
        for d in p.device_extras() {
            super::resolve::resolve_lock_with(&lock, &interp, std::slice::from_ref(&d))
                .with_context(|| {
                    format!("merged lockfile does not resolve for Python {py} with {d}")
                })?;
        }
    }
    Ok(merged)
}

/// One Python's per-target resolutions as one document: an entry (name,
/// version, marker) found for every target is a host entry and stays as
/// uv wrote it; one found for some targets only is a device entry, its
/// marker joined with `'<extra>' in extras` for those targets (a family
/// wheel shared by gfx1150 and gfx1151 gets both). Wheels are the union.
fn merge_devices(py: &str, per_device: &[(String, DocumentMut)]) -> Result<DocumentMut> {
    type Key = (String, String, Option<String>);
    let mut seen: BTreeMap<Key, (Table, Vec<String>)> = BTreeMap::new();
    let mut order: Vec<Key> = Vec::new();
    for (extra, doc) in per_device {
        let Some(pkgs) = doc.get("packages").and_then(Item::as_array_of_tables) else {
            bail!("uv output for Python {py} with {extra} has no [[packages]]");
        };
        for t in pkgs.iter() {
            let (name, version) = name_version(t);
            let marker = t.get("marker").and_then(Item::as_str).map(str::to_string);
            let key = (name, version, marker);
            match seen.get_mut(&key) {
                Some((table, extras)) => {
                    extras.push(extra.clone());
                    let have: BTreeSet<String> = wheel_urls(table);
                    if let (Some(dst), Some(src)) = (
                        table.get_mut("wheels").and_then(Item::as_array_mut),
                        t.get("wheels").and_then(Item::as_array),
                    ) {
                        for w in src.iter() {
                            if !have.contains(&wheel_url(w)) {
                                dst.push_formatted(w.clone());
                            }
                        }
                    }
                }
                None => {
                    order.push(key.clone());
                    seen.insert(key, (t.clone(), vec![extra.clone()]));
                }
            }
        }
    }
    let mut aot = ArrayOfTables::new();
    for key in order {
        let (mut table, extras) = seen.remove(&key).expect("listed above");
        if extras.len() < per_device.len() {
            let clause = extras
                .iter()
                .map(|e| format!("'{e}' in extras"))
                .collect::<Vec<_>>()
                .join(" or ");
            let marker = match &key.2 {
                Some(m) => format!("({m}) and ({clause})"),
                None if extras.len() == 1 => clause,
                None => format!("({clause})"),
            };
            table.insert("marker", toml_edit::value(marker));
        }
        aot.push(table);
    }
    let mut doc = DocumentMut::new();
    doc.insert("packages", Item::ArrayOfTables(aot));
    Ok(doc)
}

fn wheel_url(w: &Value) -> String {
    w.as_inline_table()
        .and_then(|it| it.get("url"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn wheel_urls(t: &Table) -> BTreeSet<String> {
    t.get("wheels")
        .and_then(Item::as_array)
        .map(|a| a.iter().map(wheel_url).collect())
        .unwrap_or_default()
}

/// One pins-file wheel.
#[derive(Debug, Clone)]
pub struct Pin {
    pub wheel: greta_vocab::PinnedWheel,
    /// Where the hash was copied from, written above the entry.
    pub comment: String,
}

/// Pins for this profile, keyed by normalised name.
fn load_pins(path: &Path, p: &Profile) -> Result<BTreeMap<String, Vec<Pin>>> {
    let text = crate::read::text_capped(path, crate::read::MAX_DATA_FILE)?;
    let doc: toml::Value =
        toml::from_str(&text).with_context(|| format!("{} is not TOML", path.display()))?;
    let mut out: BTreeMap<String, Vec<Pin>> = BTreeMap::new();
    let wanted: BTreeMap<String, String> = p
        .requirements
        .iter()
        .filter_map(|r| {
            let req = crate::marker::requirement(r, &crate::marker::Budget::per_file()).ok()?;
            let spec = match &req.version_or_url {
                Some(uv_pep508::VersionOrUrl::VersionSpecifier(s)) => s.to_string(),
                _ => return None,
            };
            let v = spec.strip_prefix("==")?.to_string();
            Some((normalize_name(req.name.as_ref()), v))
        })
        .collect();
    for pin in doc
        .get("pin")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        let s = |k: &str| pin.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let (Some(name), Some(version), Some(url), Some(sha)) =
            (s("name"), s("version"), s("url"), s("sha256"))
        else {
            continue;
        };
        let name = normalize_name(&name);
        if wanted.get(&name) != Some(&version) {
            continue;
        }
        let filename = s("filename").unwrap_or_else(|| url_filename(&url));
        let sources: Vec<String> = pin
            .get("sources")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let agree = pin
            .get("agree")
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".into());
        let comment = format!(
            "# {filename}: sha256 copied from {} (agree = {agree}); sources: {}; size not recorded by the source, checked at download",
            path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
            sources.join(", ")
        );
        let sha256 = sha
            .parse()
            .with_context(|| format!("{}: pin {name} {version}", path.display()))?;
        // A negative size is not a size (never wrapped into a huge one).
        let size = match pin.get("size").and_then(|v| v.as_integer()) {
            Some(i) => Some(u64::try_from(i).map_err(|_| {
                anyhow::anyhow!(
                    "{}: pin {name} {version}: size {i} is negative",
                    path.display()
                )
            })?),
            None => None,
        };
        out.entry(name.clone()).or_default().push(Pin {
            wheel: greta_vocab::PinnedWheel {
                name,
                version,
                filename,
                url,
                sha256,
                size,
                at: None,
            },
            comment,
        });
    }
    for (n, v) in &wanted {
        if let Some(list) = out.get(n) {
            if list.is_empty() {
                bail!("{}: no pin for {n}=={v}", path.display());
            }
        }
    }
    Ok(out)
}

fn compile_for(
    p: &Profile,
    uv: &Path,
    a: &Options,
    py: &str,
    device: Option<&String>,
    pins: &BTreeMap<String, Vec<Pin>>,
    tmp: &Path,
) -> Result<(DocumentMut, String)> {
    // Pinned requirements are replaced by their PyPI twin without local
    // version (torch==2.8.0+rocm6.4 -> torch==2.8.0) so uv still resolves
    // their generic dependencies; the CUDA-only ones are excluded below.
    let mut reqs = Vec::new();
    for r in &p.requirements {
        let req = crate::marker::requirement(r, &crate::marker::Budget::per_file())
            .map_err(|e| anyhow::anyhow!("requirement {r:?}: {e}"))?;
        let name = normalize_name(req.name.as_ref());
        if pins.contains_key(&name) {
            if let Some(uv_pep508::VersionOrUrl::VersionSpecifier(s)) = &req.version_or_url {
                let v = s.to_string();
                let base = v.split('+').next().unwrap_or(&v).to_string();
                if name == "torch" {
                    reqs.push(format!("{}{base}", req.name));
                }
            }
            continue;
        }
        match device {
            Some(d) if p.device_requirements.contains(&name) => {
                reqs.push(with_device_extra(r, req, d)?);
            }
            _ => reqs.push(r.clone()),
        }
    }
    let slot = match device {
        Some(d) => format!("{py}-{d}"),
        None => py.to_string(),
    };
    let req_file = tmp.join(format!("requirements-{slot}.in"));
    std::fs::write(&req_file, reqs.join("\n") + "\n")?;
    let out = tmp.join(format!("py{}", slot.replace('.', "")));
    std::fs::create_dir_all(&out)?;
    let out_file = out.join("pylock.toml");
    let mut args: Vec<String> = vec![
        "pip".into(),
        "compile".into(),
        req_file.display().to_string(),
        "--python-version".into(),
        py.into(),
        "--python-platform".into(),
        PYTHON_PLATFORM.into(),
        "--no-build".into(),
        "--no-header".into(),
        "--quiet".into(),
        "--format".into(),
        "pylock.toml".into(),
        "-o".into(),
        out_file.display().to_string(),
    ];
    let mut indexes: Vec<&String> = p.indexes.iter().collect();
    if !pins.is_empty() {
        // The pinned index is the unreachable one: resolve the rest on the others.
        let others: Vec<&String> = p
            .indexes
            .iter()
            .filter(|i| i.contains("pypi.org"))
            .collect();
        if !others.is_empty() {
            indexes = others;
        }
    }
    args.push("--default-index".into());
    args.push(indexes[0].clone());
    for i in &indexes[1..] {
        args.push("--index".into());
        args.push((*i).clone());
    }
    if let Some(d) = &a.exclude_newer {
        args.push("--exclude-newer".into());
        args.push(d.clone());
    }
    if !p.exclude.is_empty() {
        let ex = tmp.join("excludes-matrix.txt");
        std::fs::write(&ex, p.exclude.join("\n") + "\n")?;
        args.push("--excludes".into());
        args.push(ex.display().to_string());
    }
    let timeout = greta_vocab::number::secs(a.timeout);
    let run = |extra: &[String]| -> Result<DocumentMut> {
        let mut all = args.clone();
        all.extend_from_slice(extra);
        let _ = std::fs::remove_file(&out_file);
        run_capture(uv, &all, timeout).map_err(|e| {
            anyhow::anyhow!(
                "uv could not resolve profile {} for Python {py} against {}: {e:#}\n{} was left unchanged",
                p.name,
                indexes.iter().map(|s| redact(s)).collect::<Vec<_>>().join(", "),
                p.lockfile.display()
            )
        })?;
        let text = crate::read::text_capped(&out_file, crate::read::MAX_DATA_FILE)
            .with_context(|| format!("uv wrote no usable {}", out_file.display()))?;
        text.parse::<DocumentMut>()
            .with_context(|| format!("uv output for Python {py} is not TOML"))
    };
    let mut doc = run(&[])?;
    let reqs_shown = match device {
        Some(d) => format!("<requirements with [{d}]>"),
        None => "<requirements>".to_string(),
    };
    let mut shown = format!("uv pip compile {reqs_shown} --python-version {py} --python-platform {PYTHON_PLATFORM} --no-build --format pylock.toml --default-index {}", redact(indexes[0]));
    if pins.contains_key("torch") {
        // PyPI's torch is the CUDA build: drop its CUDA-only dependencies
        // (the ROCm build depends on triton-rocm instead, which is pinned).
        let cuda_only: Vec<String> = package_names(&doc)
            .into_iter()
            .filter(|n| n.starts_with("nvidia-") || n.starts_with("cuda-") || n == "triton")
            .collect();
        if !cuda_only.is_empty() {
            let ex = tmp.join(format!("excludes-{py}.txt"));
            std::fs::write(&ex, cuda_only.join("\n") + "\n")?;
            doc = run(&["--excludes".into(), ex.display().to_string()])?;
            shown.push_str(&format!(" --excludes <{}>", cuda_only.join(" ")));
        }
    }
    if let Some(d) = &a.exclude_newer {
        shown.push_str(&format!(" --exclude-newer {d}"));
    }
    if !p.exclude.is_empty() {
        shown.push_str(&format!(" --excludes <{}>", p.exclude.join(" ")));
    }
    Ok((doc, shown))
}

/// `torch==V ; M` -> `torch[device-gfx942]==V ; M` (its other extras
/// kept). The marker stays as written: uv-pep508 prints a marker tree
/// through its disjunctive normal form, which is exponential in the terms
/// of some markers the bounds admit (`(a0 or b0) and (a1 or b1) and ...`).
fn with_device_extra(text: &str, mut req: uv_pep508::Requirement, device: &str) -> Result<String> {
    let mut extras = req.extras.to_vec();
    extras.push(
        device
            .parse()
            .map_err(|e| anyhow::anyhow!("device extra {device:?}: {e}"))?,
    );
    req.extras = extras.into_boxed_slice();
    req.marker = uv_pep508::MarkerTree::TRUE;
    let mut out = req.to_string();
    if let Some((_, marker)) = text.split_once(';') {
        out.push_str(" ;");
        out.push_str(marker);
    }
    Ok(out)
}

fn package_names(doc: &DocumentMut) -> Vec<String> {
    doc.get("packages")
        .and_then(Item::as_array_of_tables)
        .map(|a| {
            a.iter()
                .filter_map(|t| t.get("name").and_then(Item::as_str))
                .map(normalize_name)
                .collect()
        })
        .unwrap_or_default()
}

struct Merged {
    table: Table,
    /// Python version -> uv's marker for this entry there (None: none).
    markers: BTreeMap<String, Option<String>>,
    wheel_urls: BTreeSet<String>,
}

fn merge(
    p: &Profile,
    per_python: &[(String, DocumentMut)],
    pins: &BTreeMap<String, Vec<Pin>>,
    old: Option<&DocumentMut>,
    uv_version: &str,
    commands: &[String],
    seed: Option<&Path>,
) -> Result<String> {
    let pythons: Vec<String> = per_python.iter().map(|(py, _)| py.clone()).collect();
    let entries = merge_uv_outputs(per_python, pins)?;
    let pinned = pinned_entries(p, pins, &pythons)?;
    let mut doc = header_doc(p, &pythons, uv_version, commands, seed, !pins.is_empty());
    let aot = packages(entries, pinned, old, &pythons)?;
    doc.insert("packages", Item::ArrayOfTables(aot));
    Ok(doc.to_string())
}

/// uv's lockfile of each Python version, merged: one entry per (name,
/// version), the union of their wheels, each Python's marker kept for
/// [`combine_markers`]. Pinned projects are left out (their pins replace them).
fn merge_uv_outputs(
    per_python: &[(String, DocumentMut)],
    pins: &BTreeMap<String, Vec<Pin>>,
) -> Result<BTreeMap<(String, String), Merged>> {
    let mut entries: BTreeMap<(String, String), Merged> = BTreeMap::new();
    for (py, doc) in per_python {
        let Some(pkgs) = doc.get("packages").and_then(Item::as_array_of_tables) else {
            bail!("uv output for Python {py} has no [[packages]]");
        };
        for t in pkgs.iter() {
            let (name, version) = name_version(t);
            if pins.contains_key(&name) {
                continue; // replaced by the pinned wheels below
            }
            let marker = t.get("marker").and_then(Item::as_str).map(str::to_string);
            let e = entries
                .entry((name.clone(), version.clone()))
                .or_insert_with(|| {
                    let mut table = Table::new();
                    for (k, v) in t.iter() {
                        if k != "sdist" && k != "wheels" && k != "marker" {
                            table.insert(k, v.clone());
                        }
                    }
                    table.insert("wheels", Item::Value(Value::Array(Array::new())));
                    Merged {
                        table,
                        markers: BTreeMap::new(),
                        wheel_urls: BTreeSet::new(),
                    }
                });
            e.markers.insert(py.clone(), marker);
            if let Some(ws) = t.get("wheels").and_then(Item::as_array) {
                for w in ws.iter() {
                    let url = w
                        .as_inline_table()
                        .and_then(|it| it.get("url"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    if e.wheel_urls.insert(url) {
                        let arr = e
                            .table
                            .get_mut("wheels")
                            .and_then(Item::as_array_mut)
                            .expect("inserted above");
                        arr.push_formatted(w.clone());
                    }
                }
            }
        }
    }
    Ok(entries)
}

/// A pinned project as written: name, version, its table, and the pins
/// files' comments for above it.
type PinnedEntry = (String, String, Table, Vec<String>);

/// Pinned wheels: one entry per (name, version), its wheels restricted to
/// the Python versions this profile supports.
fn pinned_entries(
    p: &Profile,
    pins: &BTreeMap<String, Vec<Pin>>,
    pythons: &[String],
) -> Result<Vec<PinnedEntry>> {
    let mut pinned_entries: Vec<PinnedEntry> = Vec::new();
    for (name, list) in pins {
        let mut table = Table::new();
        let version = list[0].wheel.version.clone();
        table.insert("name", toml_edit::value(name.as_str()));
        table.insert("version", toml_edit::value(version.as_str()));
        let mut arr = Array::new();
        let mut comments = Vec::new();
        for pin in list {
            let Some(wt) = WheelTags::parse(&pin.wheel.filename) else {
                continue;
            };
            let fits = pythons.iter().any(|py| {
                let (_, minor) = parse_xy(py).unwrap_or((3, 0));
                wt.tags
                    .iter()
                    .any(|(t, _, _)| *t == format!("cp3{minor}") || t == "py3")
            });
            if !fits {
                continue;
            }
            let mut it = InlineTable::new();
            it.insert("name", pin.wheel.filename.as_str().into());
            it.insert("url", pin.wheel.url.as_str().into());
            if let Some(s) = pin.wheel.size {
                let s = i64::try_from(s).map_err(|_| {
                    anyhow::anyhow!(
                        "{}: size {s} does not fit a TOML integer",
                        pin.wheel.filename
                    )
                })?;
                it.insert("size", s.into());
            }
            let mut h = InlineTable::new();
            h.insert("sha256", pin.wheel.sha256.to_string().into());
            it.insert("hashes", Value::InlineTable(h));
            arr.push(Value::InlineTable(it));
            comments.push(pin.comment.clone());
        }
        if arr.is_empty() {
            bail!(
                "no pinned wheel of {name} fits Python {}",
                pythons.join("/")
            );
        }
        if list.iter().any(|pin| pin.wheel.url.contains("pytorch.org")) {
            table.insert("index", toml_edit::value(p.indexes[0].as_str()));
        }
        arr.iter_mut()
            .for_each(|v| v.decor_mut().set_prefix("\n  "));
        arr.set_trailing("\n");
        arr.set_trailing_comma(true);
        table.insert("wheels", Item::Value(Value::Array(arr)));
        pinned_entries.push((name.clone(), version, table, comments));
    }

    Ok(pinned_entries)
}

/// The document up to its packages: version fields and the header that
/// says how the file was made.
fn header_doc(
    p: &Profile,
    pythons: &[String],
    uv_version: &str,
    commands: &[String],
    seed: Option<&Path>,
    has_pins: bool,
) -> DocumentMut {
    let mut doc = DocumentMut::new();
    doc.insert("lock-version", toml_edit::value("1.0"));
    doc.insert(
        "created-by",
        toml_edit::value(format!("greta lock update ({uv_version})")),
    );
    let (min, max) = (
        pythons.first().cloned().unwrap_or_default(),
        pythons.last().cloned().unwrap_or_default(),
    );
    let upper = parse_xy(&max)
        .map(|(a, b)| format!("{a}.{}", b + 1))
        .unwrap_or_default();
    doc.insert(
        "requires-python",
        toml_edit::value(format!(">={min},<{upper}")),
    );
    let devices = p.device_extras();
    if !devices.is_empty() {
        // PEP 751: the extras this file can install; `uv pip install -r
        // FILE --extra device-gfx942` takes one target's device wheels.
        doc.insert(
            "extras",
            toml_edit::value(devices.iter().map(String::as_str).collect::<Array>()),
        );
    }
    let mut header = format!(
        "# PEP 751 lockfile for greta profile `{}` ({}).\n# Made by `greta lock update {}{}` on {} with {uv_version}, which ran per Python version:\n",
        p.name,
        p.summary,
        p.name,
        seed.map(|s| format!(" --seed-pins {}", s.display())).unwrap_or_default(),
        today(),
    );
    for c in commands {
        header.push_str(&format!("#   {c}\n"));
    }
    header.push_str("# then merged the results (markers gain python_version where entries differ by Python),\n# dropped sdists (greta installs wheels only) and validated the file. Edit matrix.toml, not this file.\n");
    if !p.device_extras().is_empty() {
        header.push_str("# Each GPU target was resolved on its own; entries of some targets only carry `'device-gfxN' in extras`\n# (install one target: uv pip install -r THIS_FILE --extra device-gfxN).\n");
    }
    if has_pins {
        header.push_str("# Wheels of unreachable indexes were copied from the pins file named in the comment above each entry.\n");
    }
    doc.decor_mut().set_prefix(header);

    doc
}

/// The `[[packages]]`: merged entries (markers combined, wheels one per
/// line, the previous file's comments kept), then the pinned ones.
fn packages(
    entries: BTreeMap<(String, String), Merged>,
    pinned: Vec<PinnedEntry>,
    old: Option<&DocumentMut>,
    pythons: &[String],
) -> Result<ArrayOfTables> {
    let old_decor = old_package_decor(old);
    let mut aot = ArrayOfTables::new();
    for ((name, version), mut e) in entries {
        let marker = combine_markers(&e.markers, pythons)?;
        if let Some(m) = marker {
            // keep `marker` right after `version`, as uv writes it
            let mut t = Table::new();
            for (k, v) in e.table.iter() {
                t.insert(k, v.clone());
                if k == "version" {
                    t.insert("marker", toml_edit::value(m.as_str()));
                }
            }
            e.table = t;
        }
        if let Some(arr) = e.table.get_mut("wheels").and_then(Item::as_array_mut) {
            if arr.len() > 1 {
                arr.iter_mut()
                    .for_each(|v| v.decor_mut().set_prefix("\n  "));
                arr.set_trailing("\n");
                arr.set_trailing_comma(true);
            }
        }
        if let Some(prefix) = old_decor.get(&(name.clone(), version.clone())) {
            e.table.decor_mut().set_prefix(prefix.clone());
        } else {
            e.table.decor_mut().set_prefix("\n");
        }
        aot.push(e.table);
    }
    for (name, version, mut table, comments) in pinned {
        let prefix = old_decor
            .get(&(name, version))
            .cloned()
            .unwrap_or_else(|| format!("\n{}\n", comments.join("\n")));
        table.decor_mut().set_prefix(prefix);
        aot.push(table);
    }
    Ok(aot)
}

/// Comments written above each [[packages]] of the previous lockfile, kept
/// when the same (name, version) is written again.
fn old_package_decor(old: Option<&DocumentMut>) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    let Some(aot) = old
        .and_then(|d| d.get("packages"))
        .and_then(Item::as_array_of_tables)
    else {
        return out;
    };
    for t in aot.iter() {
        let prefix = t
            .decor()
            .prefix()
            .and_then(|p| p.as_str())
            .unwrap_or_default()
            .to_string();
        if prefix.contains('#') {
            let (name, version) = name_version(t);
            out.insert((name, version), prefix);
        }
    }
    out
}

/// A `[[packages]]` table's normalised name and its version (empty where
/// missing: such an entry matches nothing).
fn name_version(t: &Table) -> (String, String) {
    let text = |k: &str| t.get(k).and_then(Item::as_str).unwrap_or_default();
    (normalize_name(text("name")), text("version").to_string())
}

#[cfg(test)]
mod tests;
