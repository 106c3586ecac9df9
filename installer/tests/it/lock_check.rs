//! `greta lock check` on the shipped lockfiles, and on lockfiles broken in
//! each way it must catch. The shipped hashes are also compared with the
//! independent record in lock/sources (what they were copied from).

use crate::lock_support::*;
use std::collections::BTreeMap;

#[test]
fn shipped_lockfiles_pass() {
    let o = greta_lock(&shipped_lock_dir(), &["check", "--json"]);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(v["ok"], true);
    let profiles = v["profiles"].as_array().unwrap();
    let status: BTreeMap<&str, &str> = profiles
        .iter()
        .map(|p| {
            (
                p["profile"].as_str().unwrap(),
                p["status"].as_str().unwrap(),
            )
        })
        .collect();
    for p in ["cpu", "cuda", "rocm7.2", "rocm6.4", "rocm6.3"] {
        assert_eq!(status[p], "locked", "{p}");
    }
    assert!(
        status["rocm6.1"].starts_with("not-locked: "),
        "{}",
        status["rocm6.1"]
    );
    // cpu must serve the machine's Python 3.11 and the newest jax's 3.12
    let cpu = profiles.iter().find(|p| p["profile"] == "cpu").unwrap();
    let pys: Vec<&str> = cpu["wheel_sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[0].as_str().unwrap())
        .collect();
    assert!(pys.contains(&"3.11") && pys.contains(&"3.12"), "{pys:?}");
}

/// Every pinned download.pytorch.org wheel carries exactly the sha256 the
/// pins file records for that file name, and every ROCm torch/triton entry
/// names its source in a comment.
#[test]
fn rocm_pins_match_the_shared_record() {
    let pins_text = std::fs::read_to_string(sources_dir().join("torch-rocm-pins.toml"))
        .expect("lock/sources present");
    let pins: toml::Value = toml::from_str(&pins_text).unwrap();
    let by_file: BTreeMap<String, String> = pins["pin"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["filename"].as_str().unwrap().to_string(),
                p["sha256"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut checked = 0;
    for lf in [
        "pylock.rocm7-2.toml",
        "pylock.rocm6-4.toml",
        "pylock.rocm6-3.toml",
    ] {
        let text = std::fs::read_to_string(shipped_lock_dir().join(lf)).unwrap();
        let doc: toml::Value = toml::from_str(&text).unwrap();
        for pkg in doc["packages"].as_array().unwrap() {
            for w in pkg["wheels"].as_array().unwrap() {
                let url = w["url"].as_str().unwrap();
                if !url.contains("download.pytorch.org") {
                    continue;
                }
                let name = w["name"].as_str().unwrap();
                let sha = w["hashes"]["sha256"].as_str().unwrap();
                assert_eq!(
                    by_file.get(name).map(String::as_str),
                    Some(sha),
                    "{lf}: {name}"
                );
                assert!(
                    text.contains(&format!(
                        "# {name}: sha256 copied from torch-rocm-pins.toml"
                    )),
                    "{lf}: no source comment for {name}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 12, "only {checked} pinned wheels found");
}

/// PyPI wheels that the shared pins also recorded (read from PyPI's JSON
/// API separately) agree on sha256 and size.
#[test]
fn pypi_entries_agree_with_the_shared_record() {
    let pins: toml::Value =
        toml::from_str(&std::fs::read_to_string(sources_dir().join("pypi-pins.toml")).unwrap())
            .unwrap();
    let mut checked = 0;
    for lf in [
        "pylock.cpu.toml",
        "pylock.cuda.toml",
        "pylock.rocm7-2.toml",
        "pylock.rocm6-4.toml",
        "pylock.rocm6-3.toml",
    ] {
        let text = std::fs::read_to_string(shipped_lock_dir().join(lf)).unwrap();
        for p in pins["pin"].as_array().unwrap() {
            let url = p["url"].as_str().unwrap();
            if let Some(at) = text.find(url) {
                let line = &text[at..text[at..].find('\n').map(|i| at + i).unwrap_or(text.len())];
                assert!(
                    line.contains(p["hashes"]["sha256"].as_str().unwrap()),
                    "{lf}: {url}"
                );
                assert!(
                    line.contains(&format!("size = {}", p["size"].as_integer().unwrap())),
                    "{lf}: {url}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 5, "only {checked} overlaps with pypi-pins");
}

fn check_fails_with(edit: impl FnOnce(&std::path::Path), expect: &[&str]) {
    let d = copy_lock_dir();
    edit(d.path());
    let o = greta_lock(d.path(), &["check"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    for e in expect {
        assert!(out.contains(e), "expected {e:?} in:\n{out}");
    }
}

/// Rewrites `file` of the lock dir `dir` as `edit` makes its text.
fn rewrite(dir: &std::path::Path, file: &str, edit: impl FnOnce(&str) -> String) {
    let p = dir.join(file);
    let t = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, edit(&t)).unwrap();
}

fn replace_in(dir: &std::path::Path, file: &str, from: &str, to: &str) {
    rewrite(dir, file, |t| {
        assert!(t.contains(from), "{from:?} not in {file}");
        t.replacen(from, to, 1)
    });
}

#[test]
fn missing_sha256_fails() {
    check_fails_with(
        |d| {
            rewrite(d, "pylock.cpu.toml", |t| {
                // drop the hashes of the typing-extensions wheel
                let start = t.find("typing_extensions-4.16.0-py3-none-any.whl").unwrap();
                let h = start + t[start..].find(", hashes = {").unwrap();
                let end = h + t[h..].find('}').unwrap() + 1;
                format!("{}{}", &t[..h], &t[end..])
            })
        },
        &[
            "typing_extensions-4.16.0-py3-none-any.whl has no sha256",
            "pylock.cpu.toml:",
        ],
    );
}

#[test]
fn plain_http_url_fails() {
    check_fails_with(
        |d| {
            replace_in(
                d,
                "pylock.rocm6-3.toml",
                "https://download.pytorch.org/whl/rocm6.3/torch-",
                "http://download.pytorch.org/whl/rocm6.3/torch-",
            )
        },
        &["non-https URL http://download.pytorch.org"],
    );
}

#[test]
fn overlapping_entries_fail() {
    check_fails_with(
        |d| {
            rewrite(d, "pylock.cpu.toml", |t| {
                let start = t.find("[[packages]]\nname = \"filelock\"").unwrap();
                let end = start + 12 + t[start + 12..].find("[[packages]]").unwrap();
                let dup = t[start..end].replace(
                    "version = \"4.2.11\"",
                    "version = \"4.2.11\"\nmarker = \"python_version >= '3.12'\"",
                );
                format!("{t}\n{dup}")
            })
        },
        &["two entries for filelock match this environment"],
    );
}

#[test]
fn matrix_and_lockfile_disagreeing_fails() {
    check_fails_with(
        |d| {
            replace_in(
                d,
                "matrix.toml",
                "\"torch==2.15.0\",\n  \"triton==3.9.0\",\n  \"jax==0.12.0.1",
                "\"torch==2.14.1\",\n  \"triton==3.9.0\",\n  \"jax==0.12.0.1",
            )
        },
        &["lockfile has torch 2.15.0 but matrix requires `torch==2.14.1`"],
    );
    check_fails_with(
        |d| {
            replace_in(
                d,
                "matrix.toml",
                "\"triton==3.9.0\",\n  \"jax==0.12.0.1",
                "\"triton==3.9.0\",\n  \"einops==0.8.0\",\n  \"jax==0.12.0.1",
            )
        },
        &["matrix requirement `einops==0.8.0` is not in the lockfile"],
    );
}

/// A wheel whose `url` names another file than its `name`
/// (another package, another version, an sdist) passed `lock check`.
#[test]
fn a_url_naming_another_file_fails() {
    let url = "https://files.pythonhosted.org/packages/49/d3/b8441a820a491ddfc024b0b0cf0393375b75ea13866d9c66727e54c2fc80/typing_extensions-4.16.0-py3-none-any.whl";
    for other in [
        "evil-4.16.0-py3-none-any.whl",
        "typing_extensions-4.15.0-py3-none-any.whl",
        "typing_extensions-4.16.0.tar.gz",
    ] {
        check_fails_with(
            |d| {
                replace_in(
                    d,
                    "pylock.cpu.toml",
                    &format!("{{ url = \"{url}\""),
                    &format!(
                        "{{ name = \"typing_extensions-4.16.0-py3-none-any.whl\", url = \"{}\"",
                        url.replace("typing_extensions-4.16.0-py3-none-any.whl", other)
                    ),
                )
            },
            &[
                "typing_extensions-4.16.0-py3-none-any.whl: its URL names another file",
                other,
            ],
        );
    }
}

/// `https:// evil.example/...` passed the `starts_with("https://")` test.
#[test]
fn a_url_without_a_host_fails() {
    check_fails_with(
        |d| {
            replace_in(
                d,
                "pylock.cpu.toml",
                "https://files.pythonhosted.org/packages/49/d3/",
                "https:// evil.example/packages/49/d3/",
            )
        },
        &["typing_extensions-4.16.0-py3-none-any.whl has an unparsable URL"],
    );
    check_fails_with(
        |d| {
            replace_in(
                d,
                "pylock.cpu.toml",
                "https://files.pythonhosted.org/packages/49/d3/",
                "https://:443/packages/49/d3/",
            )
        },
        &[
            "typing_extensions-4.16.0-py3-none-any.whl has an unparsable URL",
            "empty host",
        ],
    );
}

/// Two different wheels with one sha256: one of them is a copy error.
#[test]
fn two_wheels_with_one_sha256_fail() {
    check_fails_with(
        |d| {
            replace_in(
                d,
                "pylock.cpu.toml",
                "481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8",
                "020e229e4bb9d410fc799c07ddf45fa217cba970278f40b30751d94f309b69e2",
            )
        },
        &[
            "has the sha256 of filelock-4.2.11-py3-none-any.whl (",
            "two files, one hash",
        ],
    );
}

/// tools.toml: the uv wheel's `filename` and its `url` must name one file.
#[test]
fn tools_filename_and_url_disagreeing_fails() {
    check_fails_with(
        |d| {
            replace_in(
                d,
                "tools.toml",
                "c6b75fc4c3f/uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                "c6b75fc4c3f/uv-0.13.8-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            )
        },
        &["its URL names another file", "uv-0.13.8-py3"],
    );
}

/// Wheel URLs and index URLs with credentials (`user:pw@`, `?token=`):
/// `lock check` fails on them, and nothing greta prints of the lock set
/// (`lock show`, its `--json`, `lock list --json`, check's own report)
/// carries the secret; the URLs show as `https://***@host/...`.
#[test]
fn credentials_in_urls_fail_check_and_never_print() {
    let d = copy_lock_dir();
    rewrite(d.path(), "pylock.cpu.toml", |t| {
        t.replace(
            "https://files.pythonhosted.org/",
            "https://user:s3cret@files.pythonhosted.org/",
        )
        .replacen(".whl\", upload-time", ".whl?token=s3cret\", upload-time", 1)
    });
    replace_in(
        d.path(),
        "matrix.toml",
        "indexes = [\"https://pypi.org/simple\"]",
        "indexes = [\"https://me:s3cret@pypi.org/simple\"]",
    );
    let o = greta_lock(d.path(), &["check"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(
        out.contains(
            "its URL carries credentials (a user name or password, query parameter `token`)"
        ),
        "{out}"
    );
    assert!(out.contains("https://***@files.pythonhosted.org/"), "{out}");
    for args in [
        &["check", "--json"][..],
        &["show", "cpu"],
        &["show", "cpu", "--json"],
        &["list", "--json"],
        &["list"],
    ] {
        let o = greta_lock(d.path(), args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!all.contains("s3cret"), "{args:?}:\n{all}");
        assert!(!all.contains("panicked"), "{args:?}:\n{all}");
    }
    let v = json(&greta_lock(d.path(), &["show", "cpu", "--json"]));
    let urls: Vec<&str> = v["sets"][0]["wheels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["url"].as_str())
        .filter(|u| u.contains("files.pythonhosted.org"))
        .collect();
    assert!(!urls.is_empty(), "{v}");
    assert!(
        urls.iter()
            .all(|u| u.starts_with("https://***@files.pythonhosted.org/")),
        "{urls:?}"
    );
    assert_eq!(v["profile"]["indexes"][0], "https://***@pypi.org/simple");
}
