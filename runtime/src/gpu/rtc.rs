//! hiprtc and NVRTC through one piece of code: the two libraries have the
//! same shape (create a program from source, compile with options, read the
//! log and the code, destroy), with a different prefix and code getter.

use super::compile::{compiler_label, CompileError};
use super::driver::CompilerChoice;
use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// The symbol names of one run-time compiler library (NUL-terminated).
pub struct RtcNames {
    pub create: &'static [u8],
    pub compile: &'static [u8],
    pub log_size: &'static [u8],
    pub log: &'static [u8],
    pub code_size: &'static [u8],
    pub code: &'static [u8],
    pub destroy: &'static [u8],
    pub error_string: &'static [u8],
    pub version: &'static [u8],
}

pub const HIPRTC: RtcNames = RtcNames {
    create: b"hiprtcCreateProgram\0",
    compile: b"hiprtcCompileProgram\0",
    log_size: b"hiprtcGetProgramLogSize\0",
    log: b"hiprtcGetProgramLog\0",
    code_size: b"hiprtcGetCodeSize\0",
    code: b"hiprtcGetCode\0",
    destroy: b"hiprtcDestroyProgram\0",
    error_string: b"hiprtcGetErrorString\0",
    version: b"hiprtcVersion\0",
};

/// NVRTC, with CUBIN (not PTX) as the output: a cubin loads on any driver
/// new enough for the GPU, while PTX from a newer NVRTC than the driver
/// does not.
pub const NVRTC: RtcNames = RtcNames {
    create: b"nvrtcCreateProgram\0",
    compile: b"nvrtcCompileProgram\0",
    log_size: b"nvrtcGetProgramLogSize\0",
    log: b"nvrtcGetProgramLog\0",
    code_size: b"nvrtcGetCUBINSize\0",
    code: b"nvrtcGetCUBIN\0",
    destroy: b"nvrtcDestroyProgram\0",
    error_string: b"nvrtcGetErrorString\0",
    version: b"nvrtcVersion\0",
};

type Prog = *mut c_void;
type CreateFn = unsafe extern "C" fn(
    *mut Prog,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(Prog, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(Prog, *mut usize) -> c_int;
type ReadFn = unsafe extern "C" fn(Prog, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut Prog) -> c_int;
type ErrFn = unsafe extern "C" fn(c_int) -> *const c_char;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;

/// True when `lib` exports the compiler's entry points.
pub fn has_compiler(lib: &libloading::Library, names: &RtcNames) -> bool {
    // SAFETY: looking a symbol up calls nothing.
    unsafe { lib.get::<CompileFn>(names.compile).is_ok() }
}

/// `major.minor` of the compiler in `lib`.
pub fn version(lib: &libloading::Library, names: &RtcNames) -> Option<String> {
    // SAFETY: the signature is the documented one; out-parameters only.
    unsafe {
        let f = lib.get::<VersionFn>(names.version).ok()?;
        let (mut a, mut b) = (0, 0);
        (f(&mut a, &mut b) == 0).then(|| format!("{a}.{b}"))
    }
}

/// Compiles `source` with the compiler library `choice` names; returns the
/// code (an AMD code object, or a CUBIN).
pub fn compile(
    names: &RtcNames,
    choice: &CompilerChoice,
    source: &str,
) -> Result<Vec<u8>, CompileError> {
    let label = compiler_label(choice);
    let fail = |log: String| CompileError::Failed {
        target: choice.target.clone(),
        compiler: label.clone(),
        log,
    };
    // SAFETY: loading the library the parent process chose and already
    // opened once.
    let lib = unsafe { libloading::Library::new(&choice.library.path) }.map_err(|e| {
        CompileError::Unavailable(format!(
            "cannot open {}: {e}",
            choice.library.path.display()
        ))
    })?;
    // SAFETY: the signatures are the libraries' documented ones (hiprtc.h,
    // nvrtc.h); every pointer passed below lives across its call.
    unsafe {
        let sym = |n: &'static [u8]| -> Result<*const c_void, CompileError> {
            lib.get::<*const c_void>(n).map(|s| *s).map_err(|e| {
                CompileError::Unavailable(format!(
                    "{} lacks {}: {e}",
                    choice.library.path.display(),
                    String::from_utf8_lossy(&n[..n.len() - 1])
                ))
            })
        };
        let create: CreateFn = std::mem::transmute(sym(names.create)?);
        let compile: CompileFn = std::mem::transmute(sym(names.compile)?);
        let log_size: SizeFn = std::mem::transmute(sym(names.log_size)?);
        let read_log: ReadFn = std::mem::transmute(sym(names.log)?);
        let code_size: SizeFn = std::mem::transmute(sym(names.code_size)?);
        let read_code: ReadFn = std::mem::transmute(sym(names.code)?);
        let destroy: DestroyFn = std::mem::transmute(sym(names.destroy)?);
        let err_text = |code: c_int| -> String {
            match sym(names.error_string) {
                Ok(p) => {
                    let f: ErrFn = std::mem::transmute(p);
                    let s = f(code);
                    if s.is_null() {
                        format!("error {code}")
                    } else {
                        format!("{} ({code})", CStr::from_ptr(s).to_string_lossy())
                    }
                }
                Err(_) => format!("error {code}"),
            }
        };
        let src =
            CString::new(source).map_err(|_| fail("the source contains a NUL byte".into()))?;
        let name = CString::new("greta_kernels.cu").unwrap_or_default();
        let mut prog: Prog = std::ptr::null_mut();
        let r = create(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        );
        if r != 0 {
            return Err(fail(format!("creating the program: {}", err_text(r))));
        }
        let opts: Vec<CString> = choice
            .options
            .iter()
            .map(|o| CString::new(o.as_str()).unwrap_or_default())
            .collect();
        let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let r = compile(prog, ptrs.len() as c_int, ptrs.as_ptr());
        let mut n = 0usize;
        let mut log = String::new();
        if log_size(prog, &mut n) == 0 && n > 1 && n < (64 << 20) {
            let mut buf = vec![0u8; n];
            if read_log(prog, buf.as_mut_ptr() as *mut c_char) == 0 {
                log = String::from_utf8_lossy(&buf)
                    .trim_end_matches('\0')
                    .trim()
                    .to_string();
            }
        }
        let result = if r != 0 {
            Err(classify_failure(
                &choice.target,
                &label,
                &format!("{}\n{log}", err_text(r)),
            ))
        } else {
            let mut n = 0usize;
            let r = code_size(prog, &mut n);
            if r != 0 || n == 0 || n > (512 << 20) {
                Err(fail(format!(
                    "no code after a successful compile (size {n}, {}){}",
                    err_text(r),
                    if log.is_empty() {
                        String::new()
                    } else {
                        format!("\n{log}")
                    }
                )))
            } else {
                let mut code = vec![0u8; n];
                let r = read_code(prog, code.as_mut_ptr() as *mut c_char);
                if r != 0 {
                    Err(fail(format!("reading the code: {}", err_text(r))))
                } else {
                    Ok(code)
                }
            }
        };
        destroy(&mut prog);
        result
    }
}

/// Turns a compiler's message about an unknown target into a clear
/// unsupported-target error; anything else is a failure with the log.
pub fn classify_failure(target: &str, compiler: &str, log: &str) -> CompileError {
    for line in log.lines() {
        let l = line.to_ascii_lowercase();
        if l.contains("invalid target id")
            || l.contains("unknown target cpu")
            || l.contains("unsupported offload arch")
            || l.contains("is not a recognized processor")
            || l.contains("invalid value 'sm_")
            || l.contains("cannot find rocm device library for")
        {
            return CompileError::UnsupportedTarget {
                target: target.to_string(),
                compiler: compiler.to_string(),
                detail: format!(
                    "{} (the compiler is older than this GPU; use a ROCm/CUDA release that supports {target})",
                    line.trim()
                ),
            };
        }
    }
    CompileError::Failed {
        target: target.to_string(),
        compiler: compiler.to_string(),
        log: log.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_targets_are_named_and_other_failures_keep_their_log() {
        let e = classify_failure(
            "gfx942",
            "hipcc 5.2",
            "clang: error: invalid target ID 'gfx942'; format is ...",
        );
        assert!(
            matches!(e, CompileError::UnsupportedTarget { ref target, .. } if target == "gfx942"),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with("hipcc 5.2 cannot compile for gfx942"),
            "{e}"
        );
        let e = classify_failure(
            "sm_90",
            "NVRTC 11.0",
            "nvrtc error: invalid value 'sm_90' for option -arch",
        );
        assert!(matches!(e, CompileError::UnsupportedTarget { .. }), "{e}");
        let e = classify_failure(
            "gfx90a",
            "hiprtc",
            "fill.hip:3:1: error: unknown type name 'flot'",
        );
        assert!(
            matches!(e, CompileError::Failed { .. }) && e.to_string().contains("fill.hip:3:1"),
            "{e}"
        );
    }
}
