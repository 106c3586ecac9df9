//! The format-agnostic scan of `--from` reads every line of every paste:
//! it must find a GPU named in a shape no reader knows, and nothing at all
//! in text that is not about this machine's GPU (licences, source code).

use std::path::{Path, PathBuf};

/// A few MB of unrelated English and source code from this machine: the
/// licence texts Debian ships and the Rust sources of the crates the
/// workspace depends on (Vulkan bindings included, full of "AMD" and
/// "device"). Deterministic: sorted paths, cut at `limit` bytes.
fn unrelated_text(limit: usize) -> String {
    let mut files: Vec<PathBuf> = Vec::new();
    let lic = Path::new("/usr/share/common-licenses");
    assert!(lic.is_dir(), "{} is needed for this test", lic.display());
    for e in std::fs::read_dir(lic).unwrap().flatten() {
        files.push(e.path());
    }
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    let reg = home.join("registry/src");
    assert!(reg.is_dir(), "{} is needed for this test", reg.display());
    let mut stack = vec![reg];
    let mut rs = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                rs.push(p);
            }
        }
    }
    rs.sort();
    files.sort();
    files.extend(rs);
    let mut out = String::new();
    for f in files {
        if let Ok(t) = std::fs::read_to_string(&f) {
            out.push_str(&t);
            out.push('\n');
        }
        if out.len() >= limit {
            break;
        }
    }
    assert!(out.len() >= limit, "only {} bytes of text found", out.len());
    out
}

fn doctor(text: &str, name: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("greta-text-scan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    let run = greta_probe::from_files(std::slice::from_ref(&p)).unwrap();
    let _ = std::fs::remove_file(&p);
    serde_json::from_str(&run.into_report().to_json()).unwrap()
}

#[test]
fn unrelated_text_raises_no_gpu_and_no_finding() {
    let j = doctor(&unrelated_text(4 << 20), "licences-and-rust.txt");
    let gpus = j["facts"]["gpus"].as_array().cloned().unwrap_or_default();
    assert!(gpus.is_empty(), "GPUs from unrelated text: {gpus:#?}");
    let findings: Vec<_> = j["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f["severity"] != "ok")
        .collect();
    assert!(
        findings.is_empty(),
        "findings from unrelated text: {findings:#?}"
    );
}

#[test]
fn a_gpu_name_in_an_unknown_format_gives_the_gpu_and_its_target() {
    let j = doctor(
        "[Graphics]\nVendor:          AMD\nVulkan Drivers:  AMD Radeon RX 7800 XT (RADV NAVI32) (1.3.246)\n",
        "launcher.txt",
    );
    let g = &j["facts"]["gpus"][0];
    assert_eq!(j["facts"]["gpus"].as_array().unwrap().len(), 1, "{j:#}");
    assert!(g["name"].as_str().unwrap().contains("RX 7800 XT"), "{g}");
    assert_eq!(g["gfx"], "gfx1101");
    // The fact says where it came from: the scan, with its line.
    let scan = j["facts"]["text_scan"].as_array().unwrap();
    assert!(
        scan.iter()
            .any(|s| s["fact"] == "gpu"
                && s["evidence"].as_str().unwrap().contains("launcher.txt:3:"))
    );
    assert!(j["facts"]["gpus"][0]["seen_by"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s == "text-scan"));
}
