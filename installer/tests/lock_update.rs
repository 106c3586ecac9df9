//! `greta lock update`: post-processing of real uv output (replayed by a
//! stand-in uv, offline), comment preservation, and a dead index.

mod lock_support;

use lock_support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const MATRIX: &str = r#"schema = 1

[profiles.mini]
backend = "cpu"
summary = "test profile"
status = "locked"
serves = "*"
python = ["3.11", "3.12"]
indexes = ["https://pypi.org/simple"]
requirements = [
  "jax==0.12.0.1 ; python_version >= '3.12'",
  "jax==0.10.2 ; python_version < '3.12'",
  "typing-extensions==4.16.0",
]
lockfile = "pylock.mini.toml"
"#;

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
    std::fs::write(d.path().join("matrix.toml"), MATRIX).unwrap();
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
        j["sets"][0]["wheels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == n)
            .map(|w| w["version"].as_str().unwrap().to_string())
    };
    assert_eq!(ver(&j311, "jax").as_deref(), Some("0.10.2"));
    assert_eq!(ver(&j312, "jax").as_deref(), Some("0.12.0.1"));
    assert!(j311["sets"][0]["wheels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "jaxlib")
        .unwrap()["filename"]
        .as_str()
        .unwrap()
        .contains("cp311"));

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
    let m = MATRIX.replace("https://pypi.org/simple", "https://127.0.0.1:9/simple");
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
    std::fs::write(d.path().join("matrix.toml"), MATRIX).unwrap();
    let uv = d.path().join("uv");
    std::fs::write(&uv, "#!/bin/sh\n[ \"$1\" = --version ] && { echo uv; exit 0; }\necho 'error: no solution found' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&uv, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = snapshot(d.path());
    let o = greta_lock(d.path(), &["update", "mini", "--uv", uv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no solution found"), "{}", stderr(&o));
    assert_eq!(before, snapshot(d.path()));
}
