//! The pipeline cache on disk, one file per device UUID + driver version.
//!
//! File format (little endian): magic `GRETAPC\0`, u32 format version (1),
//! u32 reserved, u64 payload length, 32-byte SHA-256 of the payload, then
//! the payload = `vkGetPipelineCacheData` output. On load the header, the
//! checksum and the payload's own Vulkan header (vendor, device,
//! pipelineCacheUUID) must all match, else the file is ignored (and later
//! replaced); a bad file never reaches the driver and never crashes greta.
//! Writes go to a temporary file in the same directory, renamed into place.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"GRETAPC\0";
const FORMAT: u32 = 1;
const HEADER: usize = 8 + 4 + 4 + 8 + 32;

/// Largest cache file read: a driver's cache of greta's few dozen pipelines
/// is a few MiB; anything much larger is not ours (and is never read whole).
pub const MAX_FILE: u64 = 256 << 20;

/// What happened to the on-disk cache when the device opened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum CacheStatus {
    /// Caching disabled (no cache directory could be determined).
    Disabled,
    /// No file yet; a new one is written after pipelines are created.
    Missing { path: PathBuf },
    /// Loaded and handed to the driver.
    Loaded { path: PathBuf, bytes: usize },
    /// The file was unusable and ignored.
    Ignored { path: PathBuf, reason: String },
}

/// The directory for cache files: `$XDG_CACHE_HOME/greta/vk-pipelines`,
/// else `$HOME/.cache/greta/vk-pipelines` (`greta_vocab::dirs`).
pub fn default_dir() -> Option<PathBuf> {
    use greta_vocab::dirs;
    dirs::greta_dir(dirs::Base::Cache, "vk-pipelines", &dirs::process_env)
}

/// Cache file name for a device: UUID, vendor:device, raw driver version.
pub fn file_name(uuid: &str, vendor: u32, device: u32, driver_version: u32) -> String {
    format!("{uuid}-{vendor:04x}-{device:04x}-{driver_version:08x}.bin")
}

/// Identity the payload's Vulkan header must carry.
pub struct Identity {
    pub vendor: u32,
    pub device: u32,
    pub cache_uuid: [u8; 16],
}

/// Reads and checks a cache file; `Err(reason)` when it must be ignored.
pub fn load(path: &Path, id: &Identity) -> Result<Option<Vec<u8>>, String> {
    // A FIFO or device node in the cache directory is refused, not waited on.
    let data = match greta_fsread::bytes_if_exists(path, MAX_FILE) {
        Ok(Some(d)) => d,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    if data.len() < HEADER {
        return Err(format!(
            "truncated: {} bytes, header alone is {HEADER}",
            data.len()
        ));
    }
    if &data[..8] != MAGIC {
        return Err("not a greta pipeline cache (bad magic)".into());
    }
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
    if u32_at(8) != FORMAT {
        return Err(format!("format version {} (expected {FORMAT})", u32_at(8)));
    }
    let len = u64::from_le_bytes(data[16..24].try_into().unwrap());
    let payload = &data[HEADER..];
    if payload.len() as u64 != len {
        return Err(format!(
            "payload is {} bytes, header says {len}",
            payload.len()
        ));
    }
    if Sha256::digest(payload).as_slice() != &data[24..56] {
        return Err("checksum mismatch (file corrupted)".into());
    }
    check_vulkan_header(payload, id)?;
    Ok(Some(payload.to_vec()))
}

/// The `VkPipelineCacheHeaderVersionOne` at the start of the payload.
fn check_vulkan_header(p: &[u8], id: &Identity) -> Result<(), String> {
    if p.len() < 32 {
        return Err(format!("Vulkan cache header truncated ({} bytes)", p.len()));
    }
    let u32_at = |o: usize| u32::from_le_bytes(p[o..o + 4].try_into().unwrap());
    let (hsize, hver, vendor, device) = (u32_at(0), u32_at(4), u32_at(8), u32_at(12));
    if hsize < 32 || hver != 1 {
        return Err(format!(
            "Vulkan cache header size {hsize} / version {hver} unexpected"
        ));
    }
    if vendor != id.vendor || device != id.device || p[16..32] != id.cache_uuid {
        return Err("written by another device or driver build (pipelineCacheUUID differs)".into());
    }
    Ok(())
}

/// Writes `payload` atomically (temporary file in the same directory + rename).
pub fn store(path: &Path, payload: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    let mut head = Vec::with_capacity(HEADER);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&FORMAT.to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    head.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    head.extend_from_slice(&Sha256::digest(payload));
    tmp.write_all(&head)?;
    tmp.write_all(payload)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
