//! Which vendor runtime a backend would load, asked where loading it is
//! safe. Opening libamdhip64 or libcuda runs their initialisers (and a
//! broken one can crash or hang its process), so greta's parent never
//! does: it asks the device child, which calls [`runtime_library`].

use crate::error::RuntimeError;
use crate::gpu::Driver;
use crate::info::BackendKind;
use crate::locate::Loaded;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The runtime library a backend loads, and its kernel compiler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeLibrary {
    /// The library opened (libamdhip64, libcuda), and why that one.
    pub library: Loaded,
    /// HIP's kernel compiler (hiprtc beside the runtime, else hipcc), as
    /// shown; `None` where there is none, and for CUDA (NVRTC is found
    /// when kernels are first compiled).
    pub compiler: Option<String>,
}

/// Opens `kind`'s runtime library in this process (the device child's
/// work, never the parent's), looking first in `env_roots` (a staged
/// greta env whose wheels carry their own ROCm), then where the backend
/// always looks.
pub fn runtime_library(
    kind: BackendKind,
    env_roots: &[PathBuf],
) -> Result<RuntimeLibrary, RuntimeError> {
    match kind {
        BackendKind::Hip => {
            use crate::hip::{compiler_for_target, Hip};
            use crate::locate::{find_library, SearchEnv, VendorLibrary};
            let mut env = SearchEnv::live();
            env.env_roots.splice(0..0, env_roots.iter().cloned());
            let found = find_library(VendorLibrary::Hip, &env)
                .map_err(crate::gpu::driver::GpuError::LibraryMissing)?;
            let hip = Hip::open_from(&found)?;
            // The target is a placeholder: only which compiler would be
            // used is asked here.
            let compiler = compiler_for_target(&hip, "gfx")
                .ok()
                .map(|c| c.choice().library.to_string());
            Ok(RuntimeLibrary {
                library: hip.library().clone(),
                compiler,
            })
        }
        BackendKind::Cuda => Ok(RuntimeLibrary {
            library: crate::cuda::Cuda::open()?.library().clone(),
            compiler: None,
        }),
        BackendKind::Vulkan => Err(RuntimeError::Unsupported(
            "the Vulkan loader is not a vendor runtime library".into(),
        )),
    }
}
