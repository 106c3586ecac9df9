//! Python interpreters and the frameworks installed for them.

use super::{about, when, Predicate, Scanned, View};
use crate::facts::Facts;
use crate::facts::Gpu;

pub const PYTHON_ABSENT: Scanned = Scanned {
    name: "python_absent",
    meaning: "no Python interpreter was found",
    reads: &["scanned", "python.interpreters"],
    area: "python",
    and: |f| f.python.interpreters.is_empty(),
    evidence: "no python3 on PATH",
};

#[cfg(test)]
#[test]
fn python_absent() {
    use super::tests::*;
    let mut f = scanned(&["python"]);
    assert!(holds(&PYTHON_ABSENT, &f));
    f.python.interpreters.push(crate::facts::Interpreter {
        path: "/usr/bin/python3".into(),
        version: Some("3.12.3".into()),
    });
    assert!(!holds(&PYTHON_ABSENT, &f));
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
    // An env with TheRock's Python ROCm runs on its own ROCm (`_rocm_sdk_*`
    // next to torch), not the host's: the host's version says nothing there.
    let own_rocm = therock_envs(f);
    for fw in &f.python.frameworks {
        let what = format!("{} {} in {}", fw.name, fw.version, fw.env);
        if own_rocm.contains(&fw.env.as_str()) && fw.backend.as_deref() == Some("rocm") {
            continue;
        }
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

/// Envs that carry TheRock's Python ROCm (`rocm-sdk-core`).
fn therock_envs(f: &Facts) -> Vec<&str> {
    f.python
        .frameworks
        .iter()
        .filter(|fw| norm(&fw.name) == "rocm-sdk-core")
        .map(|fw| fw.env.as_str())
        .collect()
}

fn norm(name: &str) -> String {
    name.to_ascii_lowercase().replace('_', "-")
}

pub struct TherockDeviceWheelMissing;
impl Predicate for TherockDeviceWheelMissing {
    about!(
        "therock_device_wheel_missing",
        "a torch on TheRock's Python ROCm has no device wheel for one of this machine's AMD GPU targets",
        ["python.frameworks", "gpus"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let gaps = device_wheel_gaps(v.facts, &v.amd);
        when(!gaps.is_empty(), || gaps)
    }
}

/// For each env with torch and TheRock's Python ROCm: the AMD GPU targets
/// no `amd-torch-device-*` wheel of that env covers (the exact target, or
/// a family wheel such as `gfx115x`). Such a torch imports and reports the
/// GPU, then fails every launch with hipErrorInvalidImage.
fn device_wheel_gaps(f: &Facts, amd: &[&Gpu]) -> Vec<String> {
    let mut out = Vec::new();
    for env in therock_envs(f) {
        let in_env = || f.python.frameworks.iter().filter(move |fw| fw.env == env);
        let Some(torch) = in_env().find(|fw| norm(&fw.name) == "torch") else {
            continue;
        };
        let targets: Vec<String> = in_env()
            .filter_map(|fw| {
                norm(&fw.name)
                    .strip_prefix("amd-torch-device-")
                    .map(str::to_string)
            })
            .collect();
        let covers = |g: &str| {
            targets.iter().any(|t| {
                t == g
                    || t.strip_suffix('x')
                        .is_some_and(|family| g.starts_with(family) && g.len() == t.len())
            })
        };
        for gpu in amd {
            let Some(g) = gpu.gfx.as_deref().map(str::to_ascii_lowercase) else {
                continue;
            };
            if covers(&g) {
                continue;
            }
            let has = if targets.is_empty() {
                "no device wheel".to_string()
            } else {
                format!("device wheels for {} only", targets.join(", "))
            };
            out.push(format!(
                "torch {} in {env} has {has}; {} is {g}: expect hipErrorInvalidImage on every launch (needs amd-torch-device-{g}, the device-{g} extra)",
                torch.version,
                if gpu.name.is_empty() { "the GPU" } else { gpu.name.as_str() },
            ));
        }
    }
    out
}

#[cfg(test)]
#[test]
fn therock_device_wheel_missing() {
    use super::tests::*;
    use crate::facts::{Framework, RocmInstall, Vendor};
    let fw = |name: &str, version: &str| Framework {
        env: "/e".into(),
        name: name.into(),
        version: version.into(),
        backend: Some("rocm".into()),
        backend_version: Some("10.1.0".into()),
    };
    let mut igpu = gpu(Vendor::Amd, "AMD Radeon 780M");
    igpu.gfx = Some("gfx1103".into());
    let mut dgpu = gpu(Vendor::Amd, "AMD Instinct MI300X");
    dgpu.gfx = Some("gfx942".into());
    let mut f = with_gpus(vec![igpu, dgpu]);
    f.python.frameworks = vec![
        fw("torch", "2.14.0+rocm10.1.0"),
        fw("rocm-sdk-core", "10.1.0"),
        fw("amd-torch-device-gfx942", "2.14.0+rocm10.1.0"),
    ];
    assert_eq!(
        eval(&TherockDeviceWheelMissing, &f).unwrap(),
        ["torch 2.14.0+rocm10.1.0 in /e has device wheels for gfx942 only; AMD Radeon 780M is gfx1103: expect hipErrorInvalidImage on every launch (needs amd-torch-device-gfx1103, the device-gfx1103 extra)"]
    );
    // a family wheel covers its members; both GPUs covered: no finding
    f.python
        .frameworks
        .push(fw("amd-torch-device-gfx110x", "2.14.0+rocm10.1.0"));
    assert!(!holds(&TherockDeviceWheelMissing, &f));
    // TheRock's torch runs on its own ROCm: a host ROCm 7.2 is no mismatch
    f.rocm.installs.push(RocmInstall {
        path: "/opt/rocm".into(),
        version: Some("7.2.0".into()),
        active: true,
    });
    assert!(!holds(&FrameworkBackendMismatch, &f));
    // without rocm-sdk-core (pytorch.org's wheels bundle ROCm): not this check
    f.python.frameworks.retain(|x| x.name != "rocm-sdk-core");
    f.python
        .frameworks
        .retain(|x| !x.name.starts_with("amd-torch-device-gfx110x"));
    assert!(!holds(&TherockDeviceWheelMissing, &f));
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
