//! Python interpreters and the frameworks installed for them.

use super::{about, when, Predicate, View};
use crate::facts::Facts;
use crate::facts::Gpu;

pub struct PythonAbsent;
impl Predicate for PythonAbsent {
    about!(
        "python_absent",
        "no Python interpreter was found",
        ["scanned", "python.interpreters"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        when(
            v.scanned("python") && v.facts.python.interpreters.is_empty(),
            || vec!["no python3 on PATH".into()],
        )
    }
}

#[cfg(test)]
#[test]
fn python_absent() {
    use super::tests::*;
    let mut f = scanned(&["python"]);
    assert!(holds(&PythonAbsent, &f));
    f.python.interpreters.push(crate::facts::Interpreter {
        path: "/usr/bin/python3".into(),
        version: Some("3.12.3".into()),
    });
    assert!(!holds(&PythonAbsent, &f));
}

pub struct FrameworkBackendMismatch;
impl Predicate for FrameworkBackendMismatch {
    about!(
        "framework_backend_mismatch",
        "an installed framework was built for another GPU backend or ROCm/CUDA version",
        ["python.frameworks", "gpus", "rocm.installs"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let mismatch = framework_mismatch(v.facts, &v.amd, &v.nvidia);
        when(!mismatch.is_empty(), || mismatch)
    }
}

/// A framework built for a backend the machine does not have, or for a
/// different ROCm major version than the one installed.
fn framework_mismatch(f: &Facts, amd: &[&Gpu], nv: &[&Gpu]) -> Vec<String> {
    let mut out = Vec::new();
    let installed_rocm: Option<&str> = f
        .rocm
        .installs
        .iter()
        .find(|i| i.active)
        .and_then(|i| i.version.as_deref());
    let major = |s: &str| s.split('.').next().map(str::to_string);
    for fw in &f.python.frameworks {
        let what = format!("{} {} in {}", fw.name, fw.version, fw.env);
        match fw.backend.as_deref() {
            Some("rocm") if amd.is_empty() && !nv.is_empty() => {
                out.push(format!("{what}: built for ROCm, but the GPU is NVIDIA"))
            }
            Some("cuda") if nv.is_empty() && !amd.is_empty() => {
                out.push(format!("{what}: built for CUDA, but the GPU is AMD"))
            }
            Some("rocm") => {
                if let (Some(inst), Some(bv)) = (installed_rocm, fw.backend_version.as_deref()) {
                    if major(inst) != major(bv) {
                        out.push(format!(
                            "{what}: built for ROCm {bv}, installed ROCm is {inst}"
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[test]
fn framework_backend_mismatch() {
    use super::tests::*;
    use crate::facts::{Framework, RocmInstall, Vendor};
    let torch = |backend: &str, bv: &str| Framework {
        env: "/e".into(),
        name: "torch".into(),
        version: "2.5.1".into(),
        backend: Some(backend.into()),
        backend_version: Some(bv.into()),
    };
    let mut f = with_gpus(vec![gpu(Vendor::Amd, "MI300X")]);
    f.python.frameworks.push(torch("cuda", "12.4"));
    assert_eq!(
        eval(&FrameworkBackendMismatch, &f).unwrap(),
        ["torch 2.5.1 in /e: built for CUDA, but the GPU is AMD"]
    );
    f.python.frameworks = vec![torch("rocm", "6.2")];
    assert!(!holds(&FrameworkBackendMismatch, &f));
    f.rocm.installs.push(RocmInstall {
        path: "/opt/rocm".into(),
        version: Some("7.0.1".into()),
        active: true,
    });
    assert_eq!(
        eval(&FrameworkBackendMismatch, &f).unwrap(),
        ["torch 2.5.1 in /e: built for ROCm 6.2, installed ROCm is 7.0.1"]
    );
}
