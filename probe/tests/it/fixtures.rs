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
        "a1111-form-4700g-apu-and-tesla-p40-torch-not-able",
        "all",
        "an AMD APU named by its CPU model (\"AMD APU (Ryzen 4700g)\") is no GPU to the scan",
    ),
    (
        "a1111-win-form-amd-rx6000-torch-not-able-to-use-gpu",
        "all",
        "a GPU named only by its family (\"AMD GPUs (RX 6000 above)\") is no GPU to the scan, so the CPU fallback is not raised",
    ),
    (
        "amdvlk-issue-prose-8060s-gfx1151-driverid-lines-both-drivers",
        "all",
        "vulkaninfo's `driverID = DRIVER_ID_MESA_RADV` / `driverName = radv` outside a vulkaninfo block name no driver",
    ),
    (
        "bazzite-journal-raphael-igpu-164e-and-dcn32-card-reg-wait",
        "all",
        "KFD's `Topology: Add GPU node [0x1002:0x164e]` gives no device id to its GPU",
    ),
    (
        "clinfo-app-sdk-a10-7850k-r7-graphics-two-devices",
        "all",
        "a clinfo device block cut before its `Name:` gives no device",
    ),
    (
        "clinfo-rocm1.6-fiji-board-name-r9-fury-nano",
        "all",
        "the board name clinfo printed is replaced by a product name",
    ),
    (
        "clinfo-rocm1.6-mi25-board-device-6860-four-devices",
        "all",
        "a clinfo device block cut before its `Name:` gives no device",
    ),
    (
        "cosmic-fetch-list-dmesg-5700xt-ring-reset-failed-baco",
        "all",
        "a kernel log's GPU known only by its address does not take the one GPU the paste names",
    ),
    (
        "fastfetch-json-unindented-raphael-and-rx7600",
        "all",
        "a codename whose vendor stands on another line of its record (JSON `\"vendor\": \"AMD\"`) is no GPU",
    ),
    (
        "inxi-pinxi-Gay1-cedar-hd5000-series-radeon-driver-terascale",
        "all",
        "a codename and the PCI id of a card of that chip are two GPUs",
    ),
    (
        "k8s-node-labels-mi300x-vf-74b5-eight-gpus-driver-6.8.5",
        "all",
        "AMD's Kubernetes node labels are a format no reader knows (eight GPUs as a count, the driver version)",
    ),
    (
        "koboldcpp-rocm-fork-set-hsa-override-10.3.0-banner",
        "all",
        "an override an application sets and prints (`Set AMD HSA_OVERRIDE_GFX_VERSION to 10.3.0`) is not read",
    ),
    (
        "koboldcpp-rocm-win-radeon-vii-gfx906-hip-5.7.1-unable-to-detect-vram",
        "all",
        "the GPU's name on a hardware line is lost to its bare target",
    ),
    (
        "lmstudio-rocmlibs-win-gfx1031-unsupported-engine-node-missing",
        "all",
        "a target inside a URL (`ROCmLibs-for-gfx1103-AMD780M-APU`) is taken for a GPU",
    ),
    (
        "mcxcl-prose-rx480-r9-nano-dpkg-amdgpu-pro-lshw-cut",
        "all",
        "a line with \"AMD GPUs\" is skipped as LLVM's target list; two cards of one target would be one GPU",
    ),
    (
        "proxmox-pr-quoted-lspci-nn-rembrandt-680m-1681",
        "all",
        "lspci's printed name loses its bracketed product (\"Rembrandt [Radeon 680M]\")",
    ),
    (
        "radeontop-pr-lspci-line-navi23-6650xt-73ef",
        "all",
        "lspci's printed name loses its bracketed product (\"Navi 23 [Radeon RX 6650 XT]\")",
    ),
    (
        "rocblas-issue-rocminfo-agent9-7900xtx-node8",
        "all",
        "a rocminfo agent cut before its Device Type keeps no Marketing Name",
    ),
    (
        "sdwebui-amdgpu-win10-amd6500xt-glued-torch-not-able",
        "all",
        "a model glued to the vendor name (\"AMD6500XT\") is no GPU",
    ),
    (
        "vkd3d-kde-sysinfo-9070xt-relative-dmesg-ring-timeout",
        "all",
        "a kernel log's GPU known only by its address does not take the GPUs the paste names; an APU named by its CPU is no GPU",
    ),
    (
        "wmic-videocontroller-key-value-intel-hd-5500",
        "all",
        "an Intel name (\"Intel(R) HD Graphics 5500\") is read as AMD's HD 5500 Series",
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
