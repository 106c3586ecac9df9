//! cuBLAS GEMM beside greta's own GEMM kernels: the in-run ceiling that says
//! how far the simple tiled kernels are from the vendor library on the same
//! GPU, in the same process, on the same buffers. cuBLAS is loaded at run
//! time like everything else (cudarc's bindings; the file found here is
//! preloaded so cudarc's dlopen by soname takes exactly it).

use super::CudaBackend;
use crate::gpu::driver::{DevPtr, GpuError, Loaded, StreamH};
use crate::gpu::search;
use crate::{HostBuf, Op, RunOpts, RunStats, RuntimeError};
use cudarc::cublas::sys as cb;

/// Finds and loads libcublasLt + libcublas; `Err` names every place looked.
pub fn load() -> Result<Loaded, String> {
    let roots = crate::hip::SearchEnv::live().env_roots;
    let wheels = ["nvidia/cu13/lib", "nvidia/cublas/lib"];
    // cuBLAS needs cuBLASLt from the same release: load the Lt beside it.
    let cands = super::lib_candidates(
        &roots,
        &wheels,
        "libcublas.so",
        &["libcublas.so.13", "libcublas.so.12", "libcublas.so"],
    );
    let mut looked = Vec::new();
    for c in &cands {
        let bare = c.path.components().count() == 1;
        if !bare {
            if !c.path.exists() {
                looked.push(format!("{}: not there", c.path.display()));
                continue;
            }
            if let Some(dir) = c.path.parent() {
                if let Some(lt) = search::lib_files(dir, "libcublasLt.so").first() {
                    let _ = super::preload(lt);
                }
            }
        }
        match super::preload(&c.path) {
            Ok(()) => {
                // SAFETY: only tries to dlopen cudarc's candidate names.
                if unsafe { cb::is_culib_present() } {
                    return Ok(Loaded {
                        what: "cuBLAS".into(),
                        path: c.path.clone(),
                        why: c.why.clone(),
                    });
                }
                looked.push(format!(
                    "{}: loaded, but not under a soname cudarc asks for",
                    c.path.display()
                ));
            }
            Err(e) => looked.push(format!("{}: {e}", c.path.display())),
        }
    }
    Err(format!("no cuBLAS found; looked in: {}", looked.join("; ")))
}

fn check(call: &'static str, s: cb::cublasStatus_t) -> Result<(), GpuError> {
    if s == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Device(format!("{call} failed: {s:?}")))
    }
}

/// Runs a `GemmF32`/`GemmF16` op through cuBLAS instead of greta's kernel,
/// with the same checks, timing and deadline. Row-major `C = A B` is the
/// column-major `C^T = B^T A^T`, so no transpose is needed. f32 uses the
/// default math mode (no TF32), so its result meets the fp32 tolerance.
pub fn run_cublas(
    dev: &mut CudaBackend,
    op: &Op,
    inputs: &[HostBuf],
    outputs: &mut [HostBuf],
    opts: &RunOpts,
) -> Result<RunStats, RuntimeError> {
    let (m, n, k, f16) = match *op {
        Op::GemmF32 { m, n, k } => (m as i32, n as i32, k as i32, false),
        Op::GemmF16 { m, n, k } => (m as i32, n as i32, k as i32, true),
        _ => {
            return Err(RuntimeError::Unsupported(format!(
                "cuBLAS runs only the GEMM ops, not {op}"
            )))
        }
    };
    load().map_err(RuntimeError::LoaderMissing)?;
    let stream = dev
        .stream()
        .ok_or_else(|| RuntimeError::DeviceLost("no stream".into()))?;
    let mut handle: cb::cublasHandle_t = std::ptr::null_mut();
    // SAFETY: out-parameter call; the backend's context is current.
    check("cublasCreate", unsafe { cb::cublasCreate_v2(&mut handle) })
        .map_err(RuntimeError::from)?;
    // SAFETY: live handle and stream (a CUstream is a cudaStream_t).
    check("cublasSetStream", unsafe {
        cb::cublasSetStream_v2(handle, stream.0 as cb::cudaStream_t)
    })
    .map_err(RuntimeError::from)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    let label = if f16 {
        "cublas_gemm_ex_f16_f32"
    } else {
        "cublas_sgemm"
    };
    let mut dispatch = |_s: StreamH, bufs: &[DevPtr]| -> Result<(), GpuError> {
        let (a, b, c) = (bufs[0].0, bufs[1].0, bufs[2].0);
        let op_n = cb::cublasOperation_t::CUBLAS_OP_N;
        let status = if f16 {
            // SAFETY: a live handle on the backend's stream; a, b, c are
            // device buffers of m*k, k*n f16 and m*n f32 elements (the op
            // contract, checked by run_with); alpha/beta outlive the call.
            unsafe {
                cb::cublasGemmEx(
                    handle,
                    op_n,
                    op_n,
                    n,
                    m,
                    k,
                    &alpha as *const f32 as *const _,
                    b as *const _,
                    cb::cudaDataType_t::CUDA_R_16F,
                    n,
                    a as *const _,
                    cb::cudaDataType_t::CUDA_R_16F,
                    k,
                    &beta as *const f32 as *const _,
                    c as *mut _,
                    cb::cudaDataType_t::CUDA_R_32F,
                    n,
                    cb::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
        } else {
            // SAFETY: as above, with f32 a and b.
            unsafe {
                cb::cublasSgemm_v2(
                    handle,
                    op_n,
                    op_n,
                    n,
                    m,
                    k,
                    &alpha,
                    b as *const f32,
                    n,
                    a as *const f32,
                    k,
                    &beta,
                    c as *mut f32,
                    n,
                )
            }
        };
        check(if f16 { "cublasGemmEx" } else { "cublasSgemm" }, status)
    };
    let r = dev.run_with(op, inputs, outputs, opts, label, &mut dispatch);
    if crate::Backend::lost(dev).is_none() {
        // SAFETY: created above, destroyed once, no work pending.
        unsafe { cb::cublasDestroy_v2(handle) };
    }
    r
}
