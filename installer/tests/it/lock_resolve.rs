//! Which wheels a profile resolves to for a given Python, and why.

use crate::lock_support::*;
use std::collections::BTreeMap;

/// name -> (version, filename, why) for `greta lock show PROFILE --python PY`.
fn wheel_set(profile: &str, py: &str) -> BTreeMap<String, (String, String, String)> {
    let o = greta_lock(
        &shipped_lock_dir(),
        &["show", profile, "--python", py, "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let v = json(&o);
    let sets = v["sets"].as_array().unwrap();
    assert_eq!(sets.len(), 1);
    sets[0]["wheels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_string(),
                (
                    w["version"].as_str().unwrap().to_string(),
                    w["filename"].as_str().unwrap().to_string(),
                    w["why"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

#[test]
fn cpu_python_311_vs_312() {
    let a = wheel_set("cpu", "3.11");
    let b = wheel_set("cpu", "3.12");
    assert_eq!(a["torch"].0, "2.15.0");
    assert!(a["torch"].1.contains("-cp311-cp311-"), "{}", a["torch"].1);
    assert!(b["torch"].1.contains("-cp312-cp312-"), "{}", b["torch"].1);
    // jax 0.12 needs 3.12: 3.11 gets 0.10.2, chosen by marker
    assert_eq!(a["jax"].0, "0.10.2");
    assert_eq!(b["jax"].0, "0.12.0.1");
    assert_eq!(a["jaxlib"].0, "0.10.2");
    assert!(a["jaxlib"].1.contains("cp311"));
    assert!(b["jaxlib"].1.contains("cp312"));
    assert!(
        a["jax"].2.contains("marker `") && a["jax"].2.contains("is true"),
        "{}",
        a["jax"].2
    );
    assert!(
        a["torch"]
            .2
            .contains("tag cp311-cp311-manylinux_2_28_x86_64"),
        "{}",
        a["torch"].2
    );
    // triton 3.9.0 ships cp3X-abi3 wheels: 3.11 must not take the cp312-abi3 one
    assert!(!a["triton"].1.contains("cp312"), "{}", a["triton"].1);
    for must in ["torch", "triton", "jax", "jaxlib", "numpy"] {
        assert!(a.contains_key(must) && b.contains_key(must), "{must}");
    }
    // the CUDA runtime wheels torch needs just to import are in the cpu set
    assert!(a.keys().any(|k| k.starts_with("nvidia-cublas")));
}

#[test]
fn rocm72_python_311_vs_312() {
    let a = wheel_set("rocm7.2", "3.11");
    let b = wheel_set("rocm7.2", "3.12");
    assert_eq!(
        a["torch"].1,
        "torch-2.12.1+rocm7.2-cp311-cp311-manylinux_2_28_x86_64.whl"
    );
    assert_eq!(
        b["torch"].1,
        "torch-2.12.1+rocm7.2-cp312-cp312-manylinux_2_28_x86_64.whl"
    );
    assert_eq!(
        b["triton-rocm"].1,
        "triton_rocm-3.7.1-cp312-cp312-linux_x86_64.whl"
    );
    assert_eq!(b["jax-rocm7-plugin"].0, "0.12.0");
    assert_eq!(b["jax-rocm7-pjrt"].0, "0.12.0");
    assert_eq!(b["jaxlib"].0, "0.12.0");
    assert_eq!(b["jax"].0, "0.12.0");
    assert_eq!(a["jax-rocm7-plugin"].0, "0.10.2");
    assert_eq!(a["jax-rocm7-pjrt"].0, "0.10.2");
    // no CUDA wheels in a ROCm set
    assert!(
        !a.keys().any(|k| k.starts_with("nvidia-") || k == "triton"),
        "{:?}",
        a.keys()
    );
}

#[test]
fn jax_and_plugins_are_locked_together() {
    for (profile, plugin, pjrt) in [
        ("rocm6.4", "jax-rocm60-plugin", "jax-rocm60-pjrt"),
        ("rocm6.3", "jax-rocm60-plugin", "jax-rocm60-pjrt"),
        ("rocm7.2", "jax-rocm7-plugin", "jax-rocm7-pjrt"),
    ] {
        for py in ["3.11", "3.12"] {
            let s = wheel_set(profile, py);
            let v = &s["jax"].0;
            assert_eq!(&s["jaxlib"].0, v, "{profile} {py}");
            assert_eq!(&s[plugin].0, v, "{profile} {py}");
            assert_eq!(&s[pjrt].0, v, "{profile} {py}");
        }
    }
}

#[test]
fn unsupported_python_is_refused() {
    let o = greta_lock(
        &shipped_lock_dir(),
        &["show", "rocm7.2", "--python", "3.13"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("does not support Python 3.13"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn not_locked_profile_is_reported() {
    let o = greta_lock(&shipped_lock_dir(), &["show", "rocm6.1"]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("NOT LOCKED") && out.contains("greta lock update rocm6.1"),
        "{out}"
    );
}

#[test]
fn real_interpreter_resolves() {
    let py = which::which("python3").expect("python3 on PATH");
    let v = std::process::Command::new(&py)
        .args([
            "-c",
            "import sys;print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
        ])
        .output()
        .unwrap();
    let xy = String::from_utf8_lossy(&v.stdout).trim().to_string();
    let o = greta_lock(
        &shipped_lock_dir(),
        &[
            "show",
            "cpu",
            "--interpreter",
            py.to_str().unwrap(),
            "--json",
        ],
    );
    let j = json(&o);
    let set = &j["sets"][0];
    assert_eq!(
        set["interpreter"]["minor"].as_u64().unwrap().to_string(),
        xy.split('.').nth(1).unwrap()
    );
    if ["3.11", "3.12", "3.13"].contains(&xy.as_str()) {
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
        let tag = format!("cp3{}", xy.split('.').nth(1).unwrap());
        let torch = crate::support::find_by(&set["wheels"], "name", "torch").unwrap();
        assert!(torch["filename"].as_str().unwrap().contains(&tag));
    } else {
        assert_eq!(o.status.code(), Some(1));
    }
}
