//! Code objects loaded into the device and the kernels found in them.

use super::error::{check, HipError};
use hip_sys::hiprt::{self, hipFunction_t, hipModule_t};
use std::collections::HashMap;
use std::ffi::CString;

pub struct Module {
    raw: hipModule_t,
    functions: HashMap<String, Function>,
}

/// A kernel handle; valid while the [`Module`] it came from is loaded
/// (the backend keeps its module for its whole life).
#[derive(Debug, Clone, Copy)]
pub struct Function {
    raw: hipFunction_t,
}

impl Function {
    pub(crate) fn raw(&self) -> hipFunction_t {
        self.raw
    }
}

impl Module {
    /// Loads a code object (an ELF or a clang offload bundle, as
    /// `hipcc --genco` writes) for the current device.
    pub fn load(image: &[u8]) -> Result<Module, HipError> {
        if image.is_empty() {
            return Err(HipError::Invalid("empty HIP code object".into()));
        }
        let mut raw: hipModule_t = std::ptr::null_mut();
        // SAFETY: the runtime copies what it needs from `image` before returning.
        check("hipModuleLoadData", unsafe {
            hiprt::hipModuleLoadData(&mut raw, image.as_ptr() as *const libc::c_void)
        })?;
        Ok(Module {
            raw,
            functions: HashMap::new(),
        })
    }

    /// The kernel `name` (an `extern "C"` symbol), looked up once.
    pub fn function(&mut self, name: &str) -> Result<Function, HipError> {
        if let Some(&f) = self.functions.get(name) {
            return Ok(f);
        }
        let c = CString::new(name)
            .map_err(|_| HipError::Invalid(format!("kernel name {name:?} contains NUL")))?;
        let mut f: hipFunction_t = std::ptr::null_mut();
        // SAFETY: live module, NUL-terminated name.
        check("hipModuleGetFunction", unsafe {
            hiprt::hipModuleGetFunction(&mut f, self.raw, c.as_ptr())
        })
        .map_err(|e| match e {
            HipError::Call { .. } => HipError::Invalid(format!(
                "kernel `{name}` is not in the loaded code object: {e}"
            )),
            other => other,
        })?;
        let f = Function { raw: f };
        self.functions.insert(name.to_string(), f);
        Ok(f)
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: loaded by hipModuleLoadData, unloaded once.
        unsafe {
            hiprt::hipModuleUnload(self.raw);
        }
    }
}
