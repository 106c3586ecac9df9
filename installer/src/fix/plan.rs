//! Which remedies a report calls for, each worked out from its facts and
//! the files as they are now under the root.

use super::{host, Change, Remedy, Takes};
use greta_probe::{Report, Root};
use greta_vocab::VkFamily;
use std::path::Path;

/// The largest file a remedy reads to edit (a group file, a shell profile).
const CAP: u64 = 4 << 20;

/// Where remedies keep what they move aside.
pub const ASIDE: &str = "/var/lib/greta/fix";

fn read(root: &Path, abs: &str) -> Option<String> {
    greta_fsread::text_if_exists(&host(root, abs), CAP)
        .ok()
        .flatten()
}

/// The remedies for `report`'s findings on the machine under `dir` (read
/// through `root`, the same machine), in the findings' order, and for each
/// raised finding with a remedy that cannot apply here, why.
pub fn plan(dir: &Path, root: &Root, report: &Report) -> (Vec<Remedy>, Vec<String>) {
    let mut out = Vec::new();
    let mut why_not = Vec::new();
    let raised = |id: &str| report.findings.iter().any(|f| f.id == id);
    let f = &report.facts;
    let user = root
        .identity()
        .and_then(|i| i.user.clone())
        .or_else(|| root.env_nonempty("USER").map(str::to_string));
    if raised("kfd.permission") {
        match groups(dir, report, user.as_deref()) {
            Ok(Some(r)) => out.push(r),
            Ok(None) => {}
            Err(e) => why_not.push(format!("kfd.permission: {e}")),
        }
        if let Some(r) = udev_rule(dir, report) {
            out.push(r);
        }
    }
    if raised("rocm.hsa-override") {
        match override_in_profiles(dir, root) {
            Some(r) => out.push(r),
            None => why_not.push(
                "rocm.hsa-override: no shell profile under the home directory or /etc sets HSA_OVERRIDE_GFX_VERSION (it is set elsewhere: unset it there)".into(),
            ),
        }
    }
    if raised("vulkan.amdvlk-left-behind") {
        let changes: Vec<Change> = f
            .vulkan
            .icds
            .iter()
            .filter(|i| matches!(i.kind, VkFamily::Amdvlk | VkFamily::AmdgpuPro))
            .filter(|i| host(dir, &i.manifest).is_file())
            .map(|i| Change::Move {
                from: i.manifest.clone(),
                to: format!(
                    "{ASIDE}/icd.d/{}",
                    i.manifest.trim_start_matches('/').replace('/', "_")
                ),
            })
            .collect();
        if !changes.is_empty() {
            out.push(Remedy {
                finding: "vulkan.amdvlk-left-behind".into(),
                title: "move the AMDVLK/AMDGPU-PRO manifests aside so the loader finds RADV only"
                    .into(),
                changes,
                takes: Takes::Now,
                then: None,
            });
        }
    }
    if raised("rocm.hip-igpu-first") {
        match hip_in_activation(dir, report) {
            Ok(Some(r)) => out.push(r),
            Ok(None) => {}
            Err(e) => why_not.push(format!("rocm.hip-igpu-first: {e}")),
        }
    }
    if raised("apu.small-vram") || raised("apu.gttsize-deprecated") {
        match ttm_limit(dir, report) {
            Ok(r) => out.push(r),
            Err(e) => why_not.push(format!("apu: {e}")),
        }
    }
    (out, why_not)
}

/// The user joins the groups that own the GPU device nodes: `/etc/group`
/// edited (the line of each group gains the user).
fn groups(dir: &Path, report: &Report, user: Option<&str>) -> Result<Option<Remedy>, String> {
    let mut missing: Vec<&str> = Vec::new();
    for n in &report.facts.device_nodes {
        for g in &n.missing_groups {
            if !missing.contains(&g.as_str()) {
                missing.push(g);
            }
        }
    }
    if missing.is_empty() {
        return Ok(None);
    }
    let user = user.ok_or("who runs doctor is unknown (no `id`, no USER)")?;
    let before = read(dir, "/etc/group").ok_or("/etc/group is not readable")?;
    let mut after = String::new();
    let mut joined = Vec::new();
    for line in before.lines() {
        let mut parts: Vec<String> = line.splitn(4, ':').map(str::to_string).collect();
        if parts.len() == 4 && missing.contains(&parts[0].as_str()) {
            let members: Vec<&str> = parts[3].split(',').filter(|m| !m.is_empty()).collect();
            if !members.contains(&user) {
                parts[3] = if members.is_empty() {
                    user.to_string()
                } else {
                    format!("{},{user}", parts[3])
                };
                joined.push(parts[0].clone());
            }
        }
        after.push_str(&parts.join(":"));
        after.push('\n');
    }
    if joined.is_empty() {
        // Already a member on file: only the login is stale.
        return Ok(None);
    }
    Ok(Some(Remedy {
        finding: "kfd.permission".into(),
        title: format!("add {user} to {}", joined.join(", ")),
        changes: vec![Change::Write {
            path: "/etc/group".into(),
            before: Some(before),
            after,
        }],
        takes: Takes::Relogin,
        then: None,
    }))
}

/// The rule that gives the render group the GPU nodes, where a node is
/// owned by a group no user joins for GPUs (root) and not openable.
fn udev_rule(dir: &Path, report: &Report) -> Option<Remedy> {
    let path = "/etc/udev/rules.d/70-greta-gpu.rules";
    let odd = report.facts.device_nodes.iter().any(|n| {
        n.exists
            && n.openable == Some(false)
            && !matches!(n.group.as_deref(), Some("render" | "video"))
    });
    if !odd || host(dir, path).exists() {
        return None;
    }
    Some(Remedy {
        finding: "kfd.permission".into(),
        title: "a udev rule giving the render group /dev/kfd and the render nodes".into(),
        changes: vec![Change::Write {
            path: path.into(),
            before: None,
            after: "# Written by greta doctor --fix: the GPU compute nodes belong to the render group.\nKERNEL==\"kfd\", GROUP=\"render\", MODE=\"0660\"\nSUBSYSTEM==\"drm\", KERNEL==\"renderD*\", GROUP=\"render\", MODE=\"0660\"\n".into(),
        }],
        takes: Takes::Reboot,
        then: Some("sudo udevadm control --reload-rules && sudo udevadm trigger (or reboot)".into()),
    })
}

/// The shell profiles a user's login reads, and the system ones.
fn profiles(root: &Root) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(h) = root.env_nonempty("HOME") {
        for f in [
            ".bashrc",
            ".profile",
            ".bash_profile",
            ".zshrc",
            ".zprofile",
        ] {
            v.push(format!("{}/{f}", h.trim_end_matches('/')));
        }
    }
    v.push("/etc/environment".into());
    v.push("/etc/profile".into());
    v.push("/etc/bash.bashrc".into());
    v
}

/// Whether a shell line sets HSA_OVERRIDE_GFX_VERSION (`export X=`,
/// `X=`, `export X` after it).
fn sets_override(line: &str) -> bool {
    let t = line.trim_start();
    let t = t.strip_prefix("export ").unwrap_or(t).trim_start();
    t.starts_with("HSA_OVERRIDE_GFX_VERSION=")
}

const OFF: &str = "# greta doctor --fix: ";

/// Each line of a shell profile that sets HSA_OVERRIDE_GFX_VERSION turned
/// into a comment that says why.
fn override_in_profiles(dir: &Path, root: &Root) -> Option<Remedy> {
    let mut changes = Vec::new();
    for p in profiles(root) {
        let Some(before) = read(dir, &p) else {
            continue;
        };
        if !before.lines().any(sets_override) {
            continue;
        }
        let mut after = String::new();
        for line in before.lines() {
            if sets_override(line) {
                after.push_str(OFF);
            }
            after.push_str(line);
            after.push('\n');
        }
        changes.push(Change::Write {
            path: p,
            before: Some(before),
            after,
        });
    }
    (!changes.is_empty()).then(|| Remedy {
        finding: "rocm.hsa-override".into(),
        title: "turn the HSA_OVERRIDE_GFX_VERSION lines of the shell profiles into comments".into(),
        changes,
        takes: Takes::NewShell,
        then: None,
    })
}

/// `export HIP_VISIBLE_DEVICES=N` (the discrete GPU) appended to each
/// greta env's activation script.
fn hip_in_activation(dir: &Path, report: &Report) -> Result<Option<Remedy>, String> {
    let d = greta_probe::hip_devices(&report.facts).ok_or("the HIP device order is unknown")?;
    let index = *d
        .discrete()
        .first()
        .ok_or("no discrete GPU in the HIP order")?;
    let mut envs: Vec<&str> = report
        .facts
        .python
        .frameworks
        .iter()
        .map(|x| x.env.as_str())
        .filter(|e| e.starts_with('/'))
        .collect();
    envs.sort();
    envs.dedup();
    let mut changes = Vec::new();
    for env in envs {
        let p = format!("{env}/greta-activate");
        let Some(before) = read(dir, &p) else {
            continue;
        };
        if before.lines().any(|l| l.contains("HIP_VISIBLE_DEVICES=")) {
            continue;
        }
        let after = format!(
            "{before}{}# greta doctor --fix: HIP device 0 is the integrated GPU; select the discrete one.\nexport HIP_VISIBLE_DEVICES={index}\n",
            if before.ends_with('\n') || before.is_empty() { "" } else { "\n" }
        );
        changes.push(Change::Write {
            path: p,
            before: Some(before),
            after,
        });
    }
    if changes.is_empty() {
        return Err("no greta env's activation script (greta-activate) to set it in: set it in the shell that runs HIP programs".into());
    }
    Ok(Some(Remedy {
        finding: "rocm.hip-igpu-first".into(),
        title: format!(
            "select HIP device {index} (the discrete GPU) in the greta env's activation"
        ),
        changes,
        takes: Takes::NewShell,
        then: None,
    }))
}

/// `options ttm pages_limit=N` in modprobe.d on an APU: three quarters of
/// the RAM `/proc/meminfo` shows, in 4 KiB pages.
fn ttm_limit(dir: &Path, report: &Report) -> Result<Remedy, String> {
    let apu = report
        .facts
        .gpus
        .iter()
        .any(|g| g.integrated == Some(true) && g.vendor == greta_probe::Vendor::Amd);
    if !apu {
        return Err("no integrated AMD GPU is known: the GTT ceiling is an APU's".into());
    }
    let path = "/etc/modprobe.d/greta-ttm.conf";
    let mem = read(dir, "/proc/meminfo").ok_or("/proc/meminfo is not readable: RAM unknown")?;
    let kib: u64 = mem
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("/proc/meminfo has no MemTotal line")?;
    let pages = kib / 4 / 4 * 3;
    let before = read(dir, path);
    let line = format!("options ttm pages_limit={pages}");
    if before
        .as_deref()
        .is_some_and(|b| b.lines().any(|l| l.trim() == line))
    {
        return Err(format!("{path} already sets {line}"));
    }
    Ok(Remedy {
        finding: if report.findings.iter().any(|f| f.id == "apu.small-vram") {
            "apu.small-vram".into()
        } else {
            "apu.gttsize-deprecated".into()
        },
        title: format!(
            "raise the GTT ceiling to three quarters of RAM ({}) with ttm.pages_limit",
            greta_vocab::size::memory(pages.saturating_mul(4096))
        ),
        changes: vec![Change::Write {
            path: path.into(),
            before,
            after: format!(
                "# Written by greta doctor --fix: the GPU may map three quarters of RAM.\n{line}\n"
            ),
        }],
        takes: Takes::Reboot,
        then: Some("sudo update-initramfs -u, then reboot".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_lines_are_found_in_their_spellings() {
        assert!(sets_override("export HSA_OVERRIDE_GFX_VERSION=11.0.0"));
        assert!(sets_override("  HSA_OVERRIDE_GFX_VERSION=10.3.0"));
        assert!(!sets_override("# HSA_OVERRIDE_GFX_VERSION=10.3.0"));
        assert!(!sets_override("echo $HSA_OVERRIDE_GFX_VERSION"));
    }
}
