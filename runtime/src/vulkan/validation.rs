//! Validation layers and the debug-utils messenger that records their messages.

use ash::vk;
use std::ffi::CStr;
use std::sync::{Arc, Mutex};

/// The validation layer greta enables on request.
pub const LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Validation is on when `GRETA_VK_VALIDATION=1` (or `true`/`yes`).
pub fn requested_by_env() -> bool {
    std::env::var("GRETA_VK_VALIDATION").is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

/// Messages recorded by the messenger (shared with the callback).
pub type MessageLog = Arc<Mutex<Vec<String>>>;

/// Records every validation or performance message of warning or error
/// severity, and general messages of error severity. Info/verbose loader
/// chatter is not a validation failure and is not kept.
unsafe extern "system" fn callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut std::ffi::c_void,
) -> vk::Bool32 {
    let keep = severity.intersects(
        vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
            | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
    ) && (types.intersects(
        vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
            | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
    ) || severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR));
    if keep && !data.is_null() && !user.is_null() {
        let d = unsafe { &*data };
        let text = if d.p_message.is_null() {
            String::from("(no message)")
        } else {
            unsafe { CStr::from_ptr(d.p_message) }
                .to_string_lossy()
                .into_owned()
        };
        let msg = format!("[{severity:?} {types:?}] {text}");
        tracing::warn!(target: "greta_runtime::validation", "{msg}");
        let log = unsafe { &*(user as *const Mutex<Vec<String>>) };
        if let Ok(mut v) = log.lock() {
            v.push(msg);
        }
    }
    vk::FALSE
}

/// Messenger create info pointing at `log`; `log` must outlive the messenger
/// (the instance keeps its `Arc`).
pub fn messenger_info(log: &MessageLog) -> vk::DebugUtilsMessengerCreateInfoEXT<'static> {
    vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(
            vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
        )
        .message_type(
            vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
        )
        .pfn_user_callback(Some(callback))
        .user_data(Arc::as_ptr(log) as *mut std::ffi::c_void)
}
