//! `--from`: a file's glyph and the summary's counts include every
//! finding, also one whose evidence cites no `file:line` (a fact such as
//! "Vulkan device llvmpipe"), so a warning never stands beside a ✓ and
//! "0 with warnings".

use greta_probe::{CheckStatus, Report, Severity};
use std::path::{Path, PathBuf};

fn report(dir: &Path, files: &[&str]) -> Report {
    let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
    greta_probe::from_files(&paths).unwrap().into_report()
}

fn status_of(s: Severity) -> CheckStatus {
    match s {
        Severity::Fail => CheckStatus::Fail,
        Severity::Warn => CheckStatus::Warn,
        Severity::Ok => CheckStatus::Pass,
    }
}

fn rank(s: CheckStatus) -> u8 {
    match s {
        CheckStatus::Pass => 0,
        CheckStatus::Warn => 1,
        CheckStatus::Fail => 2,
    }
}

/// A llama.cpp log whose only Vulkan device is llvmpipe: the warning's
/// evidence is a fact, not a line; the file shows `!` and the summary
/// counts it.
#[test]
fn an_uncited_warning_marks_its_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/llamacpp-ctest-vulkan-llvmpipe-only-device-type-cpu");
    let r = report(&dir, &["ctest.txt"]);
    let cpu = r
        .findings
        .iter()
        .find(|f| f.id == "vulkan.cpu-only")
        .expect("vulkan.cpu-only");
    assert!(
        !cpu.evidence.iter().any(|e| e.contains("ctest.txt:")),
        "the case needs evidence with no file:line: {:?}",
        cpu.evidence
    );
    assert_eq!(r.checks[0].status, CheckStatus::Warn, "{:?}", r.checks);
    let out = r.render(false);
    assert!(
        out.contains("1 file (0 passed, 1 with warnings, 0 failed)"),
        "{out}"
    );
}

/// Two files, one the finding's own: only that file is marked.
#[test]
fn an_uncited_finding_marks_the_file_that_raises_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let llvmpipe = dir.join("llamacpp-ctest-vulkan-llvmpipe-only-device-type-cpu/ctest.txt");
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("uname.txt");
    std::fs::write(
        &other,
        "Linux box 6.8.0-45-generic #45-Ubuntu SMP PREEMPT_DYNAMIC x86_64 GNU/Linux\n",
    )
    .unwrap();
    let r = greta_probe::from_files(&[other, llvmpipe])
        .unwrap()
        .into_report();
    assert!(r.findings.iter().any(|f| f.id == "vulkan.cpu-only"));
    assert_eq!(r.checks[1].status, CheckStatus::Warn, "{:?}", r.checks);
    assert_ne!(r.checks[0].status, CheckStatus::Fail, "{:?}", r.checks);
}

/// Every case of both corpora: the worst finding shows on at least one
/// file's line, so the summary's check counts agree with its findings.
#[test]
fn every_finding_shows_on_a_file_in_every_case() {
    let mut bad = Vec::new();
    let mut cases = 0;
    for corpus in ["fixtures", "unseen-formats"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(corpus);
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for dir in dirs {
            let t: toml::Value =
                toml::from_str(&std::fs::read_to_string(dir.join("expect.toml")).unwrap()).unwrap();
            for (key, case) in t["case"].as_table().unwrap() {
                let files: Vec<&str> = case["files"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|x| x.as_str())
                    .collect();
                cases += 1;
                let r = report(&dir, &files);
                let Some(worst) = r.findings.iter().map(|f| f.severity).max() else {
                    continue;
                };
                let shown = r.checks.iter().map(|c| rank(c.status)).max().unwrap_or(0);
                if shown < rank(status_of(worst)) {
                    bad.push(format!(
                        "{corpus}/{} [{key}]: worst finding {worst:?}, files show {:?}",
                        dir.file_name().unwrap().to_string_lossy(),
                        r.checks.iter().map(|c| c.status).collect::<Vec<_>>()
                    ));
                }
            }
        }
    }
    assert!(cases >= 213, "only {cases} cases ran");
    assert!(bad.is_empty(), "{} case(s):\n{}", bad.len(), bad.join("\n"));
}
