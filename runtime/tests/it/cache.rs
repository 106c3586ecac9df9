//! The on-disk pipeline cache: written, reused, and a corrupted file ignored.

use crate::common::*;
use greta_kernels::Op;
use greta_runtime::CacheStatus;
use greta_runtime::DeviceSelect;
use greta_runtime::{CacheDir, VulkanOptions as OpenOptions};
use std::path::PathBuf;

fn opts(dir: &std::path::Path) -> OpenOptions {
    OpenOptions {
        select: DeviceSelect::Cpu,
        validation: Some(true),
        cache: CacheDir::Dir(dir.to_path_buf()),
        max_storage_range: None,
        ..Default::default()
    }
}

fn cache_file(dir: &std::path::Path) -> PathBuf {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        files.len(),
        1,
        "exactly one cache file expected (no leftover temp files): {files:?}"
    );
    files[0].clone()
}

#[test]
fn written_then_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let s = seed();
    {
        let mut dev = device_with(opts(tmp.path()));
        assert!(
            matches!(dev.cache_status(), CacheStatus::Missing { .. }),
            "{:?}",
            dev.cache_status()
        );
        assert_op(&mut dev, &Op::Copy { n: 100 }, s);
        assert_op(&mut dev, &Op::GemmF32 { m: 9, n: 9, k: 9 }, s);
    }
    let path = cache_file(tmp.path());
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with(".bin") && name.len() > 40, "{name}");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"GRETAPC\0");

    let mut dev = device_with(opts(tmp.path()));
    match dev.cache_status() {
        CacheStatus::Loaded { path: p, bytes: n } => {
            assert_eq!(p, &path);
            assert_eq!(*n, bytes.len() - 56);
        }
        other => panic!("cache not reused: {other:?}"),
    }
    assert_op(&mut dev, &Op::Copy { n: 100 }, s);
}

#[test]
fn corrupted_cache_is_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let s = seed();
    {
        let mut dev = device_with(opts(tmp.path()));
        assert_op(&mut dev, &Op::Fill { n: 10, value: 1 }, s);
    }
    let path = cache_file(tmp.path());
    let good = std::fs::read(&path).unwrap();
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"definitely not a pipeline cache".to_vec()),
        ("empty", vec![]),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("flipped byte", flipped),
    ];
    for (what, data) in cases {
        std::fs::write(&path, &data).unwrap();
        let mut dev = device_with(opts(tmp.path()));
        assert!(
            matches!(dev.cache_status(), CacheStatus::Ignored { .. }),
            "{what}: {:?}",
            dev.cache_status()
        );
        assert_op(&mut dev, &Op::Fill { n: 10, value: 2 }, s);
        drop(dev);
        // The bad file was replaced by a good one.
        let mut dev = device_with(opts(tmp.path()));
        assert!(
            matches!(dev.cache_status(), CacheStatus::Loaded { .. }),
            "{what}: {:?}",
            dev.cache_status()
        );
        assert_op(&mut dev, &Op::Fill { n: 10, value: 3 }, s);
    }
}

/// A cache from another device/driver build (valid file, wrong pipelineCacheUUID) is ignored.
#[test]
fn foreign_cache_is_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let mut dev = device_with(opts(tmp.path()));
        assert_op(&mut dev, &Op::Fill { n: 10, value: 1 }, seed());
    }
    let path = cache_file(tmp.path());
    let mut payload = std::fs::read(&path).unwrap()[56..].to_vec();
    payload[16] ^= 0x55; // pipelineCacheUUID
    greta_runtime::store_pipeline_cache(&path, &payload).unwrap();
    let dev = device_with(opts(tmp.path()));
    match dev.cache_status() {
        CacheStatus::Ignored { reason, .. } => {
            assert!(reason.contains("another device"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

/// A FIFO (or /dev/zero) where the cache file lives is ignored with a
/// reason; the open neither blocks on it nor reads it for ever.
#[test]
fn fifo_or_device_as_cache_is_ignored() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    {
        let mut dev = device_with(opts(tmp.path()));
        assert_op(&mut dev, &Op::Fill { n: 10, value: 1 }, seed());
    }
    let path = cache_file(tmp.path());
    std::fs::remove_file(&path).unwrap();
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let dev = device_with(opts(tmp.path()));
    match dev.cache_status() {
        CacheStatus::Ignored { reason, .. } => assert!(reason.contains("FIFO"), "{reason}"),
        other => panic!("{other:?}"),
    }
    drop(dev);
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let dev = device_with(opts(tmp.path()));
    match dev.cache_status() {
        CacheStatus::Ignored { reason, .. } => {
            assert!(reason.contains("character device"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}
