//! hipBLAS GEMM beside greta's own GEMM kernels: the in-run ceiling that
//! says how far the simple tiled kernel is from the vendor library on the
//! same GPU, in the same process, at the same shapes.
//!
//! Feature `hip-blas` (hip-sys's `blas`): it links libhipblas, which ROCm
//! ships separately from the HIP runtime (Debian 12 has no package for it).
//! The f16 path calls `hipblasGemmEx` with the hipBLAS 0.x/1.x signature
//! (`hipblasDatatype_t` compute type) that the bindings describe.

use super::error::HipError;
use super::{HipBackend, HostBuf, Op, RunOpts, RunStats, RuntimeError};
use hip_sys::hipblas as hb;

/// A hipBLAS handle bound to the backend's stream.
pub struct Blas {
    handle: hb::hipblasHandle_t,
}

fn check(call: &'static str, s: hb::hipblasStatus_t) -> Result<(), HipError> {
    if s == hb::hipblasStatus_t::HIPBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(HipError::Device(format!("{call} failed: {s:?}")))
    }
}

impl Blas {
    fn new(backend: &HipBackend) -> Result<Blas, HipError> {
        let mut handle: hb::hipblasHandle_t = std::ptr::null_mut();
        // SAFETY: out-parameter call; the device was set by the backend.
        check("hipblasCreate", unsafe { hb::hipblasCreate(&mut handle) })?;
        let blas = Blas { handle };
        if let Some(stream) = backend.stream.as_ref() {
            // hipblas-sys declares its own opaque stream type; it is the same HIP stream.
            let raw = stream.raw() as hb::hipStream_t;
            // SAFETY: live handle and stream.
            check("hipblasSetStream", unsafe {
                hb::hipblasSetStream(blas.handle, raw)
            })?;
        }
        Ok(blas)
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: created by hipblasCreate, destroyed once.
        unsafe {
            hb::hipblasDestroy(self.handle);
        }
    }
}

impl HipBackend {
    /// Runs a `GemmF32`/`GemmF16` op through hipBLAS instead of greta's
    /// kernel, with the same buffers, checks, timing and timeout as
    /// [`crate::Backend::run`]. Row-major `C = A B` is computed as the
    /// column-major `C^T = B^T A^T`, so no transpose is needed.
    pub fn run_hipblas(
        &mut self,
        op: &Op,
        inputs: &[HostBuf],
        outputs: &mut [HostBuf],
        opts: &RunOpts,
    ) -> Result<RunStats, RuntimeError> {
        let (m, n, k, f16) = match *op {
            Op::GemmF32 { m, n, k } => (m, n, k, false),
            Op::GemmF16 { m, n, k } => (m, n, k, true),
            _ => {
                return Err(RuntimeError::Unsupported(format!(
                    "hipBLAS runs only the GEMM ops, not {op}"
                )))
            }
        };
        self.preflight(op, inputs, outputs, opts)?;
        let blas = Blas::new(self).map_err(|e| self.fail(e))?;
        let (m, n, k) = (m as i32, n as i32, k as i32);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let label = if f16 {
            "hipblas_gemm_ex_f16_f32"
        } else {
            "hipblas_sgemm"
        };
        let result = self.execute(
            op,
            inputs,
            outputs,
            opts,
            label.into(),
            &mut |_stream, bufs| {
                let (a, b, c) = (bufs[0].ptr(), bufs[1].ptr(), bufs[2].ptr());
                let op_n = hb::hipblasOperation_t::HIPBLAS_OP_N;
                // SAFETY: device buffers sized by the op contract (checked in preflight).
                let status = unsafe {
                    if f16 {
                        hb::hipblasGemmEx(
                            blas.handle,
                            op_n,
                            op_n,
                            n,
                            m,
                            k,
                            &alpha as *const f32 as *const libc::c_void,
                            b,
                            hb::hipblasDatatype_t::HIPBLAS_R_16F,
                            n,
                            a,
                            hb::hipblasDatatype_t::HIPBLAS_R_16F,
                            k,
                            &beta as *const f32 as *const libc::c_void,
                            c,
                            hb::hipblasDatatype_t::HIPBLAS_R_32F,
                            n,
                            hb::hipblasDatatype_t::HIPBLAS_R_32F,
                            hb::hipblasGemmAlgo_t::HIPBLAS_GEMM_DEFAULT,
                        )
                    } else {
                        hb::hipblasSgemm(
                            blas.handle,
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
                check(if f16 { "hipblasGemmEx" } else { "hipblasSgemm" }, status)
            },
        );
        drop(blas);
        result.map_err(|e| self.fail(e))
    }
}
