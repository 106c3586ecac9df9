use super::*;
use std::collections::BTreeMap;

fn cache(entries: &[(i32, &str, &str, u64)]) -> Vec<u8> {
    cache_of(entries)
}

#[test]
fn a_name_is_found_for_this_architecture_only_and_hwcaps_are_passed_over() {
    let c = cache(&[
        (0x0003, "libvulkan.so.1", "/usr/lib32/libvulkan.so.1", 0),
        (
            HOST_FLAGS,
            "libvulkan.so.1",
            "/opt/v3/libvulkan.so.1",
            1 << 62,
        ),
        (HOST_FLAGS, "libvulkan.so.1", "/usr/lib/x/libvulkan.so.1", 0),
        (HOST_FLAGS, "libvulkan.so.1", "/usr/lib/y/libvulkan.so.1", 0),
    ]);
    assert_eq!(
        cache_lookup(&c, "libvulkan.so.1"),
        Ok(Some("/usr/lib/x/libvulkan.so.1".into()))
    );
    assert_eq!(cache_lookup(&c, "libcuda.so.1"), Ok(None));
    assert_eq!(
        cache_lookup(&c, "libvulkan.so"),
        Ok(None),
        "whole names only"
    );
    let planted = cache_with(&[("libcuda.so.1", "/usr/lib/x/libcuda.so.1")]);
    assert_eq!(
        cache_lookup(&planted, "libcuda.so.1"),
        Ok(Some("/usr/lib/x/libcuda.so.1".into()))
    );
}

/// The old format's table, then the new header on an 8-byte boundary
/// (what glibc before 2.32 wrote by default).
#[test]
fn the_new_table_after_an_old_one_is_read() {
    let new = cache(&[(
        HOST_FLAGS,
        "libamdhip64.so.6",
        "/opt/rocm/lib/libamdhip64.so.6",
        0,
    )]);
    let mut c = OLD_MAGIC.to_vec();
    c.extend_from_slice(&2u32.to_ne_bytes());
    c.resize(OLD_MAGIC.len() + 4 + 2 * OLD_ENTRY, 0);
    c.resize(c.len().next_multiple_of(8), 0);
    c.extend(new);
    assert_eq!(
        cache_lookup(&c, "libamdhip64.so.6"),
        Ok(Some("/opt/rocm/lib/libamdhip64.so.6".into()))
    );
}

/// Hostile or damaged bytes: every cut of a good cache, a count that
/// overflows, offsets past the end, a string without its NUL. An error or
/// no answer, never a panic or a read past the bytes.
#[test]
fn damaged_caches_are_errors_not_panics() {
    let good = cache(&[(HOST_FLAGS, "libcuda.so.1", "/usr/lib/x/libcuda.so.1", 0)]);
    for cut in 0..good.len() {
        let r = cache_lookup(&good[..cut], "libcuda.so.1");
        assert!(r.is_err(), "cut at {cut}: {r:?}");
    }
    assert_eq!(cache_lookup(b"", "x"), Err(CacheError::NotACache));
    assert_eq!(cache_lookup(b"ELF\x7f", "x"), Err(CacheError::NotACache));
    let mut huge = good.clone();
    huge[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    assert_eq!(
        cache_lookup(&huge, "libcuda.so.1"),
        Err(CacheError::Truncated("entry table"))
    );
    let mut past = good.clone();
    past[NEW_HEADER + 4..NEW_HEADER + 8].copy_from_slice(&u32::MAX.to_ne_bytes());
    assert!(cache_lookup(&past, "libcuda.so.1").is_err());
    let mut old = OLD_MAGIC.to_vec();
    old.extend_from_slice(&u32::MAX.to_ne_bytes());
    assert!(cache_lookup(&old, "x").is_err());
}

/// This machine's own cache against `ldconfig -p`, which prints what the
/// loader would take: the first entry of each name for this architecture
/// (without hwcaps) is what the lookup answers.
#[test]
fn this_machines_cache_reads_as_ldconfig_prints_it() {
    let Ok(bytes) = std::fs::read(CACHE) else {
        return;
    };
    let out = std::process::Command::new("ldconfig")
        .arg("-p")
        .output()
        .or_else(|_| {
            std::process::Command::new("/sbin/ldconfig")
                .arg("-p")
                .output()
        })
        .expect("ldconfig -p runs where /etc/ld.so.cache exists");
    let text = String::from_utf8_lossy(&out.stdout);
    let arch = if cfg!(target_arch = "aarch64") {
        "(libc6,AArch64)"
    } else {
        "(libc6,x86-64)"
    };
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let Some((left, path)) = line.split_once(" => ") else {
            continue;
        };
        let Some((name, flags)) = left.trim().split_once(' ') else {
            continue;
        };
        // An entry with an OS ABI note is one the loader takes too (the
        // lookup does not read that note); a glibc-hwcaps one is not.
        let flags = flags.trim();
        let base = arch.trim_end_matches(')');
        if flags == arch || flags.starts_with(base) && flags.contains("OS ABI") {
            want.entry(name.to_string())
                .or_insert_with(|| path.trim().to_string());
        }
    }
    assert!(!want.is_empty(), "ldconfig -p listed nothing:\n{text}");
    for (name, path) in &want {
        assert_eq!(
            cache_lookup(&bytes, name).as_ref(),
            Ok(&Some(path.clone())),
            "{name}"
        );
    }
    assert_eq!(cache_lookup(&bytes, "libgreta-no-such-lib.so.9"), Ok(None));
}

/// `LD_LIBRARY_PATH` first (absolute entries, once each), then what
/// ld.so.conf names through its includes, then the standard directories;
/// an include loop ends.
#[test]
fn search_dirs_follow_the_loader_order() {
    let files: BTreeMap<&str, &str> = [
        (
            "/etc/ld.so.conf",
            "include /etc/ld.so.conf.d/*.conf\n/opt/extra # why\n",
        ),
        (
            "/etc/ld.so.conf.d/rocm.conf",
            "/opt/rocm/lib\n/opt/rocm/lib64/\n",
        ),
        ("/etc/ld.so.conf.d/skip.txt", "/not/this\n"),
    ]
    .into();
    let read = |p: &str| files.get(p).map(|t| t.to_string());
    let list = |d: &str| -> Vec<String> {
        files
            .keys()
            .filter_map(|k| k.strip_prefix(&format!("{d}/")))
            .map(str::to_string)
            .collect()
    };
    let dirs = search_dirs(Some("/env/lib:relative/lib::/opt/rocm/lib/"), &read, &list);
    let mut want: Vec<String> = ["/env/lib", "/opt/rocm/lib", "/opt/rocm/lib64", "/opt/extra"]
        .map(String::from)
        .to_vec();
    want.extend(standard_dirs());
    assert_eq!(dirs, want);
    let none = search_dirs(None, &|_| None, &|_| Vec::new());
    assert_eq!(none, standard_dirs());
    // A file that includes itself ends (four levels deep at most).
    let looped = |p: &str| (p == "/etc/ld.so.conf").then(|| "include /etc/ld.so.conf\n/a\n".into());
    let one = |_: &str| vec!["ld.so.conf".to_string()];
    assert_eq!(conf_dirs(&looped, &one), vec!["/a"; 5]);
}
