//! One GPU exposed by two drivers (RADV and AMDVLK), or listed twice by
//! the loader (two manifests of one driver): which entry to use, ranked
//! the same in doctor and smoke.

use crate::describe::Description;
use greta_vocab::{DeviceType, DeviceUuid, GpuIdentity, VkDriver};

/// One GPU: the entry to use and the others that expose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Index into the list of the entry to use.
    pub kept: usize,
    /// Indices of the other entries for the same GPU, in list order.
    pub others: Vec<usize>,
}

/// What decides whether two entries are one GPU, and which to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uuid: Option<DeviceUuid>,
    pub driver: Option<VkDriver>,
}

impl Identity {
    pub fn of(d: &Description) -> Identity {
        Identity {
            uuid: d.uuid,
            driver: d.driver.clone(),
        }
    }

    /// Rank of the driver when two expose the same GPU (lower first): the
    /// vocabulary's preference (RADV, greta's primary target, then the
    /// vendors' own drivers, then the rest).
    fn rank(&self) -> u32 {
        self.driver.as_ref().map_or(u32::MAX, |v| v.preference())
    }
}

/// Whether two entries are one GPU: the vocabulary's rule (a nil
/// deviceUUID names no GPU), which the probe's duplicate-GPU check uses too.
pub fn same_gpu(a: &Identity, b: &Identity) -> bool {
    fn id(d: &Identity) -> GpuIdentity<'_> {
        GpuIdentity {
            uuid: d.uuid,
            pci: None,
            bare_name: "",
            driver: d.driver.as_ref().map(|v| v.family()).unwrap_or_default(),
        }
    }
    greta_vocab::same_gpu(&id(a), &id(b)).is_some()
}

/// Groups `list` by GPU, in the order each GPU first appears; the kept
/// entry is the best-ranked driver (the first of equals).
pub fn one_per_gpu<T>(list: &[T], identity: impl Fn(&T) -> Identity) -> Vec<Group> {
    let ids: Vec<Identity> = list.iter().map(identity).collect();
    let mut groups: Vec<Group> = Vec::new();
    for (i, d) in ids.iter().enumerate() {
        match groups.iter_mut().find(|g| same_gpu(&ids[g.kept], d)) {
            None => groups.push(Group {
                kept: i,
                others: Vec::new(),
            }),
            Some(g) if d.rank() < ids[g.kept].rank() => {
                g.others.push(g.kept);
                g.kept = i;
            }
            Some(g) => g.others.push(i),
        }
    }
    for g in &mut groups {
        g.others.sort_unstable();
    }
    groups
}

/// The note an entry kept for a GPU carries about another that exposes
/// it too: the loader listing one driver twice, or two drivers.
pub fn duplicate_note(name: &str, kept: &VkDriver, other: &VkDriver) -> String {
    if kept == other {
        format!(
            "{name} is listed twice by the Vulkan loader ({kept} both times, same deviceUUID: two ICD manifests for one driver?); greta counts it once"
        )
    } else {
        format!(
            "{name} is exposed by two drivers ({kept} and {other}, same deviceUUID); greta uses {kept}. Choose with AMD_VULKAN_ICD or VK_DRIVER_FILES"
        )
    }
}

/// Rank of a device type when greta picks a device itself (lower first):
/// discrete, integrated, virtual, other, CPU.
pub fn type_rank(t: DeviceType) -> u32 {
    match t {
        DeviceType::DiscreteGpu => 0,
        DeviceType::IntegratedGpu => 1,
        DeviceType::VirtualGpu => 2,
        DeviceType::Other => 3,
        DeviceType::Cpu => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(driver: &str, uuid: u8) -> Identity {
        Identity {
            uuid: Some(DeviceUuid([uuid; 16])),
            driver: Some(VkDriver::from_id_name(driver)),
        }
    }

    /// One GPU behind AMDVLK and RADV keeps RADV wherever it stands; a
    /// second GPU (lavapipe) is its own group, in first-seen order.
    #[test]
    fn one_gpu_two_drivers_keeps_radv() {
        let list = [
            id("AMD_OPEN_SOURCE", 0xaa),
            id("MESA_LLVMPIPE", 0xcc),
            id("MESA_RADV", 0xaa),
        ];
        let g = one_per_gpu(&list, Clone::clone);
        assert_eq!(
            g,
            vec![
                Group {
                    kept: 2,
                    others: vec![0]
                },
                Group {
                    kept: 1,
                    others: vec![]
                }
            ]
        );
        let note = duplicate_note("760M", &VkDriver::Radv, &VkDriver::Amdvlk);
        assert!(note.contains("greta uses MESA_RADV"), "{note}");
    }

    #[test]
    fn first_of_equals_kept_and_a_nil_uuid_is_no_gpu() {
        let list = [id("AMD_PROPRIETARY", 0x11), id("AMD_OPEN_SOURCE", 0x11)];
        assert_eq!(
            one_per_gpu(&list, Clone::clone)[0],
            Group {
                kept: 0,
                others: vec![1]
            }
        );
        let nil = [id("MESA_RADV", 0), id("MESA_RADV", 0)];
        assert_eq!(one_per_gpu(&nil, Clone::clone).len(), 2);
        assert!(duplicate_note("x", &VkDriver::Radv, &VkDriver::Radv).contains("listed twice"));
    }
}
