//! The Python check reads the frameworks people already have, not only
//! greta's envs: the active virtualenv (`VIRTUAL_ENV`), conda env
//! (`CONDA_PREFIX`) and the first `python3` on PATH with its user site,
//! from `*.dist-info/METADATA` and torch's `version.py` (never importing),
//! and raises `framework.mismatch` for a build the machine cannot use.

use greta_probe::{Facts, Gpu, Probe, Root, Vendor};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn w(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn torch(root: &Path, site: &str, version: &str, cuda: Option<&str>, hip: Option<&str>) {
    let q = |v: Option<&str>| v.map(|s| format!("'{s}'")).unwrap_or_else(|| "None".into());
    w(
        root,
        &format!("{site}/torch-{version}.dist-info/METADATA"),
        &format!("Metadata-Version: 2.1\nName: torch\nVersion: {version}\n\nlong description\n"),
    );
    w(
        root,
        &format!("{site}/torch/version.py"),
        &format!(
            "__version__ = '{version}'\ncuda: Optional[str] = {}\nhip: Optional[str] = {}\n",
            q(cuda),
            q(hip)
        ),
    );
}

fn machine(env: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    w(r, "/.greta/env", env);
    w(
        r,
        "/.greta/cmd/python-version_usr_bin_python3.12.txt",
        "Python 3.12.3\n",
    );
    w(r, "/usr/bin/python3.12", "\x7fELF");
    std::fs::set_permissions(
        r.join("usr/bin/python3.12"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("python3.12", r.join("usr/bin/python3")).unwrap();
    w(
        r,
        "/.greta/cmd/python-version_usr_bin_python3.txt",
        "Python 3.12.3\n",
    );
    t
}

fn python_facts(t: &tempfile::TempDir) -> Facts {
    let root = Root::sysroot(t.path()).unwrap();
    // Only the Python part: the rest of this tree is empty.
    let f = Probe::new(&root).run().facts;
    Facts {
        python: f.python,
        signals: f.signals,
        scanned: f.scanned.into_iter().filter(|s| s == "python").collect(),
        ..Facts::default()
    }
}

fn amd_only(mut f: Facts) -> Facts {
    f.gpus.push(Gpu {
        vendor: Vendor::Amd,
        name: "AMD Radeon 760M".into(),
        gfx: Some("gfx1103".into()),
        ..Gpu::default()
    });
    f
}

fn mismatch(f: &Facts) -> Option<greta_probe::Finding> {
    greta_probe::diagnose(f)
        .into_iter()
        .find(|x| x.id == "framework.mismatch")
}

#[test]
fn cuda_torch_in_the_user_site_of_python3_on_an_amd_only_machine() {
    let t = machine("PATH=/usr/bin\nHOME=/home/bo\n");
    torch(
        t.path(),
        "/home/bo/.local/lib/python3.12/site-packages",
        "2.5.1+cu124",
        Some("12.4"),
        None,
    );
    // Another version's user site is not this interpreter's.
    torch(
        t.path(),
        "/home/bo/.local/lib/python3.9/site-packages",
        "1.13.0+rocm5.2",
        None,
        Some("5.2.21151"),
    );
    let f = python_facts(&t);
    let fw: Vec<_> = f
        .python
        .frameworks
        .iter()
        .map(|x| (x.env.as_str(), x.version.as_str(), x.backend.as_deref()))
        .collect();
    assert_eq!(
        fw,
        [("/usr", "2.5.1+cu124", Some("cuda"))],
        "{:#?}",
        f.python
    );
    let m = mismatch(&amd_only(f.clone())).expect("framework.mismatch");
    let ev = m.evidence.join("\n");
    assert!(
        ev.contains("torch 2.5.1+cu124 in /usr: built for CUDA, but the GPU is AMD"),
        "{ev}"
    );
    // Without an AMD GPU the same torch is no mismatch.
    assert!(mismatch(&f).is_none());
}

#[test]
fn virtual_env_and_conda_prefix_are_read() {
    let t = machine("PATH=/usr/bin\nHOME=/home/bo\nVIRTUAL_ENV=/home/bo/proj/.venv\nCONDA_PREFIX=/opt/conda/envs/llm\n");
    torch(
        t.path(),
        "/home/bo/proj/.venv/lib/python3.12/site-packages",
        "2.4.0+cu121",
        Some("12.1"),
        None,
    );
    torch(
        t.path(),
        "/opt/conda/envs/llm/lib/python3.11/site-packages",
        "2.3.1+rocm6.0",
        None,
        Some("6.0.32830"),
    );
    w(t.path(), "/opt/conda/envs/llm/lib/python3.11/site-packages/jax_cuda12_plugin-0.4.30.dist-info/METADATA", "Name: jax-cuda12-plugin\nVersion: 0.4.30\n\n");
    let f = python_facts(&t);
    let envs: Vec<_> = f
        .python
        .frameworks
        .iter()
        .map(|x| (x.env.as_str(), x.name.as_str(), x.backend.as_deref()))
        .collect();
    assert!(
        envs.contains(&("/home/bo/proj/.venv", "torch", Some("cuda"))),
        "{envs:?}"
    );
    assert!(
        envs.contains(&("/opt/conda/envs/llm", "torch", Some("rocm"))),
        "{envs:?}"
    );
    assert!(
        envs.contains(&("/opt/conda/envs/llm", "jax-cuda12-plugin", Some("cuda"))),
        "{envs:?}"
    );
    let m = mismatch(&amd_only(f)).expect("framework.mismatch");
    let ev = m.evidence.join("\n");
    assert!(
        ev.contains("torch 2.4.0+cu121 in /home/bo/proj/.venv: built for CUDA")
            && ev.contains("jax-cuda12-plugin 0.4.30 in /opt/conda/envs/llm"),
        "{ev}"
    );
    // Nothing was imported: the "interpreters" are files that cannot run.
}
