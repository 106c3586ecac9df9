//! Where a vendor library would be loaded from, found without loading it.
//!
//! Opening libamdhip64 or libcuda runs their initialisers (a broken one can
//! crash or hang its process), so this search only looks: it lists every
//! place in the order the backend's loader tries them, each with the rule
//! that put it there and what is there now ([`State::Found`]: a library
//! file that would be loaded, and was not). The loaders open the first
//! that loads from this very list, so what the search reports is what they
//! do; the doctor and the installer can say "found at X, not loaded" from
//! it in greta's own process.
//!
//! The search orders, each ending with the dynamic loader's names resolved
//! as glibc resolves them (`LD_LIBRARY_PATH`, `/etc/ld.so.cache`, the
//! standard directories):
//! - libamdhip64: `$GRETA_HIP_LIB` alone when set; else the greta env's
//!   torch wheel (`torch/lib`), `$ROCM_PATH/lib`, `$HIP_PATH/lib`,
//!   `/opt/rocm*/lib` newest first.
//! - libcuda: `$GRETA_CUDA_LIB` alone when set; else the names the CUDA
//!   bindings ask the loader for, in their order.
//! - libnvrtc: `$GRETA_NVRTC_LIB` alone when set; else the env's NVIDIA
//!   wheels, `$CUDA_PATH/lib64`, `$CUDA_HOME/lib64`, `/usr/local/cuda*/lib64`.
//! - libvulkan: the loader's `libvulkan.so.1`.
//!
//! The directories from other tools' variables (`ROCM_PATH`, `HIP_PATH`,
//! `CUDA_PATH`, `CUDA_HOME`, and the envs `GRETA_ENV`, `VIRTUAL_ENV`) are
//! read once, in [`SearchEnv::live`], by the settings module's rule for a
//! directory: one that is not absolute, not UTF-8, holds a control
//! character or names a FIFO, a device or a regular file is not searched,
//! and a warning names it (once per process).
//!
//! Every path is read under a root (`/` live), so a test plants a machine
//! in a directory.
//!
//! Loading happens in one place only, [`open_first`]: the first candidate
//! of a search that loads.

mod candidate;
mod dir_var;
mod dirs;
mod loader;
mod open;

pub use candidate::{Candidate, Rule, State, Via};
pub(crate) use dirs::{lib_files, site_packages, versioned_dirs};
pub use open::Loaded;
pub(crate) use open::{loadable, loaded_from, open_first};

use greta_vocab::{EnvVars, Setting};
use loader::LoaderPlaces;
use std::path::{Path, PathBuf};

/// A vendor library greta loads at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VendorLibrary {
    /// The HIP runtime, libamdhip64.
    Hip,
    /// The CUDA driver API, libcuda.
    Cuda,
    /// CUDA's run-time compiler, libnvrtc.
    Nvrtc,
    /// The Vulkan loader, libvulkan.
    Vulkan,
}

impl VendorLibrary {
    pub const ALL: [VendorLibrary; 4] = [
        VendorLibrary::Hip,
        VendorLibrary::Cuda,
        VendorLibrary::Nvrtc,
        VendorLibrary::Vulkan,
    ];

    /// `libamdhip64`, `libcuda`, `libnvrtc`, `libvulkan`.
    pub fn name(self) -> &'static str {
        match self {
            VendorLibrary::Hip => "libamdhip64",
            VendorLibrary::Cuda => "libcuda",
            VendorLibrary::Nvrtc => "libnvrtc",
            VendorLibrary::Vulkan => "libvulkan",
        }
    }
}

/// An override variable's path, or why its value was refused (not UTF-8,
/// a control character: a value greta could not name in a message).
pub type Override = Result<Option<PathBuf>, String>;

/// What a search reads besides the files: the root they are under and
/// the variables that steer it, gathered by [`SearchEnv::live`] (or set by
/// a test).
#[derive(Clone, Debug)]
pub struct SearchEnv {
    /// Where the machine's files are: `/` live, a planted tree in a test.
    /// Paths from variables and from the loader's cache are read under it.
    pub root: PathBuf,
    pub greta_hip_lib: Override,
    pub greta_cuda_lib: Override,
    pub greta_nvrtc_lib: Override,
    /// Greta env roots to look in first (`$GRETA_ENV`, then `$VIRTUAL_ENV`).
    pub env_roots: Vec<PathBuf>,
    pub rocm_path: Option<PathBuf>,
    pub hip_path: Option<PathBuf>,
    pub cuda_path: Option<PathBuf>,
    pub cuda_home: Option<PathBuf>,
    pub ld_library_path: Option<String>,
}

impl SearchEnv {
    /// Nothing set, files under `root`.
    pub fn under_root(root: impl Into<PathBuf>) -> SearchEnv {
        SearchEnv {
            root: root.into(),
            greta_hip_lib: Ok(None),
            greta_cuda_lib: Ok(None),
            greta_nvrtc_lib: Ok(None),
            env_roots: Vec::new(),
            rocm_path: None,
            hip_path: None,
            cuda_path: None,
            cuda_home: None,
            ld_library_path: None,
        }
    }

    /// This process's variables; the `GRETA_*_LIB` overrides through the
    /// settings reader, which refuses a value it could not show (the
    /// search then ends on it). The directories other tools' variables name
    /// (`ROCM_PATH`, `CUDA_HOME`, the envs) are read here and nowhere else
    /// in the runtime: one that is not an absolute directory in UTF-8
    /// without control characters is left out, with a warning naming it.
    pub fn live() -> SearchEnv {
        let dir = dir_var::search_dir;
        let text_path = |k: &'static str| Setting::text_path(k).map(|s| s.map(|s| s.value));
        SearchEnv {
            greta_hip_lib: text_path(EnvVars::GRETA_HIP_LIB),
            greta_cuda_lib: text_path(EnvVars::GRETA_CUDA_LIB),
            greta_nvrtc_lib: text_path(EnvVars::GRETA_NVRTC_LIB),
            env_roots: [EnvVars::GRETA_ENV, "VIRTUAL_ENV"]
                .into_iter()
                .filter_map(dir)
                .collect(),
            rocm_path: dir("ROCM_PATH"),
            hip_path: dir("HIP_PATH"),
            cuda_path: dir("CUDA_PATH"),
            cuda_home: dir("CUDA_HOME"),
            ld_library_path: std::env::var("LD_LIBRARY_PATH").ok(),
            ..SearchEnv::under_root("/")
        }
    }

    /// `p` as it stands under the root (`p` itself live).
    pub(crate) fn under(&self, p: &Path) -> PathBuf {
        if self.root == Path::new("/") {
            p.to_path_buf()
        } else {
            self.root.join(p.strip_prefix("/").unwrap_or(p))
        }
    }
}

/// The names libamdhip64 goes by, newest ROCm first.
const HIP_NAMES: [&str; 4] = [
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];

const NVRTC_NAMES: [&str; 4] = [
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "libnvrtc.so.11.2",
    "libnvrtc.so",
];

/// The Vulkan loader's soname (what ash asks `dlopen` for).
const VULKAN_NAMES: [&str; 1] = ["libvulkan.so.1"];

/// Where `library` would be loaded from, in the order its loader tries:
/// every candidate with its rule and what is there now. Nothing is loaded
/// (no `dlopen`, no mapping). `Err` says why an override variable's value
/// was refused.
pub fn find_library(library: VendorLibrary, env: &SearchEnv) -> Result<Vec<Candidate>, String> {
    Ok(match library {
        VendorLibrary::Hip => match &env.greta_hip_lib {
            Err(e) => return Err(e.clone()),
            Ok(Some(p)) => hip_override(env, p),
            Ok(None) => rocm_candidates(env, "libamdhip64.so", &HIP_NAMES),
        },
        VendorLibrary::Cuda => match &env.greta_cuda_lib {
            Err(e) => return Err(e.clone()),
            Ok(Some(p)) => vec![overridden(env, p, EnvVars::GRETA_CUDA_LIB)],
            Ok(None) => {
                let names = cudarc::get_lib_name_candidates("cuda");
                by_names(env, &names.iter().map(String::as_str).collect::<Vec<_>>())
            }
        },
        VendorLibrary::Nvrtc => match &env.greta_nvrtc_lib {
            Err(e) => return Err(e.clone()),
            Ok(Some(p)) => vec![overridden(env, p, EnvVars::GRETA_NVRTC_LIB)],
            Ok(None) => nvidia_candidates(
                env,
                &["nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"],
                "libnvrtc.so",
                &NVRTC_NAMES,
            ),
        },
        VendorLibrary::Vulkan => by_names(env, &VULKAN_NAMES),
    })
}

/// An override naming a file: that file, whatever is there.
fn overridden(env: &SearchEnv, p: &Path, var: &'static str) -> Candidate {
    Candidate::at(env.under(p), Rule::Override { var })
}

/// `$GRETA_HIP_LIB`: a file, or a directory holding libamdhip64 (each of
/// its files, else the name it lacks).
fn hip_override(env: &SearchEnv, p: &Path) -> Vec<Candidate> {
    let var = EnvVars::GRETA_HIP_LIB;
    let at = env.under(p);
    if !at.is_dir() {
        return vec![Candidate::at(at, Rule::Override { var })];
    }
    in_dir(&at, "libamdhip64.so", Rule::Override { var }, true)
}

/// The files of `stem` in `dir`, each with `rule`. Where there is none,
/// `dir/stem` stands for the folder (with why it could not be listed, or
/// as not there) when `name_empty`, so an error names every place looked;
/// an unlistable folder is always named.
fn in_dir(dir: &Path, stem: &str, rule: Rule, name_empty: bool) -> Vec<Candidate> {
    match dirs::listed_lib_files(dir, stem) {
        Ok(files) if !files.is_empty() => files
            .into_iter()
            .map(|f| Candidate::at(f, rule.clone()))
            .collect(),
        Ok(_) if name_empty => vec![Candidate::at(dir.join(stem), rule)],
        Ok(_) => Vec::new(),
        Err(e) => vec![Candidate {
            path: dir.join(stem),
            rule,
            state: State::Unreadable {
                error: format!("cannot list {}: {e}", dir.display()),
            },
        }],
    }
}

/// The ROCm library `stem` (`libamdhip64.so`, `librocblas.so`): the env's
/// torch wheels, `$ROCM_PATH/lib`, `$HIP_PATH/lib`, `/opt/rocm*/lib`, then
/// the loader's `names`. A folder without the file is named as
/// `<folder>/<stem>`, so an error names every place looked.
pub(crate) fn rocm_candidates(env: &SearchEnv, stem: &str, names: &[&str]) -> Vec<Candidate> {
    let mut v = Vec::new();
    for e in &env.env_roots {
        for lib in site_packages(&env.under(e), "torch/lib") {
            let rule = Rule::RocmWheels { env: e.clone() };
            v.extend(in_dir(&lib, stem, rule, true));
        }
    }
    for (var, p) in [("ROCM_PATH", &env.rocm_path), ("HIP_PATH", &env.hip_path)] {
        if let Some(p) = p {
            v.extend(in_dir(
                &env.under(p).join("lib"),
                stem,
                Rule::Variable { var },
                true,
            ));
        }
    }
    let opt = env.under(Path::new("/opt"));
    for dir in std::iter::once(opt.join("rocm")).chain(versioned_dirs(&opt, "rocm-")) {
        if dir.is_dir() {
            let rule = Rule::RocmInstall { dir: dir.clone() };
            v.extend(in_dir(&dir.join("lib"), stem, rule, true));
        }
    }
    extend_new(&mut v, by_names(env, names));
    v
}

/// The NVIDIA library `stem` (`libnvrtc.so`, `libcublas.so`): the env's
/// NVIDIA wheels (`wheel_dirs` under site-packages), `$CUDA_PATH/lib64`,
/// `$CUDA_HOME/lib64`, `/usr/local/cuda/lib64`, `/usr/local/cuda-*/lib64`
/// newest first, then the loader's `names`.
pub(crate) fn nvidia_candidates(
    env: &SearchEnv,
    wheel_dirs: &[&str],
    stem: &str,
    names: &[&str],
) -> Vec<Candidate> {
    let mut v = Vec::new();
    for e in &env.env_roots {
        for rel in wheel_dirs {
            for d in site_packages(&env.under(e), rel) {
                v.extend(in_dir(
                    &d,
                    stem,
                    Rule::NvidiaWheels { env: e.clone() },
                    false,
                ));
            }
        }
    }
    for (var, p) in [("CUDA_PATH", &env.cuda_path), ("CUDA_HOME", &env.cuda_home)] {
        if let Some(p) = p {
            let rule = Rule::Variable { var };
            v.extend(in_dir(&env.under(p).join("lib64"), stem, rule, false));
        }
    }
    let local = env.under(Path::new("/usr/local"));
    for dir in std::iter::once(local.join("cuda")).chain(versioned_dirs(&local, "cuda-")) {
        let rule = Rule::CudaToolkit { dir: dir.clone() };
        v.extend(in_dir(&dir.join("lib64"), stem, rule, false));
    }
    extend_new(&mut v, by_names(env, names));
    v
}

/// Each of `names` as the dynamic loader would find it (every file its
/// places hold, in its order), or left to it by name.
pub(crate) fn by_names(env: &SearchEnv, names: &[&str]) -> Vec<Candidate> {
    let places = LoaderPlaces::of(env);
    let mut v: Vec<Candidate> = Vec::new();
    for n in names {
        extend_new(&mut v, places.resolve(n, env));
    }
    v
}

/// Adds the candidates of `more` whose file `v` does not hold yet (a file
/// a folder rule found is not listed again when the loader would find it
/// too, nor one file under two names).
fn extend_new(v: &mut Vec<Candidate>, more: Vec<Candidate>) {
    for c in more {
        if !v.iter().any(|x| x.is_at(&c.path)) {
            v.push(c);
        }
    }
}

#[cfg(test)]
mod tests;
