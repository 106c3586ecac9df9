//! A real HTTP/1.1 server on 127.0.0.1 (random port) serving a simple index
//! (PEP 691 JSON and PEP 503 HTML) and wheel files, with faults injected per
//! request.
//!
//! Written on `std::net` rather than with an HTTP server crate on purpose:
//! the faults under test live below HTTP (a TCP reset in the middle of a
//! body, a body shorter than its Content-Length, a peer that never answers),
//! and server crates exist precisely to make those impossible.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What to do to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Answer with this status and a short body.
    Status(u16),
    /// Send the head (full Content-Length) and this many body bytes, then a
    /// TCP reset.
    ResetAfter(usize),
    /// Send the head and this many body bytes, then close cleanly.
    TruncateAfter(usize),
    /// Same length, different bytes.
    WrongContent,
    /// Read the request and never answer.
    Hang,
    /// Send the body in `chunk`-byte pieces with `delay` between them.
    Throttle { chunk: usize, delay: Duration },
}

#[derive(Debug, Clone)]
pub struct Logged {
    pub path: String,
    pub range: Option<String>,
    pub accept: Option<String>,
    pub status: u16,
}

#[derive(Default)]
struct State {
    /// URL path (e.g. "/files/x.whl") -> bytes.
    files: BTreeMap<String, Vec<u8>>,
    /// project -> [(filename, sha256 advertised)].
    projects: BTreeMap<String, Vec<(String, String)>>,
    /// One fault per request, consumed in order, per path.
    once: HashMap<String, VecDeque<Fault>>,
    /// A fault applied to every request of a path.
    always: HashMap<String, Fault>,
    range: bool,
    /// Serve PEP 691 JSON when asked (else PEP 503 HTML only, like old mirrors).
    json: bool,
    log: Vec<Logged>,
}

pub struct Server {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            range: true,
            ..Default::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (st, sp) = (st.clone(), sp.clone());
                std::thread::spawn(move || {
                    let _ = handle(conn, &st, &sp);
                });
            }
        });
        Server { addr, state, stop }
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn file_url(&self, filename: &str) -> String {
        format!("{}/files/{filename}", self.base())
    }

    pub fn index_url(&self) -> String {
        format!("{}/simple/", self.base())
    }

    /// Publishes a wheel under /files/ and lists it on its project page.
    pub fn add_wheel(&self, project: &str, filename: &str, bytes: Vec<u8>) {
        let sha = super::sha256_hex(&bytes);
        let mut s = self.state.lock().unwrap();
        s.files.insert(format!("/files/{filename}"), bytes);
        s.projects
            .entry(project.to_string())
            .or_default()
            .push((filename.to_string(), sha));
    }

    /// Makes the index advertise `sha256` for `filename` (a lying index).
    pub fn lie_about_hash(&self, filename: &str, sha256: &str) {
        let mut s = self.state.lock().unwrap();
        for files in s.projects.values_mut() {
            for f in files.iter_mut().filter(|f| f.0 == filename) {
                f.1 = sha256.to_string();
            }
        }
    }

    pub fn fault_once(&self, filename: &str, f: Fault) {
        self.fault_path_once(format!("/files/{filename}"), f);
    }

    /// A fault for the next request of `project`'s simple-index page.
    pub fn fault_page_once(&self, project: &str, f: Fault) {
        self.fault_path_once(format!("/simple/{project}/"), f);
    }

    fn fault_path_once(&self, path: String, f: Fault) {
        let mut s = self.state.lock().unwrap();
        s.once.entry(path).or_default().push_back(f);
    }

    pub fn fault_always(&self, filename: &str, f: Fault) {
        self.state
            .lock()
            .unwrap()
            .always
            .insert(format!("/files/{filename}"), f);
    }

    pub fn clear_faults(&self) {
        let mut s = self.state.lock().unwrap();
        s.once.clear();
        s.always.clear();
    }

    pub fn set_json_index(&self, on: bool) {
        self.state.lock().unwrap().json = on;
    }

    pub fn set_range_support(&self, on: bool) {
        self.state.lock().unwrap().range = on;
    }

    pub fn log(&self) -> Vec<Logged> {
        self.state.lock().unwrap().log.clone()
    }

    pub fn clear_log(&self) {
        self.state.lock().unwrap().log.clear();
    }

    /// Requests for one file name.
    pub fn hits(&self, filename: &str) -> Vec<Logged> {
        let p = format!("/files/{filename}");
        self.log().into_iter().filter(|l| l.path == p).collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr);
    }
}

fn handle(mut conn: TcpStream, state: &Mutex<State>, stop: &AtomicBool) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let path = target.split('?').next().unwrap_or("/").to_string();
    let range = headers.get("range").cloned();
    let accept = headers.get("accept").cloned();

    let (fault, body, ctype, range_on) = {
        let mut s = state.lock().unwrap();
        let fault = match s.once.get_mut(&path).and_then(|q| q.pop_front()) {
            Some(f) => Some(f),
            None => s.always.get(&path).cloned(),
        };
        let (body, ctype) = if let Some(b) = s.files.get(&path) {
            (Some(b.clone()), "application/octet-stream".to_string())
        } else if let Some(project) = path
            .strip_prefix("/simple/")
            .map(|p| p.trim_end_matches('/').to_string())
        {
            match s.projects.get(&project) {
                Some(files) => {
                    let json = s.json
                        && accept
                            .as_deref()
                            .is_some_and(|a| a.contains("application/vnd.pypi.simple.v1+json"));
                    if json {
                        (
                            Some(index_json(&project, files).into_bytes()),
                            "application/vnd.pypi.simple.v1+json".to_string(),
                        )
                    } else {
                        (
                            Some(index_html(&project, files).into_bytes()),
                            "text/html".to_string(),
                        )
                    }
                }
                None => (None, String::new()),
            }
        } else {
            (None, String::new())
        };
        (fault, body, ctype, s.range)
    };
    let record = |status: u16| {
        state.lock().unwrap().log.push(Logged {
            path: path.clone(),
            range: range.clone(),
            accept: accept.clone(),
            status,
        });
    };
    if method != "GET" && method != "HEAD" {
        record(405);
        return respond(&mut conn, 405, "text/plain", b"method not allowed", None);
    }
    match fault {
        Some(Fault::Hang) => {
            record(0);
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                // The client gave up (closed): stop holding the thread.
                let mut b = [0u8; 1];
                conn.set_nonblocking(true)?;
                match conn.peek(&mut b) {
                    Ok(0) => return Ok(()),
                    Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => return Ok(()),
                    _ => {}
                }
            }
            return Ok(());
        }
        Some(Fault::Status(code)) => {
            record(code);
            return respond(
                &mut conn,
                code,
                "text/plain",
                format!("injected {code}\n").as_bytes(),
                None,
            );
        }
        _ => {}
    }
    let Some(mut body) = body else {
        record(404);
        return respond(&mut conn, 404, "text/plain", b"not found\n", None);
    };
    if fault == Some(Fault::WrongContent) {
        for b in body.iter_mut() {
            *b ^= 0x5a;
        }
    }
    let total = body.len();
    let mut status = 200;
    let mut content_range = None;
    let mut start = 0;
    if let (true, Some(r)) = (range_on, range.as_deref()) {
        if let Some(from) = r
            .strip_prefix("bytes=")
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|f| f.parse::<usize>().ok())
        {
            if from >= total {
                record(416);
                return respond(
                    &mut conn,
                    416,
                    "text/plain",
                    b"range not satisfiable\n",
                    Some(format!("bytes */{total}")),
                );
            }
            status = 206;
            start = from;
            content_range = Some(format!("bytes {from}-{}/{total}", total - 1));
        }
    }
    record(status);
    let body = &body[start..];
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(status),
        body.len()
    );
    if range_on {
        head.push_str("Accept-Ranges: bytes\r\n");
    }
    if let Some(cr) = content_range {
        head.push_str(&format!("Content-Range: {cr}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    if method == "HEAD" {
        return Ok(());
    }
    match fault {
        Some(Fault::ResetAfter(n)) => {
            conn.write_all(&body[..n.min(body.len())])?;
            conn.flush()?;
            std::thread::sleep(Duration::from_millis(20));
            reset(conn);
            Ok(())
        }
        Some(Fault::TruncateAfter(n)) => {
            conn.write_all(&body[..n.min(body.len())])?;
            conn.flush()?;
            let _ = conn.shutdown(std::net::Shutdown::Both);
            Ok(())
        }
        Some(Fault::Throttle { chunk, delay }) => {
            for c in body.chunks(chunk.max(1)) {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                conn.write_all(c)?;
                conn.flush()?;
                std::thread::sleep(delay);
            }
            Ok(())
        }
        _ => {
            conn.write_all(body)?;
            let _ = conn.shutdown(std::net::Shutdown::Write);
            // Drain so close does not turn into a reset.
            let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = conn.read(&mut [0u8; 64]);
            Ok(())
        }
    }
}

/// Close with SO_LINGER {on, 0}: the kernel sends RST instead of FIN.
fn reset(conn: TcpStream) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on our own socket with a correctly sized struct.
    unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(conn);
}

fn respond(
    conn: &mut TcpStream,
    status: u16,
    ctype: &str,
    body: &[u8],
    content_range: Option<String>,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(status),
        body.len()
    );
    if let Some(cr) = content_range {
        head.push_str(&format!("Content-Range: {cr}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    conn.write_all(body)?;
    let _ = conn.shutdown(std::net::Shutdown::Write);
    Ok(())
}

fn reason(s: u16) -> &'static str {
    match s {
        200 => "OK",
        206 => "Partial Content",
        404 => "Not Found",
        405 => "Method Not Allowed",
        416 => "Range Not Satisfiable",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn index_json(project: &str, files: &[(String, String)]) -> String {
    let files: Vec<_> = files
        .iter()
        .map(|(f, h)| serde_json::json!({"filename": f, "url": format!("../../files/{f}"), "hashes": {"sha256": h}}))
        .collect();
    serde_json::json!({"meta": {"api-version": "1.1"}, "name": project, "files": files}).to_string()
}

fn index_html(project: &str, files: &[(String, String)]) -> String {
    let mut s =
        format!("<!DOCTYPE html>\n<html><head><title>Links for {project}</title></head><body>\n");
    for (f, h) in files {
        s.push_str(&format!(
            "<a href=\"../../files/{f}#sha256={h}\">{f}</a><br/>\n"
        ));
    }
    s.push_str("</body></html>\n");
    s
}
