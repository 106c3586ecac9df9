//! `greta lock update`: post-processing of real uv output (replayed by a
//! stand-in uv, offline), comment preservation, and a dead index.

use crate::lock_support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A matrix with one locked cpu profile `name` for Python 3.11 and 3.12,
/// resolved from `index`; `requirements` is its TOML array.
fn one_profile_matrix(name: &str, index: &str, requirements: &str) -> String {
    format!(
        r#"schema = 1

[profiles.{name}]
backend = "cpu"
summary = "test profile"
status = "locked"
serves = "*"
python = ["3.11", "3.12"]
indexes = ["{index}"]
requirements = {requirements}
lockfile = "pylock.{name}.toml"
"#
    )
}

const PYPI: &str = "https://pypi.org/simple";

/// The `mini` profile whose real uv output `lock_support/uv-out-*.toml` holds.
fn mini_matrix(index: &str) -> String {
    one_profile_matrix(
        "mini",
        index,
        r#"[
  "jax==0.12.0.1 ; python_version >= '3.12'",
  "jax==0.10.2 ; python_version < '3.12'",
  "typing-extensions==4.16.0",
]"#,
    )
}

/// A `uv` that copies the captured real output for the requested Python to `-o`.
fn fake_uv(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("uv");
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "uv 0.13.9 (replay)"; exit 0; fi
py=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) py="$2"; shift;;
    -o) out="$2"; shift;;
  esac
  shift
done
cp "{}/uv-out-$py.toml" "$out"
"#,
        support_dir().display()
    );
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn merges_per_python_output_into_one_valid_lockfile() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("matrix.toml"), mini_matrix(PYPI)).unwrap();
    let uv = fake_uv(d.path());
    let o = greta_lock(d.path(), &["update", "mini", "--uv", uv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.path().join("pylock.mini.toml")).unwrap();
    assert!(
        text.starts_with("# PEP 751 lockfile for greta profile `mini`"),
        "{text}"
    );
    assert!(text.contains("greta lock update mini"));
    assert!(!text.contains("sdist ="), "sdists must be dropped");
    let doc: toml::Value = toml::from_str(&text).unwrap();
    assert_eq!(doc["lock-version"].as_str(), Some("1.0"));
    assert_eq!(doc["requires-python"].as_str(), Some(">=3.11,<3.13"));
    // every uv wheel URL made it across, with its hash
    for py in ["3.11", "3.12"] {
        let uv_out: toml::Value = toml::from_str(
            &std::fs::read_to_string(support_dir().join(format!("uv-out-{py}.toml"))).unwrap(),
        )
        .unwrap();
        for pkg in uv_out["packages"].as_array().unwrap() {
            for w in pkg["wheels"].as_array().unwrap() {
                let url = w["url"].as_str().unwrap();
                let sha = w["hashes"]["sha256"].as_str().unwrap();
                let at = text.find(url).unwrap_or_else(|| panic!("{url} missing"));
                assert!(text[at..].lines().next().unwrap().contains(sha));
            }
        }
    }
    // typing-extensions is the same for both: one entry, no python marker
    let te: Vec<_> = doc["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"].as_str() == Some("typing-extensions"))
        .collect();
    assert_eq!(te.len(), 1);
    assert!(te[0].get("marker").is_none());
    // the result passes check and resolves differently per Python
    let o = greta_lock(d.path(), &["check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let j311 = json(&greta_lock(
        d.path(),
        &["show", "mini", "--python", "3.11", "--json"],
    ));
    let j312 = json(&greta_lock(
        d.path(),
        &["show", "mini", "--python", "3.12", "--json"],
    ));
    let ver = |j: &serde_json::Value, n: &str| {
        crate::support::find_by(&j["sets"][0]["wheels"], "name", n)
            .map(|w| w["version"].as_str().unwrap().to_string())
    };
    assert_eq!(ver(&j311, "jax").as_deref(), Some("0.10.2"));
    assert_eq!(ver(&j312, "jax").as_deref(), Some("0.12.0.1"));
    assert!(
        crate::support::find_by(&j311["sets"][0]["wheels"], "name", "jaxlib").unwrap()["filename"]
            .as_str()
            .unwrap()
            .contains("cp311")
    );

    // A second update keeps a comment written above a surviving entry.
    let p = d.path().join("pylock.mini.toml");
    let t = std::fs::read_to_string(&p).unwrap().replacen(
        "[[packages]]\nname = \"typing-extensions\"",
        "# reviewed by hand: keep this note\n[[packages]]\nname = \"typing-extensions\"",
        1,
    );
    std::fs::write(&p, t).unwrap();
    let o = greta_lock(d.path(), &["update", "mini", "--uv", uv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let again = std::fs::read_to_string(&p).unwrap();
    assert!(
        again.contains(
            "# reviewed by hand: keep this note\n[[packages]]\nname = \"typing-extensions\""
        ),
        "{again}"
    );
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o644
    );
}

#[test]
fn dead_index_leaves_the_old_file_intact() {
    let Ok(uv) = which::which("uv") else {
        panic!("uv must be installed for this test (scripts/setup.sh installs it)");
    };
    let d = tempfile::tempdir().unwrap();
    // nothing listens on port 9 of loopback (discard, never bound here)
    let m = mini_matrix("https://127.0.0.1:9/simple");
    std::fs::write(d.path().join("matrix.toml"), m).unwrap();
    std::fs::write(d.path().join("pylock.mini.toml"), "# old file\n").unwrap();
    let before = snapshot(d.path());
    let o = greta_lock(
        d.path(),
        &[
            "update",
            "mini",
            "--uv",
            uv.to_str().unwrap(),
            "--timeout",
            "120",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("uv could not resolve profile mini") && err.contains("127.0.0.1:9"),
        "{err}"
    );
    assert!(err.contains("was left unchanged"), "{err}");
    assert_eq!(before, snapshot(d.path()));
}

#[test]
fn failing_uv_never_writes() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("matrix.toml"), mini_matrix(PYPI)).unwrap();
    let uv = d.path().join("uv");
    std::fs::write(&uv, "#!/bin/sh\n[ \"$1\" = --version ] && { echo uv; exit 0; }\necho 'error: no solution found' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&uv, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = snapshot(d.path());
    let o = greta_lock(d.path(), &["update", "mini", "--uv", uv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no solution found"), "{}", stderr(&o));
    assert_eq!(before, snapshot(d.path()));
}

/// A PEP 503 index on 127.0.0.1 serving one wheel built by this test, for
/// `greta lock update` with the real uv. Returns the base URL and a log of
/// request lines.
/// `greta lock update demo` through the given real uv, with its own uv cache.
fn update_demo_with_uv(uv: &Path, lock_dir: &Path, uv_cache: &Path) -> std::process::Output {
    crate::support::greta()
        .args(["lock", "update", "demo", "--uv"])
        .arg(uv)
        .args(["--timeout", "120", "--lock-dir"])
        .arg(lock_dir)
        .env("UV_CACHE_DIR", uv_cache)
        .output()
        .unwrap()
}

mod loopback {
    use std::collections::BTreeMap;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    pub struct Index {
        pub base: String,
        pub log: Arc<Mutex<Vec<String>>>,
    }

    /// `routes`: path -> (status, content type, body).
    pub fn serve(routes: BTreeMap<String, (u16, &'static str, Vec<u8>)>) -> Index {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let log2 = log.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut s) = conn else { continue };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut first = String::new();
                if r.read_line(&mut first).is_err() {
                    continue;
                }
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).map(|n| n == 0).unwrap_or(true) || h == "\r\n" {
                        break;
                    }
                }
                log2.lock().unwrap().push(first.trim().to_string());
                let mut parts = first.split_whitespace();
                let method = parts.next().unwrap_or("");
                let path = parts
                    .next()
                    .unwrap_or("")
                    .split('?')
                    .next()
                    .unwrap_or("")
                    .to_string();
                let (status, ctype, body) = routes.get(&path).cloned().unwrap_or((
                    404,
                    "text/plain",
                    b"not found".to_vec(),
                ));
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes());
                if method != "HEAD" {
                    let _ = s.write_all(&body);
                }
            }
        });
        Index { base, log }
    }
}

/// Build `greta_lockdemo-1.0.0-py3-none-any.whl` (real METADATA, WHEEL,
/// RECORD; fresh content each run) with Python's zipfile.
fn build_wheel(dir: &Path) -> Vec<u8> {
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let script = format!(
        r#"
import zipfile, hashlib, base64
files = {{
  "greta_lockdemo/__init__.py": "NONCE = {nonce}\n",
  "greta_lockdemo-1.0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: greta-lockdemo\nVersion: 1.0.0\nRequires-Python: >=3.8\n",
  "greta_lockdemo-1.0.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: greta-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}}
rec = []
for n, c in files.items():
    d = base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b"=").decode()
    rec.append(f"{{n}},sha256={{d}},{{len(c.encode())}}")
rec.append("greta_lockdemo-1.0.0.dist-info/RECORD,,")
files["greta_lockdemo-1.0.0.dist-info/RECORD"] = "\n".join(rec) + "\n"
with zipfile.ZipFile("{out}", "w") as z:
    for n, c in files.items():
        z.writestr(n, c)
"#,
        out = dir.join("greta_lockdemo-1.0.0-py3-none-any.whl").display()
    );
    let ok = std::process::Command::new("python3")
        .args(["-c", &script])
        .status()
        .expect("python3")
        .success();
    assert!(ok);
    std::fs::read(dir.join("greta_lockdemo-1.0.0-py3-none-any.whl")).unwrap()
}

fn loopback_matrix(base: &str) -> String {
    one_profile_matrix(
        "demo",
        &format!("{base}/simple"),
        r#"["greta-lockdemo==1.0.0"]"#,
    )
}

#[test]
fn real_uv_against_a_loopback_index() {
    let uv = which::which("uv")
        .expect("uv must be installed for this test (scripts/setup.sh installs it)");
    let d = tempfile::tempdir().unwrap();
    let wheel = build_wheel(d.path());
    let sha = crate::support::sha256_hex(&wheel);
    let page = format!(
        "<!DOCTYPE html><html><body><a href=\"/files/greta_lockdemo-1.0.0-py3-none-any.whl#sha256={sha}\" data-requires-python=\"&gt;=3.8\">greta_lockdemo-1.0.0-py3-none-any.whl</a></body></html>"
    );
    let mut routes = std::collections::BTreeMap::new();
    routes.insert(
        "/simple/greta-lockdemo/".to_string(),
        (200u16, "text/html", page.into_bytes()),
    );
    routes.insert(
        "/files/greta_lockdemo-1.0.0-py3-none-any.whl".to_string(),
        (200u16, "application/octet-stream", wheel.clone()),
    );
    let idx = loopback::serve(routes);
    let lock = d.path().join("lock");
    std::fs::create_dir(&lock).unwrap();
    std::fs::write(lock.join("matrix.toml"), loopback_matrix(&idx.base)).unwrap();
    let o = update_demo_with_uv(&uv, &lock, &d.path().join("uv-cache"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        idx.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("/simple/greta-lockdemo/")),
        "uv never asked the index"
    );
    let text = std::fs::read_to_string(lock.join("pylock.demo.toml")).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let pkgs = doc["packages"].as_array().unwrap();
    assert_eq!(pkgs.len(), 1, "{text}");
    let w = &pkgs[0]["wheels"][0];
    assert_eq!(
        w["url"].as_str().unwrap(),
        format!("{}/files/greta_lockdemo-1.0.0-py3-none-any.whl", idx.base)
    );
    assert_eq!(w["hashes"]["sha256"].as_str().unwrap(), sha);
    // resolves for both Pythons; `check` refuses it only for its plain-http URL
    for py in ["3.11", "3.12"] {
        let o = greta_lock(&lock, &["show", "demo", "--python", py]);
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    }
    let o = greta_lock(&lock, &["check"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("non-https URL"), "{}", stdout(&o));
}

#[test]
fn real_uv_against_a_failing_loopback_index() {
    let uv = which::which("uv").expect("uv must be installed for this test");
    let d = tempfile::tempdir().unwrap();
    let mut routes = std::collections::BTreeMap::new();
    routes.insert(
        "/simple/greta-lockdemo/".to_string(),
        (503u16, "text/plain", b"down for maintenance".to_vec()),
    );
    let idx = loopback::serve(routes);
    std::fs::write(d.path().join("matrix.toml"), loopback_matrix(&idx.base)).unwrap();
    std::fs::write(d.path().join("pylock.demo.toml"), "# previous lockfile\n").unwrap();
    let before = snapshot(d.path());
    let o = update_demo_with_uv(&uv, d.path(), &d.path().join("uv-cache"));
    let after = snapshot(d.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("uv could not resolve profile demo"),
        "{}",
        stderr(&o)
    );
    assert_eq!(before, after);
}
