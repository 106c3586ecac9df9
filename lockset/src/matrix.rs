//! `lock/matrix.toml`: the profiles greta can install, and what each needs
//! from the host. The data lives in the file; this module only reads and
//! validates it, so adding a profile never needs a code change.

use super::dir::LockDir;
use super::marker;
use super::pylock::Lockfile;
use super::source::{Fields, Source};
use anyhow::Result;
use greta_vocab::url_secrets::redact;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;
use toml_edit::Item;

/// The matrix file name inside a lock directory.
pub const MATRIX_FILE: &str = "matrix.toml";

/// The compute stack a profile is built for (the vocabulary's type).
pub use greta_vocab::Backend;

/// Whether a profile's lockfile holds verified hashes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum LockStatus {
    Locked,
    /// Listed so users see it exists, but no verifiable hashes could be had:
    /// `greta install` refuses it until `greta lock update` is run where its
    /// index is reachable.
    NotLocked {
        reason: String,
    },
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Profile {
    /// PyTorch index name: `cpu`, `cuda`, `rocm6.4`, ...
    pub name: String,
    pub backend: Backend,
    pub summary: String,
    pub status: LockStatus,
    /// Version of the ROCm/CUDA user space the wheels were built against
    /// (ROCm: it is bundled inside the torch wheel).
    pub backend_version: Option<String>,
    /// Host versions this profile serves (semver requirement). ROCm: the
    /// amdgpu kernel-driver (KMD/KFD) release; CUDA: the driver's CUDA
    /// version; CPU: `*`.
    #[serde(serialize_with = "ser_display")]
    pub serves: semver::VersionReq,
    /// Minimum kernel-driver version, when the backend states one (NVIDIA).
    #[serde(serialize_with = "ser_display_opt")]
    pub driver: Option<semver::VersionReq>,
    /// gfx targets the torch wheels carry kernels for (ROCm only).
    pub gfx: Vec<String>,
    /// Where the gfx list comes from.
    pub gfx_source: Option<String>,
    /// Per-GPU device wheels (AMD's multi-arch indexes, ROCm 7.14+): the
    /// extra that selects each gfx target's device wheels (`device-gfx942`
    /// from `device-extra = "device-{gfx}"`) and the requirements that take
    /// it (`torch`, `torchvision`). The lockfile records every target's
    /// device wheels under `'device-gfxN' in extras`; an install takes the
    /// host wheels plus the device wheels of this machine's targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_extra: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_requirements: Vec<String>,
    /// Projects uv leaves out of the resolution (`--excludes`): AMD's `rocm`
    /// meta package is published only as an sdist, which greta never builds
    /// (`--no-build`); what it would pull in is listed as requirements.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Supported "X.Y" Python versions, oldest first.
    pub python: Vec<String>,
    /// Python versions listed but not lockable, with the reason.
    pub incomplete: BTreeMap<String, String>,
    /// Shown (`lock list/show --json`) with any credentials hidden.
    #[serde(serialize_with = "greta_vocab::url_secrets::serialize_redacted_list")]
    pub indexes: Vec<String>,
    /// Top-level requirements the lockfile was resolved from (PEP 508).
    pub requirements: Vec<String>,
    /// Lockfile as written in matrix.toml (relative to the lock dir).
    pub lockfile_name: String,
    /// The lockfile as shown in messages (a path on disk, or
    /// `<built-in>/lock/NAME`); read it with [`Profile::load_lockfile`].
    pub lockfile: PathBuf,
    /// The lock set the profile belongs to.
    #[serde(skip)]
    pub lock_dir: LockDir,
    /// Free text shown by `greta lock show` (host notes, caveats).
    pub notes: Vec<String>,
    /// 1-based line of the profile's table in matrix.toml.
    pub line: usize,
}

impl Profile {
    /// Read and parse this profile's lockfile from its lock set.
    pub fn load_lockfile(&self) -> crate::Result<Lockfile> {
        let text = self.lock_dir.read_required(&self.lockfile_name)?;
        Lockfile::parse(&self.lockfile, text)
    }

    pub fn is_locked(&self) -> bool {
        matches!(self.status, LockStatus::Locked)
    }

    /// `Err` with the fix when this profile cannot be installed yet.
    pub fn ensure_locked(&self) -> crate::Result<()> {
        match &self.status {
            LockStatus::Locked => Ok(()),
            LockStatus::NotLocked { reason } => {
                Err(super::Refusal {
                    message: format!("profile `{}` is not yet locked: {reason}", self.name),
                    fix: format!(
                    "run `greta lock update {}` on a machine that can reach {} and commit lock/{}",
                    self.name,
                    self.indexes.first().map_or("its index".into(), |i| redact(i)),
                    self.lockfile_name
                ),
                }
                .into())
            }
        }
    }

    pub fn supports_python(&self, xy: &str) -> bool {
        self.python.iter().any(|p| p == xy) && !self.incomplete.contains_key(xy)
    }

    /// The ROCm/CUDA version as a semver value, for ordering profiles.
    pub fn backend_semver(&self) -> Option<semver::Version> {
        self.backend_version.as_deref().and_then(loose_version)
    }

    /// The extra that selects `gfx`'s device wheels, when this profile has
    /// per-GPU device wheels and carries `gfx`.
    pub fn device_extra_for(&self, gfx: &str) -> Option<String> {
        let pattern = self.device_extra.as_ref()?;
        self.has_gfx(gfx)
            .then(|| pattern.replace("{gfx}", &gfx.to_ascii_lowercase()))
    }

    /// Every target's device extra (empty without per-GPU device wheels).
    pub fn device_extras(&self) -> Vec<String> {
        self.gfx
            .iter()
            .filter_map(|g| self.device_extra_for(g))
            .collect()
    }

    pub fn has_gfx(&self, gfx: &str) -> bool {
        self.gfx.iter().any(|g| g.eq_ignore_ascii_case(gfx))
    }
}

/// A documented way to run wheels on a gfx target they were not built for.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GfxOverride {
    pub gfx: String,
    /// The target the wheels' kernels are used as.
    pub as_gfx: String,
    pub env: Vec<(String, String)>,
    pub risk: String,
    pub source: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Matrix {
    /// The lock set this matrix came from (built in, or a directory and why).
    pub dir: LockDir,
    pub path: PathBuf,
    pub profiles: Vec<Profile>,
    pub gfx_overrides: Vec<GfxOverride>,
}

const PROFILE_KEYS: &[&str] = &[
    "backend",
    "summary",
    "status",
    "not-locked-reason",
    "backend-version",
    "serves",
    "driver",
    "gfx",
    "gfx-source",
    "device-extra",
    "device-requirements",
    "exclude",
    "python",
    "incomplete",
    "indexes",
    "requirements",
    "lockfile",
    "notes",
];

impl Matrix {
    /// Load the lock set's `matrix.toml`.
    pub fn load(dir: &LockDir) -> crate::Result<Matrix> {
        let text = dir.read_required(MATRIX_FILE)?;
        Self::parse(dir, text)
    }

    /// Parse matrix text as if it were the set's `matrix.toml` (tests, `update`).
    pub fn parse(dir: &LockDir, text: String) -> crate::Result<Matrix> {
        let src = Source::parse(&dir.shown(MATRIX_FILE), text)?;
        Ok(Self::from_source(dir, &src)?)
    }

    /// The parsed lockfile of one of this matrix's profiles.
    pub fn lockfile(&self, p: &Profile) -> crate::Result<Lockfile> {
        p.load_lockfile()
    }

    fn from_source(dir: &LockDir, src: &Source) -> Result<Matrix> {
        let root = Fields::new(src, src.root(), "matrix.toml");
        root.deny_unknown(&["schema", "profiles", "gfx-override"])?;
        match root.opt_u64("schema")? {
            Some(1) => {}
            Some(n) => {
                return Err(src.err_at(
                    root.value_span("schema"),
                    format!("unsupported schema {n}; this greta reads schema 1"),
                ))
            }
            None => return Err(src.err_at(None, "missing `schema = 1` at the top of matrix.toml")),
        }
        let profiles_tbl = match src.root().get("profiles") {
            Some(Item::Table(t)) => t,
            Some(i) => {
                return Err(src.err_at(
                    i.span(),
                    "`profiles` must be a table of tables ([profiles.NAME])",
                ))
            }
            None => return Err(src.err_at(None, "no [profiles.NAME] tables")),
        };
        let markers = marker::Budget::per_file();
        let mut profiles = Vec::new();
        for (name, item) in profiles_tbl.iter() {
            let Item::Table(t) = item else {
                return Err(src.err_at(item.span(), format!("profiles.{name} must be a table")));
            };
            profiles.push(parse_profile(dir, src, name, t, &markers)?);
        }
        if profiles.is_empty() {
            return Err(src.err_at(profiles_tbl.span(), "no profiles defined"));
        }
        let mut seen_lock = BTreeMap::new();
        for p in &profiles {
            if let Some(other) = seen_lock.insert(p.lockfile_name.clone(), p.name.clone()) {
                return Err(src.err_at(
                    profiles_tbl.get(&p.name).and_then(Item::span),
                    format!(
                        "profiles {other} and {} share lockfile {}",
                        p.name, p.lockfile_name
                    ),
                ));
            }
        }
        let mut gfx_overrides = Vec::new();
        match src.root().get("gfx-override") {
            None => {}
            Some(Item::ArrayOfTables(a)) => {
                for t in a.iter() {
                    let f = Fields::new(src, t, "[[gfx-override]]");
                    f.deny_unknown(&["gfx", "as", "env", "risk", "source"])?;
                    let env = f
                        .str_map("env", "be a table of strings")?
                        .into_iter()
                        .map(|(k, v, _)| (k, v))
                        .collect();
                    gfx_overrides.push(GfxOverride {
                        gfx: check_gfx(&f, f.value_span("gfx"), f.str("gfx")?)?,
                        as_gfx: check_gfx(&f, f.value_span("as"), f.str("as")?)?,
                        env,
                        risk: f.str("risk")?,
                        source: f.str("source")?,
                    });
                }
            }
            Some(i) => {
                return Err(src.err_at(
                    i.span(),
                    "`gfx-override` must be an array of tables ([[gfx-override]])",
                ))
            }
        }
        Ok(Matrix {
            dir: dir.clone(),
            path: src.path.clone(),
            profiles,
            gfx_overrides,
        })
    }

    pub fn profile(&self, name: &str) -> crate::Result<&Profile> {
        self.profiles
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.profiles.iter().map(|p| p.name.as_str()).collect();
                super::Refusal {
                    message: format!(
                        "no profile named `{name}` in {}{}",
                        self.path.display(),
                        greta_vocab::suggest::did_you_mean(name, names.iter().copied(), 1)
                    ),
                    fix: format!("choose one of: {}", names.join(", ")),
                }
                .into()
            })
    }

    pub fn gfx_override(&self, gfx: &str) -> Option<&GfxOverride> {
        self.gfx_overrides
            .iter()
            .find(|o| o.gfx.eq_ignore_ascii_case(gfx))
    }
}

fn check_gfx(f: &Fields, span: Option<Range<usize>>, g: String) -> Result<String> {
    let ok = g.len() > 3 && g.starts_with("gfx") && g[3..].chars().all(|c| c.is_ascii_hexdigit());
    if !ok {
        return Err(f.err(span, format!("`{g}` is not a gfx target (like gfx942)")));
    }
    Ok(g)
}

/// One `[profiles.<name>]` table, checked key by key in the order below (a
/// profile with several faults reports the first).
fn parse_profile(
    dir: &LockDir,
    src: &Source,
    name: &str,
    t: &toml_edit::Table,
    markers: &marker::Budget,
) -> Result<Profile> {
    let f = Fields::new(src, t, format!("profiles.{name}"));
    f.deny_unknown(PROFILE_KEYS)?;
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-');
    if !name_ok {
        return Err(src.err_at(
            t.span(),
            format!("profile name `{name}` must be lowercase letters, digits, '.' or '-'"),
        ));
    }
    let backend = profile_backend(&f)?;
    let status = profile_status(&f)?;
    let serves = version_req(&f, "serves")?
        .ok_or_else(|| f.err(t.span(), "missing required key `serves`"))?;
    let driver = version_req(&f, "driver")?;
    let gfx = profile_gfx(&f, backend)?;
    let (device_extra, device_requirements) = profile_device(&f, backend)?;
    let exclude = project_names(&f, "exclude")?;
    let python = profile_python(&f)?;
    let incomplete = profile_incomplete(&f, &python)?;
    let indexes = profile_indexes(&f)?;
    let requirements = profile_requirements(&f, markers)?;
    let lockfile_name = f.str("lockfile")?;
    let expected = lockfile_name_for(name);
    if lockfile_name != expected {
        return Err(f.err(
            f.value_span("lockfile"),
            format!(
                "lockfile must be `{expected}` (PEP 751: pylock.<name>.toml, no dots in <name>)"
            ),
        ));
    }
    Ok(Profile {
        name: name.to_string(),
        backend,
        summary: f.str("summary")?,
        status,
        backend_version: f.opt_str("backend-version")?,
        serves,
        driver,
        gfx,
        gfx_source: f.opt_str("gfx-source")?,
        device_extra,
        device_requirements,
        exclude,
        python,
        incomplete,
        indexes,
        requirements,
        lockfile: dir.shown(&lockfile_name),
        lock_dir: dir.clone(),
        lockfile_name,
        notes: f.str_list("notes")?.into_iter().map(|(s, _)| s).collect(),
        line: src.line_of(t.span()),
    })
}

fn profile_backend(f: &Fields) -> Result<Backend> {
    let s = f.str("backend")?;
    s.parse::<Backend>().map_err(|_| {
        f.err(
            f.value_span("backend"),
            format!("backend `{s}` must be cpu, cuda or rocm"),
        )
    })
}

fn profile_status(f: &Fields) -> Result<LockStatus> {
    match f.str("status")?.as_str() {
        "locked" if f.table.contains_key("not-locked-reason") => Err(f.err(
            f.value_span("not-locked-reason"),
            "`not-locked-reason` only goes with status = \"not-locked\"",
        )),
        "locked" => Ok(LockStatus::Locked),
        "not-locked" => Ok(LockStatus::NotLocked {
            reason: f.str("not-locked-reason")?,
        }),
        other => Err(f.err(
            f.value_span("status"),
            format!("status `{other}` must be \"locked\" or \"not-locked\""),
        )),
    }
}

/// An optional semver requirement (`serves`, `driver`).
fn version_req(f: &Fields, key: &str) -> Result<Option<semver::VersionReq>> {
    let Some(s) = f.opt_str(key)? else {
        return Ok(None);
    };
    semver::VersionReq::parse(&s).map(Some).map_err(|e| {
        f.err(
            f.value_span(key),
            format!("`{key}` = {s:?} is not a semver requirement: {e}"),
        )
    })
}

/// The gfx targets a rocm profile's wheels carry (only rocm profiles list them).
fn profile_gfx(f: &Fields, backend: Backend) -> Result<Vec<String>> {
    let gfx = f
        .str_list("gfx")?
        .into_iter()
        .map(|(g, span)| check_gfx(f, span, g))
        .collect::<Result<Vec<_>>>()?;
    if backend == Backend::Rocm && gfx.is_empty() {
        return Err(f.err(
            f.span(),
            "a rocm profile must list the gfx targets of its wheels",
        ));
    }
    if backend != Backend::Rocm && !gfx.is_empty() {
        return Err(f.err(f.value_span("gfx"), "only rocm profiles list gfx targets"));
    }
    Ok(gfx)
}

/// `device-extra` (a pattern with `{gfx}`, giving a valid PEP 685 extra
/// name per target) and `device-requirements` (names among the profile's
/// requirements): both or neither, rocm only.
fn profile_device(f: &Fields, backend: Backend) -> Result<(Option<String>, Vec<String>)> {
    let extra = f.opt_str("device-extra")?;
    let reqs: Vec<(String, Option<std::ops::Range<usize>>)> = f.str_list("device-requirements")?;
    match &extra {
        None if reqs.is_empty() => return Ok((None, vec![])),
        None => {
            return Err(f.err(
                f.value_span("device-requirements"),
                "device-requirements needs device-extra (the extra that selects a target's device wheels)",
            ))
        }
        Some(_) if backend != Backend::Rocm => {
            return Err(f.err(f.value_span("device-extra"), "only rocm profiles have device wheels"))
        }
        Some(_) if reqs.is_empty() => {
            return Err(f.err(
                f.value_span("device-extra"),
                "device-extra needs device-requirements (which requirements take the extra)",
            ))
        }
        Some(e) => {
            let probe = e.replace("{gfx}", "gfx942");
            if !e.contains("{gfx}") || probe.parse::<uv_normalize::ExtraName>().is_err() {
                return Err(f.err(
                    f.value_span("device-extra"),
                    format!("device-extra `{e}` must be an extra name containing {{gfx}} (`device-{{gfx}}`)"),
                ));
            }
        }
    }
    let mut out = Vec::new();
    for (r, span) in reqs {
        if r.parse::<uv_normalize::PackageName>().is_err() {
            return Err(f.err(
                span,
                format!("device-requirements: `{r}` is not a project name"),
            ));
        }
        out.push(super::pylock::normalize_name(&r));
    }
    Ok((extra, out))
}

/// A list of project names (PEP 503-normalised).
fn project_names(f: &Fields, key: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (r, span) in f.str_list(key)? {
        if r.parse::<uv_normalize::PackageName>().is_err() {
            return Err(f.err(span, format!("{key}: `{r}` is not a project name")));
        }
        out.push(super::pylock::normalize_name(&r));
    }
    Ok(out)
}

/// The Python versions (x.y), oldest first; at least one.
fn profile_python(f: &Fields) -> Result<Vec<String>> {
    let mut python = Vec::new();
    for (p, span) in f.str_list("python")? {
        if parse_xy(&p).is_none_or(|(_, minor)| minor > super::tags::MAX_MINOR) {
            return Err(f.err(span, format!("python version `{p}` must look like 3.12")));
        }
        python.push(p);
    }
    if python.is_empty() {
        return Err(f.err(f.span(), "`python` must list at least one version"));
    }
    python.sort_by_key(|p| parse_xy(p));
    Ok(python)
}

/// Python versions the lock does not cover, each with its reason.
fn profile_incomplete(f: &Fields, python: &[String]) -> Result<BTreeMap<String, String>> {
    let mut incomplete = BTreeMap::new();
    for (k, reason, span) in f.str_map("incomplete", "map python versions to reasons")? {
        if !python.contains(&k) {
            return Err(f.err(
                span,
                format!("incomplete.{k} names a python version not in `python`"),
            ));
        }
        incomplete.insert(k, reason);
    }
    Ok(incomplete)
}

/// The package indexes: https, or plain http only to this host's loopback
/// (a local mirror, or the test index); `lock check` still refuses
/// non-https wheel URLs.
fn profile_indexes(f: &Fields) -> Result<Vec<String>> {
    let listed = f.str_list("indexes")?;
    if listed.is_empty() {
        return Err(f.err(f.span(), "`indexes` must list at least one index URL"));
    }
    for (i, (u, span)) in listed.iter().enumerate() {
        let loopback = u.starts_with("http://127.0.0.1:")
            || u.starts_with("http://localhost:")
            || u.starts_with("http://[::1]:");
        if !u.starts_with("https://") && !loopback {
            return Err(f.err(
                span.clone(),
                format!(
                    "indexes[{i}] `{}` must be an https URL (or http to loopback)",
                    redact(u)
                ),
            ));
        }
    }
    Ok(listed.into_iter().map(|(u, _)| u).collect())
}

/// The top-level requirements, each PEP 508; at least one.
fn profile_requirements(f: &Fields, markers: &marker::Budget) -> Result<Vec<String>> {
    let mut requirements = Vec::new();
    for (r, span) in f.str_list("requirements")? {
        match marker::requirement(&r, markers) {
            Ok(_) => {}
            Err(marker::RequirementError::Marker(e)) => {
                return Err(f.err(
                    Some(f.src.inside_string(span, &r, e.offset)),
                    format!("requirement {}: marker: {}", marker::shown(&r), e.message),
                ))
            }
            Err(e) => {
                return Err(f.err(span, format!("requirement {r:?} is not PEP 508: {e}")));
            }
        }
        requirements.push(r);
    }
    if requirements.is_empty() {
        return Err(f.err(
            f.span(),
            "`requirements` must list the top-level requirements",
        ));
    }
    Ok(requirements)
}

/// `rocm6.4` -> `pylock.rocm6-4.toml` (PEP 751 forbids dots in the name part).
pub fn lockfile_name_for(profile: &str) -> String {
    format!("pylock.{}.toml", profile.replace('.', "-"))
}

/// "3.12" -> (3, 12).
pub fn parse_xy(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Version strings from drivers and tools are not semver ("580.95.05",
/// "6.1.40091-a8dbc0c19", "7.2"): keep the first three numeric parts.
pub fn loose_version(s: &str) -> Option<semver::Version> {
    let head = s
        .trim()
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()?;
    let mut parts = head
        .split('.')
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<u64>());
    let major = parts.next()?.ok()?;
    let minor = parts.next().unwrap_or(Ok(0)).ok()?;
    let patch = parts.next().unwrap_or(Ok(0)).ok()?;
    Some(semver::Version::new(major, minor, patch))
}

fn ser_display<S: serde::Serializer, T: std::fmt::Display>(
    v: &T,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(v)
}

fn ser_display_opt<S: serde::Serializer, T: std::fmt::Display>(
    v: &Option<T>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_versions() {
        assert_eq!(
            loose_version("580.95.05"),
            Some(semver::Version::new(580, 95, 5))
        );
        assert_eq!(
            loose_version("6.1.40091-a8dbc0c19"),
            Some(semver::Version::new(6, 1, 40091))
        );
        assert_eq!(loose_version("7.2"), Some(semver::Version::new(7, 2, 0)));
        assert_eq!(loose_version("abc"), None);
    }

    /// A requirement's marker is read within the same bounds as a
    /// lockfile's (uv-pep508's recursive parser overflowed the stack on
    /// 15,000 parentheses), and refused at its place.
    #[test]
    fn a_deeply_nested_requirement_marker_is_refused_at_its_place() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lock/matrix.toml"),
        )
        .unwrap();
        let from = "\"torch==2.15.0\",";
        let deep = format!(
            "\"torch==2.15.0 ; {}python_version >= '3.12'{}\",",
            "(".repeat(15_000),
            ")".repeat(15_000)
        );
        let line = text[..text.find(from).unwrap()].matches('\n').count() + 1;
        let e = Matrix::parse(&LockDir::built_in(), text.replacen(from, &deep, 1)).unwrap_err();
        let e = e.source_error().expect("a SourceError");
        // Column: the indent (2), the quote, "torch==2.15.0 ; " and 32 '('.
        assert_eq!((e.line, e.col), (line, 2 + 1 + 16 + 32 + 1), "{e}");
        assert!(
            e.message.contains("parentheses nested deeper than 32"),
            "{e}"
        );
    }

    #[test]
    fn lockfile_names_have_no_dots() {
        assert_eq!(lockfile_name_for("rocm6.4"), "pylock.rocm6-4.toml");
        assert_eq!(lockfile_name_for("cpu"), "pylock.cpu.toml");
    }
}
