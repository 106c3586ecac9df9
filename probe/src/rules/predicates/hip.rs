//! Which GPU each HIP device index is ([`crate::hip_order`]): device 0 on an
//! iGPU beside a GPU of another family, selection variables that name no
//! device, and a GPU error on an iGPU's index.

use super::{about, when, Predicate, View};
use crate::hip_order::{HipDevices, OrderFrom};

/// HIP device 0 is an integrated GPU while a GPU of another gfx family is
/// there and nothing selects among them.
pub struct HipIgpuFirst;
impl Predicate for HipIgpuFirst {
    about!(
        "hip_igpu_first",
        "AMD GPUs of several gfx families, no device selection known, and HIP device 0 is an integrated GPU",
        ["gpus", "rocm"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let d = v.hip.as_ref()?;
        when(
            d.selection.is_empty()
                && d.several_families()
                && d.device(0).is_some_and(|g| g.integrated)
                && !d.discrete().is_empty(),
            || vec![d.summary()],
        )
    }
}

/// The selection variables leave no GPU.
pub struct HipSelectionHidesAll;
impl Predicate for HipSelectionHidesAll {
    about!(
        "hip_selection_hides_all",
        "ROCR_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES leave no AMD GPU visible to HIP",
        ["gpus", "rocm"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        // No GPU order known: only a selection that hides every device on
        // any machine is concluded.
        if v.hip.is_none() {
            let why = crate::hip_order::hides_every_device(&v.facts.rocm.visible_devices)?;
            return Some(vec![why]);
        }
        let d = selection_applied(v)?;
        when(d.visible.is_empty() && d.undecided.is_none(), || {
            vec![d.summary()]
        })
    }
}

/// A selection entry names an index or UUID that is no device.
pub struct HipSelectionNamesMissing;
impl Predicate for HipSelectionNamesMissing {
    about!(
        "hip_selection_names_missing",
        "ROCR_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES name an index or UUID that is no device",
        ["gpus", "rocm"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let d = selection_applied(v)?;
        when(!d.bad.is_empty(), || {
            d.bad
                .iter()
                .map(|b| format!("{}: entry {:?} names no device", b.var, b.entry))
                .chain([d.summary()])
                .collect()
        })
    }
}

/// The HIP order with a selection worked out over it (ROCr's order only:
/// an application's own list has its selection applied already).
fn selection_applied<'v>(v: &'v View) -> Option<&'v HipDevices> {
    v.hip
        .as_ref()
        .filter(|d| d.from == OrderFrom::Kfd && !d.selection.is_empty())
}

/// An application's GPU error happened on a HIP device that is an
/// integrated GPU, while a non-integrated one is there too.
pub struct HipFailedOnIgpu;
impl Predicate for HipFailedOnIgpu {
    about!(
        "hip_failed_on_igpu",
        "a GPU error names a HIP device index that is an integrated GPU, beside a discrete one",
        ["gpus", "rocm"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let d = v.hip.as_ref()?;
        let i = v.facts.rocm.failed_hip_device? as usize;
        let g = d.device(i)?;
        when(g.integrated && d.discrete().iter().any(|&x| x != i), || {
            vec![
                format!("the error names HIP device {i} = {}", g.describe()),
                d.summary(),
            ]
        })
    }
}

/// Template variables of the HIP rules: `hip_igpu` (HIP device 0, or the
/// failing device), `hip_dgpu` and `hip_dgpu_index` (the non-integrated
/// devices and their HIP indices, `export HIP_VISIBLE_DEVICES=` ready),
/// `hip_failed` (the failing device's index), `hip_selection`.
pub fn vars(d: Option<&HipDevices>, failed: Option<u32>) -> [(&'static str, String); 5] {
    let label = |i: usize| {
        d.and_then(|d| d.device(i))
            .map(|g| g.name.clone())
            .unwrap_or_else(|| "unknown".into())
    };
    let discrete = d.map(HipDevices::discrete).unwrap_or_default();
    let igpu = failed.map_or(0, |x| x as usize);
    [
        ("hip_igpu", label(igpu)),
        (
            "hip_dgpu",
            if discrete.is_empty() {
                "none".into()
            } else {
                discrete
                    .iter()
                    .map(|&i| label(i))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        (
            "hip_dgpu_index",
            if discrete.is_empty() {
                "<index>".into()
            } else {
                discrete
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            },
        ),
        (
            "hip_failed",
            failed.map_or_else(|| "unknown".into(), |x| x.to_string()),
        ),
        (
            "hip_selection",
            d.map(HipDevices::selection_text)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "none".into()),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::tests::holds;
    use super::*;
    use crate::facts::{Facts, Gpu, Vendor};

    /// A Phoenix iGPU on KFD node 1 and an RX 9070 on node 2.
    fn machine(env: &[(&str, &str)]) -> Facts {
        let gpu = |node, name: &str, gfx: &str| Gpu {
            vendor: Vendor::Amd,
            name: name.into(),
            gfx: Some(gfx.into()),
            kfd_node: Some(node),
            ..Gpu::default()
        };
        let mut f = Facts {
            gpus: vec![
                gpu(2, "AMD Radeon RX 9070", "gfx1201"),
                gpu(1, "AMD Radeon 780M", "gfx1103"),
            ],
            ..Facts::default()
        };
        f.rocm.visible_devices = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        f
    }

    #[test]
    fn igpu_first_only_without_selection_and_across_families() {
        assert!(holds(&HipIgpuFirst, &machine(&[])));
        assert!(!holds(
            &HipIgpuFirst,
            &machine(&[("HIP_VISIBLE_DEVICES", "1")])
        ));
        let mut same = machine(&[]);
        same.gpus[0].gfx = Some("gfx1100".into());
        assert!(!holds(&HipIgpuFirst, &same), "one family");
        let mut dgpu_first = machine(&[]);
        dgpu_first.gpus[0].kfd_node = Some(0);
        assert!(!holds(&HipIgpuFirst, &dgpu_first));
        let e = super::super::evaluate(&machine(&[]));
        assert_eq!(e.vars["hip_dgpu_index"], "1");
        assert_eq!(e.vars["hip_igpu"], "AMD Radeon 780M (gfx1103)");
    }

    /// An HSA_OVERRIDE_GFX_VERSION suggested for one GPU would also force
    /// the other family's GPU: the fix says so (gfx-unsupported's note).
    #[test]
    fn override_advice_warns_of_the_other_family() {
        let note = |f: &Facts| super::super::evaluate(f).vars["override_note"].clone();
        assert!(note(&machine(&[])).contains("applies to every GPU"));
        let mut same = machine(&[]);
        same.gpus[0].gfx = Some("gfx1100".into());
        assert!(!note(&same).contains("applies to every GPU"));
    }

    #[test]
    fn selections_that_hide_everything_or_name_nothing() {
        for (env, hides, missing) in [
            (vec![("HIP_VISIBLE_DEVICES", "1")], false, false),
            (vec![("HIP_VISIBLE_DEVICES", "2")], true, true),
            (vec![("HIP_VISIBLE_DEVICES", "")], true, false),
            (vec![("ROCR_VISIBLE_DEVICES", "0,7")], false, true),
            (
                vec![("ROCR_VISIBLE_DEVICES", "1"), ("HIP_VISIBLE_DEVICES", "1")],
                true,
                true,
            ),
        ] {
            let f = machine(&env);
            assert_eq!(holds(&HipSelectionHidesAll, &f), hides, "{env:?}");
            assert_eq!(holds(&HipSelectionNamesMissing, &f), missing, "{env:?}");
        }
        assert!(!holds(&HipSelectionHidesAll, &machine(&[])));
        // No GPU in the text: a selection that hides every device on any
        // machine still holds (SwarmUI#565), one that depends on the
        // machine does not.
        let mut none = machine(&[("ROCR_VISIBLE_DEVICES", "1"), ("HIP_VISIBLE_DEVICES", "1")]);
        none.gpus.clear();
        assert!(holds(&HipSelectionHidesAll, &none));
        none.rocm.visible_devices = vec![("HIP_VISIBLE_DEVICES".into(), "3".into())];
        assert!(!holds(&HipSelectionHidesAll, &none));
    }

    #[test]
    fn failure_on_the_igpu_index() {
        let mut f = machine(&[]);
        f.rocm.failed_hip_device = Some(0);
        assert!(holds(&HipFailedOnIgpu, &f));
        f.rocm.failed_hip_device = Some(1);
        assert!(!holds(&HipFailedOnIgpu, &f), "device 1 is the RX 9070");
        f.rocm.failed_hip_device = Some(0);
        f.gpus.remove(0);
        assert!(!holds(&HipFailedOnIgpu, &f), "no discrete GPU beside it");
    }
}
