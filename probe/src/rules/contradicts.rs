//! The relation "a finding's own words, or the facts beside it, rule out a
//! command of its fix" (`probe/fix-contradictions.toml`), and the test
//! that holds every rule to it over every corpus case: the pasted texts of
//! `tests/fixtures` and `tests/unseen-formats` and the captured machines of
//! `tests/sysroots`. It is a judge independent of the engine: the rules
//! fill fixes from the evidence, this reads what came out.

use crate::facts::Facts;
use crate::report::Report;
use crate::rules::Finding;
use greta_vocab::VkFamily;
use serde::Deserialize;

const RELATION: &str = include_str!("../../fix-contradictions.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relation {
    says: Vec<Says>,
    variable: Vec<Variable>,
    installed: Vec<Installed>,
    beside: Vec<Beside>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Says {
    why: String,
    words: Vec<String>,
    command: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Variable {
    name: String,
    terms: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Installed {
    why: String,
    package: String,
    fact: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Beside {
    finding: String,
    why: String,
    packages: Vec<String>,
    commands: Vec<String>,
    unless: Vec<String>,
}

pub fn relation() -> Relation {
    toml::from_str(RELATION).expect("fix-contradictions.toml parses")
}

/// The facts an `installed` row may name.
fn fact_holds(name: &str, f: &Facts) -> bool {
    match name {
        // RADV's manifest with a library that loads (or not known not to),
        // or a device it drives.
        "radv_working" => {
            f.vulkan.icds.iter().any(|i| {
                i.kind == VkFamily::Radv && i.library_ok != Some(false) && i.error.is_none()
            }) || f.vulkan.devices.iter().any(|d| d.kind == VkFamily::Radv)
        }
        "vulkan_loader_present" => f.vulkan.loader.is_some(),
        other => panic!("fix-contradictions.toml: unknown fact {other:?}"),
    }
}

/// The variables a command sets or unsets: `NAME=` where NAME is an upper
/// case identifier standing alone (start, space, quote before it), and
/// the names after `unset`.
pub fn variables_set(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = cmd.as_bytes();
    let is_name = |c: u8| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_uppercase()
            && (i == 0 || matches!(b[i - 1], b' ' | b'"' | b'\'' | b';' | b'('));
        if starts {
            let mut j = i;
            while j < b.len() && is_name(b[j]) {
                j += 1;
            }
            if j < b.len() && b[j] == b'=' && j - i >= 3 {
                out.push(cmd[i..j].to_string());
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    let words: Vec<&str> = cmd.split_whitespace().collect();
    for (k, w) in words.iter().enumerate() {
        if *w == "unset" {
            out.extend(
                words[k + 1..]
                    .iter()
                    .take_while(|x| x.bytes().all(is_name))
                    .map(|x| x.to_string()),
            );
        }
    }
    out
}

/// Whether `cmd` installs `package` with a package manager.
pub fn installs(cmd: &str, package: &str) -> bool {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let install = words.windows(2).any(|w| {
        matches!(
            w,
            ["apt", "install"] | ["apt-get", "install"] | ["dnf", "install"] | ["pacman", "-S"]
        )
    });
    install && words.contains(&package)
}

/// The finding's words: title, message, fix text and evidence, lower case.
fn words(f: &Finding) -> String {
    format!(
        "{} {} {} {}",
        f.title,
        f.message,
        f.fix.text,
        f.evidence.join(" ")
    )
    .to_lowercase()
}

impl Relation {
    /// Every command of `report`'s findings that the relation refutes, as
    /// "ID: `command`: why".
    pub fn contradictions(&self, report: &Report) -> Vec<String> {
        let mut out = Vec::new();
        let raised = |id: &str| report.findings.iter().any(|f| f.id == id);
        for f in &report.findings {
            let said = words(f);
            let has = |w: &str| said.contains(&w.to_lowercase());
            for c in &f.fix.commands {
                let mut bad = |why: &str| out.push(format!("{}: `{c}`: {why}", f.id));
                if c.trim().is_empty() {
                    bad("an empty command");
                }
                for r in &self.says {
                    if c.contains(&r.command) && r.words.iter().any(|w| has(w)) {
                        bad(&r.why);
                    }
                }
                for v in variables_set(c) {
                    match self.variable.iter().find(|r| r.name == v) {
                        None => bad(&format!(
                            "sets {v}, which fix-contradictions.toml has no row for"
                        )),
                        Some(r) if !r.terms.iter().any(|t| has(t)) => bad(&format!(
                            "sets {v}, unrelated to the finding (none of {:?} in its words)",
                            r.terms
                        )),
                        Some(_) => {}
                    }
                }
                for r in &self.installed {
                    if installs(c, &r.package) && fact_holds(&r.fact, &report.facts) {
                        bad(&r.why);
                    }
                }
                for r in &self.beside {
                    let runs = r.commands.iter().any(|x| c.contains(x))
                        || r.packages.iter().any(|p| installs(c, p));
                    let because = r
                        .unless
                        .iter()
                        .any(|w| has(w) || c.to_lowercase().contains(&w.to_lowercase()));
                    if f.id != r.finding && raised(&r.finding) && runs && !because {
                        bad(&format!("{} (beside {})", r.why, r.finding));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Fix, Severity};
    use std::path::{Path, PathBuf};

    fn finding(id: &str, message: &str, evidence: &[&str], commands: &[&str]) -> Finding {
        Finding {
            id: id.into(),
            severity: Severity::Warn,
            title: "t".into(),
            message: message.into(),
            evidence: evidence.iter().map(|x| x.to_string()).collect(),
            fix: Fix {
                text: String::new(),
                commands: commands.iter().map(|x| x.to_string()).collect(),
            },
        }
    }

    fn report(facts: Facts, findings: Vec<Finding>) -> Report {
        Report::new("from", vec![], facts, findings, vec![])
    }

    #[test]
    fn variables_set_reads_exports_prefixes_and_unsets() {
        assert_eq!(
            variables_set("export HSA_OVERRIDE_GFX_VERSION=11.0.0"),
            ["HSA_OVERRIDE_GFX_VERSION"]
        );
        assert_eq!(
            variables_set("HSA_ENABLE_SDMA=0 timeout 30 rocminfo"),
            ["HSA_ENABLE_SDMA"]
        );
        assert_eq!(
            variables_set("unset ROCM_PATH HIP_PATH"),
            ["ROCM_PATH", "HIP_PATH"]
        );
        assert!(variables_set("grep -rn HSA_OVERRIDE_GFX_VERSION ~/.bashrc").is_empty());
        assert!(variables_set("sudo grubby --args='radeon.si_support=0'").is_empty());
        assert!(variables_set("env | grep -E 'VISIBLE_DEVICES|HSA_'").is_empty());
    }

    #[test]
    fn installs_reads_package_manager_commands() {
        assert!(installs(
            "sudo apt install mesa-vulkan-drivers",
            "mesa-vulkan-drivers"
        ));
        assert!(installs(
            "sudo apt install libvulkan1 mesa-vulkan-drivers vulkan-tools",
            "mesa-vulkan-drivers"
        ));
        assert!(!installs("sudo apt remove amdvlk", "amdvlk"));
        assert!(!installs(
            "dpkg -l mesa-vulkan-drivers",
            "mesa-vulkan-drivers"
        ));
    }

    /// Each kind of row refutes the case it was written for, and lets the
    /// same command pass where the finding's words or facts support it.
    #[test]
    fn each_kind_of_row_can_fail() {
        let r = relation();
        // A native gfx1100 told no override helps, then given one.
        let native = finding(
            "rocm.gfx-unsupported",
            "gfx1100 is itself the target 11.0.0 names: an override cannot add kernels",
            &[],
            &["export HSA_OVERRIDE_GFX_VERSION=11.0.0"],
        );
        let got = r.contradictions(&report(Facts::default(), vec![native]));
        assert!(got.iter().any(|x| x.contains("none can help")), "{got:?}");
        let stopgap = finding(
            "rocm.gfx-unsupported",
            "as a stopgap, run gfx1101 as gfx1100",
            &[],
            &["export HSA_OVERRIDE_GFX_VERSION=11.0.0"],
        );
        assert!(r
            .contradictions(&report(Facts::default(), vec![stopgap]))
            .is_empty());
        // hipBLASLt's variable with no hipBLASLt in sight.
        let blas = |ev: &[&str]| {
            finding(
                "rocm.gfx-unsupported",
                "no kernels for gfx803",
                ev,
                &["export TORCH_BLAS_PREFER_HIPBLASLT=0"],
            )
        };
        let got = r.contradictions(&report(Facts::default(), vec![blas(&[])]));
        assert!(got.iter().any(|x| x.contains("unrelated")), "{got:?}");
        assert!(r
            .contradictions(&report(
                Facts::default(),
                vec![blas(&["log.txt:3: hipBLASLt error: unsupported"])]
            ))
            .is_empty());
        // An unknown variable must get its row.
        let odd = finding("x", "m", &[], &["export SOME_UNLISTED_VAR=1"]);
        assert!(r.contradictions(&report(Facts::default(), vec![odd]))[0].contains("no row"));
        // Mesa again on a machine whose RADV loads, beside gpu.none.
        let mut radv = Facts::default();
        radv.vulkan.icds.push(crate::facts::Icd {
            manifest: "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json".into(),
            kind: VkFamily::Radv,
            library_ok: Some(true),
            ..Default::default()
        });
        let mesa = finding(
            "vulkan.cpu-only",
            "only a software rasteriser",
            &[],
            &["sudo apt install mesa-vulkan-drivers"],
        );
        let none = finding("gpu.none", "no GPU", &[], &[]);
        let got = r.contradictions(&report(radv, vec![none.clone(), mesa.clone()]));
        assert!(got.iter().any(|x| x.contains("RADV")), "{got:?}");
        assert!(got.iter().any(|x| x.contains("beside gpu.none")), "{got:?}");
        // Without RADV and without gpu.none, installing Mesa follows.
        assert!(r
            .contradictions(&report(Facts::default(), vec![mesa]))
            .is_empty());
    }

    fn case_dirs(corpus: &str) -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(corpus);
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        dirs
    }

    /// (case name, its facts) for every case of every corpus.
    pub(crate) fn corpus() -> Vec<(String, Facts)> {
        let mut out = Vec::new();
        for name in ["fixtures", "unseen-formats"] {
            for dir in case_dirs(name) {
                let t: toml::Value =
                    toml::from_str(&std::fs::read_to_string(dir.join("expect.toml")).unwrap())
                        .unwrap();
                for (key, case) in t["case"].as_table().unwrap() {
                    let files: Vec<PathBuf> = case["files"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|x| x.as_str().map(|f| dir.join(f)))
                        .collect();
                    let run = crate::from::from_files(&files).unwrap();
                    out.push((
                        format!(
                            "{name}/{} [{key}]",
                            dir.file_name().unwrap().to_string_lossy()
                        ),
                        run.facts,
                    ));
                }
            }
        }
        for dir in case_dirs("sysroots") {
            let root = crate::root::Root::sysroot(&dir).unwrap();
            let o = crate::front::Probe::new(&root).run();
            out.push((
                format!("sysroots/{}", dir.file_name().unwrap().to_string_lossy()),
                o.facts,
            ));
        }
        out
    }

    fn contradictions_with(rules: &[crate::rules::Rule], cases: &[(String, Facts)]) -> Vec<String> {
        let r = relation();
        let mut bad = Vec::new();
        for (name, facts) in cases {
            let findings = crate::rules::diagnose_in(rules, facts, &[]);
            let rep = report(facts.clone(), findings);
            bad.extend(
                r.contradictions(&rep)
                    .into_iter()
                    .map(|c| format!("{name}: {c}")),
            );
        }
        bad
    }

    /// Every rule over every case of every corpus: no fix contradicts its
    /// finding. And the same relation over the rules as they were before
    /// fixes followed the evidence (an override exported wherever a target
    /// was unsupported, TORCH_BLAS_PREFER_HIPBLASLT on every one, Mesa
    /// installed wherever Vulkan saw only the CPU or a driver failed,
    /// AMD_VULKAN_ICD and a RADV manifest path on any duplicate, every
    /// selection variable unset) finds each of those.
    #[test]
    fn no_fix_contradicts_its_finding_in_any_corpus() {
        let cases = corpus();
        assert!(cases.len() >= 219, "only {} cases", cases.len());
        let bad = contradictions_with(crate::rules::rules(), &cases);
        assert!(
            bad.is_empty(),
            "{} contradiction(s):\n{}",
            bad.len(),
            bad.join("\n")
        );
        let old = old_rules();
        let bad = contradictions_with(&old, &cases);
        for class in [
            "none can help",
            "TORCH_BLAS_PREFER_HIPBLASLT, unrelated",
            "RADV (from that package)",
            "(beside gpu.none)",
            "AMD_VULKAN_ICD, unrelated",
            "HIP_VISIBLE_DEVICES, unrelated",
        ] {
            assert!(
                bad.iter().any(|b| b.contains(class)),
                "the old rules' {class:?} not found in:\n{}",
                bad.join("\n")
            );
        }
    }

    /// The rules with their fixes as they were written before they followed
    /// the evidence.
    fn old_rules() -> Vec<crate::rules::Rule> {
        let text = crate::rules::RULES_TOML
            .replace(
                "\"{override_command}\"",
                "\"export HSA_OVERRIDE_GFX_VERSION={override_value}\"",
            )
            .replace(
                "\"{hipblaslt_command}\"",
                "\"export TORCH_BLAS_PREFER_HIPBLASLT=0\"",
            )
            .replace(
                "{mesa_install_command}",
                "sudo apt install mesa-vulkan-drivers",
            )
            .replace("{amd_vulkan_icd_command}", "export AMD_VULKAN_ICD=RADV")
            .replace(
                "{vk_driver_files_command}",
                "export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/radeon_icd.x86_64.json",
            )
            .replace(
                "{selection_unset_command}",
                "unset ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES CUDA_VISIBLE_DEVICES",
            );
        let mut rules = crate::rules::parse_rules(&text).unwrap();
        // The one vulkan.cpu-only rule: install Mesa.
        rules.retain(|r| !(r.id == "vulkan.cpu-only" && r.all.len() > 1));
        rules
    }
}
