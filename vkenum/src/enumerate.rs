//! Listing the physical devices: through a caller's instance (the runtime,
//! which goes on to create a device), or through an instance of its own on
//! a thread with a time limit (the doctor: a broken ICD can hang
//! `vkCreateInstance`, and doctor must report that, not hang with it).

use crate::describe::{describe, Description};
use ash::vk;
use std::ffi::CStr;
use std::time::Duration;

/// Why an enumeration found nothing. The texts are what `greta doctor`
/// has always printed and captured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnumError {
    #[error("Vulkan loader not loadable: {0}")]
    LoaderMissing(String),
    #[error("vkEnumerateInstanceVersion: {0}")]
    InstanceVersion(vk::Result),
    #[error("vkCreateInstance: {0}")]
    CreateInstance(vk::Result),
    #[error("vkEnumeratePhysicalDevices: {0}")]
    EnumerateDevices(vk::Result),
    #[error("cannot start enumeration thread: {0}")]
    Thread(String),
    #[error("Vulkan enumeration did not finish within {} s (a driver hangs in vkCreateInstance)", .0.as_secs())]
    TimedOut(Duration),
}

/// What one stand-alone enumeration found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Enumeration {
    /// The loader's instance version, when it could be asked.
    pub instance_version: Option<u32>,
    pub devices: Vec<Description>,
    pub error: Option<EnumError>,
}

/// Every physical device of `instance`, described, in the loader's order.
///
/// # Safety
/// `instance` must be a live instance created from `entry` with API
/// version `instance_api`.
pub unsafe fn enumerate(
    entry: &ash::Entry,
    instance: &ash::Instance,
    instance_api: u32,
) -> Result<Vec<(vk::PhysicalDevice, Description)>, vk::Result> {
    // SAFETY: a live instance (the contract).
    let pds = unsafe { instance.enumerate_physical_devices() }?;
    Ok(pds
        .into_iter()
        // SAFETY: each handle was just enumerated from `instance`.
        .map(|pd| (pd, unsafe { describe(entry, instance, instance_api, pd) }))
        .collect())
}

/// Loads the loader, creates a bare instance (API 1.3 at most) named
/// `app`, describes every device and destroys the instance, on this thread.
pub fn enumerate_now(app: &CStr) -> Enumeration {
    // SAFETY: dlopens the system loader; no Vulkan call is made if it fails.
    let entry = match unsafe { ash::Entry::load() } {
        Ok(e) => e,
        Err(e) => return failed(None, EnumError::LoaderMissing(e.to_string())),
    };
    // SAFETY: plain query on a loaded entry.
    let loader = match unsafe { entry.try_enumerate_instance_version() } {
        Ok(v) => v.unwrap_or(vk::API_VERSION_1_0),
        Err(e) => return failed(None, EnumError::InstanceVersion(e)),
    };
    let api = loader.min(vk::API_VERSION_1_3);
    let info = vk::ApplicationInfo::default()
        .application_name(app)
        .api_version(api);
    let ci = vk::InstanceCreateInfo::default().application_info(&info);
    // SAFETY: the create info lives until the call returns.
    let instance = match unsafe { entry.create_instance(&ci, None) } {
        Ok(i) => i,
        Err(e) => return failed(Some(loader), EnumError::CreateInstance(e)),
    };
    // SAFETY: `instance` was just created from `entry` with `api`.
    let listed = unsafe { enumerate(&entry, &instance, api) };
    // SAFETY: created above; no object made from it outlives this call.
    unsafe { instance.destroy_instance(None) };
    match listed {
        Ok(list) => Enumeration {
            instance_version: Some(loader),
            devices: list.into_iter().map(|(_, d)| d).collect(),
            error: None,
        },
        Err(e) => failed(Some(loader), EnumError::EnumerateDevices(e)),
    }
}

fn failed(instance_version: Option<u32>, e: EnumError) -> Enumeration {
    Enumeration {
        instance_version,
        devices: Vec::new(),
        error: Some(e),
    }
}

/// [`enumerate_now`] on a helper thread; a hang becomes
/// [`EnumError::TimedOut`] after `timeout` (the stuck thread is abandoned:
/// it holds nothing the caller needs).
pub fn enumerate_with_timeout(app: &'static CStr, timeout: Duration) -> Enumeration {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("greta-vulkan-enum".into())
        .spawn(move || {
            let _ = tx.send(enumerate_now(app));
        });
    if let Err(e) = spawned {
        return failed(None, EnumError::Thread(e.to_string()));
    }
    rx.recv_timeout(timeout)
        .unwrap_or_else(|_| failed(None, EnumError::TimedOut(timeout)))
}
