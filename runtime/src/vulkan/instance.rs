//! Loading libvulkan at run time and creating the instance.

use super::validation::{self, MessageLog};
use crate::RuntimeError;
use ash::vk;
use std::sync::{Arc, Mutex};

/// An instance, its optional validation messenger and the message log.
pub struct Instance {
    pub entry: ash::Entry,
    pub raw: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    pub messages: MessageLog,
    pub validation: bool,
    /// The API version the instance was created for: 1.3 where the loader
    /// has it (SPIR-V 1.6 kernels need it), else 1.2.
    pub api_version: u32,
}

impl Instance {
    /// `validation`: enable `VK_LAYER_KHRONOS_validation` and record its
    /// messages; an error if the layer is not installed.
    pub fn new(validation: bool) -> Result<Self, RuntimeError> {
        // SAFETY: loading the system Vulkan loader; its initialisation has no preconditions.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| {
            RuntimeError::LoaderMissing(format!(
                "Vulkan loader (libvulkan.so.1) not found: {e}; install it (Debian/Ubuntu: apt-get install libvulkan1)"
            ))
        })?;
        let messages: MessageLog = Arc::new(Mutex::new(Vec::new()));
        let mut layers = Vec::new();
        let mut exts = Vec::new();
        if validation {
            // SAFETY: plain enumeration on a loaded entry.
            let available = unsafe { entry.enumerate_instance_layer_properties() }
                .map_err(|e| RuntimeError::api("vkEnumerateInstanceLayerProperties", e))?;
            if !available.iter().any(|l| {
                l.layer_name_as_c_str()
                    .is_ok_and(|n| n == validation::LAYER)
            }) {
                return Err(RuntimeError::Unsupported(
                    "validation requested (GRETA_VK_VALIDATION=1) but VK_LAYER_KHRONOS_validation is not installed \
                     (Debian/Ubuntu: apt-get install vulkan-validationlayers)"
                        .into(),
                ));
            }
            layers.push(validation::LAYER.as_ptr());
            exts.push(ash::ext::debug_utils::NAME.as_ptr());
            // SAFETY: plain enumeration on a loaded entry.
            let layer_exts =
                unsafe { entry.enumerate_instance_extension_properties(Some(validation::LAYER)) }
                    .unwrap_or_default();
            if layer_exts.iter().any(|e| {
                e.extension_name_as_c_str()
                    .is_ok_and(|n| n == ash::ext::validation_features::NAME)
            }) {
                exts.push(ash::ext::validation_features::NAME.as_ptr());
            }
        }
        // SAFETY: plain query on a loaded entry.
        let loader = unsafe { entry.try_enumerate_instance_version() }
            .ok()
            .flatten()
            .unwrap_or(vk::API_VERSION_1_0);
        let api_version = if loader >= vk::API_VERSION_1_3 {
            vk::API_VERSION_1_3
        } else {
            vk::API_VERSION_1_2
        };
        let app = vk::ApplicationInfo::default()
            .application_name(c"greta")
            .engine_name(c"greta-runtime")
            .api_version(api_version);
        let mut dbg_info = validation::messenger_info(&messages);
        // Synchronization validation too: a missing barrier is a finding, not luck.
        let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let mut features =
            vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&exts);
        if validation {
            // Also catches messages from vkCreateInstance/vkDestroyInstance themselves.
            info = info.push_next(&mut dbg_info);
            if exts.contains(&ash::ext::validation_features::NAME.as_ptr()) {
                info = info.push_next(&mut features);
            }
        }
        // SAFETY: the create info and everything it points to live until the call returns.
        let raw = unsafe { entry.create_instance(&info, None) }.map_err(|e| match e {
            vk::Result::ERROR_INCOMPATIBLE_DRIVER => RuntimeError::NoDevice(format!(
                "no Vulkan driver could be loaded (vkCreateInstance: {e}): no ICD manifest found or none compatible; \
                 check VK_DRIVER_FILES / VK_ICD_FILENAMES and that a driver is installed (e.g. mesa-vulkan-drivers)"
            )),
            vk::Result::ERROR_LAYER_NOT_PRESENT => {
                RuntimeError::Unsupported(format!("vkCreateInstance: {e}: the validation layer failed to load"))
            }
            _ => RuntimeError::api("vkCreateInstance", e),
        })?;
        let debug = if validation {
            let du = ash::ext::debug_utils::Instance::new(&entry, &raw);
            let dbg_info = validation::messenger_info(&messages);
            // SAFETY: valid instance with VK_EXT_debug_utils enabled; the log outlives the messenger.
            match unsafe { du.create_debug_utils_messenger(&dbg_info, None) } {
                Ok(m) => Some((du, m)),
                Err(e) => {
                    // SAFETY: nothing else was created from this instance yet.
                    unsafe { raw.destroy_instance(None) };
                    return Err(RuntimeError::api("vkCreateDebugUtilsMessengerEXT", e));
                }
            }
        } else {
            None
        };
        Ok(Instance {
            entry,
            raw,
            debug,
            messages,
            validation,
            api_version,
        })
    }

    pub fn messages(&self) -> Vec<String> {
        self.messages.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: every child object was destroyed by its owner before (Device
        // leaks the whole Instance instead of dropping it when the device is lost).
        unsafe {
            if let Some((du, m)) = self.debug.take() {
                du.destroy_debug_utils_messenger(m, None);
            }
            self.raw.destroy_instance(None);
        }
    }
}
