//! cuBLAS through its C ABI (cublas_api.h, CUDA 11 and later), looked up
//! at run time.

use super::layout::{Buffer, ColMajorGemm};
use super::{sym, Blas, GemmKind, Missing};
use crate::gpu::driver::{DevPtr, StreamH};
use std::ffi::{c_int, c_void};

type Handle = *mut c_void;
type Status = c_int;

const OP_N: c_int = 0;
/// cudaDataType: CUDA_R_32F, CUDA_R_16F.
const R_32F: c_int = 0;
const R_16F: c_int = 2;
/// cublasComputeType_t CUBLAS_COMPUTE_32F (f32 accumulate; tensor cores for f16 inputs).
const COMPUTE_32F: c_int = 68;
/// cublasGemmAlgo_t CUBLAS_GEMM_DEFAULT.
const GEMM_DEFAULT: c_int = -1;
/// cublasMath_t CUBLAS_DEFAULT_MATH: no TF32 for f32 GEMMs (CUDA 11+).
const DEFAULT_MATH: c_int = 0;

type GemmEx = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
) -> Status;
type Sgemm = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const f32,
    *const f32,
    c_int,
    *const f32,
    c_int,
    *const f32,
    *mut f32,
    c_int,
) -> Status;

pub(crate) struct Cublas {
    destroy: unsafe extern "C" fn(Handle) -> Status,
    gemm_ex: GemmEx,
    sgemm: Sgemm,
    handle: Handle,
    version: String,
    // Last: the function pointers above die with it.
    _lib: libloading::Library,
}

fn status_name(s: Status) -> &'static str {
    match s {
        1 => "CUBLAS_STATUS_NOT_INITIALIZED",
        3 => "CUBLAS_STATUS_ALLOC_FAILED",
        7 => "CUBLAS_STATUS_INVALID_VALUE",
        8 => "CUBLAS_STATUS_ARCH_MISMATCH",
        11 => "CUBLAS_STATUS_MAPPING_ERROR",
        13 => "CUBLAS_STATUS_EXECUTION_FAILED",
        14 => "CUBLAS_STATUS_INTERNAL_ERROR",
        15 => "CUBLAS_STATUS_NOT_SUPPORTED",
        16 => "CUBLAS_STATUS_LICENSE_ERROR",
        _ => "unknown cuBLAS status",
    }
}

fn check(call: &str, s: Status) -> Result<(), String> {
    if s == 0 {
        Ok(())
    } else {
        Err(format!("{call} failed: {} ({s})", status_name(s)))
    }
}

impl Cublas {
    /// Looks up the calls, makes a handle on `stream` (the device's context
    /// must be current) and reads the version.
    pub(crate) fn new(lib: libloading::Library, stream: StreamH) -> Result<Cublas, Missing> {
        // SAFETY: the signatures are cublas_api.h's.
        let (create, destroy, set_stream, get_version, set_math, gemm_ex, sgemm) = unsafe {
            (
                sym::<unsafe extern "C" fn(*mut Handle) -> Status>(&lib, "cublasCreate_v2")?,
                sym::<unsafe extern "C" fn(Handle) -> Status>(&lib, "cublasDestroy_v2")?,
                sym::<unsafe extern "C" fn(Handle, *mut c_void) -> Status>(
                    &lib,
                    "cublasSetStream_v2",
                )?,
                sym::<unsafe extern "C" fn(Handle, *mut c_int) -> Status>(
                    &lib,
                    "cublasGetVersion_v2",
                )?,
                sym::<unsafe extern "C" fn(Handle, c_int) -> Status>(&lib, "cublasSetMathMode")?,
                sym::<GemmEx>(&lib, "cublasGemmEx")?,
                sym::<Sgemm>(&lib, "cublasSgemm_v2")?,
            )
        };
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: out-parameter call.
        check("cublasCreate", unsafe { create(&mut handle) }).map_err(Missing::Call)?;
        let mut made = Cublas {
            destroy,
            gemm_ex,
            sgemm,
            handle,
            version: String::new(),
            _lib: lib,
        };
        // SAFETY: a live handle; the stream is the backend's, alive while it is.
        check("cublasSetStream", unsafe {
            set_stream(handle, stream.0 as *mut c_void)
        })
        .map_err(Missing::Call)?;
        // SAFETY: as above.
        check("cublasSetMathMode", unsafe {
            set_math(handle, DEFAULT_MATH)
        })
        .map_err(Missing::Call)?;
        let mut v: c_int = 0;
        // SAFETY: out-parameter call on a live handle.
        let version = if unsafe { get_version(handle, &mut v) } == 0 {
            format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
        } else {
            "?".into()
        };
        made.version = version;
        Ok(made)
    }
}

impl Blas for Cublas {
    fn source(&self, kind: GemmKind) -> &'static str {
        match kind {
            GemmKind::F16Acc32 => "cublasGemmEx",
            GemmKind::F32 => "cublasSgemm",
        }
    }

    fn version(&self) -> &str {
        &self.version
    }

    unsafe fn gemm(
        &self,
        kind: GemmKind,
        call: &ColMajorGemm,
        first: DevPtr,
        second: DevPtr,
        c: DevPtr,
    ) -> Result<(), String> {
        debug_assert!(call.first == Buffer::B && call.second == Buffer::A);
        let (alpha, beta) = (1.0f32, 0.0f32);
        match kind {
            GemmKind::F16Acc32 => check("cublasGemmEx", unsafe {
                // SAFETY: the caller passes live allocations of the sizes
                // `call` implies; alpha/beta are host f32 (COMPUTE_32F).
                (self.gemm_ex)(
                    self.handle,
                    OP_N,
                    OP_N,
                    call.m,
                    call.n,
                    call.k,
                    &alpha as *const f32 as *const c_void,
                    first.0 as *const c_void,
                    R_16F,
                    call.lda,
                    second.0 as *const c_void,
                    R_16F,
                    call.ldb,
                    &beta as *const f32 as *const c_void,
                    c.0 as *mut c_void,
                    R_32F,
                    call.ldc,
                    COMPUTE_32F,
                    GEMM_DEFAULT,
                )
            }),
            GemmKind::F32 => check("cublasSgemm", unsafe {
                // SAFETY: as above, all f32.
                (self.sgemm)(
                    self.handle,
                    OP_N,
                    OP_N,
                    call.m,
                    call.n,
                    call.k,
                    &alpha,
                    first.0 as *const f32,
                    call.lda,
                    second.0 as *const f32,
                    call.ldb,
                    &beta,
                    c.0 as *mut f32,
                    call.ldc,
                )
            }),
        }
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: made in `new`, destroyed once; the owner drops this only
        // when no work is pending (never after a timeout: it leaks then).
        unsafe { (self.destroy)(self.handle) };
    }
}
