//! Pins what `greta install` writes, byte for byte, in every shape it has:
//! `--json` planned (`--dry-run`), installed, up to date, failed after the
//! plan and refused before it, and the env's `greta-env.json`. The pinned
//! texts (`install_schema/*.json`) were captured from greta before these
//! outputs were given types, so a type that changed a key, its
//! order or a value's form fails here. Only what differs from run to run is
//! masked (temporary paths, the Python, hashes of random wheel bytes, times).

use crate::support::{self, text, Harness};
use std::path::{Path, PathBuf};

fn pinned(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/install_schema")
        .join(name)
}

fn mi300x_sysroot() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe/tests/sysroots/mi300x-vf")
}

/// `text` with what differs between runs masked: the harness dir, the
/// server's port, the interpreter (path and version), 64-hex hashes,
/// RFC 3339 times, the verified file count and every timing.
fn masked(h: &Harness, text: &str) -> String {
    let py = support::python();
    let (version, executable) = python_version();
    let mut s = text
        .replace(&h.dir.path().display().to_string(), "$HARNESS")
        .replace(env!("CARGO_MANIFEST_DIR"), "$MANIFEST")
        .replace(&format!(":{}/", h.server.addr.port()), ":$PORT/")
        .replace(&format!("\"{}\"", version), "\"$PYTHON_VERSION\"")
        .replace(&format!("python{}", support::python_xy()), "python$XY");
    for p in [PathBuf::from(executable), py] {
        s = s
            .replace(&format!("\"{}\"", p.display()), "\"$PYTHON\"")
            .replace(&format!("--python {}\"", p.display()), "--python $PYTHON\"");
    }
    let mut out = String::new();
    let mut in_timings = false;
    for line in s.lines() {
        let key = line.trim_start();
        let mut l = mask_hex(line);
        // The tag's rank depends on the interpreter's tag list.
        if let Some((head, tail)) = l.split_once(" (rank ") {
            let rest = tail.split_once(')').map(|(_, r)| r).unwrap_or("");
            l = format!("{head} (rank $RANK){rest}");
        }
        if key.starts_with("\"created\": ") || key.starts_with("\"receipt_created\": ") {
            let (k, _) = l.split_once(": ").unwrap();
            l = format!("{k}: \"$TIME\",");
            if !line.ends_with(',') {
                l.pop();
            }
        }
        if ["\"files\": ", "\"greta_version\": ", "\"installer\": "]
            .iter()
            .any(|k| key.starts_with(k))
        {
            let (k, _) = l.split_once(": ").unwrap();
            l = format!("{k}: $N{}", if line.ends_with(',') { "," } else { "" });
        }
        if in_timings && key.starts_with('"') {
            let (k, _) = l.split_once(": ").unwrap();
            l = format!("{k}: $MS{}", if line.ends_with(',') { "," } else { "" });
        }
        if key.starts_with("\"timings_ms\": {") {
            in_timings = true;
        } else if in_timings && key.starts_with('}') {
            in_timings = false;
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Every run of 64 hex digits (a sha256 of the random wheel bytes) as `$SHA`.
fn mask_hex(line: &str) -> String {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if run == 64 {
            out.push_str("$SHA");
            i += 64;
        } else {
            let n = run.max(1);
            out.push_str(&line[i..i + n]);
            i += n;
        }
    }
    out
}

/// The test interpreter's full version and `sys.executable` (behind a
/// pyenv shim: what the plan records).
fn python_version() -> (String, String) {
    let o = std::process::Command::new(support::python())
        .args([
            "-c",
            "import platform, sys; print(platform.python_version()); print(sys.executable)",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    let mut lines = out.lines();
    let version = lines.next().unwrap_or_default().to_string();
    (version, lines.next().unwrap_or_default().to_string())
}

/// Compares with the pinned text (which changes only by hand, on purpose:
/// the failure prints the text as it is now).
fn assert_pinned(name: &str, got: &str) {
    let p = pinned(name);
    let want = std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}\n--- now\n{got}", p.display()));
    if want != got {
        let first = want
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(got.lines().count()));
        panic!(
            "{name} differs from its pin at line {}:\n  pinned: {:?}\n  now:    {:?}\n--- now\n{got}",
            first + 1,
            want.lines().nth(first),
            got.lines().nth(first)
        );
    }
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// `greta install --profile cpu --python P --no-smoke --json` on the
/// captured MI300X machine (a probe summary with a GPU in it), with `extra`.
fn install_json(h: &Harness, extra: &[&str]) -> std::process::Output {
    let sysroot = mi300x_sysroot();
    let mut args = vec!["--json", "--sysroot", sysroot.to_str().unwrap()];
    args.extend_from_slice(extra);
    h.install_plain(&args)
}

#[test]
fn planned_json_is_pinned() {
    let h = Harness::new(1_000);
    let o = install_json(&h, &["--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_pinned("planned.json", &masked(&h, &stdout(&o)));
}

#[test]
fn installed_up_to_date_and_receipt_are_pinned() {
    support::require_uv();
    let h = Harness::new(1_000);
    let o = install_json(&h, &["--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_pinned("installed.json", &masked(&h, &stdout(&o)));
    let receipt = std::fs::read_to_string(h.env_dir("cpu").join("greta-env.json")).unwrap();
    assert_pinned("receipt.json", &masked(&h, &receipt));
    let o = install_json(&h, &["--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_pinned("up-to-date.json", &masked(&h, &stdout(&o)));
}

#[test]
fn failed_json_is_pinned() {
    let h = Harness::new(1_000);
    // Offline with an empty cache: planned, then nothing to install from.
    let o = install_json(&h, &["--offline"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_pinned("failed.json", &masked(&h, &stdout(&o)));
}

#[test]
fn refused_bundle_json_is_pinned() {
    let h = Harness::new(1_000);
    let bundle = h.dir.path().join("bundle");
    let o = h.bundle_command(&bundle, &[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let m = bundle.join("greta-bundle.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
    v["arch"] = "not-this-arch".into();
    std::fs::write(&m, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = h
        .bundle_install_command(&bundle, &support::python(), &["--json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let got = masked(&h, &stdout(&o)).replace(std::env::consts::ARCH, "$ARCH");
    assert_pinned("refused-bundle.json", &got);
}
