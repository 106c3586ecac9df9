//! NVRTC, CUDA's run-time compiler: found by path and used through the
//! shared [`crate::gpu::rtc`] (the same code as hiprtc).

use crate::gpu::compiler::{CompileError, Compiler, CompilerChoice};
use crate::gpu::search::{self, Candidate, Loaded};
use greta_vocab::EnvVars;
use std::path::PathBuf;

/// Where to look: `$GRETA_NVRTC_LIB`, the env's NVIDIA wheels, `CUDA_PATH`
/// / `CUDA_HOME`, `/usr/local/cuda*`, then the loader's names.
pub fn candidates(env_roots: &[PathBuf]) -> Vec<Candidate> {
    if let Some(p) = std::env::var_os(EnvVars::GRETA_NVRTC_LIB).filter(|v| !v.is_empty()) {
        return vec![Candidate::new(p, format!("${}", EnvVars::GRETA_NVRTC_LIB))];
    }
    super::lib_candidates(
        env_roots,
        &["nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"],
        "libnvrtc.so",
        &[
            "libnvrtc.so.13",
            "libnvrtc.so.12",
            "libnvrtc.so.11.2",
            "libnvrtc.so",
        ],
    )
}

/// The first candidate that opens and has NVRTC's entry points.
pub fn locate(cands: &[Candidate]) -> Result<Loaded, CompileError> {
    let mut rest = cands;
    let mut looked = Vec::new();
    while !rest.is_empty() {
        match search::open_first("NVRTC", rest) {
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

/// NVRTC, set for one target.
pub(crate) struct Nvrtc(pub(crate) CompilerChoice);

impl Compiler for Nvrtc {
    fn choice(&self) -> &CompilerChoice {
        &self.0
    }

    /// A CUBIN for the choice's target; NVRTC's log of a successful compile
    /// is not kept.
    fn compile(&self, unit: &str) -> Result<(Vec<u8>, String), CompileError> {
        let code = crate::gpu::rtc::compile(&crate::gpu::rtc::NVRTC, &self.0, unit)?;
        Ok((code, String::new()))
    }
}
