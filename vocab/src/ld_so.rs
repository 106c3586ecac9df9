//! Where the dynamic loader (glibc's `ld.so`) finds a library asked for by
//! name: `LD_LIBRARY_PATH`, the cache `ldconfig` writes
//! (`/etc/ld.so.cache`), then the standard directories. The doctor reads a
//! machine's files through its root and the runtime through a sysroot, so
//! this module only reasons: the caller hands it the variable, the file
//! texts and directory listings, and the cache's bytes.

/// The multiarch directory name of this build's target (Debian's layout).
pub const MULTIARCH: &str = if cfg!(target_arch = "aarch64") {
    "aarch64-linux-gnu"
} else {
    "x86_64-linux-gnu"
};

/// Where `ldconfig` writes its cache.
pub const CACHE: &str = "/etc/ld.so.cache";

/// A cache is tens of KiB (600 libraries: 38 KiB); anything past this is
/// not one.
pub const CACHE_CAP: u64 = 16 << 20;

/// The loader's standard directories, searched after the cache.
pub fn standard_dirs() -> [String; 6] {
    [
        format!("/lib/{MULTIARCH}"),
        format!("/usr/lib/{MULTIARCH}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
    ]
}

/// Directories the dynamic loader searches, in order: `ld_library_path`'s
/// absolute entries, the directories `/etc/ld.so.conf` names
/// ([`conf_dirs`]: what the cache is built from), then [`standard_dirs`],
/// each once. `read` gives a file's text, `list` a directory's entry names.
pub fn search_dirs(
    ld_library_path: Option<&str>,
    read: &dyn Fn(&str) -> Option<String>,
    list: &dyn Fn(&str) -> Vec<String>,
) -> Vec<String> {
    let mut dirs = ld_library_path_dirs(ld_library_path);
    for d in conf_dirs(read, list).into_iter().chain(standard_dirs()) {
        push_dir(&d, &mut dirs);
    }
    dirs
}

/// `LD_LIBRARY_PATH`'s absolute entries (`:` or `;` between them), in
/// order, each once, without a trailing `/`.
pub fn ld_library_path_dirs(value: Option<&str>) -> Vec<String> {
    let mut dirs = Vec::new();
    for d in value.into_iter().flat_map(|l| l.split([':', ';'])) {
        push_dir(d, &mut dirs);
    }
    dirs
}

/// The directories `/etc/ld.so.conf` names, following its `include`
/// lines, in order.
pub fn conf_dirs(
    read: &dyn Fn(&str) -> Option<String>,
    list: &dyn Fn(&str) -> Vec<String>,
) -> Vec<String> {
    let mut conf = Vec::new();
    ld_so_conf(read, list, "/etc/ld.so.conf", &mut conf, 0);
    conf
}

fn push_dir(d: &str, dirs: &mut Vec<String>) {
    let d = d.trim().trim_end_matches('/');
    if d.starts_with('/') && !dirs.iter().any(|x| x == d) {
        dirs.push(d.to_string());
    }
}

/// The directories of one `ld.so.conf` file, following `include` lines
/// (four deep at most: a loop of includes ends).
fn ld_so_conf(
    read: &dyn Fn(&str) -> Option<String>,
    list: &dyn Fn(&str) -> Vec<String>,
    file: &str,
    out: &mut Vec<String>,
    depth: u32,
) {
    if depth > 4 {
        return;
    }
    let Some(text) = read(file) else { return };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(pat) = line.strip_prefix("include").map(str::trim) {
            // Only the `dir/*.suffix` form is used in practice.
            let (dir, glob) = pat.rsplit_once('/').unwrap_or(("/etc", pat));
            let suffix = glob.trim_start_matches('*');
            for name in list(dir) {
                if glob.starts_with('*') && name.ends_with(suffix) || name == glob {
                    ld_so_conf(read, list, &format!("{dir}/{name}"), out, depth + 1);
                }
            }
        } else if line.starts_with('/') {
            out.push(line.to_string());
        }
    }
}

/// Why a cache could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    #[error("not an ld.so cache (no glibc-ld.so.cache1.1 header)")]
    NotACache,
    #[error("the ld.so cache is cut short: {0}")]
    Truncated(&'static str),
}

/// The new format's magic and version (glibc 2.32 and later write only it;
/// older ones put it after the old format's table).
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
/// The new header: magic and version (20), nlibs, len_strings (8), flags
/// and padding (4), extension offset (4), unused (12).
const NEW_HEADER: usize = 48;
/// A new entry: flags, key, value, osversion (16), hwcap (8).
const NEW_ENTRY: usize = 24;
/// An old entry: flags, key, value.
const OLD_ENTRY: usize = 12;

/// The entry flags of a library this build can load: `FLAG_ELF_LIBC6` with
/// the 64-bit flag of its architecture (what `ldconfig -p` shows as
/// `libc6,x86-64` or `libc6,AArch64`).
const HOST_FLAGS: i32 = if cfg!(target_arch = "aarch64") {
    0x0a03
} else {
    0x0303
};

/// The file the loader takes for `name` (`libvulkan.so.1`) from the cache
/// `ldconfig` wrote, as the cache names it; `None` when the cache has no
/// entry of this build's architecture. Entries for a glibc-hwcaps
/// subdirectory (`x86-64-v3`) are passed over: the answer is the base
/// library every CPU of the architecture loads. Every offset is checked
/// against the bytes given.
pub fn cache_lookup(cache: &[u8], name: &str) -> Result<Option<String>, CacheError> {
    let new_at = if cache.starts_with(NEW_MAGIC) {
        0
    } else if cache.starts_with(OLD_MAGIC) {
        // The old table (magic, count, 12-byte entries), then the new
        // header on an 8-byte boundary.
        let n = u32_at(cache, OLD_MAGIC.len()).ok_or(CacheError::Truncated("old header"))?;
        let end = (n as usize)
            .checked_mul(OLD_ENTRY)
            .and_then(|b| b.checked_add(OLD_MAGIC.len() + 4))
            .ok_or(CacheError::Truncated("old table"))?;
        let aligned = end
            .checked_next_multiple_of(8)
            .ok_or(CacheError::Truncated("old table"))?;
        if !cache
            .get(aligned..)
            .is_some_and(|c| c.starts_with(NEW_MAGIC))
        {
            return Err(CacheError::NotACache);
        }
        aligned
    } else {
        return Err(CacheError::NotACache);
    };
    let new = &cache[new_at..];
    let nlibs = u32_at(new, 20).ok_or(CacheError::Truncated("header"))? as usize;
    nlibs
        .checked_mul(NEW_ENTRY)
        .and_then(|b| b.checked_add(NEW_HEADER))
        .filter(|&end| end <= new.len())
        .ok_or(CacheError::Truncated("entry table"))?;
    for i in 0..nlibs {
        let at = NEW_HEADER + i * NEW_ENTRY;
        let flags = u32_at(new, at).ok_or(CacheError::Truncated("entry"))? as i32;
        let key = u32_at(new, at + 4).ok_or(CacheError::Truncated("entry"))?;
        let value = u32_at(new, at + 8).ok_or(CacheError::Truncated("entry"))?;
        let hwcap = u64_at(new, at + 16).ok_or(CacheError::Truncated("entry"))?;
        if flags != HOST_FLAGS || hwcap != 0 {
            continue;
        }
        // Offsets count from the new header's start.
        if c_str(new, key).ok_or(CacheError::Truncated("string table"))? == name.as_bytes() {
            let path = c_str(new, value).ok_or(CacheError::Truncated("string table"))?;
            return Ok(Some(String::from_utf8_lossy(path).into_owned()));
        }
    }
    Ok(None)
}

/// A cache holding `entries` (`(name, path)`) for this build's
/// architecture, as `ldconfig` writes it: what a test plants in a machine
/// under a root.
pub fn cache_with(entries: &[(&str, &str)]) -> Vec<u8> {
    let full: Vec<(i32, &str, &str, u64)> = entries
        .iter()
        .map(|(k, v)| (HOST_FLAGS, *k, *v, 0))
        .collect();
    cache_of(&full)
}

/// A new-format cache of `(flags, name, path, hwcap)` entries, then their
/// strings.
fn cache_of(entries: &[(i32, &str, &str, u64)]) -> Vec<u8> {
    let strings_at = NEW_HEADER + entries.len() * NEW_ENTRY;
    let mut strings = Vec::new();
    let mut table = Vec::new();
    for (flags, key, value, hwcap) in entries {
        let k = (strings_at + strings.len()) as u32;
        strings.extend_from_slice(key.as_bytes());
        strings.push(0);
        let v = (strings_at + strings.len()) as u32;
        strings.extend_from_slice(value.as_bytes());
        strings.push(0);
        table.extend_from_slice(&flags.to_ne_bytes());
        table.extend_from_slice(&k.to_ne_bytes());
        table.extend_from_slice(&v.to_ne_bytes());
        table.extend_from_slice(&0u32.to_ne_bytes());
        table.extend_from_slice(&hwcap.to_ne_bytes());
    }
    let mut out = NEW_MAGIC.to_vec();
    out.extend_from_slice(&(entries.len() as u32).to_ne_bytes());
    out.extend_from_slice(&(strings.len() as u32).to_ne_bytes());
    out.resize(NEW_HEADER, 0);
    out.extend(table);
    out.extend(strings);
    out
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// The NUL-terminated string at `at`; `None` past the end or unterminated.
fn c_str(b: &[u8], at: u32) -> Option<&[u8]> {
    let rest = b.get(at as usize..)?;
    Some(&rest[..rest.iter().position(|&c| c == 0)?])
}

#[cfg(test)]
mod tests;
