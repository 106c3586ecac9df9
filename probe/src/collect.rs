//! Runs every live/sysroot collector, timing each, and returns the facts
//! plus one [`CheckRun`] per check (doctor prints one line for each), in
//! the order of [`CHECKS`] whatever ran beside what.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::facts::Facts;
use crate::live;
use crate::root::Root;

/// One check as it ran: what doctor prints as "glyph title (time) summary".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckRun {
    /// Stable id: see [`CHECKS`].
    pub id: String,
    pub title: String,
    #[serde(serialize_with = "ser_ms", rename = "duration_ms")]
    pub duration: Duration,
    /// What it found, in a few words.
    pub summary: String,
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0 * 10.0).round() / 10.0)
}

/// Every check, in the order it runs: (id, title, finding-id prefixes it
/// owns, so doctor can put each finding's glyph on its check's line).
pub const CHECKS: &[(&str, &str, &[&str])] = &[
    (
        "pci",
        "GPUs on the PCI bus and kernel driver",
        &["gpu.", "driver."],
    ),
    ("kfd", "AMD compute topology (KFD)", &["apu."]),
    (
        "device-nodes",
        "Device nodes /dev/kfd, /dev/dri/renderD*",
        &["kfd."],
    ),
    (
        "vulkan-icds",
        "Vulkan loader and ICD manifests",
        &[
            "vulkan.loader",
            "vulkan.no-icd",
            "vulkan.icd",
            "vulkan.amd-switchable",
        ],
    ),
    (
        "vulkan-devices",
        "Vulkan devices",
        &[
            "vulkan.cpu-only",
            "vulkan.duplicate",
            "vulkan.gfx94x",
            "vulkan.no-device",
        ],
    ),
    ("rocm", "ROCm / HIP userspace", &["rocm."]),
    (
        "python",
        "Python and frameworks",
        &["python.", "framework.", "app."],
    ),
    // Live only: doctor (the `greta` binary) asks HIP in a child of itself
    // (`greta __gpu devices`), since this crate never loads HIP.
    (
        "hip-runtime",
        "HIP runtime (libamdhip64)",
        &["rocm.runtime-no-device"],
    ),
];

/// Parsers for captured tool text (owned by the `--from` side). The
/// collectors use them for rocminfo output and replayed vulkaninfo.
#[derive(Clone, Copy, Default)]
pub struct Parsers {
    pub rocminfo: Option<live::rocm::TextParser>,
    pub vulkaninfo: Option<live::vkdev::TextParser>,
}

/// The parsers this build has: the `--from` text recognisers.
pub fn default_parsers() -> Parsers {
    Parsers {
        rocminfo: Some(parse_into),
        vulkaninfo: Some(parse_into),
    }
}

/// Runs the `--from` recognisers on a command's output and folds what they
/// find (GPUs, agents, error signatures) into `f` with the same merge the
/// `--from` path uses.
pub fn parse_into(text: &str, source: &str, f: &mut Facts) {
    let (_, part) = crate::from::parse_text(text, source);
    let base = std::mem::take(f);
    // Fields the merge does not carry (owned by the live side).
    let hip_libraries = base.rocm.hip_libraries.clone();
    let hipconfig = base.rocm.hipconfig.clone();
    let mut merged = crate::merge::merge(vec![base, part]);
    merged.rocm.hip_libraries = hip_libraries;
    merged.rocm.hipconfig = hipconfig;
    *f = merged;
}

/// Collects everything from `root` with the crate's own text parsers;
/// `env_dirs` are the directories holding greta's envs (the caller's
/// answer: the installer decides where envs go).
pub fn collect(root: &Root, env_dirs: &[String]) -> (Facts, Vec<CheckRun>) {
    collect_with(root, default_parsers(), env_dirs)
}

pub fn collect_with(root: &Root, parsers: Parsers, env_dirs: &[String]) -> (Facts, Vec<CheckRun>) {
    let mut f = Facts {
        sources: vec![root.source_label()],
        ..Facts::default()
    };
    // The slow parts that depend on no other check start first and run
    // beside the rest: Python (its `--version` runs) writes only its own
    // part of the facts, and a live Vulkan enumeration (loading every
    // driver) needs nothing but the loader. Their results are applied in
    // the fixed order below, so the facts and the check list are the same
    // as one after another.
    let mut py = Facts::default();
    let (mut runs, py_run) = std::thread::scope(|s| {
        let py_thread = s.spawn(|| {
            timed(root, "python", &mut py, |f| {
                live::python::collect(root, f, env_dirs)
            })
        });
        let vk_thread = root.is_live().then(|| {
            s.spawn(|| {
                let t0 = Instant::now();
                let e = live::vkdev::enumerate_with_timeout(live::vkdev::ENUMERATION_TIMEOUT);
                (e, t0.elapsed())
            })
        });
        let mut runs = vec![
            timed(root, "pci", &mut f, |f| live::pci::collect(root, f)),
            timed(root, "kfd", &mut f, |f| live::kfd::collect(root, f)),
            timed(root, "device-nodes", &mut f, |f| {
                live::nodes::collect(root, f)
            }),
            timed(root, "vulkan-icds", &mut f, |f| live::icd::collect(root, f)),
        ];
        // A panicked enumeration thread is enumerated again here.
        let (early, spent) = match vk_thread.map(|h| h.join()) {
            Some(Ok((e, d))) => (Some(e), d),
            _ => (None, Duration::ZERO),
        };
        let mut vk = timed(root, "vulkan-devices", &mut f, |f| {
            live::vkdev::collect_enumerated(root, f, parsers.vulkaninfo, early)
        });
        // Its time is the enumeration's own, wherever it ran.
        vk.duration += spent;
        runs.push(vk);
        runs.push(timed(root, "rocm", &mut f, |f| {
            live::rocm::collect(root, f, parsers.rocminfo)
        }));
        (runs, py_thread.join())
    });
    match py_run {
        Ok(run) => {
            f.python = py.python;
            f.signals.extend(py.signals);
            for a in py.scanned {
                live::scanned(&mut f, &a);
            }
            runs.push(run);
        }
        Err(_) => runs.push(CheckRun {
            id: "python".into(),
            title: title_of("python").into(),
            duration: Duration::ZERO,
            summary: "python check failed internally".into(),
        }),
    }
    (f, runs)
}

fn title_of(id: &str) -> &'static str {
    CHECKS
        .iter()
        .find(|c| c.0 == id)
        .map(|c| c.1)
        .unwrap_or("check")
}

/// The areas of [`Facts::scanned`] each check may mark read whole.
fn areas(check: &str) -> &'static [&'static str] {
    match check {
        "vulkan-icds" => &["vulkan-loader", "vulkan-icds"],
        "pci" => &["pci"],
        "kfd" => &["kfd"],
        "device-nodes" => &["device-nodes"],
        "vulkan-devices" => &["vulkan-devices"],
        "rocm" => &["rocm"],
        "python" => &["python"],
        _ => &[],
    }
}

/// Runs check `id`, timed; what it finds unreadable in a sysroot is
/// charged to it (`root::reading_for`). A check that met something it
/// could not read did not read its area whole, whatever it concluded: an
/// absence there is no fact (a spoiled `etc/vulkan/icd.d` is not "no
/// ICD"). Nor did one whose search paths come from an environment that
/// could not be read.
fn timed(
    root: &Root,
    id: &'static str,
    f: &mut Facts,
    run: impl FnOnce(&mut Facts) -> String,
) -> CheckRun {
    let charged = || {
        root.unreadable()
            .iter()
            .filter(|u| u.check == Some(id))
            .count()
    };
    let before = charged();
    let t0 = Instant::now();
    let summary = crate::root::reading_for(Some(id), || run(f));
    let env_guides = matches!(id, "vulkan-icds" | "rocm" | "python");
    if charged() > before || (env_guides && root.env_unknown()) {
        f.scanned.retain(|a| !areas(id).contains(&a.as_str()));
    }
    CheckRun {
        id: id.to_string(),
        title: title_of(id).to_string(),
        duration: t0.elapsed(),
        summary,
    }
}
