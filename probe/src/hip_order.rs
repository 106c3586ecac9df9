//! Which GPU each HIP device index is, and which ones the selection
//! variables leave visible: the one derivation behind the doctor's note and
//! rules about HIP devices and the installer's activation script.
//!
//! The rules, from ROCm's "GPU isolation techniques" page
//! (rocm.docs.amd.com, reference/system-optimization/gpu-isolation, ROCm
//! 7.14) and HIP's "HIP environment variables" page:
//! - ROCr, the HSA runtime under HIP, enumerates the GPU nodes of the KFD
//!   topology in node order; nodes with CPU cores only are no devices
//!   (rocminfo lists them as CPU agents, and its `Node:` is the KFD node:
//!   ROCm/ROCm#1686 gives "GPU device index = Node - 1" for one CPU node).
//! - `ROCR_VISIBLE_DEVICES` takes device indices or `GPU-` UUIDs and is
//!   applied first, by ROCr; `HIP_VISIBLE_DEVICES` (HIP reads
//!   `CUDA_VISIBLE_DEVICES` when it is unset) takes indices into the devices
//!   ROCr left (the two-step order PyTorch's `_parse_visible_devices`
//!   follows, pytorch/pytorch#142292).
//! - An entry that names no device ends its list, as in the CUDA runtime
//!   these variables imitate (PyTorch mirrors it, pytorch/pytorch#84879):
//!   the devices before it stay; a variable set but empty hides every device.
//!
//! Where no KFD topology or rocminfo was read, an application's own HIP
//! device list (ggml's `Device N:`) gives the order as that process saw
//! it, selection already applied.

use crate::facts::{Facts, Gpu, Vendor};
use crate::from::amd;

/// The variables that choose HIP devices, in the order they are applied.
pub const SELECTION_VARS: &[&str] = &[
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
];

/// One GPU as HIP numbers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HipGpu {
    pub name: String,
    pub gfx: Option<String>,
    pub pci_address: Option<String>,
    /// An integrated GPU (APU), as the facts or its gfx target say.
    pub integrated: bool,
    /// A discrete GPU, as the facts or a known non-APU gfx target say
    /// (neither flag: unknown).
    pub discrete: bool,
    /// ROCr's `GPU-...` UUID when known.
    pub uuid: Option<String>,
}

impl HipGpu {
    fn of(g: &Gpu) -> HipGpu {
        let integrated =
            g.integrated == Some(true) || g.gfx.as_deref().is_some_and(amd::is_apu_target);
        HipGpu {
            name: g.label(|| "AMD GPU".into()),
            gfx: g.gfx.clone(),
            pci_address: g.pci_address.clone(),
            integrated,
            discrete: !integrated && (g.integrated == Some(false) || g.gfx.is_some()),
            uuid: g.rocr_uuid.clone(),
        }
    }

    /// The gfx family (`gfx110X` for gfx1100..gfx1103): one family's
    /// kernels (a per-family wheel, a build for one target) run on no other.
    pub fn family(&self) -> Option<String> {
        let g = self.gfx.as_deref()?;
        Some(format!("{}X", &g[..g.len().saturating_sub(1)]))
    }

    /// "AMD Radeon 780M (gfx1103), integrated, 0000:c4:00.0".
    pub fn describe(&self) -> String {
        let mut s = self.name.clone();
        if self.integrated {
            s.push_str(", integrated");
        } else if self.discrete {
            s.push_str(", discrete");
        }
        if let Some(p) = &self.pci_address {
            s.push_str(", ");
            s.push_str(p);
        }
        s
    }
}

/// Where the order came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderFrom {
    /// KFD topology nodes (sysfs, or rocminfo's `Node:`): ROCr's order,
    /// before any selection.
    Kfd,
    /// The HIP device list an application printed: that process's order,
    /// its selection already applied.
    ApplicationLog,
}

/// A selection entry that names no device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadEntry {
    pub var: String,
    pub entry: String,
}

/// The HIP devices of a machine and what the selection variables leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HipDevices {
    /// Every GPU in enumeration order (the position is ROCr's index).
    pub gpus: Vec<HipGpu>,
    pub from: OrderFrom,
    /// HIP device `i` is `gpus[visible[i]]`.
    pub visible: Vec<usize>,
    /// The selection variables as set (`NAME`, value), in applied order.
    pub selection: Vec<(String, String)>,
    /// Entries naming no device (each ended its list).
    pub bad: Vec<BadEntry>,
    /// Why the selection could not be worked out fully (a UUID with no
    /// UUIDs known): `visible` then holds what was decided before it.
    pub undecided: Option<String>,
}

/// The HIP device order of the machine `f` describes, with the selection
/// applied; `None` when no source gives an AMD GPU's HIP order.
pub fn hip_devices(f: &Facts) -> Option<HipDevices> {
    let selection: Vec<(String, String)> = SELECTION_VARS
        .iter()
        .filter_map(|k| {
            f.rocm
                .visible_devices
                .iter()
                .rev()
                .find(|(n, _)| n == k)
                .cloned()
        })
        .collect();
    // The AMD GPUs that carry `key`, in its order.
    let ordered = |key: fn(&Gpu) -> Option<u32>| -> Vec<HipGpu> {
        let mut keyed: Vec<&Gpu> = f
            .gpus
            .iter()
            .filter(|g| g.vendor == Vendor::Amd && key(g).is_some())
            .collect();
        keyed.sort_by_key(|g| key(g));
        keyed.into_iter().map(HipGpu::of).collect()
    };
    let (gpus, from) = match ordered(|g| g.kfd_node) {
        kfd if !kfd.is_empty() => (kfd, OrderFrom::Kfd),
        _ => (ordered(|g| g.hip_index), OrderFrom::ApplicationLog),
    };
    if gpus.is_empty() {
        return None;
    }
    let mut d = HipDevices {
        visible: (0..gpus.len()).collect(),
        gpus,
        from,
        selection,
        bad: Vec::new(),
        undecided: None,
    };
    // An application's own list has its selection applied already.
    if from == OrderFrom::Kfd {
        d.apply_selection();
    }
    Some(d)
}

impl HipDevices {
    /// ROCR_VISIBLE_DEVICES over the whole list, then HIP_VISIBLE_DEVICES
    /// (else CUDA_VISIBLE_DEVICES) over what it left.
    fn apply_selection(&mut self) {
        let selection = self.selection.clone();
        let value = |k: &str| {
            selection
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        let hip_var = ["HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"]
            .into_iter()
            .find(|k| value(k).is_some());
        for var in std::iter::once("ROCR_VISIBLE_DEVICES").chain(hip_var) {
            let Some(v) = value(var) else { continue };
            if self.undecided.is_some() {
                return;
            }
            self.visible = self.pick(var, &v);
        }
    }

    /// The positions (into `gpus`) that `value` of `var` leaves of `visible`.
    fn pick(&mut self, var: &str, value: &str) -> Vec<usize> {
        let mut out = Vec::new();
        if value.trim().is_empty() {
            return out;
        }
        for entry in value.split(',').map(str::trim) {
            let found = if entry.len() > 4 && entry[..4].eq_ignore_ascii_case("GPU-") {
                if self.visible.iter().all(|&i| self.gpus[i].uuid.is_none()) {
                    self.undecided = Some(format!(
                        "{var} names {entry}, and no GPU's UUID is known here"
                    ));
                    return out;
                }
                self.visible.iter().copied().find(|&i| {
                    self.gpus[i]
                        .uuid
                        .as_deref()
                        .is_some_and(|u| u.eq_ignore_ascii_case(entry))
                })
            } else {
                entry
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| self.visible.get(n).copied())
            };
            match found {
                Some(i) if !out.contains(&i) => out.push(i),
                Some(_) => {}
                None => {
                    self.bad.push(BadEntry {
                        var: var.into(),
                        entry: entry.into(),
                    });
                    break;
                }
            }
        }
        out
    }

    /// HIP device `index`.
    pub fn device(&self, index: usize) -> Option<&HipGpu> {
        self.visible.get(index).map(|&i| &self.gpus[i])
    }

    /// Whether the GPUs span more than one gfx family.
    pub fn several_families(&self) -> bool {
        let mut fams: Vec<String> = self.gpus.iter().filter_map(HipGpu::family).collect();
        fams.sort();
        fams.dedup();
        fams.len() > 1
    }

    /// Whether the GPUs are not all alike (by name and target).
    pub fn differ(&self) -> bool {
        self.gpus
            .iter()
            .any(|g| (&g.name, &g.gfx) != (&self.gpus[0].name, &self.gpus[0].gfx))
    }

    /// HIP indices of the visible GPUs that are not integrated.
    pub fn discrete(&self) -> Vec<usize> {
        (0..self.visible.len())
            .filter(|&i| self.device(i).is_some_and(|g| !g.integrated))
            .collect()
    }

    /// `NAME=value` of each selection variable set ("NAME=" when empty).
    pub fn selection_text(&self) -> String {
        self.selection
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// One line: what each HIP device index is, and what the selection
    /// leaves (the doctor's note, the activation script's line).
    pub fn summary(&self) -> String {
        let list = |ix: &mut dyn Iterator<Item = (usize, &HipGpu)>| {
            ix.map(|(i, g)| format!("{i} = {}", g.describe()))
                .collect::<Vec<_>>()
                .join("; ")
        };
        if self.from == OrderFrom::ApplicationLog {
            return format!(
                "HIP devices as the application listed them: {}",
                list(&mut self.gpus.iter().enumerate())
            );
        }
        if self.selection.is_empty() {
            return format!(
                "HIP devices (KFD topology order): {}; ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES are unset, so a HIP program sees all {} and uses device 0 unless it picks another",
                list(&mut self.gpus.iter().enumerate()),
                self.gpus.len()
            );
        }
        let left = if self.visible.is_empty() {
            "no GPU at all".to_string()
        } else {
            format!(
                "HIP device {}",
                list(&mut self.visible.iter().map(|&i| &self.gpus[i]).enumerate())
            )
        };
        let mut s = format!(
            "GPUs in KFD topology order: {}; {} leaves {left}",
            list(&mut self.gpus.iter().enumerate()),
            self.selection_text()
        );
        for b in &self.bad {
            s.push_str(&format!(
                " ({} entry {:?} names no device, and ends the list)",
                b.var, b.entry
            ));
        }
        if let Some(u) = &self.undecided {
            s.push_str(&format!(" (undecided: {u})"));
        }
        s
    }
}

/// Why `selection` leaves HIP no device on every machine, whatever GPUs it
/// has (`None` when that depends on the machine): a variable set empty or
/// whose first entry is a negative index, or a HIP index at or past the
/// number of devices ROCR_VISIBLE_DEVICES keeps (ROCr keeps at most one
/// device per entry, and HIP numbers what it kept from 0: SwarmUI#565's
/// `ROCR_VISIBLE_DEVICES=1` with `HIP_VISIBLE_DEVICES=1`).
pub fn hides_every_device(selection: &[(String, String)]) -> Option<String> {
    let value = |k: &str| {
        selection
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    let hip_var = ["HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"]
        .into_iter()
        .find(|k| value(k).is_some());
    for var in std::iter::once("ROCR_VISIBLE_DEVICES").chain(hip_var) {
        let Some(v) = value(var) else { continue };
        let first = v.split(',').next().unwrap_or("").trim();
        if first.is_empty() || first.parse::<i64>().is_ok_and(|n| n < 0) {
            return Some(format!("{var}={v} leaves no device on any machine"));
        }
    }
    let rocr = value("ROCR_VISIBLE_DEVICES")?;
    let hip_var = hip_var?;
    let hip = value(hip_var)?;
    let kept = rocr.split(',').count();
    let first: usize = hip.split(',').next()?.trim().parse().ok()?;
    (first >= kept).then(|| {
        format!(
            "ROCR_VISIBLE_DEVICES={rocr} keeps at most {kept} device(s), which HIP numbers from 0, so {hip_var}={hip} names none: no GPU is left on any machine"
        )
    })
}

/// The doctor's note on HIP devices: for AMD GPUs that differ (which one
/// is device 0 matters), or any selection variable set; where AMD GPUs of
/// several families are known but not their HIP order, that it is unknown.
pub fn note(f: &Facts) -> Option<String> {
    let Some(d) = hip_devices(f) else {
        return order_unknown(f);
    };
    (d.differ() || !d.selection.is_empty()).then(|| d.summary())
}

/// AMD GPUs of several families with no source of HIP's order (a Vulkan
/// listing, an SMI table): which one is HIP device 0 is not known.
fn order_unknown(f: &Facts) -> Option<String> {
    let amd: Vec<HipGpu> = f
        .gpus
        .iter()
        .filter(|g| g.vendor == Vendor::Amd && g.gfx.is_some())
        .map(HipGpu::of)
        .collect();
    let mut fams: Vec<String> = amd.iter().filter_map(HipGpu::family).collect();
    fams.sort();
    fams.dedup();
    (fams.len() > 1).then(|| {
        format!(
            "HIP device order unknown: {} are AMD GPUs of different families, but nothing here (KFD topology, rocminfo, a HIP device list) says which one is HIP device 0; `rocminfo | grep -E 'Node:|Marketing Name'` lists the GPU agents in HIP's order",
            amd.iter().map(|g| g.name.as_str()).collect::<Vec<_>>().join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    /// Selections that hide every device whatever the machine; the HIP
    /// order rules of this module's head give each answer.
    #[test]
    fn selections_that_hide_every_device_on_any_machine() {
        let sel = |l: &[(&str, &str)]| {
            l.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        for (l, hides) in [
            // SwarmUI#565 (exports) and Parsl#3858 (command prefixes).
            (
                &[("ROCR_VISIBLE_DEVICES", "1"), ("HIP_VISIBLE_DEVICES", "1")][..],
                true,
            ),
            (
                &[("ROCR_VISIBLE_DEVICES", "1"), ("CUDA_VISIBLE_DEVICES", "1")][..],
                true,
            ),
            (
                &[("ROCR_VISIBLE_DEVICES", "1"), ("CUDA_VISIBLE_DEVICES", "0")][..],
                false,
            ),
            (
                &[
                    ("ROCR_VISIBLE_DEVICES", "2,3"),
                    ("HIP_VISIBLE_DEVICES", "1"),
                ][..],
                false,
            ),
            (
                &[
                    ("ROCR_VISIBLE_DEVICES", "2,3"),
                    ("HIP_VISIBLE_DEVICES", "2"),
                ][..],
                true,
            ),
            // HIP_VISIBLE_DEVICES wins over CUDA_VISIBLE_DEVICES.
            (
                &[
                    ("ROCR_VISIBLE_DEVICES", "0"),
                    ("HIP_VISIBLE_DEVICES", "0"),
                    ("CUDA_VISIBLE_DEVICES", "3"),
                ][..],
                false,
            ),
            (&[("HIP_VISIBLE_DEVICES", "")][..], true),
            (&[("HIP_VISIBLE_DEVICES", "-1")][..], true),
            // Without ROCR_VISIBLE_DEVICES the count depends on the machine.
            (&[("HIP_VISIBLE_DEVICES", "7")][..], false),
            (&[][..], false),
        ] {
            assert_eq!(super::hides_every_device(&sel(l)).is_some(), hides, "{l:?}");
        }
    }

    use super::*;

    fn gpu(node: u32, name: &str, gfx: &str, uuid: Option<&str>) -> Gpu {
        Gpu {
            vendor: Vendor::Amd,
            name: name.into(),
            gfx: Some(gfx.into()),
            kfd_node: Some(node),
            rocr_uuid: uuid.map(String::from),
            ..Gpu::default()
        }
    }

    /// Facts of an iGPU on node 1 and a dGPU on node 2, listed out of order
    /// (facts list GPUs in PCI order), with `env` set.
    fn machine(env: &[(&str, &str)]) -> Facts {
        let mut f = Facts {
            gpus: vec![
                gpu(
                    2,
                    "AMD Radeon RX 7900 XTX",
                    "gfx1100",
                    Some("GPU-00000000000000b2"),
                ),
                gpu(
                    1,
                    "AMD Radeon 760M",
                    "gfx1103",
                    Some("GPU-00000000000000a1"),
                ),
                Gpu {
                    vendor: Vendor::Nvidia,
                    name: "NVIDIA".into(),
                    ..Gpu::default()
                },
            ],
            ..Facts::default()
        };
        f.rocm.visible_devices = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        f
    }

    fn names(d: &HipDevices) -> Vec<&str> {
        (0..d.visible.len())
            .map(|i| d.device(i).unwrap().gfx.as_deref().unwrap())
            .collect()
    }

    #[test]
    fn kfd_node_order_without_selection() {
        let d = hip_devices(&machine(&[])).unwrap();
        assert_eq!(d.from, OrderFrom::Kfd);
        assert_eq!(names(&d), ["gfx1103", "gfx1100"]);
        assert!(d.device(0).unwrap().integrated);
        assert_eq!(d.discrete(), [1]);
        assert!(!d.several_families(), "gfx110X both");
        assert!(
            d.summary()
                .contains("0 = AMD Radeon 760M (gfx1103), integrated"),
            "{}",
            d.summary()
        );
    }

    #[test]
    fn rocr_filters_first_then_hip_indexes_what_is_left() {
        for (env, want, bad) in [
            (vec![("HIP_VISIBLE_DEVICES", "1")], vec!["gfx1100"], 0),
            (vec![("ROCR_VISIBLE_DEVICES", "1")], vec!["gfx1100"], 0),
            (
                vec![
                    ("ROCR_VISIBLE_DEVICES", "1,0"),
                    ("HIP_VISIBLE_DEVICES", "1"),
                ],
                vec!["gfx1103"],
                0,
            ),
            (
                vec![("ROCR_VISIBLE_DEVICES", "1"), ("HIP_VISIBLE_DEVICES", "1")],
                vec![],
                1,
            ),
            (
                vec![("ROCR_VISIBLE_DEVICES", "GPU-00000000000000B2")],
                vec!["gfx1100"],
                0,
            ),
            (vec![("ROCR_VISIBLE_DEVICES", "GPU-ffff")], vec![], 1),
            (vec![("HIP_VISIBLE_DEVICES", "0,5,1")], vec!["gfx1103"], 1),
            (vec![("HIP_VISIBLE_DEVICES", "-1")], vec![], 1),
            (vec![("HIP_VISIBLE_DEVICES", "")], vec![], 0),
            (vec![("HIP_VISIBLE_DEVICES", "1,1")], vec!["gfx1100"], 0),
            (vec![("CUDA_VISIBLE_DEVICES", "1")], vec!["gfx1100"], 0),
            (
                vec![("HIP_VISIBLE_DEVICES", "0"), ("CUDA_VISIBLE_DEVICES", "1")],
                vec!["gfx1103"],
                0,
            ),
        ] {
            let d = hip_devices(&machine(&env)).unwrap();
            assert_eq!(names(&d), want, "{env:?}");
            assert_eq!(d.bad.len(), bad, "{env:?}");
            assert!(d.summary().contains(&d.selection_text()), "{env:?}");
        }
    }

    #[test]
    fn a_uuid_with_no_uuids_known_is_undecided_not_bad() {
        let mut f = machine(&[("ROCR_VISIBLE_DEVICES", "GPU-1234")]);
        for g in &mut f.gpus {
            g.rocr_uuid = None;
        }
        let d = hip_devices(&f).unwrap();
        assert!(d.bad.is_empty());
        assert!(d.undecided.is_some());
        assert!(d.summary().contains("undecided"), "{}", d.summary());
    }

    #[test]
    fn an_application_list_is_taken_as_printed() {
        let mut f = Facts::default();
        for (i, (n, x)) in [
            ("AMD Radeon RX 9070", "gfx1201"),
            ("AMD Radeon 740M Graphics", "gfx1103"),
        ]
        .iter()
        .enumerate()
        {
            f.gpus.push(Gpu {
                vendor: Vendor::Amd,
                name: n.to_string(),
                gfx: Some(x.to_string()),
                hip_index: Some(i as u32),
                ..Gpu::default()
            });
        }
        f.gpus.reverse();
        let d = hip_devices(&f).unwrap();
        assert_eq!(d.from, OrderFrom::ApplicationLog);
        assert_eq!(names(&d), ["gfx1201", "gfx1103"]);
        assert!(d.several_families());
        assert!(note(&f).unwrap().starts_with("HIP devices as the application listed them: 0 = AMD Radeon RX 9070 (gfx1201), discrete"));
        assert_eq!(hip_devices(&Facts::default()), None);
    }

    #[test]
    fn several_families_without_an_order_say_it_is_unknown() {
        let mut f = machine(&[]);
        for g in &mut f.gpus {
            g.kfd_node = None;
        }
        assert!(hip_devices(&f).is_none());
        assert!(note(&f).is_none(), "gfx1100 and gfx1103: one family");
        f.gpus[0].gfx = Some("gfx1201".into());
        let n = note(&f).unwrap();
        assert!(n.starts_with("HIP device order unknown: AMD Radeon RX 7900 XTX (gfx1201), AMD Radeon 760M (gfx1103) are"), "{n}");
        f.gpus.remove(1);
        assert!(note(&f).is_none(), "one AMD GPU");
    }

    #[test]
    fn one_gpu_and_no_selection_makes_no_note() {
        let mut f = machine(&[]);
        f.gpus.remove(0);
        assert!(note(&f).is_none());
        f.rocm.visible_devices = vec![("HIP_VISIBLE_DEVICES".into(), "0".into())];
        assert!(note(&f)
            .unwrap()
            .contains("HIP_VISIBLE_DEVICES=0 leaves HIP device 0 = AMD Radeon 760M"));
    }
}
