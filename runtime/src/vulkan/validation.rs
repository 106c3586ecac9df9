//! Validation layers and the debug-utils messenger that records their messages.

use ash::vk;
use greta_vocab::EnvVars;
use std::ffi::CStr;
use std::sync::{Arc, Mutex, PoisonError};

/// The validation layer greta enables on request.
pub const LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Validation is on when `GRETA_VK_VALIDATION=1` (or `true`/`yes`).
pub fn requested_by_env() -> bool {
    std::env::var(EnvVars::GRETA_VK_VALIDATION)
        .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

/// Messages recorded by the messenger (shared with the callback).
pub type MessageLog = Arc<Mutex<Vec<String>>>;

/// Records every validation or performance message of warning or error
/// severity, and general messages of error severity. Info/verbose loader
/// chatter is not a validation failure and is not kept.
///
/// Called by the driver, so it never unwinds into it: while the thread is
/// already panicking (a drop during unwinding destroying Vulkan objects)
/// it returns at once, and a panic in its own body (a tracing subscriber,
/// formatting) is caught and dropped. `VK_FALSE`: the call that triggered
/// the message goes on.
unsafe extern "system" fn callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut std::ffi::c_void,
) -> vk::Bool32 {
    if std::thread::panicking() {
        return vk::FALSE;
    }
    // AssertUnwindSafe: after a caught panic the only shared state, the
    // log, is behind a mutex whose poisoning `record` tolerates.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the layer passes valid (or NULL) callback data for the
        // duration of the call, and `user` is the log the messenger was
        // created with (see `messenger_info`), alive as long as it.
        unsafe { record(severity, types, data, user) }
    }));
    vk::FALSE
}

/// The body of [`callback`].
///
/// # Safety
/// `data` is NULL or points at valid callback data (with `p_message` NULL
/// or NUL-terminated); `user` is NULL or `Arc::as_ptr` of a live [`MessageLog`].
unsafe fn record(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut std::ffi::c_void,
) {
    let keep = severity.intersects(
        vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
            | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
    ) && (types.intersects(
        vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
            | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
    ) || severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR));
    if !keep || data.is_null() || user.is_null() {
        return;
    }
    // SAFETY: non-NULL, hence valid for this call (the caller's contract).
    let d = unsafe { &*data };
    let text = if d.p_message.is_null() {
        String::from("(no message)")
    } else {
        // SAFETY: a non-NULL message is NUL-terminated (the caller's contract).
        unsafe { CStr::from_ptr(d.p_message) }
            .to_string_lossy()
            .into_owned()
    };
    let msg = format!("[{severity:?} {types:?}] {text}");
    tracing::warn!(target: "greta_runtime::validation", "{msg}");
    // SAFETY: `user` is `Arc::as_ptr` of a live log (the caller's contract).
    let log = unsafe { &*(user as *const Mutex<Vec<String>>) };
    log.lock().unwrap_or_else(PoisonError::into_inner).push(msg);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn call(log: &MessageLog, text: &CStr) -> vk::Bool32 {
        let data = vk::DebugUtilsMessengerCallbackDataEXT {
            p_message: text.as_ptr(),
            ..Default::default()
        };
        // SAFETY: valid data and a live log, as the layer would pass them.
        unsafe {
            callback(
                vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION,
                &data,
                Arc::as_ptr(log) as *mut std::ffi::c_void,
            )
        }
    }

    #[test]
    fn records_and_never_aborts_the_call() {
        let log = MessageLog::default();
        assert_eq!(call(&log, c"first"), vk::FALSE);
        assert_eq!(log.lock().unwrap().len(), 1);
        assert!(log.lock().unwrap()[0].contains("first"));
    }

    /// A poisoned log (a panic elsewhere while it was held) still records.
    #[test]
    fn a_poisoned_log_still_records() {
        let log = MessageLog::default();
        let l = log.clone();
        let _ = std::thread::spawn(move || {
            let _g = l.lock().unwrap();
            panic!("poison the log");
        })
        .join();
        assert!(log.is_poisoned());
        assert_eq!(call(&log, c"after"), vk::FALSE);
        let n = log.lock().unwrap_or_else(PoisonError::into_inner).len();
        assert_eq!(n, 1);
    }

    /// A panic inside the body (here a tracing subscriber that panics on
    /// every event) is caught: the callback returns `VK_FALSE` instead of
    /// unwinding into the driver, which would abort the process.
    #[test]
    fn a_panic_in_the_body_is_caught() {
        struct Panics;
        impl tracing::Subscriber for Panics {
            fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
                true
            }
            fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
                tracing::span::Id::from_u64(1)
            }
            fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
            fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
            fn event(&self, _: &tracing::Event<'_>) {
                panic!("subscriber panics");
            }
            fn enter(&self, _: &tracing::span::Id) {}
            fn exit(&self, _: &tracing::span::Id) {}
        }
        let log = MessageLog::default();
        let r = tracing::subscriber::with_default(Panics, || call(&log, c"boom"));
        assert_eq!(r, vk::FALSE);
        // The panic came before the message was recorded.
        assert!(log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty());
    }

    /// Called while the thread unwinds (a Vulkan object destroyed by a drop
    /// during a panic): returns at once, records nothing, and the panic
    /// goes on to its `catch_unwind` instead of aborting the process.
    #[test]
    fn returns_at_once_while_panicking() {
        struct CallOnDrop(MessageLog);
        impl Drop for CallOnDrop {
            fn drop(&mut self) {
                assert_eq!(call(&self.0, c"during unwinding"), vk::FALSE);
            }
        }
        let log = MessageLog::default();
        let l = log.clone();
        let r = std::panic::catch_unwind(move || {
            let _guard = CallOnDrop(l);
            panic!("unwinding");
        });
        assert!(r.is_err());
        assert!(log.lock().unwrap().is_empty());
    }
}
