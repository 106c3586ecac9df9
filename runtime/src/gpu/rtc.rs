//! hiprtc and NVRTC through one piece of code: the two libraries have the
//! same shape (create a program from source, compile with options, read the
//! log and the code, destroy), with a different prefix and code getter.

use super::compiler::{compiler_label, CompileError, CompilerChoice};
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

/// NVRTC with PTX as the output: what a compile test reads the
/// instructions of a target from (NVRTC keeps the PTX of a compile for a
/// real architecture beside its CUBIN).
pub const NVRTC_PTX: RtcNames = RtcNames {
    code_size: b"nvrtcGetPTXSize\0",
    code: b"nvrtcGetPTX\0",
    ..NVRTC
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
    // SAFETY: `VersionFn` is the documented signature of hiprtcVersion /
    // nvrtcVersion; looking it up calls nothing.
    let f = unsafe { lib.get::<VersionFn>(names.version) }.ok()?;
    let (mut a, mut b) = (0, 0);
    // SAFETY: two valid out-parameters.
    (unsafe { f(&mut a, &mut b) } == 0).then(|| format!("{a}.{b}"))
}

/// A compiler library's entry points, typed. The symbols are copied out
/// of `libloading::Symbol`s: valid while the `Library` they came from is
/// loaded, which [`compile_logged`] keeps alive across every call.
struct Entry {
    create: CreateFn,
    compile: CompileFn,
    log_size: SizeFn,
    read_log: ReadFn,
    code_size: SizeFn,
    read_code: ReadFn,
    destroy: DestroyFn,
    error_string: Option<ErrFn>,
}

impl Entry {
    fn load(
        lib: &libloading::Library,
        names: &RtcNames,
        path: &std::path::Path,
    ) -> Result<Self, CompileError> {
        fn get<T: Copy>(
            lib: &libloading::Library,
            n: &'static [u8],
            path: &std::path::Path,
        ) -> Result<T, CompileError> {
            // SAFETY: every `T` used below is the function type hiprtc.h /
            // nvrtc.h declare for the symbol `n`; looking it up calls nothing.
            unsafe { lib.get::<T>(n) }.map(|s| *s).map_err(|e| {
                CompileError::Unavailable(format!(
                    "{} lacks {}: {e}",
                    path.display(),
                    String::from_utf8_lossy(&n[..n.len() - 1])
                ))
            })
        }
        Ok(Entry {
            create: get(lib, names.create, path)?,
            compile: get(lib, names.compile, path)?,
            log_size: get(lib, names.log_size, path)?,
            read_log: get(lib, names.log, path)?,
            code_size: get(lib, names.code_size, path)?,
            read_code: get(lib, names.code, path)?,
            destroy: get(lib, names.destroy, path)?,
            error_string: get(lib, names.error_string, path).ok(),
        })
    }

    /// The library's text for a status code.
    fn err_text(&self, code: c_int) -> String {
        let Some(f) = self.error_string else {
            return format!("error {code}");
        };
        // SAFETY: takes any code, returns a static string or NULL.
        let s = unsafe { f(code) };
        if s.is_null() {
            format!("error {code}")
        } else {
            // SAFETY: a non-NULL answer is a static NUL-terminated string.
            let text = unsafe { CStr::from_ptr(s) };
            format!("{} ({code})", text.to_string_lossy())
        }
    }

    /// The compile log, empty when there is none or it cannot be read.
    fn log(&self, prog: Prog) -> String {
        let mut n = 0usize;
        // SAFETY: a live program and a valid out-parameter.
        if unsafe { (self.log_size)(prog, &mut n) } != 0 || n <= 1 || n >= (64 << 20) {
            return String::new();
        }
        let mut buf = vec![0u8; n];
        // SAFETY: `buf` holds the `n` bytes the library said the log takes.
        if unsafe { (self.read_log)(prog, buf.as_mut_ptr() as *mut c_char) } != 0 {
            return String::new();
        }
        String::from_utf8_lossy(&buf)
            .trim_end_matches('\0')
            .trim()
            .to_string()
    }
}

/// Compiles `source` with the compiler library `choice` names; returns the
/// code (an AMD code object, or a CUBIN) and the compiler's log of the
/// successful compile (its warnings and remarks, e.g.
/// `-Rpass-analysis=kernel-resource-usage`, or ptxas's statistics).
pub fn compile_logged(
    names: &RtcNames,
    choice: &CompilerChoice,
    source: &str,
) -> Result<(Vec<u8>, String), CompileError> {
    let label = compiler_label(choice);
    let fail = |log: String| CompileError::Failed {
        target: choice.target.to_string(),
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
    let rtc = Entry::load(&lib, names, &choice.library.path)?;
    let src = CString::new(source).map_err(|_| fail("the source contains a NUL byte".into()))?;
    let name = CString::new("greta_kernels.cu").unwrap_or_default();
    let mut prog: Prog = std::ptr::null_mut();
    // SAFETY: `src` and `name` are NUL-terminated and live across the call;
    // no headers (count 0, NULL arrays).
    let r = unsafe {
        (rtc.create)(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(fail(format!("creating the program: {}", rtc.err_text(r))));
    }
    let opts: Vec<CString> = choice
        .options
        .iter()
        .map(|o| CString::new(o.as_str()).unwrap_or_default())
        .collect();
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: a live program; `ptrs` holds `ptrs.len()` NUL-terminated
    // strings, all alive across the call (`opts` owns them).
    let r = unsafe { (rtc.compile)(prog, ptrs.len() as c_int, ptrs.as_ptr()) };
    let log = rtc.log(prog);
    let result = if r != 0 {
        Err(classify_failure(
            &choice.target.to_string(),
            &label,
            &format!("{}\n{log}", rtc.err_text(r)),
        ))
    } else {
        let mut n = 0usize;
        // SAFETY: a live program and a valid out-parameter.
        let r = unsafe { (rtc.code_size)(prog, &mut n) };
        if r != 0 || n == 0 || n > (512 << 20) {
            Err(fail(format!(
                "no code after a successful compile (size {n}, {}){}",
                rtc.err_text(r),
                if log.is_empty() {
                    String::new()
                } else {
                    format!("\n{log}")
                }
            )))
        } else {
            let mut code = vec![0u8; n];
            // SAFETY: `code` holds the `n` bytes the library said the code takes.
            let r = unsafe { (rtc.read_code)(prog, code.as_mut_ptr() as *mut c_char) };
            if r != 0 {
                Err(fail(format!("reading the code: {}", rtc.err_text(r))))
            } else {
                Ok((code, log))
            }
        }
    };
    // SAFETY: the program created above, destroyed once; nothing uses it after.
    unsafe { (rtc.destroy)(&mut prog) };
    drop(lib);
    result
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
            || l.contains("invalid value for --gpu-architecture")
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
        // NVRTC 12.4's words for an architecture it does not know.
        let e = classify_failure(
            "sm_99",
            "NVRTC 12.4",
            "NVRTC_ERROR_INVALID_OPTION (5)\nnvrtc: error: invalid value for --gpu-architecture (-arch)",
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
