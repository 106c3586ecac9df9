//! `rocminfo` (and `rocminfo --support`): the HSA runtime's own view. A GPU
//! agent here proves the whole stack up to HSA works; the failure lines
//! (`Unable to open /dev/kfd ...`) are picked up by the signal table.
//!
//! Pasted dumps are often cut (`[...]`, pager artifacts like `[391/1815]`,
//! missing `*** Done ***`), so agents are found by their top-level `Name:`
//! rather than by the `Agent N` banners, and "no GPU agent" is concluded only
//! from a complete dump.

use super::amd::{self, bdf_from_bdfid, find_gfx, parse_id};
use super::kv;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, KernelDriver, Vendor};

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "rocminfo",
    label: "rocminfo",
    detect: recognise,
    parse: |t, s| {
        let mut f = parse(t);
        super::loose::rocminfo_crash(&mut f, t, s);
        f
    },
    alone: false,
    markers: &[&[
        "HSA System Attributes",
        "HSA Agents",
        "ROCk module",
        "hsa api call failure",
        "Unable to open /dev/kfd",
        "WSL environment detected",
        "Uuid",
        "Marketing Name",
        "Vendor Name",
        "Compute Unit",
        "Device Type",
        "amdgcn-amd-amdhsa--gfx",
    ]],
};

pub fn recognise(text: &str) -> bool {
    [
        "HSA System Attributes",
        "HSA Agents",
        "ROCk module",
        "hsa api call failure",
        "Unable to open /dev/kfd",
        "WSL environment detected",
    ]
    .iter()
    .any(|m| text.contains(m))
        || is_agent_fragment(text)
        || lines_of(text).any(is_isa_name)
}

/// rocminfo's ISA line, `Name: amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`:
/// what is left of a dump filtered with `rocminfo | grep gfx` (the other
/// line it keeps is the agent's `Name: gfx90a`). No other tool prints an
/// ISA name under a `Name:` key.
fn is_isa_name(line: &str) -> bool {
    kv(strip_pager(line))
        .is_some_and(|(_, k, v)| k == "Name" && v.starts_with("amdgcn-amd-amdhsa--gfx"))
}

/// An excerpt of agent blocks without the headers: an `Agent N` banner, or
/// a top-level `Name:` followed by rocminfo's `Uuid:`/`Marketing Name:` keys.
fn is_agent_fragment(text: &str) -> bool {
    let mut banner = false;
    let mut keys = 0;
    for l in lines_of(text) {
        let t = strip_pager(l).trim();
        if let Some(n) = t.strip_prefix("Agent ") {
            banner |= !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
        }
        if let Some((_, k, _)) = kv(l) {
            if matches!(
                k,
                "Uuid" | "Marketing Name" | "Vendor Name" | "Compute Unit" | "Device Type"
            ) {
                keys += 1;
            }
        }
    }
    (banner && keys >= 1) || keys >= 2
}

/// Strips a trailing pager position such as `[391/1815]`.
fn strip_pager(line: &str) -> &str {
    let t = line.trim_end();
    if t.ends_with(']') {
        if let Some(open) = t.rfind('[') {
            let inner = &t[open + 1..t.len() - 1];
            if let Some((a, b)) = inner.split_once('/') {
                if !a.is_empty()
                    && a.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
                {
                    return t[..open].trim_end();
                }
            }
        }
    }
    t
}

#[derive(Default)]
struct Agent {
    name: String,
    marketing: Option<String>,
    vendor: Option<String>,
    device_type: Option<String>,
    chip_id: Option<u32>,
    bdfid: Option<u32>,
    compute_units: Option<u32>,
    isa_gfx: Option<String>,
    coarse_kb: Option<u64>,
    segment: String,
    /// `Node:`, the KFD topology node (HIP's device order).
    node: Option<u32>,
    /// `Uuid:` when it names one (`GPU-XX` is rocminfo's "none").
    uuid: Option<String>,
}

impl Agent {
    /// A GPU agent: its `Device Type`, or when a cut or filtered dump lacks
    /// that line, an agent named by a gfx target alone.
    fn is_gpu(&self) -> bool {
        self.device_type.as_deref() == Some("GPU")
            || (self.device_type.is_none()
                && find_gfx(&self.name).is_some_and(|g| g == self.name.trim()))
    }
}

/// Agents kept from one dump: a real node lists its GPUs and one or two
/// CPUs, a dump filtered with grep each agent twice; what a paste claims
/// beyond is counted (the GPU agents), not kept (see `limits`).
const MAX_AGENTS: usize = 4 * super::MAX_LISTED;

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut agents: Vec<Agent> = Vec::new();
    let mut cur: Option<Agent> = None;
    let mut done = false;
    let mut gpus_beyond = 0usize;
    let mut keep = |a: Agent, agents: &mut Vec<Agent>| {
        if agents.len() < MAX_AGENTS {
            agents.push(a);
        } else if a.is_gpu() {
            gpus_beyond += 1;
        }
    };
    for raw in lines_of(text) {
        let line = strip_pager(raw);
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("ROCk module version ") {
            if let Some(v) = rest.strip_suffix(" is loaded") {
                f.kernel_driver_version = Some(v.trim().to_string());
                f.drivers.push(KernelDriver {
                    name: "amdgpu".into(),
                    loaded: true,
                    version: Some(v.trim().into()),
                });
            }
            continue;
        }
        // Older rocminfo says only whether the module is loaded.
        let loaded = if t.starts_with("ROCk module is loaded") {
            Some(true)
        } else if t.starts_with("ROCk module is NOT loaded")
            || t.starts_with("ROCk module is NOT live")
        {
            Some(false)
        } else {
            None
        };
        if let Some(loaded) = loaded {
            f.drivers.push(KernelDriver {
                name: "amdgpu".into(),
                loaded,
                version: None,
            });
            continue;
        }
        if t.starts_with("WSL environment detected") {
            f.wsl = Some(true);
            continue;
        }
        if t.starts_with("*** Done ***") {
            done = true;
            continue;
        }
        let Some((indent, key, val)) = kv(line) else {
            continue;
        };
        match key {
            "Name" if indent <= 2 => {
                if let Some(a) = cur.take() {
                    keep(a, &mut agents);
                }
                cur = Some(Agent {
                    name: val.to_string(),
                    ..Agent::default()
                });
            }
            "Name" => {
                if let Some(a) = cur.as_mut() {
                    if a.isa_gfx.is_none() && val.starts_with("amdgcn") {
                        a.isa_gfx = find_gfx(val);
                    }
                }
            }
            _ => {
                let Some(a) = cur.as_mut() else { continue };
                match key {
                    "Marketing Name" => a.marketing = Some(val.to_string()),
                    "Vendor Name" => a.vendor = Some(val.to_string()),
                    // A dump cut right after the key gives no type.
                    "Device Type" if !val.is_empty() => a.device_type = Some(val.to_string()),
                    "Chip ID" => a.chip_id = paren_hex(val).or_else(|| parse_id(val)),
                    "BDFID" => a.bdfid = parse_id(val),
                    "Compute Unit" => a.compute_units = parse_id(val),
                    "Node" => a.node = parse_id(val),
                    "Uuid" if val.starts_with("GPU-") && val != "GPU-XX" => {
                        a.uuid = Some(val.to_string())
                    }
                    "Segment" => a.segment = val.to_string(),
                    "Size"
                        if indent >= 4
                            && a.coarse_kb.is_none()
                            && a.segment.contains("GLOBAL")
                            && a.segment.contains("COARSE GRAINED") =>
                    {
                        a.coarse_kb = val.split(['(', ' ']).next().and_then(|n| n.parse().ok());
                    }
                    _ => {}
                }
            }
        }
    }
    if let Some(a) = cur.take() {
        keep(a, &mut agents);
    }
    drop_grep_repeats(&mut agents);
    for a in &agents {
        if !a.is_gpu() {
            continue;
        }
        let reported = find_gfx(&a.name).or_else(|| a.isa_gfx.clone());
        let vendor = match a.vendor.as_deref() {
            Some("AMD") | None => Vendor::Amd,
            Some(_) => Vendor::Other,
        };
        let name = a
            .marketing
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| a.name.clone());
        let device_id = a
            .chip_id
            .filter(|&c| c != 0 && c <= 0xffff)
            .map(|c| c as u16);
        let vendor_id = (vendor == Vendor::Amd).then_some(amd::AMD);
        // HSA reports the target HSA_OVERRIDE_GFX_VERSION forces; the chip id
        // (from KFD) or a name only one chip carries says what the GPU is.
        let forced = reported
            .as_deref()
            .filter(|_| vendor == Vendor::Amd)
            .and_then(|r| amd::forced_target(r, device_id, &name));
        let gfx = match forced {
            Some((real, value)) => {
                f.rocm.hsa_override_gfx_version.get_or_insert(value);
                Some(real)
            }
            None => reported.clone(),
        };
        let integrated = gfx
            .as_deref()
            .filter(|g| amd::is_apu_target(g))
            .map(|_| true);
        f.gpus.push(Gpu {
            vendor,
            vf: amd::is_vf(&name, vendor_id, device_id),
            name,
            pci_address: a.bdfid.and_then(bdf_from_bdfid),
            vendor_id,
            device_id,
            gfx: gfx.clone(),
            integrated,
            compute_units: a.compute_units,
            // A pasted size in KiB that would overflow bytes is not a real
            // pool (found by the from_text fuzz target): no size, not a wrap.
            vram_bytes: a.coarse_kb.and_then(|kb| kb.checked_mul(1024)),
            seen_by: vec!["rocminfo".into()],
            kfd_node: a.node,
            rocr_uuid: a.uuid.clone(),
            ..Gpu::default()
        });
        // The runtime's own view: the target it loads code for.
        if let Some(g) = reported {
            if !f.rocm.agent_gfx.contains(&g) {
                f.rocm.agent_gfx.push(g);
            }
        }
    }
    if gpus_beyond > 0 {
        f.cut.insert("GPUs", f.gpus.len() + gpus_beyond);
    }
    if !f.gpus.is_empty() {
        f.rocm.runtime_sees_gpu = Some(true);
    } else if done && !agents.is_empty() {
        // A complete dump listing only CPU agents: HSA sees no GPU.
        f.rocm.runtime_sees_gpu = Some(false);
    }
    f
}

/// A session often shows `rocminfo | grep gfx` and then the full dump (or
/// part of it) of the same machine: the grep's bare agents (a `Name: gfxN`
/// with nothing but its ISA line) repeat GPUs a full agent block also
/// describes. Per gfx target, the bare agents beyond the full blocks' count
/// are GPUs the cut dump does not reach; the others are repeats.
fn drop_grep_repeats(agents: &mut Vec<Agent>) {
    let bare = |a: &Agent| a.device_type.is_none() && a.marketing.is_none() && a.vendor.is_none();
    let full_gfx: Vec<String> = agents
        .iter()
        .filter(|a| !bare(a) && a.is_gpu())
        .filter_map(|a| find_gfx(&a.name).or_else(|| a.isa_gfx.clone()))
        .collect();
    let mut unclaimed = full_gfx;
    agents.retain(|a| {
        if !bare(a) {
            return true;
        }
        let Some(g) = find_gfx(&a.name) else {
            return true;
        };
        match unclaimed.iter().position(|x| *x == g) {
            Some(i) => {
                unclaimed.swap_remove(i);
                false
            }
            None => true,
        }
    });
}

/// "29877(0x74b5)" -> 0x74b5.
fn paren_hex(v: &str) -> Option<u32> {
    let open = v.find('(')?;
    let close = v[open..].find(')')? + open;
    parse_id(&v[open + 1..close])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pager_artifacts_are_stripped() {
        assert_eq!(strip_pager("  Pool Info:      [391/1815]"), "  Pool Info:");
        assert_eq!(strip_pager("  x: [a/b]"), "  x: [a/b]");
    }

    /// `rocminfo | grep gfx` alone (ROCm/ROCm-docker#93: two MI200 GPUs in
    /// a container; robertrosenbusch/gfx803_rocm#13: one RX 590).
    #[test]
    fn grep_filtered_dump_is_recognised_with_one_gpu_per_agent() {
        let t = "I have no name!@39764af76254:/$ rocminfo | grep gfx*\n  Name:                    gfx90a\n      Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-\n  Name:                    gfx90a\n      Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-\n";
        assert!(recognise(t));
        let f = parse(t);
        let gfx: Vec<_> = f.gpus.iter().map(|g| g.gfx.as_deref()).collect();
        assert_eq!(gfx, [Some("gfx90a"), Some("gfx90a")]);
        // gfx803's ISA line, with pager-free trailing spaces.
        assert!(recognise(
            "      Name:                    amdgcn-amd-amdhsa--gfx803 \n"
        ));
        // clinfo names the device, never the ISA under `Name:`.
        assert!(!recognise(
            "  Device Name                                     gfx1030\n"
        ));
    }

    /// The grep output and then the full dump of the same GPU is one GPU;
    /// a grep listing more GPUs than a cut dump reaches keeps the rest.
    #[test]
    fn grep_output_before_the_full_dump_is_not_a_second_gpu() {
        let grep = "  Name:                    gfx803\n      Name:                    amdgcn-amd-amdhsa--gfx803\n";
        let full = "HSA Agents\n  Name:                    gfx803\n  Marketing Name:          Radeon RX 590 Series\n  Vendor Name:             AMD\n  Device Type:             GPU\n";
        // The dump of gfx803_rocm#13 is cut before `Device Type`.
        let cut = full.replace("  Device Type:             GPU\n", "");
        assert_eq!(parse(&format!("{grep}\n{cut}")).gpus.len(), 1);
        let f = parse(&format!("{grep}\n{full}"));
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].name, "Radeon RX 590 Series");
        let f = parse(&format!("{grep}{grep}\n{full}"));
        assert_eq!(f.gpus.len(), 2);
    }

    /// Old rocminfo printed the HSA status as a number (ROCm/ROCm#415 1.8,
    /// #739 2.1 Ubuntu, #719 2.1 CentOS): 4104 = HSA_STATUS_ERROR_OUT_OF_RESOURCES.
    #[test]
    fn numeric_out_of_resources_status_is_the_named_one() {
        for line in [
            "hsa api call failure at line 900, file: /data/jenkins_workspace/compute-rocm-rel-2.1/rocminfo/rocminfo.cc. Call returned 4104",
            "hsa api call failure at line 900, file: /home/jenkins/jenkins-root/workspace/compute-rocm-rel-1.8/rocminfo/rocminfo.cc. Call returned 4104",
            "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.",
        ] {
            let id = crate::signals::classify(line).map(|s| s.id.as_str());
            assert_eq!(id, Some("hsa-out-of-resources"), "{line}");
        }
        assert!(recognise(
            "hsa api call failure at line 900, file: rocminfo.cc. Call returned 4104"
        ));
        // Another status number is not this one.
        let other = "hsa api call failure at line 900, file: rocminfo.cc. Call returned 4107";
        assert_ne!(
            crate::signals::classify(other).map(|s| s.id.as_str()),
            Some("hsa-out-of-resources")
        );
    }

    /// A stale override makes HSA name an MI210 (Chip ID 0x740f, gfx90a)
    /// gfx1030 (ROCm/ROCm#5238: "set the HSA_OVERRIDE_GFX_VERSION to
    /// gfx1030 ... and forgot about it").
    #[test]
    fn an_agent_target_its_chip_contradicts_is_a_forced_override() {
        let t = "HSA Agents\n  Name:                    gfx1030\n  Marketing Name:          AMD Instinct MI210\n  Vendor Name:             AMD\n  Device Type:             GPU\n  Chip ID:                 29711(0x740f)\n";
        let f = parse(t);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx90a"));
        assert_eq!(f.rocm.hsa_override_gfx_version.as_deref(), Some("10.3.0"));
        // The chip's own target is no override.
        let ok = t.replace("gfx1030", "gfx90a");
        assert_eq!(parse(&ok).rocm.hsa_override_gfx_version, None);
    }

    /// rocminfo of ROCm 6.x checks /sys/module/amdgpu/initstate and says
    /// "NOT live" where older ones said "NOT loaded" (ROCm/amdgpu#211: an
    /// MI50 whose amdgpu never finished its SR-IOV handshake; ROCm-docker#107).
    #[test]
    fn rock_not_live_is_the_not_loaded_spelling_of_rocm6() {
        for line in [
            "ROCk module is NOT live, possibly no GPU devices",
            "ROCk module is NOT loaded, possibly no GPU devices",
        ] {
            let f = parse(line);
            assert_eq!(f.drivers.len(), 1, "{line}");
            assert!(!f.drivers[0].loaded, "{line}");
            let id = crate::signals::classify(line).map(|s| s.id.as_str());
            assert_eq!(id, Some("rock-not-loaded"), "{line}");
        }
        assert!(parse("ROCk module is loaded").drivers[0].loaded);
    }

    #[test]
    fn complete_dump_without_gpu_means_runtime_sees_none() {
        let t = "ROCk module is loaded\nHSA Agents\n  Name:  AMD EPYC\n  Device Type:  CPU\n*** Done ***\n";
        let f = parse(t);
        assert!(f.gpus.is_empty());
        assert_eq!(f.rocm.runtime_sees_gpu, Some(false));
        let cut = t.replace("*** Done ***\n", "");
        assert_eq!(parse(&cut).rocm.runtime_sees_gpu, None);
    }

    /// A dump cut right after `Device Type:` (rocBLAS#1380, agent 9 of a
    /// multi-GPU host): the agent is still the GPU its name says, with its
    /// marketing name.
    #[test]
    fn an_agent_cut_at_its_device_type_is_a_gpu() {
        let t = "*******                  \nAgent 9                  \n*******                  \n  Name:                    gfx1100                            \n  Uuid:                    GPU-b85e402c0fb3757f               \n  Marketing Name:          Radeon RX 7900 XTX                 \n  Vendor Name:             AMD                                \n  Node:                    8                                  \n  Device Type:";
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].name, "Radeon RX 7900 XTX");
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1100"));
    }
}
