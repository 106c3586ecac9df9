//! Whatever sits at a cache path greta writes or
//! reads (a symlink out of the cache, a symlink to a device, a FIFO, a
//! directory) is never written through, never blocks, never gets a
//! verified stamp, and never fails every later install: it is moved aside
//! or dropped, and the wheel is fetched again. Real files, FIFOs, device
//! nodes and a real loopback HTTP server.

use super::*;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::sync::mpsc;

/// Serves `body` to every GET on a loopback port (one connection each).
pub(super) fn serve(body: Vec<u8>) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/x-1-py3-none-any.whl", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(&body);
        }
    });
    url
}

/// 300 KiB of varied bytes: more than a pipe holds, so writing it into a
/// FIFO nobody reads blocks.
fn body() -> Vec<u8> {
    (0..300 * 1024u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect()
}

struct Setup {
    _dir: tempfile::TempDir,
    outside: PathBuf,
    cache: Cache,
    wheel: PinnedWheel,
    bytes: Vec<u8>,
}

fn setup() -> Setup {
    let bytes = body();
    let url = serve(bytes.clone());
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let cache = Cache::new(dir.path().join("cache"));
    fs::create_dir_all(cache.root().join("partial")).unwrap();
    let wheel = PinnedWheel {
        name: "x".into(),
        version: "1".into(),
        filename: "x-1-py3-none-any.whl".into(),
        url,
        sha256: greta_vocab::Sha256(Sha256::digest(&bytes).into()),
        size: Some(bytes.len() as u64),
        at: None,
    };
    Setup {
        _dir: dir,
        outside,
        cache,
        wheel,
        bytes,
    }
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "{}", p.display());
}

/// A character device node like /dev/zero (1,5) of our own, so a bug that
/// chmods or renames it harms nothing of the machine's. `None` where the
/// test may not create device nodes (not root, or a container that denies
/// it).
fn zero_device(p: &Path) -> Option<()> {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; makedev is a pure computation.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 5)) };
    if rc != 0 {
        return None;
    }
    // mknod's mode is masked by the umask: set the one the tests check.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(0o666)).unwrap();
    Some(())
}

/// Runs `fetch_all` on a thread; a hang (the defect) fails the test after
/// 30 s instead of hanging it.
fn fetch_bounded(s: &Setup) -> Result<Vec<Fetched>> {
    let (tx, rx) = mpsc::channel();
    let cache = s.cache.clone();
    let w = s.wheel.clone();
    std::thread::spawn(move || {
        let opts = FetchOptions {
            backoff: Duration::from_millis(1),
            read_timeout: Duration::from_secs(5),
            ..FetchOptions::default()
        };
        let _ = tx.send(fetch_all(&cache, &[w], &opts));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("fetch_all still blocked after 30 s")
}

/// The fetched wheel is a regular file in the cache with the right bytes,
/// and a later lookup proves it.
fn assert_cached_right(s: &Setup, got: Result<Vec<Fetched>>) {
    let got = got.unwrap_or_else(|e| panic!("fetch failed: {e:#}"));
    let p = &got[0].path;
    assert_eq!(p, &s.cache.wheel_path(&s.wheel));
    let m = fs::symlink_metadata(p).unwrap();
    assert!(
        m.file_type().is_file(),
        "{}: {:?}",
        p.display(),
        m.file_type()
    );
    assert_eq!(fs::read(p).unwrap(), s.bytes);
    assert!(matches!(s.cache.lookup(&s.wheel).unwrap(), Lookup::Hit(_)));
}

/// What the partial directory holds besides the lock and partial files of
/// the wheel: the things moved aside.
fn moved_aside(s: &Setup) -> Vec<PathBuf> {
    let part = s.cache.partial_path(&s.wheel);
    let lock = part.with_extension("lock");
    fs::read_dir(s.cache.root().join("partial"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p != &part && p != &lock)
        .collect()
}

/// Exactly one entry was moved aside, and it is still the `what` it was
/// (moved, never followed or replaced).
fn assert_one_aside(s: &Setup, what: &str, is: fn(&fs::FileType) -> bool) {
    let aside = moved_aside(s);
    assert_eq!(aside.len(), 1, "{aside:?}");
    let t = fs::symlink_metadata(&aside[0]).unwrap().file_type();
    assert!(is(&t), "{} is not a {what}: {t:?}", aside[0].display());
}

/// A symlink at `partial/<sha>.part` to a file outside the cache: the
/// download was appended to (or truncated) that file, and the symlink
/// itself was renamed into the cache with a verified stamp.
#[test]
fn a_symlink_at_the_partial_path_is_moved_aside_and_its_target_untouched() {
    let s = setup();
    let victim = s.outside.join("victim");
    fs::write(&victim, b"the user's own file").unwrap();
    std::os::unix::fs::symlink(&victim, s.cache.partial_path(&s.wheel)).unwrap();
    let got = fetch_bounded(&s);
    assert_eq!(fs::read(&victim).unwrap(), b"the user's own file");
    assert_cached_right(&s, got);
    assert_one_aside(&s, "symlink", fs::FileType::is_symlink);
}

/// A symlink at the partial path to a device like /dev/zero: the stream
/// "verified" while it went into the device, and the symlink became the
/// cached wheel (with a stamp), failing every later install.
#[test]
fn a_symlink_to_a_device_at_the_partial_path_is_never_cached() {
    let s = setup();
    let dev = s.outside.join("zero");
    if zero_device(&dev).is_none() {
        eprintln!("cannot create a device node here; the FIFO tests cover the blocking part");
        return;
    }
    std::os::unix::fs::symlink(&dev, s.cache.partial_path(&s.wheel)).unwrap();
    let got = fetch_bounded(&s);
    assert_cached_right(&s, got);
    let m = fs::symlink_metadata(&dev).unwrap();
    assert!(m.file_type().is_char_device());
    assert_eq!(m.mode() & 0o777, 0o666, "the device's mode was changed");
}

/// A FIFO at the partial path blocked the download in `write()` for ever.
#[test]
fn a_fifo_at_the_partial_path_does_not_block() {
    let s = setup();
    mkfifo(&s.cache.partial_path(&s.wheel));
    let got = fetch_bounded(&s);
    assert_cached_right(&s, got);
    assert_one_aside(&s, "fifo", fs::FileType::is_fifo);
}

/// A FIFO at the lock path blocked in `open()` (with the env lock held).
#[test]
fn a_fifo_at_the_lock_path_does_not_block() {
    let s = setup();
    mkfifo(&s.cache.partial_path(&s.wheel).with_extension("lock"));
    let got = fetch_bounded(&s);
    assert_cached_right(&s, got);
    let lock = s.cache.partial_path(&s.wheel).with_extension("lock");
    assert!(fs::symlink_metadata(&lock).unwrap().file_type().is_file());
}

/// A symlink at the lock path to a file outside the cache is not opened
/// (it was created or truncated through the link).
#[test]
fn a_symlink_at_the_lock_path_is_moved_aside() {
    let s = setup();
    let victim = s.outside.join("victim");
    fs::write(&victim, b"keep me").unwrap();
    let lock = s.cache.partial_path(&s.wheel).with_extension("lock");
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let got = fetch_bounded(&s);
    assert_cached_right(&s, got);
    assert_eq!(fs::read(&victim).unwrap(), b"keep me");
    assert!(fs::symlink_metadata(&lock).unwrap().file_type().is_file());
}

/// A directory at the partial path failed the download ("Is a directory")
/// on every run.
#[test]
fn a_directory_at_the_partial_path_is_moved_aside() {
    let s = setup();
    fs::create_dir_all(s.cache.partial_path(&s.wheel).join("sub")).unwrap();
    let got = fetch_bounded(&s);
    assert_cached_right(&s, got);
    assert_eq!(moved_aside(&s).len(), 1);
}

/// Item 4: a non-regular file at a cached wheel's path (FIFO, directory,
/// link to a device) failed every later install with "rerun to continue";
/// it is dropped and the wheel fetched again, as a corrupt file is.
#[test]
fn a_non_regular_file_at_the_cached_wheel_path_is_dropped_and_fetched_again() {
    type Plant = fn(&Path, &Path) -> Option<()>;
    let cases: [(&str, Plant); 4] = [
        ("FIFO", |p, _| {
            mkfifo(p);
            Some(())
        }),
        ("directory", |p, _| {
            fs::create_dir_all(p.join("inner")).unwrap();
            fs::write(p.join("inner/f"), b"x").unwrap();
            Some(())
        }),
        ("link to a device", |p, outside| {
            let dev = outside.join("zero");
            zero_device(&dev)?;
            std::os::unix::fs::symlink(&dev, p).unwrap();
            Some(())
        }),
        ("link to a file outside the cache", |p, outside| {
            let f = outside.join("other");
            fs::write(&f, b"not the wheel").unwrap();
            std::os::unix::fs::symlink(&f, p).unwrap();
            Some(())
        }),
    ];
    for (what, plant) in cases {
        let s = setup();
        let p = s.cache.wheel_path(&s.wheel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        if plant(&p, &s.outside).is_none() {
            eprintln!("{what}: cannot create it here, skipped");
            continue;
        }
        let got = fetch_bounded(&s);
        let f = got
            .as_ref()
            .unwrap_or_else(|e| panic!("{what}: fetch failed: {e:#}"));
        assert_eq!(f[0].source, Source::Network, "{what}");
        assert!(
            f[0].replaced_corrupt
                .as_deref()
                .is_some_and(|r| r.contains("not a regular file")),
            "{what}: {:?}",
            f[0].replaced_corrupt
        );
        assert_cached_right(&s, got);
        if let Ok(m) = fs::symlink_metadata(s.outside.join("zero")) {
            assert_eq!(m.mode() & 0o777, 0o666, "{what}: the device's mode changed");
        }
        if let Ok(b) = fs::read(s.outside.join("other")) {
            assert_eq!(b, b"not the wheel", "{what}");
        }
    }
}

/// `partial/` itself a symlink to a directory outside the cache: a
/// `<sha>.part` there (somebody's file of that name) was appended to. The
/// directory greta writes into is its own: the link is moved aside.
#[test]
fn a_symlink_at_the_partial_dir_is_moved_aside() {
    let s = setup();
    let partial = s.cache.root().join("partial");
    fs::remove_dir_all(&partial).unwrap();
    let elsewhere = s.outside.join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let name = s.cache.partial_path(&s.wheel);
    let theirs = elsewhere.join(name.file_name().unwrap());
    fs::write(&theirs, b"their own bytes").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &partial).unwrap();
    let got = fetch_bounded(&s);
    assert_eq!(fs::read(&theirs).unwrap(), b"their own bytes");
    assert!(fs::symlink_metadata(&partial).unwrap().is_dir());
    assert_cached_right(&s, got);
}
