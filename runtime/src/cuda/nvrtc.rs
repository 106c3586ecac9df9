//! NVRTC, CUDA's run-time compiler: found by path and used through the
//! shared [`crate::gpu::rtc`] (the same code as hiprtc).

use crate::gpu::arch::Arch;
use crate::gpu::compiler::{CompileError, Compiler, CompilerChoice, CompilerKind};
use crate::locate::{
    find_library, lib_files, loadable, open_first, Candidate, Loaded, SearchEnv, VendorLibrary,
};
use greta_vocab::EnvVars;

/// The first candidate that opens and has NVRTC's entry points.
pub fn locate(cands: &[Candidate]) -> Result<Loaded, CompileError> {
    let mut rest = cands;
    let mut looked = Vec::new();
    while !rest.is_empty() {
        match open_first("NVRTC", rest) {
            Ok((lib, loaded)) => {
                if crate::gpu::rtc::has_compiler(&lib, &crate::gpu::rtc::NVRTC) {
                    return Ok(loaded);
                }
                looked.push(format!("{}: no nvrtcCompileProgram", loaded.path.display()));
                let at = rest.iter().position(|c| c.path == loaded.path).unwrap_or(0);
                rest = &rest[at + 1..];
            }
            Err(l) => {
                looked.extend(l);
                break;
            }
        }
    }
    Err(CompileError::Unavailable(format!(
        "no NVRTC (libnvrtc) found to compile greta's kernels; looked in: {}. Install the CUDA toolkit's NVRTC \
         (or a CUDA torch, whose nvidia wheels carry it), or point {} at libnvrtc.so",
        looked.join("; "),
        EnvVars::GRETA_NVRTC_LIB
    )))
}

/// NVRTC where the library search finds it on the live machine
/// (`$GRETA_NVRTC_LIB`, the env's NVIDIA wheels, `CUDA_PATH` / `CUDA_HOME`,
/// `/usr/local/cuda*`, the loader's places). Err also where the variable
/// is not UTF-8 or holds a control character.
pub fn locate_live() -> Result<Loaded, CompileError> {
    let found = find_library(VendorLibrary::Nvrtc, &SearchEnv::live())
        .map_err(CompileError::Unavailable)?;
    locate(&found)
}

/// NVRTC (`library`) for `target` (`sm_90`, `sm_90a`): a CUBIN for that
/// architecture (an `a` architecture's code runs only on exactly that one).
pub fn choice_for_target(library: Loaded, target: Arch) -> CompilerChoice {
    // SAFETY: opening a library locate() validated.
    let version = unsafe { libloading::Library::new(&library.path) }
        .ok()
        .and_then(|l| crate::gpu::rtc::version(&l, &crate::gpu::rtc::NVRTC))
        .unwrap_or_else(|| "?".into());
    CompilerChoice {
        kind: CompilerKind::Nvrtc,
        library,
        version,
        options: vec![format!("--gpu-architecture={target}")],
        target,
    }
}

/// NVRTC, set for one target.
pub(crate) struct Nvrtc(pub(crate) CompilerChoice);

impl Compiler for Nvrtc {
    fn choice(&self) -> &CompilerChoice {
        &self.0
    }

    /// A CUBIN for the choice's target, with NVRTC's log (ptxas's
    /// statistics when `--ptxas-options=-v` was given).
    fn compile(&self, unit: &str) -> Result<(Vec<u8>, String), CompileError> {
        let _builtins = builtins_beside(&self.0);
        crate::gpu::rtc::compile_logged(&crate::gpu::rtc::NVRTC, &self.0, unit)
    }
}

/// NVRTC opens `libnvrtc-builtins.so.MAJOR.MINOR` by name at compile time,
/// so a libnvrtc outside the loader's path (an unpacked Debian package or
/// toolkit named by `$GRETA_NVRTC_LIB`) fails with "failed to open
/// libnvrtc-builtins" although the file lies beside it. Loaded first from
/// there, the loader finds it by its soname. Empty where there is none
/// (NVIDIA's wheels and toolkits also find theirs through their RUNPATH).
pub(crate) fn builtins_beside(choice: &CompilerChoice) -> Vec<libloading::Library> {
    let Some(dir) = choice.library.path.parent() else {
        return Vec::new();
    };
    lib_files(dir, "libnvrtc-builtins.so")
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e != "so") && loadable(f).is_ok())
        // SAFETY: loading NVIDIA's builtins library runs its initialisers,
        // as NVRTC's own dlopen of it would.
        .filter_map(|f| unsafe { libloading::Library::new(&f) }.ok())
        .collect()
}
