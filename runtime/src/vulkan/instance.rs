//! Loading libvulkan at run time and creating the instance.

use super::validation::{self, MessageLog};
use crate::error::RuntimeError;
use crate::locate::{find_library, open_first, SearchEnv, VendorLibrary};
use ash::vk;
use greta_vocab::EnvVars;

/// An instance, its optional validation messenger and the message log.
/// Dropping it destroys the messenger, then the instance; a device holds
/// its `Arc` (see [`super::owned::LogicalDevice`]), so it outlives every device.
pub struct Instance {
    pub entry: ash::Entry,
    pub raw: ash::Instance,
    debug: Option<Messenger>,
    pub messages: MessageLog,
    /// The API version the instance was created for: 1.3 where the loader
    /// has it (SPIR-V 1.6 kernels need it), else 1.2.
    pub api_version: u32,
}

/// The debug-utils messenger and the extension's functions to destroy it.
struct Messenger {
    loader: ash::ext::debug_utils::Instance,
    raw: vk::DebugUtilsMessengerEXT,
}

/// The Vulkan loader, from the first place the library search names that
/// loads (`LD_LIBRARY_PATH`, ld.so.cache, the standard directories, as the
/// dynamic loader would take `libvulkan.so.1`).
fn load_entry() -> Result<ash::Entry, RuntimeError> {
    let missing = |why: String| {
        RuntimeError::LoaderMissing(format!(
            "Vulkan loader (libvulkan.so.1) not found: {why}; install it (Debian/Ubuntu: apt-get install libvulkan1)"
        ))
    };
    // The Vulkan search has no override variable to refuse.
    let found = find_library(VendorLibrary::Vulkan, &SearchEnv::live()).map_err(&missing)?;
    let (lib, loaded) =
        open_first("libvulkan", &found).map_err(|looked| missing(looked.join("; ")))?;
    // SAFETY: loading the Vulkan loader open_first just opened (ash takes
    // its own handle on the same file); its initialisation has no
    // preconditions.
    let entry = unsafe { ash::Entry::load_from(&loaded.path) }
        .map_err(|e| missing(format!("{}: {e}", loaded.path.display())))?;
    drop(lib);
    Ok(entry)
}

impl Instance {
    /// `validation`: enable `VK_LAYER_KHRONOS_validation` and record its
    /// messages; an error if the layer is not installed.
    pub fn new(validation: bool) -> Result<Self, RuntimeError> {
        Self::with_log(validation, MessageLog::default())
    }

    /// As [`Instance::new`], recording validation messages into `messages`
    /// (which the caller may keep reading after the instance is gone).
    pub fn with_log(validation: bool, messages: MessageLog) -> Result<Self, RuntimeError> {
        // Before the loader (and the driver behind it) reads the environment.
        super::mesa_cache::prepare();
        let entry = load_entry()?;
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
                return Err(RuntimeError::Unsupported(format!(
                    "validation requested ({}=1) but VK_LAYER_KHRONOS_validation is not installed \
                     (Debian/Ubuntu: apt-get install vulkan-validationlayers)",
                    EnvVars::GRETA_VK_VALIDATION
                )));
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
        // Owned from here on: an error below drops it, which destroys it.
        let mut instance = Instance {
            entry,
            raw,
            debug: None,
            messages,
            api_version,
        };
        if validation {
            let loader = ash::ext::debug_utils::Instance::new(&instance.entry, &instance.raw);
            let dbg_info = validation::messenger_info(&instance.messages);
            // SAFETY: a live instance with VK_EXT_debug_utils enabled; the
            // log the info points at is `instance.messages`, which outlives
            // the messenger (destroyed first in `Drop`).
            let raw = unsafe { loader.create_debug_utils_messenger(&dbg_info, None) }
                .map_err(|e| RuntimeError::api("vkCreateDebugUtilsMessengerEXT", e))?;
            instance.debug = Some(Messenger { loader, raw });
        }
        Ok(instance)
    }

    pub fn messages(&self) -> Vec<String> {
        self.messages.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(m) = self.debug.take() {
            // SAFETY: created from this instance in `with_log`, destroyed once
            // (taken out of the Option).
            unsafe { m.loader.destroy_debug_utils_messenger(m.raw, None) };
        }
        // SAFETY: every device holds this instance's `Arc`, so none is left;
        // the messenger is gone. The `messages` log the instance-creation
        // messenger writes to is a field, alive until after this call.
        unsafe { self.raw.destroy_instance(None) };
    }
}
