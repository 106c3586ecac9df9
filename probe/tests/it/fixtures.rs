//! Every case of every `probe/tests/fixtures/*/expect.toml` and
//! `probe/tests/unseen-formats/*/expect.toml`: run the `--from` engine on
//! the case's files (real text captured from real machines) and check the
//! doctor's JSON against the expectation: each listed GPU (vendor, name,
//! gfx, VF) matched one-to-one and no extra GPU, each fact, and every
//! `must` / `must_not` finding id.
//!
//! A case doctor cannot get right yet (or whose expectation we believe is
//! wrong) goes into its corpus's known-wrong list with the reason, printed
//! on every run; a listed case that passes fails the run, so the list never
//! goes stale. docs/doctor.md ("The corpus") gives the counts.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// (folder, case key, why doctor is not right on it yet, or why the
/// expectation is believed wrong).
type KnownWrong = &'static [(&'static str, &'static str, &'static str)];

/// The fixture corpus: every case right.
const KNOWN_WRONG: KnownWrong = &[];

/// Pastes in formats doctor had no reader for (expect.toml written before
/// greta ran on them).
const UNSEEN_KNOWN_WRONG: KnownWrong = &[
    (
        "a1111-win-form-amd-rx6000-torch-not-able-to-use-gpu",
        "all",
        "a GPU named only by its family (the issue form's \"AMD GPUs (RX 6000 above)\") is no GPU to the scan: a family name is as often a support list as a machine, so the CPU fallback is not raised",
    ),
    (
        "mcxcl-prose-rx480-r9-nano-dpkg-amdgpu-pro-lshw-cut",
        "all",
        "both cards are read (gfx803 each), but the R9 Nano is named as pci.ids spells it (\"AMD Radeon NANO Series\"), not as the paste does",
    ),
];

fn corpus_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name);
    assert!(d.is_dir(), "fixtures not found at {}", d.display());
    d
}

fn doctor_json(dir: &Path, files: &[String]) -> Value {
    let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
    let run = greta_probe::from_files(&paths).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let r = run.into_report();
    serde_json::from_str(&r.to_json()).expect("report JSON parses")
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Does actual GPU `a` satisfy expected table `e`?
fn gpu_matches(e: &toml::Value, a: &Value) -> bool {
    if let Some(v) = e.get("vendor").and_then(|v| v.as_str()) {
        if s(a, "vendor") != v {
            return false;
        }
    }
    if let Some(n) = e.get("name_contains").and_then(|v| v.as_str()) {
        if !s(a, "name").contains(n) {
            return false;
        }
    }
    if let Some(g) = e.get("gfx").and_then(|v| v.as_str()) {
        if s(a, "gfx") != g {
            return false;
        }
    }
    if let Some(vf) = e.get("vf").and_then(|v| v.as_bool()) {
        if a.get("vf").and_then(Value::as_bool) != Some(vf) {
            return false;
        }
    }
    true
}

/// One-to-one assignment of expected GPUs to actual ones (backtracking;
/// the lists are short).
fn assign(exp: &[toml::Value], act: &[Value], used: &mut Vec<bool>, i: usize) -> bool {
    if i == exp.len() {
        return true;
    }
    for j in 0..act.len() {
        if !used[j] && gpu_matches(&exp[i], &act[j]) {
            used[j] = true;
            if assign(exp, act, used, i + 1) {
                return true;
            }
            used[j] = false;
        }
    }
    false
}

fn check_case(dir: &Path, key: &str, case: &toml::Value) -> Vec<String> {
    let mut errs = Vec::new();
    let files: Vec<String> = case
        .get("files")
        .and_then(|f| f.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !files.is_empty(),
        "{}: case {key} lists no files",
        dir.display()
    );
    let j = doctor_json(dir, &files);
    assert_eq!(j["schema"], "greta.doctor/v1");
    let gpus: Vec<Value> = j["facts"]["gpus"].as_array().cloned().unwrap_or_default();
    let exp: Vec<toml::Value> = case
        .get("gpu")
        .and_then(|g| g.as_array())
        .cloned()
        .unwrap_or_default();
    let brief = |g: &Value| {
        format!(
            "{}/{}/{}/vf={}",
            s(g, "vendor"),
            s(g, "name"),
            s(g, "gfx"),
            g["vf"]
        )
    };
    if gpus.len() != exp.len() {
        errs.push(format!(
            "expected {} GPU(s), doctor reports {}: {:?}",
            exp.len(),
            gpus.len(),
            gpus.iter().map(brief).collect::<Vec<_>>()
        ));
    } else if !assign(&exp, &gpus, &mut vec![false; gpus.len()], 0) {
        errs.push(format!(
            "GPUs do not match {exp:?}: doctor reports {:?}",
            gpus.iter().map(brief).collect::<Vec<_>>()
        ));
    }
    if let Some(facts) = case.get("facts") {
        let f = &j["facts"];
        for (k, actual) in [
            ("rocm_version", &f["rocm"]["version"]),
            ("kernel_driver_version", &f["kernel_driver_version"]),
        ] {
            if let Some(want) = facts.get(k).and_then(|v| v.as_str()) {
                if !actual.as_str().unwrap_or("").contains(want) {
                    errs.push(format!("{k}: want {want:?}, doctor reports {actual}"));
                }
            }
        }
        if let Some(want) = facts.get("vulkan_drivers").and_then(|v| v.as_array()) {
            let have: Vec<&str> = f["vulkan"]["drivers"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for w in want.iter().filter_map(|x| x.as_str()) {
                if !have.iter().any(|h| h.contains(w)) {
                    errs.push(format!(
                        "vulkan_drivers: want {w:?}, doctor reports {have:?}"
                    ));
                }
            }
        }
    }
    let raised: Vec<&str> = j["findings"]
        .as_array()
        .map(|a| a.iter().map(|x| s(x, "id")).collect())
        .unwrap_or_default();
    if let Some(fnd) = case.get("findings") {
        // The ids a list of the case names (`must`, `must_not`).
        let listed = |key: &str| -> Vec<&str> {
            fnd.get(key)
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str())
                .collect()
        };
        for id in listed("must") {
            if !raised.contains(&id) {
                errs.push(format!("must raise {id}; raised {raised:?}"));
            }
        }
        for id in listed("must_not") {
            if raised.contains(&id) {
                let ev = j["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| s(x, "id") == id)
                    .map(|x| x["evidence"].to_string());
                errs.push(format!(
                    "must not raise {id} (a false alarm); evidence {}",
                    ev.unwrap_or_default()
                ));
            }
        }
        // Raised, and only as a warning: the text proves no failure.
        for id in listed("warn") {
            let sev: Vec<&str> = j["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|x| s(x, "id") == id)
                .map(|x| s(x, "severity"))
                .collect();
            if sev != ["warn"] {
                errs.push(format!("must raise {id} as a warning; raised as {sev:?}"));
            }
        }
    }
    errs
}

#[test]
fn every_fixture_case_matches_its_expectation() {
    run_corpus("fixtures", KNOWN_WRONG, 147, 171);
}

#[test]
fn every_unseen_format_case_matches_its_expectation() {
    run_corpus("unseen-formats", UNSEEN_KNOWN_WRONG, 151, 151);
}

/// Runs every case of `probe/tests/<name>/`; at least `min_folders`
/// folders and `min_cases` cases must run.
fn run_corpus(name: &str, known_wrong: KnownWrong, min_folders: usize, min_cases: usize) {
    let root = corpus_dir(name);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let (mut passed, mut failed, mut known) = (0, Vec::new(), 0);
    let mut folders = 0;
    for dir in &dirs {
        let exp = dir.join("expect.toml");
        assert!(exp.is_file(), "{} has no expect.toml", dir.display());
        folders += 1;
        let t: toml::Value = toml::from_str(&std::fs::read_to_string(&exp).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", exp.display()));
        let cases = t
            .get("case")
            .and_then(|c| c.as_table())
            .unwrap_or_else(|| panic!("{}: no [case.*]", exp.display()));
        let folder = dir.file_name().unwrap().to_string_lossy().to_string();
        for (key, case) in cases {
            let errs = check_case(dir, key, case);
            let wrong = known_wrong
                .iter()
                .find(|(f, k, _)| *f == folder && k == key);
            match (errs.is_empty(), wrong) {
                (true, None) => passed += 1,
                (true, Some(_)) => failed.push(format!(
                    "{folder} [{key}]: listed as known wrong but passes now: remove it"
                )),
                (false, Some((_, _, why))) => {
                    known += 1;
                    eprintln!(
                        "KNOWN WRONG {name}/{folder} [{key}]: {why}\n    {}",
                        errs.join("\n    ")
                    );
                }
                (false, None) => {
                    failed.push(format!("{folder} [{key}]:\n    {}", errs.join("\n    ")))
                }
            }
        }
    }
    eprintln!(
        "{name}: {folders} folders, {passed} cases pass, {known} known-wrong, {} fail",
        failed.len()
    );
    assert!(
        folders >= min_folders && passed + known + failed.len() >= min_cases,
        "too few {name} cases ran ({folders} folders)"
    );
    assert!(
        failed.is_empty(),
        "{} {name} case(s) fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

// That no fix contradicts its finding, over this corpus and the others, is
// probe/src/rules/contradicts.rs (its relation: probe/fix-contradictions.toml).
