//! The diagnosis rules: data (`probe/rules.toml`, embedded), not code
//! branches. Code only answers named questions about the facts
//! (one struct each, listed in [`predicates::PREDICATES`], and
//! `signal:<id>`); each rule combines them:
//! `all` must hold, at least one of `any` (when given), none of `none`.
//! Several rules may share one finding id (different causes with different
//! fixes): the first that matches raises the finding.

#[cfg(test)]
mod contradicts;
pub mod predicates;

use crate::facts::Facts;
use serde::Deserialize;
use std::sync::OnceLock;

pub(crate) const RULES_TOML: &str = include_str!("../rules.toml");

// A finding, its severity and its fix are the vocabulary's: `doctor`,
// `install` and the framework gates report the one type.
pub use greta_vocab::{Finding, Fix, Severity};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub id: String,
    pub severity: Severity,
    pub title: String,
    /// What the finding means (docs, `--list-checks`).
    pub meaning: String,
    #[serde(default)]
    pub all: Vec<String>,
    #[serde(default)]
    pub any: Vec<String>,
    #[serde(default)]
    pub none: Vec<String>,
    pub message: String,
    pub fix: Fix,
    /// The check of `greta doctor` this rule's finding belongs to (an id of
    /// [`crate::collect::CHECKS`]): the check line that shows its glyph and
    /// what `--check ID` keeps.
    pub check: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    rule: Vec<Rule>,
}

/// The finding ids of DESIGN.md: a stable contract, all must have rules.
pub const CONTRACT_IDS: &[&str] = &[
    "gpu.none",
    "gpu.sriov-vf",
    "driver.amdgpu-not-bound",
    "kfd.missing",
    "kfd.permission",
    "kfd.rejected",
    "rocm.missing",
    "rocm.multiple",
    "rocm.runtime-no-device",
    "rocm.gfx-unsupported",
    "rocm.hsa-override",
    "rocm.ld-library-path",
    "vulkan.loader-missing",
    "vulkan.no-icd",
    "vulkan.icd-incompatible",
    "vulkan.cpu-only",
    "vulkan.duplicate-gpu",
    "vulkan.amd-switchable-layer",
    "vulkan.gfx94x-unsupported",
    "apu.small-vram",
    "python.missing",
    "framework.mismatch",
    // Problems that had no id.
    "rocm.mixed-versions",
    "rocm.hsa-crash",
    "framework.cuda-build-on-amd",
    "vulkan.no-device",
    "app.cpu-fallback",
    // APU memory.
    "apu.gttsize-deprecated",
];

/// Parses and checks a rules file: known predicates and signals, known
/// template variables, one severity per id, every contract id present.
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, String> {
    let file: RuleFile = toml::from_str(text).map_err(|e| format!("rules.toml: {e}"))?;
    let signals = crate::signals::known_ids();
    let known = |p: &str| match p.strip_prefix("signal:") {
        Some(s) => signals.contains(&s),
        None => predicates::find(p).is_some(),
    };
    for r in &file.rule {
        if r.all.is_empty() && r.any.is_empty() {
            return Err(format!("rules.toml: rule {}: needs `all` or `any`", r.id));
        }
        for p in r.all.iter().chain(&r.any).chain(&r.none) {
            if !known(p) {
                return Err(format!(
                    "rules.toml: rule {}: unknown predicate {p:?}",
                    r.id
                ));
            }
        }
        for t in [&r.message, &r.fix.text]
            .into_iter()
            .chain(r.fix.commands.iter())
        {
            for var in placeholders(t) {
                if !predicates::VARS.contains(&var) {
                    return Err(format!(
                        "rules.toml: rule {}: unknown template variable {{{var}}}",
                        r.id
                    ));
                }
            }
        }
        if !crate::collect::CHECKS.iter().any(|(c, _, _)| *c == r.check) {
            return Err(format!(
                "rules.toml: rule {}: check {:?} is not a check of doctor",
                r.id, r.check
            ));
        }
        if let Some(o) = file
            .rule
            .iter()
            .find(|o| o.id == r.id && o.check != r.check)
        {
            return Err(format!(
                "rules.toml: rule {}: checks differ ({} vs {})",
                r.id, r.check, o.check
            ));
        }
        // One id may carry two severities only where the evidence decides
        // which: the two rules can never both match.
        if let Some(o) = file
            .rule
            .iter()
            .find(|o| o.id == r.id && o.severity != r.severity && !exclusive(r, o))
        {
            return Err(format!(
                "rules.toml: rule {}: severities differ ({:?} vs {:?}) and their clauses do not exclude each other (a predicate one needs in `all`, or every one of its `any`, in the other's `none`)",
                r.id, r.severity, o.severity
            ));
        }
    }
    for id in CONTRACT_IDS {
        if !file.rule.iter().any(|r| r.id == *id) {
            return Err(format!("rules.toml: no rule for contract id {id}"));
        }
    }
    Ok(file.rule)
}

/// Whether rules `a` and `b` can never both match: one needs (in `all`)
/// what the other refuses (in `none`), or every alternative of one's `any`
/// is refused by the other.
fn exclusive(a: &Rule, b: &Rule) -> bool {
    let refuses = |x: &Rule, y: &Rule| {
        x.all.iter().any(|p| y.none.contains(p))
            || (!x.any.is_empty() && x.any.iter().all(|p| y.none.contains(p)))
    };
    refuses(a, b) || refuses(b, a)
}

fn placeholders(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(a) = rest.find('{') {
        let Some(b) = rest[a..].find('}') else { break };
        let name = &rest[a + 1..a + b];
        if !name.is_empty() && name.bytes().all(|c| c.is_ascii_lowercase() || c == b'_') {
            out.push(name);
        }
        rest = &rest[a + b + 1..];
    }
    out
}

/// The embedded rules (validated by a unit test).
pub fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| parse_rules(RULES_TOML).expect("embedded rules.toml is valid"))
}

/// Distinct finding ids in file order, with the first rule's severity,
/// title and meaning (for `--list-checks` and docs).
/// The check a finding id belongs to (`rules.toml`'s `check`).
pub fn check_of(id: &str) -> Option<&'static str> {
    rules()
        .iter()
        .find(|r| r.id == id)
        .map(|r| r.check.as_str())
}

pub fn catalogue() -> Vec<&'static Rule> {
    let mut out: Vec<&Rule> = Vec::new();
    for r in rules() {
        if !out.iter().any(|o| o.id == r.id) {
            out.push(r);
        }
    }
    out
}

fn render(t: &str, e: &predicates::Eval) -> String {
    let mut s = t.to_string();
    for (k, v) in &e.vars {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// A lock profile the installer can install and the gfx targets its
/// wheels carry (lock/matrix.toml): what a fix names when the machine's
/// target is known. The caller passes them (the probe reads no lock set),
/// in its order of preference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileTargets {
    pub name: String,
    pub gfx: Vec<String>,
}

/// Every finding the facts raise, fails first then warns then oks.
pub fn diagnose(facts: &Facts) -> Vec<Finding> {
    diagnose_for(facts, &[])
}

/// [`diagnose`], with the profiles a fix may name.
pub fn diagnose_for(facts: &Facts, profiles: &[ProfileTargets]) -> Vec<Finding> {
    diagnose_in(rules(), facts, profiles)
}

#[cfg(test)]
fn diagnose_with(rules: &[Rule], facts: &Facts) -> Vec<Finding> {
    diagnose_in(rules, facts, &[])
}

/// Said in a finding the scan alone supports, after its message.
pub const SCAN_ONLY_NOTE: &str = "Read from unrecognised text: no tool output doctor knows shows this, so it is a warning, not a failure; paste the tool's own output (rocminfo, lspci -nnk, dmesg) to confirm it.";

/// Predicates that record what was inspected, not a fact of the machine.
fn bookkeeping(p: &str) -> bool {
    p.ends_with("_scanned") || p == "vulkan_in_play"
}

pub(crate) fn diagnose_in(
    rules: &[Rule],
    facts: &Facts,
    profiles: &[ProfileTargets],
) -> Vec<Finding> {
    let e = predicates::evaluate_for(facts, profiles);
    // The same questions over the facts a reader of a known format gave
    // (computed when a failure might rest on the scan alone).
    let readers: std::cell::OnceCell<predicates::Eval> = std::cell::OnceCell::new();
    let mut out: Vec<Finding> = Vec::new();
    for r in rules {
        if out.iter().any(|f| f.id == r.id) {
            continue;
        }
        if !crate::clauses::hold(&r.all, &r.any, &r.none, |p| e.holds(p)) {
            continue;
        }
        let mut evidence: Vec<String> = Vec::new();
        // Lines already taken, so a predicate citing every GPU of a large
        // machine (one line each) costs one lookup per line, not a scan of
        // the list (95,000 rocminfo agents took minutes).
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for p in r.all.iter().chain(r.any.iter()) {
            // Bookkeeping predicates ("pci_scanned") add nothing a reader needs.
            if bookkeeping(p) {
                continue;
            }
            for x in e.evidence(p) {
                if seen.insert(x.as_str()) {
                    evidence.push(x.clone());
                }
            }
        }
        // A failure whose every matched fact only the format-agnostic scan
        // read (a name in text no reader knows) is a warning: the scan is
        // weaker evidence than a tool's own output, never the sole ground
        // of a failure.
        let scan_only = r.severity == Severity::Fail && !facts.text_scan.is_empty() && {
            let re = readers.get_or_init(|| predicates::evaluate(&facts.readers_only()));
            let matched: Vec<&String> = r
                .all
                .iter()
                .chain(r.any.iter().filter(|p| e.holds(p)))
                .filter(|p| !bookkeeping(p))
                .collect();
            !matched.is_empty() && matched.iter().all(|p| !re.holds(p))
        };
        let mut message = render(&r.message, &e);
        if scan_only {
            message.push(' ');
            message.push_str(SCAN_ONLY_NOTE);
        }
        out.push(Finding {
            id: r.id.clone(),
            severity: if scan_only {
                Severity::Warn
            } else {
                r.severity
            },
            title: render(&r.title, &e),
            message,
            evidence,
            fix: Fix {
                text: render(&r.fix.text, &e),
                // A command whose template renders to nothing (an override
                // where none helps) is left out.
                commands: r
                    .fix
                    .commands
                    .iter()
                    .map(|c| render(c, &e))
                    .filter(|c| !c.trim().is_empty())
                    .collect(),
            },
        });
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_rules_are_valid_and_cover_the_contract() {
        let r = parse_rules(RULES_TOML).unwrap();
        for id in CONTRACT_IDS {
            assert!(r.iter().any(|x| x.id == *id), "{id}");
        }
    }

    /// Every finding id and the check it belongs to: a finding of no check
    /// would keep its check line green and vanish under `--check`.
    #[test]
    fn every_finding_belongs_to_its_check() {
        let want: &[(&str, &str)] = &[
            ("gpu.none", "pci"),
            ("gpu.sriov-vf", "pci"),
            ("driver.amdgpu-not-bound", "pci"),
            ("gpu.passthrough", "pci"),
            ("driver.module-rejected", "pci"),
            ("driver.dkms-build-failed", "pci"),
            ("driver.nomodeset", "pci"),
            ("driver.nvidia-mismatch", "pci"),
            ("driver.nvidia-not-bound", "pci"),
            ("gpu.fallen-off-bus", "pci"),
            ("container.nvidia-toolkit", "pci"),
            ("nvidia.fabric-manager", "pci"),
            ("gpu.nvidia-xid", "pci"),
            ("driver.nvidia-too-old", "pci"),
            ("kfd.missing", "device-nodes"),
            ("kfd.permission", "device-nodes"),
            ("kfd.rejected", "device-nodes"),
            ("rocm.missing", "rocm"),
            ("rocm.multiple", "rocm"),
            ("rocm.runtime-no-device", "hip-runtime"),
            ("rocm.hip-igpu-first", "rocm"),
            ("rocm.visible-devices-none", "rocm"),
            ("rocm.visible-devices-missing", "rocm"),
            ("rocm.hip-failed-on-igpu", "rocm"),
            ("rocm.hsa-hang", "rocm"),
            ("rocm.path-invalid", "rocm"),
            ("rocm.gfx-unsupported", "rocm"),
            ("rocm.hsa-override", "rocm"),
            ("rocm.ld-library-path", "rocm"),
            ("rocm.gpu-fault", "rocm"),
            ("gpu.ras-uncorrectable", "pci"),
            ("rocm.hipblaslt-fallback", "rocm"),
            ("rocm.mixed-versions", "rocm"),
            ("rocm.hsa-crash", "rocm"),
            ("framework.cuda-build-on-amd", "python"),
            ("app.cpu-fallback", "python"),
            ("vulkan.loader-missing", "vulkan-icds"),
            ("vulkan.no-icd", "vulkan-icds"),
            ("vulkan.icd-incompatible", "vulkan-icds"),
            ("vulkan.no-device", "vulkan-devices"),
            ("vulkan.cpu-only", "vulkan-devices"),
            ("vulkan.duplicate-gpu", "vulkan-devices"),
            ("vulkan.amdvlk-left-behind", "vulkan-icds"),
            ("vulkan.amd-switchable-layer", "vulkan-icds"),
            ("vulkan.gfx94x-unsupported", "vulkan-devices"),
            ("apu.small-vram", "kfd"),
            ("apu.gttsize-deprecated", "kfd"),
            ("python.missing", "python"),
            ("framework.mismatch", "python"),
            ("framework.device-wheel-missing", "python"),
        ];
        let ids: Vec<&str> = catalogue().iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids.len(), want.len(), "{ids:?}");
        for (id, check) in want {
            assert_eq!(check_of(id), Some(*check), "{id}");
        }
        let bad = RULES_TOML.replace("check = \"vulkan-icds\"", "check = \"vulkan\"");
        assert!(parse_rules(&bad)
            .unwrap_err()
            .contains("not a check of doctor"));
    }

    #[test]
    fn bad_rules_are_rejected() {
        let base = |extra: &str| {
            let mut s = RULES_TOML.to_string();
            s.push_str(extra);
            s
        };
        let bad_pred = base("[[rule]]\nid='x.y'\nseverity='warn'\ntitle='t'\nmeaning='m'\nall=['no_such_predicate']\nmessage='m'\nfix={text='t'}\ncheck='pci'\n");
        assert!(parse_rules(&bad_pred)
            .unwrap_err()
            .contains("unknown predicate"));
        let bad_sig = base("[[rule]]\nid='x.y'\nseverity='warn'\ntitle='t'\nmeaning='m'\nall=['signal:nope']\nmessage='m'\nfix={text='t'}\ncheck='pci'\n");
        assert!(parse_rules(&bad_sig).is_err());
        let bad_var = base("[[rule]]\nid='x.y'\nseverity='warn'\ntitle='t'\nmeaning='m'\nall=['amd_gpu_present']\nmessage='{nope}'\nfix={text='t'}\ncheck='pci'\n");
        assert!(parse_rules(&bad_var)
            .unwrap_err()
            .contains("template variable"));
        let bad_sev = base("[[rule]]\nid='gpu.none'\nseverity='fail'\ntitle='t'\nmeaning='m'\nall=['amd_gpu_present']\nmessage='m'\nfix={text='t'}\ncheck='pci'\n");
        assert!(parse_rules(&bad_sev)
            .unwrap_err()
            .contains("severities differ"));
        // Two severities for one id whose clauses exclude each other load.
        let by_evidence = base("[[rule]]\nid='x.y'\nseverity='fail'\ntitle='t'\nmeaning='m'\nall=['amd_gpu_present', 'signal:gpu-hang']\nmessage='m'\nfix={text='t'}\ncheck='pci'\n[[rule]]\nid='x.y'\nseverity='warn'\ntitle='t'\nmeaning='m'\nany=['signal:gpu-hang']\nnone=['amd_gpu_present']\nmessage='m'\nfix={text='t'}\ncheck='pci'\n");
        assert!(parse_rules(&by_evidence).is_ok());
        // ... and not when both could match (the warn no longer refuses the GPU).
        let both = by_evidence.replace("none=['amd_gpu_present']", "none=['wsl']");
        assert!(parse_rules(&both).unwrap_err().contains("do not exclude"));
        assert!(parse_rules("[[rule]]\nid='gpu.none'\nseverity='warn'\ntitle='t'\nmeaning='m'\nall=['amd_gpu_present']\nmessage='m'\nfix={text='t'}\ncheck='pci'\n")
            .unwrap_err()
            .contains("contract id"));
    }

    #[test]
    fn docs_list_every_finding_predicate_signal_and_check() {
        let doc = include_str!("../../docs/doctor.md");
        for r in catalogue() {
            assert!(
                doc.contains(&format!("### `{}`", r.id)),
                "docs/doctor.md lacks finding {}",
                r.id
            );
        }
        for p in predicates::PREDICATES {
            assert!(
                doc.contains(&format!("| `{}` | {} |", p.name(), p.meaning())),
                "docs/doctor.md lacks predicate {} ({})",
                p.name(),
                p.meaning()
            );
        }
        for s in crate::signals::known_ids() {
            assert!(
                doc.contains(&format!("`{s}`")),
                "docs/doctor.md lacks signal {s}"
            );
        }
        for (c, _, _) in crate::collect::CHECKS {
            assert!(
                doc.contains(&format!("| `{c}` |")),
                "docs/doctor.md lacks check {c}"
            );
        }
    }

    /// ollama's total_vram="0 B" is a CPU fallback only where the text
    /// shows a GPU (here the Intel iGPU its discovery dropped); on a
    /// CPU-only machine the same line is just the truth.
    #[test]
    fn ollama_no_gpu_memory_is_a_cpu_fallback_only_beside_a_gpu() {
        use crate::facts::{Gpu, Signal, Vendor};
        let line = r#"level=INFO source=routes.go:2054 msg="vram-based default context" total_vram="0 B" default_num_ctx=4096"#;
        let mut f = Facts {
            signals: vec![Signal {
                id: "ollama-no-gpu-memory".into(),
                source: "server.log".into(),
                line: Some(3),
                text: line.into(),
            }],
            ..Facts::default()
        };
        let fallback = |f: &Facts| diagnose(f).into_iter().find(|x| x.id == "app.cpu-fallback");
        assert!(fallback(&f).is_none());
        f.gpus.push(Gpu {
            vendor: Vendor::Intel,
            name: "Intel(R) Iris(R) Xe Graphics".into(),
            ..Gpu::default()
        });
        let hit = fallback(&f).expect("app.cpu-fallback");
        assert!(hit.message.contains("Iris"), "{}", hit.message);
        assert!(
            hit.evidence.iter().any(|e| e.contains("total_vram")),
            "{:?}",
            hit.evidence
        );
    }

    /// Doctor's live HIP check raises `hip-no-device` with HIP's reason;
    /// it is a finding only where an AMD GPU is known and KFD itself is fine.
    #[test]
    fn hip_worker_no_device_is_runtime_no_device_only_with_an_amd_gpu() {
        use crate::facts::{DeviceNode, Gpu, Signal, Vendor};
        let reason = "no HIP device found: hipGetDeviceCount returned hipErrorNoDevice (100)";
        let signal = Signal {
            id: "hip-no-device".into(),
            source: "greta-hip-worker devices".into(),
            line: None,
            text: reason.into(),
        };
        let mut f = Facts {
            signals: vec![signal],
            ..Facts::default()
        };
        let ids = |f: &Facts| diagnose(f).into_iter().map(|x| x.id).collect::<Vec<_>>();
        assert!(!ids(&f).contains(&"rocm.runtime-no-device".to_string()));
        f.gpus.push(Gpu {
            vendor: Vendor::Amd,
            name: "AMD Instinct MI300X VF".into(),
            gfx: Some("gfx942".into()),
            ..Gpu::default()
        });
        let found = diagnose(&f);
        let hit = found
            .iter()
            .find(|x| x.id == "rocm.runtime-no-device")
            .expect("rocm.runtime-no-device");
        assert!(hit.message.contains("MI300X"), "{}", hit.message);
        assert!(
            hit.evidence.iter().any(|e| e.contains(reason)),
            "{:?}",
            hit.evidence
        );
        // /dev/kfd missing: the KFD finding explains it, not this one.
        f.device_nodes.push(DeviceNode {
            path: "/dev/kfd".into(),
            exists: false,
            ..DeviceNode::default()
        });
        assert!(!ids(&f).contains(&"rocm.runtime-no-device".to_string()));
    }

    /// "Found no drivers!" after a driver was skipped is that driver
    /// refusing, even a driver whose skip alone is noise (Dozen, lavapipe):
    /// it was the only one.
    #[test]
    fn found_no_drivers_after_any_skip_is_icd_incompatible() {
        let ids = |t: &str| {
            let f = crate::from::parse_text(t, "vulkaninfo.txt").1;
            diagnose(&f).into_iter().map(|x| x.id).collect::<Vec<_>>()
        };
        // NixOS-WSL#963: Dozen forced with VK_DRIVER_FILES.
        let dzn = "WARNING: [Loader Message] Code 0 : terminator_CreateInstance: Received return code -9 from call to vkCreateInstance in ICD /nix/store/x-mesa-25.3.3/lib/libvulkan_dzn.so. Skipping this driver.\nERROR: [Loader Message] Code 0 : terminator_CreateInstance: Found no drivers!\n";
        let got = ids(dzn);
        assert!(
            got.contains(&"vulkan.icd-incompatible".to_string()),
            "{got:?}"
        );
        assert!(!got.contains(&"vulkan.no-icd".to_string()), "{got:?}");
        // microsoft/WSL#11649: nothing skipped, nothing installed.
        let none = "ERROR: [Loader Message] Code 0 : vkCreateInstance: Found no drivers!\nCannot create Vulkan instance.\n";
        assert!(ids(none).contains(&"vulkan.no-icd".to_string()));
    }

    /// A failure resting only on what the format-agnostic scan read is a
    /// warning that says so; the same failure on a reader's GPU, or on the
    /// scan's GPU beside an error line a signature matched, stays a failure.
    #[test]
    fn a_scan_only_fact_never_fails_alone() {
        let mut toml = RULES_TOML.to_string();
        toml.push_str("[[rule]]\nid='x.any-amd'\nseverity='fail'\ntitle='t'\nmeaning='m'\nall=['amd_gpu_present']\nmessage='an AMD GPU'\nfix={text='t'}\ncheck='pci'\n");
        toml.push_str("[[rule]]\nid='x.amd-and-fault'\nseverity='fail'\ntitle='t'\nmeaning='m'\nall=['amd_gpu_present', 'signal:gpu-memory-fault']\nmessage='a fault'\nfix={text='t'}\ncheck='pci'\n");
        let rules = parse_rules(&toml).unwrap();
        let find = |f: &Facts, id: &str| {
            diagnose_with(&rules, f)
                .into_iter()
                .find(|x| x.id == id)
                .unwrap_or_else(|| panic!("{id} not raised"))
        };
        // A name in a game launcher's system information: the scan's only.
        let scanned =
            crate::from::parse_text("Video Card: AMD Radeon Pro W7900\n", "sysinfo.txt").1;
        assert_eq!(scanned.gpus.len(), 1, "{:?}", scanned.gpus);
        let hit = find(&scanned, "x.any-amd");
        assert_eq!(hit.severity, Severity::Warn);
        assert!(
            hit.message.contains("Read from unrecognised text"),
            "{}",
            hit.message
        );
        // rocminfo printed the same GPU: a reader's fact.
        let read = crate::from::parse_text(
            "*******\nAgent 2\n*******\n  Name:                    gfx1100\n  Marketing Name:          AMD Radeon Pro W7900\n  Device Type:             GPU\n",
            "rocminfo.txt",
        )
        .1;
        assert!(read.text_scan.is_empty(), "{:?}", read.text_scan);
        let hit = find(&read, "x.any-amd");
        assert_eq!(hit.severity, Severity::Fail);
        assert!(!hit.message.contains("unrecognised"));
        // The scan's GPU beside a fault a signature matched: not the scan alone.
        let both = crate::from::parse_text(
            "Video Card: AMD Radeon Pro W7900\nMemory access fault by GPU node-1 (Agent handle: 0x5) on address 0x7f. Reason: Page not present or supervisor privilege.\n",
            "log.txt",
        )
        .1;
        assert_eq!(find(&both, "x.amd-and-fault").severity, Severity::Fail);
        assert_eq!(find(&both, "x.any-amd").severity, Severity::Warn);
    }

    /// The loader's drivers loaded and none drives a GPU here: lutris#5440
    /// (an HD 4670 on the radeon driver, RADV refusing its render node) and
    /// mesa-dist-win#100 (RADV on Windows) print the same loader line.
    #[test]
    fn drivers_that_drive_no_gpu_are_no_vulkan_device() {
        for t in [
            "ERROR: [../mesa-24.0.5/src/amd/vulkan/radv_physical_device.c:1828] Code 0 : Device '/dev/dri/renderD128' is not using the AMDGPU kernel driver: Invalid argument (VK_ERROR_INCOMPATIBLE_DRIVER)\nERROR: [Loader Message] Code 0 : setup_loader_term_phys_devs:  Failed to detect any valid GPUs in the current config\n",
            "ERROR: [Loader Message] Code 0 : setup_loader_term_phys_devs:  Failed to detect any valid GPUs in the current config\n",
        ] {
            let f = crate::from::parse_text(t, "log.txt").1;
            let hit = diagnose(&f)
                .into_iter()
                .find(|x| x.id == "vulkan.no-device")
                .expect("vulkan.no-device");
            assert!(hit.message.contains("radeon driver"), "{}", hit.message);
        }
    }

    /// "ROCk module is NOT loaded" is an AMD driver failure only beside an
    /// AMD GPU; alone (deepracer-core#82: an Intel CPU and a GTX 1060) it
    /// is a warning with both readings.
    #[test]
    fn rock_not_loaded_fails_only_beside_an_amd_gpu() {
        let rock = "ROCk module is NOT loaded, possibly no GPU devices\n";
        let hit = |t: &str| {
            let f = crate::from::parse_text(t, "rocminfo.txt").1;
            diagnose(&f)
                .into_iter()
                .find(|x| x.id == "driver.amdgpu-not-bound")
                .expect("driver.amdgpu-not-bound")
        };
        let alone = hit(rock);
        assert_eq!(alone.severity, Severity::Warn);
        assert!(
            alone.message.contains("Either this machine has no AMD GPU"),
            "{}",
            alone.message
        );
        let with_gpu = hit(&format!("{rock}03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX] [1002:744c] (rev c8)\n"));
        assert_eq!(with_gpu.severity, Severity::Fail);
    }

    /// Only lavapipe, RADV installed, no GPU anywhere: installing Mesa's
    /// drivers again is no fix (the GPU, or its render node, is missing).
    #[test]
    fn cpu_only_vulkan_beside_radv_does_not_install_mesa() {
        use crate::facts::VulkanDevice;
        use greta_vocab::VkFamily;
        let mut f = Facts::default();
        f.vulkan.devices.push(VulkanDevice {
            name: "llvmpipe (LLVM 19.1.7, 256 bits)".into(),
            kind: VkFamily::Lavapipe,
            ..VulkanDevice::default()
        });
        f.vulkan.drivers = vec![VkFamily::Lavapipe];
        let cmds = |f: &Facts| {
            diagnose(f)
                .into_iter()
                .find(|x| x.id == "vulkan.cpu-only")
                .expect("vulkan.cpu-only")
                .fix
                .commands
                .join(" ")
        };
        assert!(cmds(&f).contains("mesa-vulkan-drivers"));
        f.vulkan.drivers.push(VkFamily::Radv);
        assert!(!cmds(&f).contains("mesa-vulkan-drivers"), "{}", cmds(&f));
    }

    #[test]
    fn empty_facts_raise_nothing() {
        // Nothing was inspected, so nothing can be concluded.
        assert!(diagnose(&Facts::default()).is_empty());
    }

    #[test]
    fn absence_counts_only_when_scanned() {
        let f = Facts {
            scanned: vec![
                "pci".into(),
                "rocm".into(),
                "vulkan-loader".into(),
                "vulkan-icds".into(),
                "python".into(),
            ],
            ..Facts::default()
        };
        let ids: Vec<String> = diagnose(&f).into_iter().map(|x| x.id).collect();
        for id in [
            "gpu.none",
            "vulkan.loader-missing",
            "vulkan.no-icd",
            "python.missing",
        ] {
            assert!(ids.contains(&id.to_string()), "{id} in {ids:?}");
        }
        // No AMD GPU: a missing ROCm is not a problem.
        assert!(!ids.contains(&"rocm.missing".to_string()));
    }
}
