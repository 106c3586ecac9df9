//! The post-install check: import the frameworks inside the new env (in a
//! child with a time bound; a wedged GPU driver must not wedge greta) and
//! compare what torch says it was built for with what the profile promises.

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The import check, one interpreter for all modules (see [`prestart`]).
///
/// It imports what it needs (no `json`: with `re` and `enum` it costs ~7 ms
/// of CPU; `enc` writes the JSON) and waits for "go" on stdin. Then it does what start-up
/// would have done had the packages been there already: process
/// site-packages again (its `.pth` files; `site.addsitedir` appends only
/// directories not yet on sys.path), import a `sitecustomize` that may have
/// arrived, and drop the import system's cached directory listings. The
/// standard library comes before site-packages on sys.path, so no wheel can
/// change the modules the script imported before.
///
/// Each module is then imported in its own forked child, side by side
/// (importing torch, jax and triton is seconds each, and they do not depend
/// on each other), from one interpreter start instead of one per module.
/// A child asks the kernel to kill it when this process dies (prctl
/// PR_SET_PDEATHSIG through ctypes), as greta's own children do, so a
/// timed-out or killed check leaves no import running. `-I` keeps the
/// user's site-packages and PYTHONPATH out, so only the env's own files
/// count. The result is one JSON object on a `GRETA-CHECK` line.
const SCRIPT: &str = r#"
import importlib, os, select, site, sys
try:
    import ctypes
    _prctl = ctypes.CDLL(None).prctl
except Exception:
    _prctl = None

def enc(v):
    # JSON, ASCII only (non-ASCII as \u escapes, a lone surrogate as U+FFFD).
    # Not the json module: importing it costs ~7 ms of CPU on every install.
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(enc(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(enc(str(k)) + ":" + enc(x) for k, x in v.items()) + "}"
    out = []
    for c in str(v):
        o = ord(c)
        if 0x20 <= o < 0x7f and c != '"' and c != "\\":
            out.append(c)
        elif o > 0xFFFF:
            o -= 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append("\\u%04x" % o)
    return '"' + "".join(out) + '"'

def check(mod):
    r = {"ok": False}
    try:
        m = importlib.import_module(mod)
        r["ok"] = True
        r["version"] = str(getattr(m, "__version__", "")) or None
        r["file"] = getattr(m, "__file__", None)
        if mod == "torch":
            v = getattr(m, "version", None)
            r["hip"] = getattr(v, "hip", None)
            r["cuda"] = getattr(v, "cuda", None)
            try:
                r["device_count"] = int(m.cuda.device_count())
            except Exception as e:
                r["device_error"] = "%s: %s" % (type(e).__name__, e)
        if mod == "jax":
            try:
                r["devices"] = [str(d) for d in m.devices()]
            except Exception as e:
                r["device_error"] = "%s: %s" % (type(e).__name__, e)
    except BaseException as e:
        r["error"] = "%s: %s" % (type(e).__name__, e)
    return r

if sys.stdin.readline().strip() != "go":
    sys.exit(3)
for d in site.getsitepackages():
    site.addsitedir(d)
if "sitecustomize" not in sys.modules:
    try:
        import sitecustomize
    except ImportError:
        pass
importlib.invalidate_caches()

me = os.getpid()
kids = {}
for mod in sys.argv[1:]:
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rfd)
            if _prctl is not None:
                _prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
            if os.getppid() != me:
                os._exit(1)
            data = (enc(mod) + ":" + enc(check(mod))).encode("ascii")
            while data:
                data = data[os.write(wfd, data):]
        finally:
            os._exit(0)
    os.close(wfd)
    kids[rfd] = (mod, pid, [])
# Results are read as they come (select: a child never blocks on a full
# pipe), and each finished module is announced at once, so a time-out can
# name the module that did not finish.
parts = []
while kids:
    ready, _, _ = select.select(list(kids), [], [])
    for rfd in ready:
        mod, pid, chunks = kids[rfd]
        b = os.read(rfd, 65536)
        if b:
            chunks.append(b)
            continue
        os.close(rfd)
        del kids[rfd]
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and chunks:
            parts.append(b"".join(chunks).decode("ascii"))
        else:
            parts.append(enc(mod) + ":" + enc({"ok": False, "error": "the import of %s ended the process (wait status %d) before it reported" % (mod, status)}))
        sys.stdout.write("GRETA-DONE %s\n" % mod)
        sys.stdout.flush()
sys.stdout.write("\nGRETA-CHECK {" + ",".join(parts) + "}\n")
sys.stdout.flush()
os._exit(0)  # the result is out; interpreter teardown would only cost time
"#;

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub id: String,
    pub severity: String,
    pub title: String,
    pub evidence: String,
    pub fix: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Per module: what the child printed.
    pub modules: serde_json::Value,
    pub findings: Vec<Finding>,
}

/// What the profile promises about the torch build.
#[derive(Debug, Clone)]
pub struct Expect {
    pub profile: String,
    /// "rocm", "cuda" or "cpu".
    pub backend: String,
    /// e.g. "6.4" for rocm6.4, "12.6" for a cuda profile; None: any.
    pub version: Option<String>,
}

/// Module names to import for the wheel set: only what was installed.
pub fn modules_for(wheel_names: &[String]) -> Vec<String> {
    let mut m = Vec::new();
    let has = |n: &str| {
        wheel_names
            .iter()
            .any(|w| crate::fetch::index::normalize(w) == n)
    };
    if has("torch") {
        m.push("torch".to_string());
    }
    if wheel_names.iter().any(|w| {
        let n = crate::fetch::index::normalize(w);
        n == "triton" || n == "pytorch-triton-rocm" || n == "triton-rocm" || n == "pytorch-triton"
    }) {
        m.push("triton".to_string());
    }
    if has("jax") {
        m.push("jax".to_string());
    }
    m
}

/// The import-check interpreter, started and waiting for [`Prestarted::run`].
pub struct Prestarted {
    venv: std::path::PathBuf,
    modules: Vec<String>,
    child: Option<Result<super::installer::Running>>,
}

/// Starts the env's interpreter for the import check of `modules`; it waits
/// for "go" before importing anything (see [`SCRIPT`]). Started while the
/// wheels are still being installed, its start-up (10-30 ms) is off the
/// install's critical path, and what it checks is unchanged. Dropped
/// without `run`, it is killed.
pub fn prestart(
    venv: &Path,
    modules: &[String],
    env_vars: &BTreeMap<String, String>,
) -> Prestarted {
    let child = (!modules.is_empty()).then(|| {
        let mut cmd = Command::new(venv.join("bin").join("python"));
        cmd.args(["-I", "-c", SCRIPT])
            .args(modules)
            .envs(env_vars)
            .env_remove("PYTHONHOME");
        super::installer::start(cmd, true).context("import check")
    });
    Prestarted {
        venv: venv.to_path_buf(),
        modules: modules.to_vec(),
        child,
    }
}

impl Prestarted {
    /// Lets the interpreter import the modules (within `timeout`, counted
    /// from now) and judges what they report.
    pub fn run(self, expect: &Expect, timeout: Duration) -> Result<CheckReport> {
        let Some(child) = self.child else {
            return Ok(CheckReport {
                modules: serde_json::json!({}),
                findings: vec![],
            });
        };
        let mut c = child?;
        c.send_and_close(b"go\n").context("import check")?;
        let (o, timed_out) = c.finish_timed(timeout);
        let o = o.context("import check")?;
        if timed_out {
            let done: Vec<&str> = o
                .stdout
                .lines()
                .filter_map(|l| l.strip_prefix("GRETA-DONE "))
                .collect();
            let pending: Vec<&str> = self
                .modules
                .iter()
                .map(String::as_str)
                .filter(|m| !done.contains(m))
                .collect();
            bail!(
                "import check of {} did not finish within {timeout:?} and was killed",
                pending.join(", ")
            );
        }
        let line = o
            .stdout
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("GRETA-CHECK "))
            .with_context(|| {
                format!(
                    "the import check printed no result ({}); stderr:\n{}",
                    o.status,
                    o.stderr.trim()
                )
            })?;
        let modules: serde_json::Value =
            serde_json::from_str(line).context("import check output")?;
        let findings = judge(&modules, &self.venv, expect);
        Ok(CheckReport { modules, findings })
    }
}

/// Turns the import results into findings (pure, so it is unit-tested).
pub fn judge(m: &serde_json::Value, venv: &Path, expect: &Expect) -> Vec<Finding> {
    let mut f = Vec::new();
    let Some(obj) = m.as_object() else { return f };
    for (name, r) in obj {
        if r["ok"] != true {
            f.push(Finding {
                id: "framework.import-failed".into(),
                severity: "fail".into(),
                title: format!("{name} does not import in the new env"),
                evidence: r["error"].as_str().unwrap_or("unknown error").to_string(),
                fix: "the previous env was left untouched; rerun `greta install -v` and report the error with `greta doctor --capture DIR`".into(),
            });
            continue;
        }
        if let Some(file) = r["file"].as_str() {
            if !Path::new(file).starts_with(venv) {
                f.push(Finding {
                    id: "framework.mismatch".into(),
                    severity: "fail".into(),
                    title: format!("{name} is imported from outside the env"),
                    evidence: format!("{name} came from {file}, not from {}", venv.display()),
                    fix: "unset PYTHONPATH/PYTHONHOME and retry".into(),
                });
            }
        }
    }
    if let Some(t) = obj.get("torch").filter(|t| t["ok"] == true) {
        let hip = t["hip"].as_str();
        let cuda = t["cuda"].as_str();
        let built = match (hip, cuda) {
            (Some(h), _) => format!("ROCm/HIP {h}"),
            (None, Some(c)) => format!("CUDA {c}"),
            (None, None) => "CPU only".to_string(),
        };
        let ok = match expect.backend.as_str() {
            "rocm" => hip.is_some_and(|h| matches_version(h, expect.version.as_deref())),
            "cuda" => cuda.is_some_and(|c| matches_version(c, expect.version.as_deref())),
            // Any CUDA or CPU-only build runs on the CPU (PyPI's default
            // torch is the CUDA build); a ROCm build means the lock pinned
            // the wrong index.
            "cpu" => hip.is_none(),
            _ => true,
        };
        if !ok {
            let want = match (&expect.backend[..], &expect.version) {
                ("cpu", _) => "a CPU-only or CUDA build (not ROCm)".to_string(),
                (b, Some(v)) => format!("a {b} {v} build"),
                (b, None) => format!("a {b} build"),
            };
            f.push(Finding {
                id: "framework.mismatch".into(),
                severity: "fail".into(),
                title: format!("torch in the new env is built for {built}, profile {} expects {want}", expect.profile),
                evidence: format!(
                    "torch {} reports version.hip={:?} version.cuda={:?}",
                    t["version"].as_str().unwrap_or("?"),
                    hip,
                    cuda
                ),
                fix: format!(
                    "the lockfile for {} pins the wrong torch build; run `greta lock check` and fix the lock (the previous env was left untouched)",
                    expect.profile
                ),
            });
        }
    }
    f
}

/// No expected version matches anything.
fn matches_version(have: &str, want: Option<&str>) -> bool {
    match want {
        None => true,
        Some(w) => version_prefix(have, w),
    }
}

/// "6.4.43484-123" matches "6.4"; "6.40" does not.
fn version_prefix(have: &str, want: &str) -> bool {
    have == want
        || have
            .strip_prefix(want)
            .is_some_and(|rest| rest.starts_with(['.', '-', '+']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exp(backend: &str, v: Option<&str>) -> Expect {
        Expect {
            profile: "p".into(),
            backend: backend.into(),
            version: v.map(String::from),
        }
    }

    #[test]
    fn cpu_torch_in_rocm_profile_is_a_mismatch() {
        let m = json!({"torch": {"ok": true, "version": "2.5", "hip": null, "cuda": null, "file": "/e/lib/torch/__init__.py"}});
        let f = judge(&m, Path::new("/e"), &exp("rocm", Some("6.4")));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, "framework.mismatch");
        assert!(judge(&m, Path::new("/e"), &exp("cpu", None)).is_empty());
    }

    #[test]
    fn cpu_profile_accepts_the_cuda_build_but_not_rocm() {
        let cuda = json!({"torch": {"ok": true, "hip": null, "cuda": "13.2", "file": "/e/t.py"}});
        assert!(judge(&cuda, Path::new("/e"), &exp("cpu", None)).is_empty());
        let rocm = json!({"torch": {"ok": true, "hip": "6.4.1", "cuda": null, "file": "/e/t.py"}});
        assert_eq!(
            judge(&rocm, Path::new("/e"), &exp("cpu", None))[0].id,
            "framework.mismatch"
        );
        assert_eq!(
            judge(&cuda, Path::new("/e"), &exp("cuda", Some("12.6")))[0].id,
            "framework.mismatch"
        );
        assert!(judge(&cuda, Path::new("/e"), &exp("cuda", Some("13.2"))).is_empty());
    }

    #[test]
    fn rocm_versions_compare_by_prefix() {
        let m = json!({"torch": {"ok": true, "hip": "6.40.1", "cuda": null, "file": "/e/t.py"}});
        assert_eq!(
            judge(&m, Path::new("/e"), &exp("rocm", Some("6.4"))).len(),
            1
        );
        let m =
            json!({"torch": {"ok": true, "hip": "6.4.43484-123", "cuda": null, "file": "/e/t.py"}});
        assert!(judge(&m, Path::new("/e"), &exp("rocm", Some("6.4"))).is_empty());
    }

    #[test]
    fn import_failure_and_foreign_file_are_reported() {
        let m = json!({"jax": {"ok": false, "error": "ImportError: x"}, "triton": {"ok": true, "file": "/usr/lib/triton/__init__.py"}});
        let f = judge(&m, Path::new("/e"), &exp("cpu", None));
        let ids: Vec<_> = f.iter().map(|f| f.id.as_str()).collect();
        assert!(ids.contains(&"framework.import-failed"));
        assert!(ids.contains(&"framework.mismatch"));
    }

    #[test]
    fn modules_follow_the_wheels() {
        let w = vec![
            "torch".to_string(),
            "pytorch_triton_rocm".to_string(),
            "numpy".to_string(),
        ];
        assert_eq!(modules_for(&w), vec!["torch", "triton"]);
    }
}
