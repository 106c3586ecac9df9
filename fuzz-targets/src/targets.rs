//! One function per target. Each returns quietly on input its parser
//! refuses; it panics only on a defect.
use greta_lockset::{LockDir, Lockfile, Matrix};
use greta_runtime::{DeviceInfo, Op, TuningCache};
use std::path::Path;

pub use crate::plan::gemm_plan;

/// A target's working directory (a fresh temporary one, removed on drop)
/// and the device identity the tuning-cache target writes for.
pub struct Scratch {
    dir: tempfile::TempDir,
    device: DeviceInfo,
}

impl Scratch {
    pub fn new() -> std::io::Result<Scratch> {
        let mut device = DeviceInfo::placeholder();
        // lavapipe's identity, as in the seed fuzz/seeds/tuning-lavapipe-*.json
        // (a cache of another device is ignored before its entries are read).
        device.uuid = "6d65736132322e332e36000000000000".parse().ok();
        device.driver_version = 1;
        Ok(Scratch {
            dir: tempfile::tempdir()?,
            device,
        })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// `greta doctor --from`: `decode`, every recogniser and parser, then the
/// merge of the whole and its two halves, the summary, the rules (every
/// predicate and signal rule, with the evidence and templates) and the JSON.
pub fn from_text(data: &[u8]) {
    let Ok(text) = greta_probe::decode(data) else {
        return;
    };
    let _ = greta_probe::recognise(&text);
    let (_, whole) = greta_probe::parse_text(&text, "fuzz");
    let mid = text.len() / 2;
    let cut = (0..=mid)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let (_, a) = greta_probe::parse_text(&text[..cut], "a");
    let (_, b) = greta_probe::parse_text(&text[cut..], "b");
    let merged = greta_probe::merge(vec![whole, a, b]);
    let _ = greta_probe::summarise(&merged);
    let findings = greta_probe::diagnose(&merged);
    serde_json::to_string(&merged).expect("facts serialise");
    serde_json::to_string(&findings).expect("findings serialise");
}

/// The files of a captured machine, in the order the input's parts fill
/// them (split at `--8<--` lines).
pub const SYSROOT_FILES: &[&str] = &[
    ".greta/env",
    ".greta/id",
    ".greta/dev-nodes",
    ".greta/cmd/rocminfo.txt",
    ".greta/cmd/vulkaninfo.txt",
    ".greta/cmd/hipconfig.txt",
    "sys/class/kfd/kfd/topology/nodes/1/properties",
    "sys/bus/pci/devices/0000:03:00.0/class",
    "sys/bus/pci/devices/0000:03:00.0/vendor",
    "sys/bus/pci/devices/0000:03:00.0/device",
    "etc/group",
    "etc/vulkan/icd.d/radeon_icd.x86_64.json",
    "opt/rocm/.info/version",
    "proc/version",
];

/// `greta doctor --sysroot`: the input becomes a machine's files, then the
/// whole collection runs on it.
pub fn sysroot(scratch: &Scratch, data: &[u8]) {
    let base = scratch.path().join("m");
    let _ = std::fs::remove_dir_all(&base);
    for (name, bytes) in SYSROOT_FILES
        .iter()
        .zip(crate::parts(data, SYSROOT_FILES.len()))
    {
        let p = base.join(name);
        std::fs::create_dir_all(p.parent().expect("a relative path has a parent"))
            .expect("scratch directory");
        std::fs::write(&p, bytes).expect("scratch file");
    }
    let root = greta_probe::Root::sysroot(&base).expect("a directory");
    // As doctor runs it: greta's envs where the installer puts them.
    let facts = greta_probe::Probe::new(&root)
        .envs_at(greta::fuzz_door::EnvRoot::dir_in)
        .run()
        .facts;
    serde_json::to_string(&facts).expect("facts serialise");
}

/// The lock set's parsers: the first byte picks `matrix.toml` (then `lock
/// check` against the built-in lockfiles), a `pylock.*.toml` (then the URL
/// check of each wheel) or `tools.toml`.
pub fn lock_files(scratch: &Scratch, data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 3 {
        0 => {
            if let Ok(m) = Matrix::parse(&LockDir::built_in(), text.to_string()) {
                let _ = greta_lockset::check::check_matrix(&m);
            }
        }
        1 => {
            if let Ok(l) = Lockfile::parse(Path::new("pylock.fuzz.toml"), text.to_string()) {
                for p in &l.packages {
                    for w in &p.wheels {
                        if let Some(u) = &w.url {
                            let _ = greta_lockset::check::url_problem(u, &w.filename);
                        }
                    }
                }
            }
        }
        _ => {
            std::fs::write(scratch.path().join("tools.toml"), text).expect("scratch file");
            let _ = greta_lockset::load_tools(&LockDir::from_flag(scratch.path()));
        }
    }
}

/// The other files greta is handed: `--baseline`, the f16 deny list, the
/// device-class floors, an env receipt and a tuning cache (the first byte
/// picks). No diagnostic tuning may ever come out of a cache file.
pub fn data_files(scratch: &Scratch, data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 5 {
        0 => {
            let _ = greta_smoke::Baseline::parse(Path::new("base.json"), text);
        }
        1 => {
            let _ = greta_smoke::DenyList::parse("deny.toml", text);
        }
        2 => {
            let _ = greta_smoke::ClassFile::parse("floors.toml", text);
        }
        3 => {
            let _ = serde_json::from_str::<greta::fuzz_door::Receipt>(text);
        }
        _ => {
            let path = TuningCache::open(&scratch.device, Some(scratch.path()))
                .path()
                .expect("a cache directory was given")
                .to_path_buf();
            std::fs::write(&path, text).expect("scratch file");
            let c = TuningCache::open(&scratch.device, Some(scratch.path()));
            for op in [
                Op::GemmF32 {
                    m: 4096,
                    n: 4096,
                    k: 4096,
                },
                Op::GemmF16 {
                    m: 256,
                    n: 256,
                    k: 256,
                },
            ] {
                if let Some(e) = c.get(&op) {
                    assert!(
                        !e.tuning.is_diagnostic(),
                        "a diagnostic tuning came from the cache"
                    );
                }
            }
        }
    }
}
