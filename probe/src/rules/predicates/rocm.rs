//! ROCm installs, the HSA runtime and the environment that steers them.

use super::{about, when, Predicate, Scanned, View};

pub const ROCM_ABSENT: Scanned = Scanned {
    name: "rocm_absent",
    meaning: "no ROCm install was found",
    reads: &["rocm.installs", "scanned"],
    area: "rocm",
    and: |f| f.rocm.installs.is_empty(),
    evidence: "no /opt/rocm*, ROCM_PATH or HIP_PATH install found",
};

#[cfg(test)]
fn installs(n: usize) -> crate::facts::Facts {
    let mut f = super::tests::scanned(&["rocm"]);
    for i in 0..n {
        f.rocm.installs.push(crate::facts::RocmInstall {
            path: format!("/opt/rocm-6.{i}.0"),
            version: Some(format!("6.{i}.0")),
            active: i == 0,
        });
    }
    f
}

#[cfg(test)]
#[test]
fn rocm_absent() {
    use super::tests::*;
    assert!(holds(&ROCM_ABSENT, &installs(0)));
    assert!(!holds(&ROCM_ABSENT, &installs(1)));
    // Pasted text inspects nothing completely.
    assert!(!holds(&ROCM_ABSENT, &crate::facts::Facts::default()));
}

pub struct RocmMultiple;
impl Predicate for RocmMultiple {
    about!(
        "rocm_multiple",
        "two or more ROCm installs were found",
        ["rocm.installs"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        when(v.facts.rocm.installs.len() >= 2, || {
            v.rocm_installs()
                .iter()
                .map(|i| format!("ROCm install {i}"))
                .collect()
        })
    }
}

#[cfg(test)]
#[test]
fn rocm_multiple() {
    use super::tests::*;
    assert_eq!(
        eval(&RocmMultiple, &installs(2)).unwrap(),
        [
            "ROCm install /opt/rocm-6.0.0 (6.0.0), active",
            "ROCm install /opt/rocm-6.1.0 (6.1.0)"
        ]
    );
    assert!(!holds(&RocmMultiple, &installs(1)));
}

pub struct RocmRuntimeSeesNoGpu;
impl Predicate for RocmRuntimeSeesNoGpu {
    about!(
        "rocm_runtime_sees_no_gpu",
        "the HSA/HIP runtime ran and found no GPU",
        ["rocm.runtime_sees_gpu"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        when(v.facts.rocm.runtime_sees_gpu == Some(false), || {
            vec!["the HSA runtime (rocminfo/torch) listed no GPU agent".into()]
        })
    }
}

#[cfg(test)]
#[test]
fn rocm_runtime_sees_no_gpu() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    assert!(!holds(&RocmRuntimeSeesNoGpu, &f));
    f.rocm.runtime_sees_gpu = Some(false);
    assert!(holds(&RocmRuntimeSeesNoGpu, &f));
    f.rocm.runtime_sees_gpu = Some(true);
    assert!(!holds(&RocmRuntimeSeesNoGpu, &f));
}

pub struct HsaOverrideSet;
impl Predicate for HsaOverrideSet {
    about!(
        "hsa_override_set",
        "HSA_OVERRIDE_GFX_VERSION is set",
        ["rocm.hsa_override_gfx_version"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let ovr = v.facts.rocm.hsa_override_gfx_version.as_deref();
        when(ovr.is_some(), || {
            vec![format!(
                "HSA_OVERRIDE_GFX_VERSION={}",
                ovr.unwrap_or_default()
            )]
        })
    }
}

#[cfg(test)]
#[test]
fn hsa_override_set() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    assert!(!holds(&HsaOverrideSet, &f));
    f.rocm.hsa_override_gfx_version = Some("11.0.0".into());
    assert_eq!(
        eval(&HsaOverrideSet, &f).unwrap(),
        ["HSA_OVERRIDE_GFX_VERSION=11.0.0"]
    );
}

pub struct LdLibraryPathRocm;
impl Predicate for LdLibraryPathRocm {
    about!(
        "ld_library_path_rocm",
        "LD_LIBRARY_PATH contains a ROCm directory",
        ["rocm.ld_library_path_rocm"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let dirs = &v.facts.rocm.ld_library_path_rocm;
        when(!dirs.is_empty(), || {
            vec![format!("LD_LIBRARY_PATH contains {}", dirs.join(", "))]
        })
    }
}

#[cfg(test)]
#[test]
fn ld_library_path_rocm() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    assert!(!holds(&LdLibraryPathRocm, &f));
    f.rocm.ld_library_path_rocm = vec!["/opt/rocm/lib".into()];
    assert_eq!(
        eval(&LdLibraryPathRocm, &f).unwrap(),
        ["LD_LIBRARY_PATH contains /opt/rocm/lib"]
    );
}
