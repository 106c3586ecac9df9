//! `tools.toml` of a lock set: the tool pins (the format is the
//! vocabulary's, [`greta_vocab::tool_pin`]), read through [`LockDir`] like
//! every other lock file.

use crate::LockDir;
use greta_vocab::tool_pin::{UvPin, TOOLS_FILE};

/// Reads `<lock_dir>/tools.toml`; `Ok(None)` when there is none (a bundle,
/// an old lock dir). Every entry is checked as strictly as a wheel pin.
pub fn load(lock_dir: &LockDir) -> crate::Result<Option<UvPin>> {
    match lock_dir.read(TOOLS_FILE)? {
        Some(text) => Ok(Some(UvPin::parse(&text, &lock_dir.shown(TOOLS_FILE))?)),
        None => Ok(None),
    }
}
