//! The `cache_paths` target: whatever sits at the
//! wheel cache's own paths — the partial download, its lock, the cached
//! wheel, its `.verified` stamp and the stamp's temporary file — is never
//! written through, never blocks, never becomes a verified wheel, and never
//! keeps the wheel from being had. The input plants one thing at each path
//! (a regular file with bytes from the input, a symlink to a file or a
//! directory outside the cache, a FIFO, a directory, a hard link to the
//! outside file), then the wheel is fetched from a loopback server, looked
//! up, and re-verified.

use greta::fuzz_door::{fetch_all, Cache, FetchOptions, Lookup, PinnedWheel};
use std::ffi::CString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// The wheel the loopback server sends (more than a pipe holds).
fn wheel_bytes() -> &'static [u8] {
    static B: OnceLock<Vec<u8>> = OnceLock::new();
    B.get_or_init(|| {
        (0..80 * 1024u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
            .collect()
    })
}

/// A loopback HTTP server that sends the wheel to every GET (ignoring
/// `Range`, so a resumed partial is started over), for the process.
fn url() -> &'static str {
    static U: OnceLock<String> = OnceLock::new();
    U.get_or_init(|| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback port");
        let url = format!(
            "http://{}/x-1-py3-none-any.whl",
            l.local_addr().expect("addr")
        );
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let body = wheel_bytes();
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = s.write_all(body);
                });
            }
        });
        url
    })
}

fn pin() -> PinnedWheel {
    PinnedWheel {
        name: "x".into(),
        version: "1".into(),
        filename: "x-1-py3-none-any.whl".into(),
        url: url().to_string(),
        sha256: greta_vocab::Sha256(sha256(wheel_bytes())),
        size: Some(wheel_bytes().len() as u64),
        at: None,
    }
}

fn sha256(b: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(b).into()
}

const OUTSIDE_FILE: &[u8] = b"a file of the user's, outside the cache";

/// Plants thing `kind` at `p` (`bytes` for a regular file's content).
fn plant(p: &Path, kind: u8, bytes: &[u8], outside: &Path) {
    std::fs::create_dir_all(p.parent().expect("a parent")).expect("scratch dir");
    let file = outside.join("file");
    match kind % 7 {
        0 => {}
        1 => std::fs::write(p, bytes).expect("scratch file"),
        2 => std::os::unix::fs::symlink(&file, p).expect("symlink"),
        3 => {
            let c = CString::new(p.as_os_str().as_encoded_bytes()).expect("no NUL");
            // SAFETY: a valid NUL-terminated path.
            let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
            assert_eq!(rc, 0, "mkfifo {}", p.display());
        }
        4 => {
            std::fs::create_dir_all(p.join("inner")).expect("dir");
            std::fs::write(p.join("inner/f"), bytes).expect("file");
        }
        5 => std::os::unix::fs::symlink(outside.join("dir"), p).expect("symlink"),
        _ => std::fs::hard_link(&file, p).expect("hard link"),
    }
}

/// Everything under `dir` (not following links): path and bytes of files.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let t = e.file_type().expect("type");
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_file() {
                out.push((e.path(), std::fs::read(e.path()).expect("read")));
            }
        }
    }
    out.sort();
    out
}

/// The target: byte 2i picks what goes at path i, and the rest of the
/// input is the content of planted regular files.
pub fn cache_paths(scratch: &crate::Scratch, data: &[u8]) {
    let base = scratch.path().join("cache-case");
    let _ = std::fs::remove_dir_all(&base);
    let outside = base.join("outside");
    std::fs::create_dir_all(outside.join("dir")).expect("scratch dir");
    std::fs::write(outside.join("file"), OUTSIDE_FILE).expect("scratch file");
    std::fs::write(outside.join("dir/kept"), OUTSIDE_FILE).expect("scratch file");
    let cache = Cache::new(base.join("cache"));
    let w = pin();
    let part = cache.partial_path(&w);
    let wheel = cache.wheel_path(&w);
    let stamp = wheel.with_file_name(".verified");
    let slots = [
        part.clone(),
        part.with_extension("lock"),
        wheel.clone(),
        stamp.clone(),
        stamp.with_extension(format!("tmp{}", std::process::id())),
    ];
    let (kinds, content) = data.split_at(data.len().min(slots.len()));
    for (p, k) in slots.iter().zip(kinds) {
        plant(p, *k, content, &outside);
    }
    let before = snapshot(&outside);

    let opts = FetchOptions {
        jobs: 1,
        attempts: 3,
        backoff: Duration::from_millis(1),
        connect_timeout: Duration::from_secs(5),
        read_timeout: Duration::from_secs(5),
        offline: false,
        progress: false,
    };
    let got = fetch_all(&cache, std::slice::from_ref(&w), &opts)
        .unwrap_or_else(|e| panic!("the wheel could not be had: {e:#}"));
    assert_eq!(got[0].path, wheel);
    let m = std::fs::symlink_metadata(&wheel).expect("the cached wheel");
    assert!(
        m.file_type().is_file(),
        "cached wheel is {:?}",
        m.file_type()
    );
    assert_eq!(std::fs::read(&wheel).expect("read"), wheel_bytes());
    match cache.lookup(&w).expect("lookup") {
        Lookup::Hit(p) => assert_eq!(p, wheel),
        other => panic!("the fetched wheel did not verify: {other:?}"),
    }
    assert_eq!(cache.reverify(&w).expect("reverify"), None);
    assert_eq!(
        snapshot(&outside),
        before,
        "a file outside the cache changed"
    );
}
