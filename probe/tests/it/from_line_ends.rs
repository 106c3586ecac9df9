//! A paste's lines may end in LF, CRLF (Windows) or CR alone (old Mac
//! files, some terminals' pastes): every fixture folder's pastes, written
//! with each of the three, must give the same report. With CR alone the
//! lines once all ran together and no GPU was found.

use std::path::{Path, PathBuf};

/// The texts of a fixture folder's pastes (what `--from` reads), with
/// every line end made LF by plain replacement.
fn pastes(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && !matches!(
                    p.file_name().and_then(|n| n.to_str()),
                    Some("expect.toml" | "SOURCE.md")
                )
        })
        .filter_map(|p| {
            let raw = std::fs::read(&p).ok()?;
            // UTF-16 and binary pastes are other tests' business.
            if raw.starts_with(&[0xff, 0xfe]) || raw.starts_with(&[0xfe, 0xff]) || raw.contains(&0)
            {
                return None;
            }
            let t = String::from_utf8_lossy(&raw)
                .replace("\r\n", "\n")
                .replace('\r', "\n");
            Some((p.file_name()?.to_string_lossy().into_owned(), t))
        })
        .collect();
    out.sort();
    out
}

/// The report of `files` written under `dir` with line ends `eol`, as
/// JSON with `dir` replaced by `DIR`.
fn report(dir: &Path, files: &[(String, String)], eol: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|(name, text)| {
            let p = dir.join(name);
            std::fs::write(&p, text.replace('\n', eol)).unwrap();
            p
        })
        .collect();
    let mut r = greta_probe::from_files(&paths).unwrap().into_report();
    // Times differ from run to run.
    for c in &mut r.checks {
        c.duration_ms = 0.0;
    }
    let dir = dir.display().to_string();
    r.to_json().replace(&dir, "DIR")
}

#[test]
fn cr_crlf_and_lf_line_ends_give_the_same_report() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let tmp = tempfile::tempdir().unwrap();
    let mut compared = 0;
    let mut gpus = 0;
    for d in &dirs {
        let files = pastes(d);
        if files.is_empty() {
            continue;
        }
        let lf = report(&tmp.path().join("lf"), &files, "\n");
        for (eol, name) in [("\r", "cr"), ("\r\n", "crlf")] {
            let other = report(&tmp.path().join(name), &files, eol);
            assert!(
                other == lf,
                "{}: {name} line ends give another report\n--- lf\n{lf}\n--- {name}\n{other}",
                d.display()
            );
        }
        let v: serde_json::Value = serde_json::from_str(&lf).unwrap();
        gpus += usize::from(v["facts"]["gpus"].as_array().is_some_and(|g| !g.is_empty()));
        compared += 1;
        std::fs::remove_dir_all(tmp.path()).unwrap();
    }
    // The corpus holds some 300 folders, most naming a GPU (191 on 2026-11-29).
    assert!(
        compared >= 250 && gpus >= 150,
        "{compared} folders, {gpus} with a GPU"
    );
}
