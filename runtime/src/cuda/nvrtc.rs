//! NVRTC, CUDA's run-time compiler: found by path and used through the
//! shared [`crate::gpu::rtc`] (the same code as hiprtc).

use crate::gpu::compile::CompileError;
use crate::gpu::driver::{CompilerChoice, Loaded};
use crate::gpu::search::{self, Candidate};
use greta_vocab::EnvVars;
use std::path::PathBuf;

/// Where to look: `$GRETA_NVRTC_LIB`, the env's NVIDIA wheels, `CUDA_PATH`
/// / `CUDA_HOME`, `/usr/local/cuda*`, then the loader's names. Err: the
/// variable is not UTF-8 or holds a control character.
pub fn candidates(env_roots: &[PathBuf]) -> Result<Vec<Candidate>, CompileError> {
    if let Some(s) = greta_vocab::Setting::text_path(EnvVars::GRETA_NVRTC_LIB)
        .map_err(CompileError::Unavailable)?
    {
        return Ok(vec![Candidate::new(
            s.value,
            format!("${}", EnvVars::GRETA_NVRTC_LIB),
        )]);
    }
    Ok(super::lib_candidates(
        env_roots,
        &["nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"],
        "libnvrtc.so",
        &[
            "libnvrtc.so.13",
            "libnvrtc.so.12",
            "libnvrtc.so.11.2",
            "libnvrtc.so",
        ],
    ))
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

/// Compiles `unit` into a CUBIN for `choice.target`.
pub fn compile(choice: &CompilerChoice, unit: &str) -> Result<Vec<u8>, CompileError> {
    crate::gpu::rtc::compile(&crate::gpu::rtc::NVRTC, choice, unit)
}
