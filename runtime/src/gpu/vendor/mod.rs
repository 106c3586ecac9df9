//! The vendor's BLAS (cuBLAS on NVIDIA, rocBLAS on AMD), opened at run time
//! through the shared library search, only to measure in-run ceilings and
//! to drive the stress gate: greta's own kernels stay the gates' subject.
//!
//! Nothing links against a vendor library (`ldd greta` stays clean); a
//! missing one is a typed [`CeilingError::NotFound`] naming every place
//! looked, and fails no gate.

mod cublas;
pub(crate) mod layout;
pub(crate) mod measure;
mod rocblas;

use super::driver::{Api, DevPtr, StreamH};
use crate::ceiling::CeilingError;
use crate::locate::{self, Candidate, Loaded};
use layout::ColMajorGemm;

/// The element types of a GEMM, as the gates define them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmKind {
    /// `gemm_f16`: f16 A and B, f32 accumulate, f32 C.
    F16Acc32,
    /// `gemm_f32`: SGEMM, TF32 off.
    F32,
}

/// The calls greta makes into a vendor BLAS.
pub(crate) trait Blas {
    /// The call that computes `kind` (`cublasGemmEx`, `rocblas_sgemm`, ...).
    fn source(&self, kind: GemmKind) -> &'static str;
    fn version(&self) -> &str;
    /// Enqueues `C = first * second` (column-major, see [`layout`]) on the
    /// stream the handle was made with.
    ///
    /// # Safety
    /// The pointers are live device allocations of the sizes `call` implies,
    /// in `kind`'s element types.
    unsafe fn gemm(
        &self,
        kind: GemmKind,
        call: &ColMajorGemm,
        first: DevPtr,
        second: DevPtr,
        c: DevPtr,
    ) -> Result<(), String>;
}

/// An opened vendor BLAS with its handle bound to a stream.
pub(crate) struct VendorBlas {
    pub loaded: Loaded,
    pub blas: Box<dyn Blas>,
}

/// What the library is called in messages.
pub(crate) fn library_name(api: Api) -> &'static str {
    match api {
        Api::Cuda => "cuBLAS (libcublas)",
        Api::Hip => "rocBLAS (librocblas)",
    }
}

/// Opens the first candidate that loads and has the calls greta makes,
/// with a handle on `stream` (the device must be current). `NotFound`
/// lists every candidate and what happened there.
pub(crate) fn open(
    api: Api,
    candidates: &[Candidate],
    stream: StreamH,
) -> Result<VendorBlas, CeilingError> {
    let mut rest = candidates;
    let mut looked = Vec::new();
    while !rest.is_empty() {
        let (lib, loaded) = match open_one(api, rest) {
            Ok(x) => x,
            Err(l) => {
                looked.extend(l);
                break;
            }
        };
        let made = match api {
            Api::Cuda => cublas::Cublas::new(lib, stream).map(|b| Box::new(b) as Box<dyn Blas>),
            Api::Hip => rocblas::Rocblas::new(lib, stream).map(|b| Box::new(b) as Box<dyn Blas>),
        };
        match made {
            Ok(blas) => return Ok(VendorBlas { loaded, blas }),
            Err(Missing::Symbol(why)) => {
                looked.push(format!("{} ({}): {why}", loaded.path.display(), loaded.why));
                let at = rest.iter().position(|c| c.path == loaded.path).unwrap_or(0);
                rest = &rest[at + 1..];
            }
            Err(Missing::Call(why)) => {
                return Err(CeilingError::Unusable {
                    library: loaded.path.display().to_string(),
                    why,
                })
            }
        }
    }
    Err(CeilingError::NotFound {
        what: library_name(api).to_string(),
        looked,
    })
}

/// Opens the first loadable candidate. A library the vendor ships beside
/// it (cuBLAS needs libcublasLt) is opened first from the same folder, so
/// the loader takes that one rather than another install's.
fn open_one(
    api: Api,
    candidates: &[Candidate],
) -> Result<(libloading::Library, Loaded), Vec<String>> {
    let mut looked = Vec::new();
    for c in candidates {
        if api == Api::Cuda && c.path.is_absolute() {
            preload_cublaslt(c);
        }
        match locate::open_first(library_name(api), std::slice::from_ref(c)) {
            Ok(x) => return Ok(x),
            Err(l) => looked.extend(l),
        }
    }
    Err(looked)
}

/// Opens the libcublasLt beside candidate `c`, if there is one, for the
/// life of the process (cuBLAS refers to it).
fn preload_cublaslt(c: &Candidate) {
    let Some(dir) = c.path.parent() else { return };
    let Some(lt) = locate::lib_files(dir, "libcublasLt.so").into_iter().next() else {
        return;
    };
    if locate::loadable(&lt).is_err() {
        return;
    }
    // SAFETY: cuBLAS's own companion library; loading it runs its
    // initialisers, which is what using it means.
    if let Ok(l) = unsafe {
        libloading::os::unix::Library::open(Some(&lt), libc::RTLD_NOW | libc::RTLD_GLOBAL)
    } {
        std::mem::forget(l);
    }
}

/// Why a loaded library cannot serve.
pub(crate) enum Missing {
    /// It lacks a symbol: not this library, try the next candidate.
    Symbol(String),
    /// It is the library, but a call into it failed (no device, bad stream).
    Call(String),
}

/// Looks `name` up in `lib` as a C function of type `T`.
///
/// # Safety
/// `T` must be the symbol's real C signature.
pub(crate) unsafe fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, Missing> {
    let mut z = name.as_bytes().to_vec();
    z.push(0);
    // SAFETY: the caller vouches for the signature.
    unsafe { lib.get::<T>(&z) }
        .map(|s| *s)
        .map_err(|_| Missing::Symbol(format!("loads, but has no {name}: not the vendor BLAS")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_real_library_without_the_blas_symbols_is_passed_over() {
        // libc is a real shared library that is not a BLAS: it opens, lacks
        // cublasCreate_v2, and the search says so and moves on.
        let libc_path = [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/libc.so.6",
            "/usr/lib64/libc.so.6",
        ]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
        let Some(libc_path) = libc_path else {
            eprintln!("skipped: no libc.so.6 at the usual paths");
            return;
        };
        let e = open(
            Api::Cuda,
            &[Candidate::at(
                &libc_path,
                crate::locate::Rule::Variable { var: "TEST" },
            )],
            StreamH(0),
        )
        .err()
        .unwrap();
        let CeilingError::NotFound { looked, .. } = e else {
            panic!()
        };
        assert_eq!(looked.len(), 1);
        assert!(looked[0].contains("has no cublasCreate_v2"), "{looked:?}");
    }
}
