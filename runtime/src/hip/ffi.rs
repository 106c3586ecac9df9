//! The part of libamdhip64's C ABI greta calls, looked up at run time.
//!
//! Only functions whose signatures are the same on ROCm 5, 6 and 7 are
//! declared; numbers come from `hipDeviceGetAttribute` (whose numbering has
//! been stable since ROCm 5.0) rather than from `hipDeviceProp_t`, whose
//! layout changed in ROCm 6.

use std::ffi::{c_char, c_int, c_uint, c_void};

pub type HipError = c_int;
pub type Ptr = *mut c_void;

pub const SUCCESS: HipError = 0;
pub const ERROR_OUT_OF_MEMORY: HipError = 2;
pub const ERROR_NO_DEVICE: HipError = 100;
pub const ERROR_INVALID_DEVICE: HipError = 101;
pub const ERROR_NOT_READY: HipError = 600;

/// `hipDeviceAttribute_t` values (hip_runtime_api.h, ROCm 5.0 and later).
pub mod attr {
    pub const INTEGRATED: i32 = 16;
    pub const MAX_GRID_DIM_X: i32 = 29;
    pub const MAX_THREADS_PER_BLOCK: i32 = 56;
    pub const MULTIPROCESSOR_COUNT: i32 = 63;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: i32 = 74;
    pub const WARP_SIZE: i32 = 87;
}

macro_rules! table {
    ($table:ident { $($name:ident : fn($($arg:ty),*) -> $ret:ty;)* }) => {
        /// Function pointers into the opened library (valid while it is).
        #[allow(non_snake_case)]
        pub struct $table {
            $(pub $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }

        impl $table {
            /// Looks every function up; the first missing one is named.
            ///
            /// # Safety
            /// `lib` must be a HIP runtime: the signatures are trusted.
            pub unsafe fn load(lib: &libloading::Library) -> Result<$table, String> {
                Ok($table {
                    $($name: *
                        // SAFETY: the caller vouches that `lib` is a HIP
                        // runtime, whose symbol has this C signature.
                        unsafe {
                            lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(
                                concat!(stringify!($name), "\0").as_bytes(),
                            )
                        }
                        .map_err(|e| format!("{}: {e}", stringify!($name)))?,)*
                })
            }
        }
    };
}

table! { Table {
    hipInit: fn(c_uint) -> HipError;
    hipGetDeviceCount: fn(*mut c_int) -> HipError;
    hipSetDevice: fn(c_int) -> HipError;
    hipDeviceGetAttribute: fn(*mut c_int, c_int, c_int) -> HipError;
    hipDeviceGetName: fn(*mut c_char, c_int, c_int) -> HipError;
    hipDeviceTotalMem: fn(*mut usize, c_int) -> HipError;
    hipDeviceGetPCIBusId: fn(*mut c_char, c_int, c_int) -> HipError;
    hipGetDeviceProperties: fn(*mut u8, c_int) -> HipError;
    hipRuntimeGetVersion: fn(*mut c_int) -> HipError;
    hipDriverGetVersion: fn(*mut c_int) -> HipError;
    hipGetErrorName: fn(HipError) -> *const c_char;
    hipGetErrorString: fn(HipError) -> *const c_char;
    hipMalloc: fn(*mut Ptr, usize) -> HipError;
    hipFree: fn(Ptr) -> HipError;
    hipMemcpyHtoDAsync: fn(Ptr, Ptr, usize, Ptr) -> HipError;
    hipMemcpyDtoHAsync: fn(Ptr, Ptr, usize, Ptr) -> HipError;
    hipMemcpyDtoDAsync: fn(Ptr, Ptr, usize, Ptr) -> HipError;
    hipMemsetAsync: fn(Ptr, c_int, usize, Ptr) -> HipError;
    hipStreamCreate: fn(*mut Ptr) -> HipError;
    hipStreamDestroy: fn(Ptr) -> HipError;
    hipEventCreate: fn(*mut Ptr) -> HipError;
    hipEventDestroy: fn(Ptr) -> HipError;
    hipEventRecord: fn(Ptr, Ptr) -> HipError;
    hipEventQuery: fn(Ptr) -> HipError;
    hipEventElapsedTime: fn(*mut f32, Ptr, Ptr) -> HipError;
    hipModuleLoadData: fn(*mut Ptr, *const c_void) -> HipError;
    hipModuleUnload: fn(Ptr) -> HipError;
    hipModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char) -> HipError;
    hipModuleLaunchKernel: fn(Ptr, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Ptr, *mut Ptr, *mut Ptr) -> HipError;
} }

/// `hipStreamCaptureModeThreadLocal` (the same value as CUDA's): only this
/// thread's unsafe calls are refused during a capture.
pub const CAPTURE_THREAD_LOCAL: c_int = 1;

// Stream capture and graphs (ROCm 4.3 and later; the signatures have not
// changed since). Looked up apart from `Table`: a runtime without them still
// runs every kernel, launched one by one.
table! { GraphTable {
    hipStreamBeginCapture: fn(Ptr, c_int) -> HipError;
    hipStreamEndCapture: fn(Ptr, *mut Ptr) -> HipError;
    hipGraphInstantiate: fn(*mut Ptr, Ptr, *mut Ptr, *mut c_char, usize) -> HipError;
    hipGraphLaunch: fn(Ptr, Ptr) -> HipError;
    hipGraphExecDestroy: fn(Ptr) -> HipError;
    hipGraphDestroy: fn(Ptr) -> HipError;
} }

// Pinned host memory (every ROCm release; ROCm 6 marks hipHostMalloc
// deprecated in favour of hipExtHostAlloc but still exports it). Looked up
// apart from `Table`: a runtime without them still runs every kernel, and
// only the host-copy gate says it cannot.
table! { HostTable {
    hipHostMalloc: fn(*mut Ptr, usize, c_uint) -> HipError;
    hipHostFree: fn(Ptr) -> HipError;
} }

/// `hipHostMallocDefault`: page-locked, portable flags off.
pub const HOST_MALLOC_DEFAULT: c_uint = 0;

/// What usually causes the codes users hit, appended to the message.
pub fn hint(code: HipError) -> &'static str {
    match code {
        100 => " (no GPU visible to HIP: check /dev/kfd, the render/video groups and HIP_VISIBLE_DEVICES)",
        101 => " (the device index does not exist or HSA could not initialise it)",
        209 => " (the code object has no kernels for this GPU's gfx target: greta compiles for the target HIP reports; check HSA_OVERRIDE_GFX_VERSION)",
        200 | 218 | 303 => " (the code object is corrupt or built for another target: delete greta's kernel cache to rebuild it)",
        2 => " (the GPU is out of memory)",
        500 => " (the kernel is missing from the code object)",
        719 | 700 => " (the kernel faulted on the GPU; the device may need a reset before further use)",
        35 => " (the amdgpu kernel driver is older than this ROCm needs)",
        _ => "",
    }
}
