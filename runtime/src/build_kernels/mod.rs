//! `greta __gpu build-kernels`: the bundled kernels compiled with this
//! machine's run-time compiler for each `--target` (no GPU needed) — hiprtc
//! for HIP's gfx targets, NVRTC for CUDA's `sm_XX` (`--backend cuda`: no
//! libcuda either) — through the kernel cache and the compile child the
//! device path uses, optionally with the compiler's resource figures per
//! kernel ([`resources`]). The answer is `greta.gpu-kernels/v1`; the `greta`
//! binary only prints it.

mod cubin;
pub mod resources;

use crate::gpu::compile::{CachedObject, KernelCache, KernelSources};
use crate::gpu::compiler::{CompileError, Compiler};
use crate::gpu::driver::{Api, Driver};
use crate::hip::{compiler_for_target, Hip};
use crate::locate::Loaded;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Schema of [`KernelsAnswer`].
pub const SCHEMA: &str = "greta.gpu-kernels/v1";

/// What was built, one entry per target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelsAnswer {
    pub schema: String,
    pub runtime: Option<String>,
    pub built: Vec<BuiltTarget>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuiltTarget {
    pub target: String,
    pub compiler: Option<String>,
    pub object: Option<CachedObject>,
    pub error: Option<String>,
    /// With `resource_usage`: the compiler's figures per kernel, or why
    /// there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<resources::KernelResources>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_error: Option<String>,
}

/// What a build asks for.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// Whose compiler: hiprtc (HIP) or NVRTC (CUDA).
    pub api: Api,
    /// gfx targets, e.g. `gfx942` (HIP); `sm_90`, `sm_90a` (CUDA).
    pub targets: Vec<String>,
    /// The kernel cache (default: [`KernelCache::default_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Also measure each kernel's registers, LDS and occupancy.
    pub resource_usage: bool,
}

impl Default for BuildRequest {
    fn default() -> BuildRequest {
        BuildRequest {
            api: Api::Hip,
            targets: Vec::new(),
            cache_dir: None,
            resource_usage: false,
        }
    }
}

/// The compiler library of one API, opened once for every target.
enum Toolchain {
    Hip(Hip),
    Nvrtc(Loaded),
}

impl Toolchain {
    fn open(api: Api) -> Result<Toolchain, String> {
        match api {
            Api::Hip => Hip::open().map(Toolchain::Hip).map_err(|e| e.to_string()),
            Api::Cuda => crate::cuda::nvrtc::locate_live()
                .map(Toolchain::Nvrtc)
                .map_err(|e| e.to_string()),
        }
    }

    /// The library the answer names as the runtime.
    fn library(&self) -> String {
        match self {
            Toolchain::Hip(h) => h.library().to_string(),
            Toolchain::Nvrtc(l) => l.to_string(),
        }
    }

    /// Its compiler, set for `t`.
    fn for_target(&self, t: &str) -> Result<Box<dyn Compiler>, CompileError> {
        match self {
            Toolchain::Hip(h) => compiler_for_target(h, t),
            Toolchain::Nvrtc(l) => Ok(Box::new(crate::cuda::nvrtc::Nvrtc(
                crate::cuda::nvrtc::choice_for_target(l.clone(), t.into()),
            ))),
        }
    }
}

/// Builds every target; the code is 0 when each built (and, asked for,
/// gave its figures), 1 when one did not, 2 when there is no compiler (HIP
/// runtime, NVRTC). Each failure is also said on stderr, with its target.
pub fn build(req: &BuildRequest) -> (KernelsAnswer, u8) {
    let toolchain = match Toolchain::open(req.api) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("greta: {e}");
            let answer = KernelsAnswer {
                schema: SCHEMA.into(),
                runtime: None,
                built: vec![],
            };
            return (answer, 2);
        }
    };
    let dir = match req
        .cache_dir
        .clone()
        .map_or_else(KernelCache::default_dir, Ok)
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("greta: {e}");
            let answer = KernelsAnswer {
                schema: SCHEMA.into(),
                runtime: None,
                built: vec![],
            };
            return (answer, 2);
        }
    };
    let cache = KernelCache::new(dir);
    let sources = KernelSources::bundled();
    let mut built = Vec::new();
    for t in &req.targets {
        let r = toolchain.for_target(t).and_then(|c| {
            let o = cache.get_or_build(&*c, &sources, req.api)?;
            Ok((c, o))
        });
        built.push(match r {
            Ok((c, o)) => {
                let (resources, resources_error) = if req.resource_usage {
                    let unit = sources.translation_unit(req.api);
                    match resources::measure(c.choice(), &unit, &o.path) {
                        Ok(r) => (r, None),
                        Err(e) => {
                            eprintln!("greta: {t}: resource usage: {e}");
                            (vec![], Some(e))
                        }
                    }
                } else {
                    (vec![], None)
                };
                BuiltTarget {
                    target: t.clone(),
                    compiler: Some(c.choice().library.to_string()),
                    object: Some(o),
                    error: None,
                    resources,
                    resources_error,
                }
            }
            Err(e) => {
                eprintln!("greta: {t}: {e}");
                BuiltTarget {
                    target: t.clone(),
                    compiler: None,
                    object: None,
                    error: Some(e.to_string()),
                    resources: vec![],
                    resources_error: None,
                }
            }
        });
    }
    let ok = built
        .iter()
        .all(|b| b.error.is_none() && b.resources_error.is_none());
    let answer = KernelsAnswer {
        schema: SCHEMA.into(),
        runtime: Some(toolchain.library()),
        built,
    };
    (answer, if ok { 0 } else { 1 })
}
