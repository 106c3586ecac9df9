//! One file over HTTP: resume with `Range`, retry with backoff, hash while
//! streaming, and never call a file good before its sha256 matched.
//!
//! The blocking reqwest client is used on purpose: each worker thread owns
//! its own client (and thus its own I/O thread), the code stays sequential
//! and easy to reason about, and its `timeout` bounds both the wait for the
//! response head and every single read, so a server that stops talking is an
//! error after that many seconds, never a hang.

use anyhow::{Context, Result};
use reqwest::blocking::Client;
use reqwest::header::{CONTENT_RANGE, RANGE};
use reqwest::StatusCode;
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{FetchOptions, PinnedWheel};
use greta_vocab::url_secrets::redact;

/// Per-chunk progress callback: bytes added (may be reset with `Reset`).
pub enum Progress {
    /// Bytes that are now on disk (counting a resumed prefix once).
    Advance(u64),
    /// The partial file was discarded; progress goes back to zero.
    Reset,
}

/// Most attempts at one file, however many of them made progress.
const MAX_ATTEMPTS: u32 = 200;

/// A download stopped because a sibling failed: not a failure of its own,
/// so the summary does not count it.
#[derive(Debug, thiserror::Error)]
#[error("cancelled (another download failed)")]
pub struct Cancelled;

/// A download that failed for good, and whether running greta again can
/// help (a server error or timeout may pass; a 404, a wrong hash or a
/// read-only cache will not).
#[derive(Debug, thiserror::Error)]
#[error("{msg}")]
pub struct Failed {
    pub msg: String,
    pub rerun_helps: bool,
    /// The files whose bytes hashed otherwise than the lock (the message
    /// says so too; this is for code that decides on it).
    pub mismatched: Vec<MismatchedHash>,
}

/// The bytes a server sent hash otherwise than the lock promises: the
/// failure is the variant, the text only its presentation. `lock` names
/// the lockfile line of the promise when the artifact came from a lock.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "sha256 mismatch: the lock says {expected}{}, the server sent {actual} ({bytes} bytes)",
    lock.as_ref().map(|l| format!(" ({l})")).unwrap_or_default()
)]
pub struct MismatchedHash {
    pub name: String,
    pub filename: String,
    pub expected: greta_vocab::Sha256,
    pub actual: greta_vocab::Sha256,
    pub bytes: u64,
    pub lock: Option<super::LockLine>,
}

/// Why one attempt failed, and whether another attempt can help.
#[derive(Debug)]
struct Attempt {
    retry: bool,
    /// Restart from byte 0 instead of resuming.
    restart: bool,
    msg: String,
    /// The whole file arrived and hashed wrong (restart, once).
    mismatch: Option<Box<MismatchedHash>>,
}

impl Attempt {
    fn retry(msg: impl Into<String>) -> Self {
        Attempt {
            retry: true,
            restart: false,
            msg: msg.into(),
            mismatch: None,
        }
    }
    fn restart(msg: impl Into<String>) -> Self {
        Attempt {
            retry: true,
            restart: true,
            msg: msg.into(),
            mismatch: None,
        }
    }
    fn fatal(msg: impl Into<String>) -> Self {
        Attempt {
            retry: false,
            restart: false,
            msg: msg.into(),
            mismatch: None,
        }
    }
    fn mismatch(m: MismatchedHash) -> Self {
        Attempt {
            mismatch: Some(Box::new(m.clone())),
            ..Attempt::restart(m.to_string())
        }
    }
}

pub fn client(opts: &FetchOptions) -> Result<Client> {
    Client::builder()
        .connect_timeout(opts.connect_timeout)
        .timeout(opts.read_timeout)
        .user_agent(concat!("greta/", env!("CARGO_PKG_VERSION")))
        // Wheels are already compressed; asking for gzip would break Range.
        .no_gzip()
        .build()
        .context("building the HTTP client")
}

/// Downloads `a` into `partial` (resuming what is there) until the file's
/// sha256 matches; on success the partial file holds exactly the promised
/// bytes, and the descriptor returned is the one whose bytes were hashed
/// (the caller commits and stamps that file, not whatever the path names
/// by then). Errors name the URL, the attempts made and the last cause.
pub fn download(
    client: &Client,
    a: &PinnedWheel,
    partial: &Path,
    opts: &FetchOptions,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<File> {
    let mut last = String::new();
    let mut mismatched = Vec::new();
    let mut hash_failures = 0;
    let mut rerun_helps = true;
    // The budget is attempts in a row that added no byte, not attempts: a
    // server that cuts every response at 40% still gets the file through
    // (it once failed a 151 MB wheel with 139 MB on disk). A hard ceiling
    // keeps a server that trickles one byte per attempt bounded.
    let budget = opts.attempts.max(1);
    let mut stalled = 0;
    for attempt in 0..MAX_ATTEMPTS.max(budget) {
        if cancel.load(Ordering::Relaxed) {
            return Err(Cancelled.into());
        }
        if attempt > 0 {
            let back = opts.backoff.saturating_mul(1 << stalled.min(6));
            let back = back.min(Duration::from_secs(10));
            tracing::info!("retrying {} in {:?} ({last})", a.filename, back);
            std::thread::sleep(back);
        }
        let before = fs::symlink_metadata(partial).map(|m| m.len()).unwrap_or(0);
        match one_attempt(client, a, partial, cancel, progress) {
            Ok(file) => return Ok(file),
            Err(_) if cancel.load(Ordering::Relaxed) => return Err(Cancelled.into()),
            Err(e) => {
                last = e.msg.clone();
                if e.restart {
                    let _ = fs::remove_file(partial);
                    progress(Progress::Reset);
                }
                if let Some(m) = e.mismatch {
                    // One full clean retry: a resumed prefix may have been the
                    // culprit. The same wrong bytes twice is the server's doing.
                    hash_failures += 1;
                    if hash_failures >= 2 {
                        rerun_helps = false;
                        mismatched.push(*m);
                        break;
                    }
                    continue;
                }
                if !e.retry {
                    rerun_helps = false;
                    break;
                }
                let after = fs::symlink_metadata(partial).map(|m| m.len()).unwrap_or(0);
                if !e.restart && after > before {
                    stalled = 0;
                } else {
                    stalled += 1;
                    if stalled >= budget {
                        break;
                    }
                }
            }
        }
    }
    Err(Failed {
        msg: format!("downloading {} from {}: {last}", a.filename, redact(&a.url)),
        rerun_helps,
        mismatched,
    }
    .into())
}

fn one_attempt(
    client: &Client,
    a: &PinnedWheel,
    partial: &Path,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> std::result::Result<File, Attempt> {
    let io_err =
        |what: &str, e: io::Error| Attempt::fatal(format!("{what} {}: {e}", partial.display()));
    // No-follow, non-blocking, a regular file of its own.
    let mut file = super::owned::open(partial, super::owned::Use::Append)
        .map_err(|e| Attempt::fatal(format!("{e:#}")))?;
    let mut have = file.metadata().map_err(|e| io_err("reading", e))?.len();
    if a.size.is_some_and(|s| have > s) {
        file.set_len(0).map_err(|e| io_err("truncating", e))?;
        have = 0;
    }
    // The hash covers the whole file, so a resumed prefix is hashed first.
    let mut hasher = Sha256::new();
    if have > 0 {
        hash_prefix(&mut file, have, &mut hasher).map_err(|e| io_err("reading", e))?;
    }
    progress(Progress::Reset);
    progress(Progress::Advance(have));

    let complete = a.size.is_some_and(|s| s == have) && have > 0;
    if !complete {
        let mut req = client.get(&a.url);
        if have > 0 {
            req = req.header(RANGE, format!("bytes={have}-"));
        }
        let resp = req.send().map_err(|e| classify(&e))?;
        let status = resp.status();
        match status {
            StatusCode::PARTIAL_CONTENT if have > 0 => {
                let start = resp
                    .headers()
                    .get(CONTENT_RANGE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(content_range_start);
                if start != Some(have) {
                    return Err(Attempt::restart(format!(
                        "server answered Range bytes={have}- with Content-Range {:?}",
                        resp.headers().get(CONTENT_RANGE)
                    )));
                }
            }
            StatusCode::OK => {
                if have > 0 {
                    // The server ignored Range: start over from this body.
                    file.set_len(0).map_err(|e| io_err("truncating", e))?;
                    hasher = Sha256::new();
                    have = 0;
                    progress(Progress::Reset);
                }
            }
            StatusCode::RANGE_NOT_SATISFIABLE => {
                return Err(Attempt::restart("server refused the resume range (416)"));
            }
            s if s.is_server_error()
                || s == StatusCode::TOO_MANY_REQUESTS
                || s == StatusCode::REQUEST_TIMEOUT =>
            {
                return Err(Attempt::retry(format!("HTTP {s}")));
            }
            s => return Err(Attempt::fatal(format!("HTTP {s}"))),
        }
        if let (Some(size), Some(len)) = (a.size, resp.content_length()) {
            if have + len != size {
                return Err(Attempt::restart(format!(
                    "server sends {} bytes, the lock says the file has {size}",
                    have + len
                )));
            }
        }
        let mut body = resp;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Err(Attempt::fatal("cancelled"));
            }
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = file.flush();
                    return Err(Attempt::retry(format!(
                        "connection lost after {have} bytes: {}",
                        io_chain(&e)
                    )));
                }
            };
            file.write_all(&buf[..n])
                .map_err(|e| io_err("writing", e))?;
            hasher.update(&buf[..n]);
            have += n as u64;
            progress(Progress::Advance(n as u64));
            if a.size.is_some_and(|s| have > s) {
                return Err(Attempt::restart(format!(
                    "server sent more than the {} bytes the lock promises",
                    a.size.unwrap_or(0)
                )));
            }
        }
        file.flush().map_err(|e| io_err("writing", e))?;
        if let Some(size) = a.size {
            if have < size {
                return Err(Attempt::retry(format!(
                    "body ended after {have} of {size} bytes"
                )));
            }
        }
    }
    let got = greta_vocab::Sha256(hasher.finalize().into());
    if got != a.sha256 {
        return Err(Attempt::mismatch(MismatchedHash {
            name: a.name.clone(),
            filename: a.filename.clone(),
            expected: a.sha256,
            actual: got,
            bytes: have,
            lock: a.at.clone(),
        }));
    }
    Ok(file)
}

fn hash_prefix(file: &mut File, len: u64, hasher: &mut Sha256) -> io::Result<()> {
    file.seek(SeekFrom::Start(0))?;
    let mut take = (&mut *file).take(len);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = take.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(())
}

/// Transport errors are retried, except a TLS trust failure: the same
/// certificate will be refused again, and the user needs the hint now.
fn classify(e: &reqwest::Error) -> Attempt {
    let msg = describe(e);
    if refused_certificate(e) {
        return Attempt::fatal(format!(
            "{msg} (greta trusts the system CA store and Mozilla's roots; behind a TLS-inspecting proxy, install its CA into the system store, e.g. /usr/local/share/ca-certificates + update-ca-certificates, or point SSL_CERT_FILE at it)"
        ));
    }
    Attempt::retry(msg)
}

/// A request that got no answer, as a download's attempt judges it: what
/// happened, and whether another try can help (a refused certificate will
/// be refused again; its message says what to do).
pub(super) fn transport_failure(e: &reqwest::Error) -> (String, bool) {
    let a = classify(e);
    (a.msg, a.retry)
}

/// Whether rustls refused the server's certificate somewhere in `e`'s
/// causes. It travels inside an `io::Error` (itself inside another one),
/// whose `source()` skips the wrapped error, so each `io::Error` is opened
/// with `get_ref` instead.
fn refused_certificate(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented) =
            err.downcast_ref::<rustls::Error>()
        {
            return true;
        }
        cur = match err.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    false
}

/// `bytes 100-199/200` → 100.
fn content_range_start(v: &str) -> Option<u64> {
    let rest = v.trim().strip_prefix("bytes ")?;
    rest.split('-').next()?.trim().parse().ok()
}

/// A reqwest error with its causes, and the one word a user needs first.
pub fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut s = format!("{kind}: {e}");
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(&format!(": {c}"));
        src = c.source();
    }
    // reqwest names the URL with its credentials ("for url (https://u:p@...)").
    match e.url() {
        Some(u) => s.replace(u.as_str(), &redact(u.as_str())),
        None => s,
    }
}

fn io_chain(e: &io::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        let cs = c.to_string();
        if !s.contains(&cs) {
            s.push_str(&format!(": {cs}"));
        }
        src = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for localhost/127.0.0.1 (P-256, valid
    /// until 2126) and its PKCS#8 key: no CA store trusts it.
    const SELF_SIGNED_CERT: &str = "3082019b30820141a0030201020214730144f4f40bedc71c5d770378af67bd6e306b20300a06082a8648ce3d04030230\
        143112301006035504030c096c6f63616c686f73743020170d3236313132333139343834365a180f3231323631303330\
        3139343834365a30143112301006035504030c096c6f63616c686f73743059301306072a8648ce3d020106082a8648ce\
        3d030107034200046d35bd3586de023cfd46c48e28350f1b24d1ab94f2f9432812f77c9608e571a021839a04da252027\
        02a6f6a127428aef0ace9ac239028b7b239830df7cf232a4a36f306d301d0603551d0e04160414e20eff9ecd8ac5cc4c\
        e74f976f3d76add3aa4086301f0603551d23041830168014e20eff9ecd8ac5cc4ce74f976f3d76add3aa4086300f0603\
        551d130101ff040530030101ff301a0603551d110413301182096c6f63616c686f737487047f000001300a06082a8648\
        ce3d0403020348003045022078285f62fbce2fb28a98e769a6219bac15be2c2ae98afb6a4c3e44543a8710ce022100bd\
        09fee2d2595459832687bfea0f746e81fee3fd5c4dab9bbe14ed7c9aa00cfb";
    const SELF_SIGNED_KEY: &str = "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420a7b63878943f4324baad0a26\
        ad54ac5d6e2d4a5c8eae9d454e3fd9a2edfadd9fa144034200046d35bd3586de023cfd46c48e28350f1b24d1ab94f2f9\
        432812f77c9608e571a021839a04da25202702a6f6a127428aef0ace9ac239028b7b239830df7cf232a4";

    /// A loopback TLS server presenting the self-signed certificate.
    fn untrusted_tls_server() -> String {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let cert = CertificateDer::from(hex::decode(SELF_SIGNED_CERT).unwrap());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            hex::decode(SELF_SIGNED_KEY).unwrap(),
        ));
        let cfg = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
        let cfg = std::sync::Arc::new(cfg);
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/x-1-py3-none-any.whl", l.local_addr().unwrap());
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { return };
                let conn = rustls::ServerConnection::new(cfg.clone()).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, s);
                let _ = tls.read(&mut [0u8; 1]);
            }
        });
        url
    }

    /// A refused certificate is told apart by rustls' typed error, not by
    /// the word "certificate": it is not retried and carries the CA hint.
    #[test]
    fn a_refused_certificate_is_fatal_with_the_proxy_hint() {
        let url = untrusted_tls_server();
        let c = client(&FetchOptions::default()).unwrap();
        let e = c.get(&url).send().unwrap_err();
        assert!(refused_certificate(&e), "{}", describe(&e));
        let a = classify(&e);
        assert!(!a.retry, "{}", a.msg);
        assert!(a.msg.contains("TLS-inspecting proxy"), "{}", a.msg);

        // Nobody listening: a transport error like any other, retried.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let e = c
            .get(format!("https://127.0.0.1:{port}/x"))
            .send()
            .unwrap_err();
        assert!(!refused_certificate(&e), "{}", describe(&e));
        assert!(classify(&e).retry);
    }

    #[test]
    fn content_range_parses_start() {
        assert_eq!(content_range_start("bytes 100-199/200"), Some(100));
        assert_eq!(content_range_start("bytes */200"), None);
        assert_eq!(content_range_start("items 1-2/3"), None);
    }
}
