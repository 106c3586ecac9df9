//! Device buffers, and copies that go through the stream so a hung GPU
//! times out instead of blocking in `hipMemcpy`.

use super::error::{check, HipError};
use super::stream::Stream;
use hip_sys::hiprt;
use std::time::Duration;

pub struct DeviceBuffer {
    ptr: *mut libc::c_void,
    bytes: usize,
}

impl DeviceBuffer {
    pub fn new(bytes: usize) -> Result<DeviceBuffer, HipError> {
        let mut ptr = std::ptr::null_mut();
        // hipMalloc(0) returns null; keep one byte so every buffer is a real pointer.
        // SAFETY: out-parameter call.
        check("hipMalloc", unsafe {
            hiprt::hipMalloc(&mut ptr, bytes.max(1))
        })?;
        Ok(DeviceBuffer { ptr, bytes })
    }

    pub fn ptr(&self) -> *mut libc::c_void {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    pub fn upload(&self, stream: &Stream, data: &[u8], limit: Duration) -> Result<(), HipError> {
        self.fits(data.len())?;
        // SAFETY: `data` stays borrowed until the copy has finished (we wait below).
        check("hipMemcpyHtoDAsync", unsafe {
            hiprt::hipMemcpyHtoDAsync(
                self.ptr,
                data.as_ptr() as *mut libc::c_void,
                data.len(),
                stream.raw(),
            )
        })?;
        stream.finish("upload to the GPU", limit)
    }

    pub fn download(
        &self,
        stream: &Stream,
        out: &mut [u8],
        limit: Duration,
    ) -> Result<(), HipError> {
        self.fits(out.len())?;
        // SAFETY: `out` stays borrowed until the copy has finished (we wait below).
        check("hipMemcpyDtoHAsync", unsafe {
            hiprt::hipMemcpyDtoHAsync(
                out.as_mut_ptr() as *mut libc::c_void,
                self.ptr,
                out.len(),
                stream.raw(),
            )
        })?;
        stream.finish("download from the GPU", limit)
    }

    /// Fills the buffer with a repeated byte (used to poison outputs).
    pub fn fill_byte(&self, stream: &Stream, byte: u8) -> Result<(), HipError> {
        // SAFETY: live allocation of `bytes` bytes.
        check("hipMemsetAsync", unsafe {
            hiprt::hipMemsetAsync(self.ptr, byte as libc::c_int, self.bytes, stream.raw())
        })
    }

    fn fits(&self, n: usize) -> Result<(), HipError> {
        if n > self.bytes {
            return Err(HipError::Invalid(format!(
                "copy of {n} bytes into a {}-byte device buffer",
                self.bytes
            )));
        }
        Ok(())
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by hipMalloc, freed once.
        unsafe {
            hiprt::hipFree(self.ptr);
        }
    }
}
