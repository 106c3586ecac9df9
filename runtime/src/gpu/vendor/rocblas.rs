//! rocBLAS through its C ABI (rocblas-functions.h, ROCm 5 and later; 32-bit
//! `rocblas_int`), looked up at run time. hipBLASLt is not used: rocBLAS is
//! what every ROCm and every ROCm torch wheel carries.

use super::layout::ColMajorGemm;
use super::{sym, Blas, GemmKind, Missing};
use crate::gpu::driver::{DevPtr, StreamH};
use std::ffi::{c_char, c_int, c_void};

type Handle = *mut c_void;
type Status = c_int;

/// rocblas_operation_none.
const OP_N: c_int = 111;
/// rocblas_datatype_f16_r, rocblas_datatype_f32_r.
const F16_R: c_int = 150;
const F32_R: c_int = 151;
/// rocblas_gemm_algo_standard.
const ALGO_STANDARD: c_int = 0;

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
    *const c_void,
    c_int,
    c_int,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
    i32,
    u32,
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

pub(crate) struct Rocblas {
    destroy: unsafe extern "C" fn(Handle) -> Status,
    gemm_ex: GemmEx,
    sgemm: Sgemm,
    handle: Handle,
    version: String,
    _lib: libloading::Library,
}

fn check(call: &str, s: Status) -> Result<(), String> {
    if s == 0 {
        Ok(())
    } else {
        Err(format!("{call} failed: rocblas_status {s}"))
    }
}

impl Rocblas {
    pub(crate) fn new(lib: libloading::Library, stream: StreamH) -> Result<Rocblas, Missing> {
        // SAFETY: the signatures are rocblas-functions.h's.
        let (create, destroy, set_stream, vsize, vstring, gemm_ex, sgemm) = unsafe {
            (
                sym::<unsafe extern "C" fn(*mut Handle) -> Status>(&lib, "rocblas_create_handle")?,
                sym::<unsafe extern "C" fn(Handle) -> Status>(&lib, "rocblas_destroy_handle")?,
                sym::<unsafe extern "C" fn(Handle, *mut c_void) -> Status>(
                    &lib,
                    "rocblas_set_stream",
                )?,
                sym::<unsafe extern "C" fn(*mut usize) -> Status>(
                    &lib,
                    "rocblas_get_version_string_size",
                )?,
                sym::<unsafe extern "C" fn(*mut c_char, usize) -> Status>(
                    &lib,
                    "rocblas_get_version_string",
                )?,
                sym::<GemmEx>(&lib, "rocblas_gemm_ex")?,
                sym::<Sgemm>(&lib, "rocblas_sgemm")?,
            )
        };
        let mut n = 0usize;
        // SAFETY: out-parameter calls; the buffer is `n` bytes.
        let version = unsafe {
            if vsize(&mut n) == 0 && n > 0 && n < 4096 {
                let mut buf = vec![0 as c_char; n];
                if vstring(buf.as_mut_ptr(), n) == 0 {
                    std::ffi::CStr::from_ptr(buf.as_ptr())
                        .to_string_lossy()
                        .into_owned()
                } else {
                    "?".into()
                }
            } else {
                "?".into()
            }
        };
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: out-parameter call.
        check("rocblas_create_handle", unsafe { create(&mut handle) }).map_err(Missing::Call)?;
        let made = Rocblas {
            destroy,
            gemm_ex,
            sgemm,
            handle,
            version,
            _lib: lib,
        };
        // SAFETY: a live handle; the stream is the backend's.
        check("rocblas_set_stream", unsafe {
            set_stream(handle, stream.0 as *mut c_void)
        })
        .map_err(Missing::Call)?;
        Ok(made)
    }
}

impl Blas for Rocblas {
    fn source(&self, kind: GemmKind) -> &'static str {
        match kind {
            GemmKind::F16Acc32 => "rocblas_gemm_ex",
            GemmKind::F32 => "rocblas_sgemm",
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
        let (alpha, beta) = (1.0f32, 0.0f32);
        match kind {
            // f16 in, f32 out (C and D the same buffer), f32 compute.
            GemmKind::F16Acc32 => check("rocblas_gemm_ex", unsafe {
                // SAFETY: live allocations of the sizes `call` implies.
                (self.gemm_ex)(
                    self.handle,
                    OP_N,
                    OP_N,
                    call.m,
                    call.n,
                    call.k,
                    &alpha as *const f32 as *const c_void,
                    first.0 as *const c_void,
                    F16_R,
                    call.lda,
                    second.0 as *const c_void,
                    F16_R,
                    call.ldb,
                    &beta as *const f32 as *const c_void,
                    c.0 as *const c_void,
                    F32_R,
                    call.ldc,
                    c.0 as *mut c_void,
                    F32_R,
                    call.ldc,
                    F32_R,
                    ALGO_STANDARD,
                    0,
                    0,
                )
            }),
            GemmKind::F32 => check("rocblas_sgemm", unsafe {
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

impl Drop for Rocblas {
    fn drop(&mut self) {
        // SAFETY: made in `new`, destroyed once, no work pending.
        unsafe { (self.destroy)(self.handle) };
    }
}
