//! greta's vocabulary: the values that cross crate and process boundaries,
//! as types. No logic beyond parsing, printing and the child runner; no
//! greta crate below it.
//!
//! Every type serialises to the text the JSON outputs have always carried
//! (`"gfx942"`, `"MESA_RADV"`, `"rocm"`, a lowercase hex sha256, `"warn"`), so
//! adopting it changes no output.

/// Serialises a type as its `Display` text and reads it back with its
/// `FromStr` (the error becomes serde's): the types whose JSON is the text
/// a user sees (`"gfx942"`, a sha256, a device UUID).
macro_rules! serde_as_text {
    ($($t:ty),* $(,)?) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <String as serde::Deserialize>::deserialize(d)?
                    .parse()
                    .map_err(serde::de::Error::custom)
            }
        }
    )*};
}

mod backend;
pub mod child;
pub mod colour;
mod device_type;
mod devices;
pub mod dirs;
mod env_vars;
mod file_kind;
mod finding;
mod gfx;
pub mod ld_so;
pub mod number;
mod pause;
mod pci_address;
pub mod place;
mod setting;
mod sha256;
pub mod size;
pub mod stderr;
pub mod suggest;
pub mod tool_pin;
pub mod url_secrets;
mod verdict;
mod visible;
mod vk_device;
mod vk_driver;
mod wheel;
mod wheel_name;
pub mod width;

pub use backend::Backend;
pub use device_type::{short as device_type_short, vk_name as device_type_vk_name, DeviceType};
pub use devices::DevicesError;
pub use env_vars::{markdown as env_vars_markdown, EnvVar, EnvVars, Scope};
pub use file_kind::kind_of;
pub use finding::{Finding, Fix, Severity};
pub use gfx::{Gfx, GfxError};
pub use pause::pause_at;
pub use pci_address::{PciAddress, PciAddressError};
pub use place::Place;
pub use setting::{os_text, Setting, Source};
pub use sha256::{Sha256, Sha256Error};
pub use verdict::Verdict;
pub use visible::{is_hidden, visible, Visible, VisibleLines};
pub use vk_device::{same_gpu, DeviceUuid, DeviceUuidError, GpuIdentity, SameGpu};
pub use vk_driver::{VkDriver, VkFamily};
pub use wheel::{LockLine, PinnedWheel};
pub use wheel_name::{normalize_name, unsafe_file_name, url_filename, WheelTags};
