//! Profiles whose torch is a host wheel plus one device wheel per
//! GPU target, chosen with an extra (`torch[device-gfx942]`), as AMD's
//! multi-arch indexes publish ROCm 7.14 and 10.x. `greta lock update` runs
//! real uv against the suite's loopback index serving such wheels; the
//! lockfile records every target's device wheels under `'<extra>' in
//! extras`; greta and real uv install the host wheels plus exactly one
//! target's device wheels.

use crate::lock_support::*;
use crate::support::server::Server;
use crate::support::wheel::{build_tagged, torch_files, Wheel};
use std::path::Path;
use std::process::Output;

const TORCH: &str = "2.14.0+rocm10.1.0";
/// What the stand-in torch reports as `torch.version.hip` (the import
/// check of `greta install` compares it with the profile's 10.1).
const HIP: &str = "10.1.25394";
const SDK: &str = "10.1.0";
const TARGETS: [&str; 4] = ["gfx942", "gfx1103", "gfx1150", "gfx1151"];

/// The host wheels plus gfx1151's device wheels (its own and the gfx115x
/// family wheel): what one Strix Halo target gets, and nothing else.
pub(crate) const GFX1151_SET: [&str; 6] = [
    "amd-torch-device-gfx1151",
    "amd-torch-device-gfx115x",
    "rocm-sdk-core",
    "rocm-sdk-device-gfx1151",
    "rocm-sdk-libraries",
    "torch",
];

/// A wheel tagged as AMD tags them: torch and its device wheels for one
/// CPython (`cp312-cp312-linux_x86_64`), the rocm-sdk wheels for any
/// (`py3-none-linux_x86_64`); plain `linux_x86_64`, not manylinux. torch
/// is the suite's stand-in (`torch.version.hip` set), so it imports.
fn wheel(project: &str, version: &str, metadata: &str) -> Wheel {
    let module = project.replace('-', "_");
    let tag = if project.starts_with("rocm-sdk") {
        "py3-none-linux_x86_64".to_string()
    } else {
        let cp = format!("cp{}", py_xy().replace('.', ""));
        format!("{cp}-{cp}-linux_x86_64")
    };
    let files = match project {
        "torch" => torch_files(version, Some(HIP), None).to_vec(),
        _ => Vec::new(),
    };
    build_tagged(project, version, &module, &files, 2_000, metadata, &tag)
}

/// The index as AMD's multi-arch one is laid out: torch is a host wheel
/// whose `device-gfxN` extras pull `amd-torch-device-gfxN`, which pulls
/// `rocm-sdk-device-gfxN`; gfx1150 and gfx1151 also share a family wheel
/// (`amd-torch-device-gfx115x`). The host wheel needs `rocm[libraries]`,
/// which, as on AMD's index, is an sdist only (its libraries are the
/// rocm-sdk-core/-libraries wheels).
pub(crate) fn amd_like_index() -> Server {
    let s = Server::start();
    s.add_wheel(
        "rocm",
        &format!("rocm-{SDK}.tar.gz"),
        b"an sdist greta never builds".to_vec(),
    );
    let mut torch_meta = format!("Requires-Dist: rocm[libraries]=={SDK}\n");
    for g in TARGETS {
        torch_meta.push_str(&format!(
            "Provides-Extra: device-{g}\nRequires-Dist: amd-torch-device-{g}=={TORCH} ; extra == \"device-{g}\"\n"
        ));
    }
    let mut wheels = vec![
        wheel("torch", TORCH, &torch_meta),
        wheel("rocm-sdk-core", SDK, ""),
        wheel(
            "rocm-sdk-libraries",
            SDK,
            &format!("Requires-Dist: rocm-sdk-core=={SDK}\n"),
        ),
        wheel("amd-torch-device-gfx115x", TORCH, ""),
    ];
    for g in TARGETS {
        let mut meta = format!("Requires-Dist: rocm-sdk-device-{g}=={SDK}\n");
        if g.starts_with("gfx115") {
            meta.push_str(&format!(
                "Requires-Dist: amd-torch-device-gfx115x=={TORCH}\n"
            ));
        }
        wheels.push(wheel(&format!("amd-torch-device-{g}"), TORCH, &meta));
        wheels.push(wheel(&format!("rocm-sdk-device-{g}"), SDK, ""));
    }
    for w in wheels {
        s.add_wheel(&w.project, &w.filename, w.bytes);
    }
    s
}

/// "X.Y" of the real interpreter the install tests use: the profile is
/// locked for it, so real uv installs the file into a venv of it.
pub(crate) fn py_xy() -> String {
    let o = std::process::Command::new(crate::support::uvtool::real_python())
        .args([
            "-I",
            "-S",
            "-c",
            "import sys; print('%d.%d' % sys.version_info[:2])",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn matrix(index: &str, status: &str) -> String {
    matrix_with(index, status, "exclude = [\"rocm\"]\n")
}

fn matrix_with(index: &str, status: &str, exclude: &str) -> String {
    let py = py_xy();
    let reason = if status == "locked" {
        ""
    } else {
        "\nnot-locked-reason = \"made by the test\""
    };
    format!(
        r#"schema = 1

[profiles.cpu]
backend = "cpu"
summary = "unused"
status = "not-locked"
not-locked-reason = "not part of this test"
serves = "*"
python = ["{py}"]
indexes = ["https://pypi.org/simple"]
requirements = ["numpy"]
lockfile = "pylock.cpu.toml"

[profiles."rocm10.1"]
backend = "rocm"
summary = "loopback stand-in for AMD's multi-arch index"
status = "{status}"{reason}
backend-version = "10.1"
serves = ">=6.4.0"
gfx = ["gfx942", "gfx1103", "gfx1150", "gfx1151"]
device-extra = "device-{{gfx}}"
device-requirements = ["torch"]
{exclude}python = ["{py}"]
indexes = ["{index}"]
requirements = ["torch=={TORCH}", "rocm-sdk-core=={SDK}", "rocm-sdk-libraries=={SDK}"]
lockfile = "pylock.rocm10-1.toml"
"#
    )
}

pub(crate) fn package<'a>(doc: &'a toml::Value, name: &str) -> &'a toml::Value {
    doc["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {name} in the lockfile"))
}

fn marker(doc: &toml::Value, name: &str) -> Option<String> {
    package(doc, name)
        .get("marker")
        .and_then(|m| m.as_str())
        .map(str::to_string)
}

/// `greta lock update rocm10.1` of `lock` with real uv (its cache at
/// `uv_cache`, no user config).
fn update(lock: &Path, uv_cache: &Path) -> Output {
    let uv = which::which("uv").expect("uv must be installed for this test");
    crate::support::greta()
        .args(["lock", "update", "rocm10.1", "--lock-dir"])
        .arg(lock)
        .arg("--uv")
        .arg(&uv)
        .env("UV_CACHE_DIR", uv_cache)
        .env("UV_NO_CONFIG", "1")
        .output()
        .unwrap()
}

/// The AMD-like index and a temporary dir whose `lock/` holds its profile,
/// locked ([`locked`]); the index serves as long as it is kept.
pub(crate) fn locked_set() -> (Server, tempfile::TempDir, std::path::PathBuf) {
    let idx = amd_like_index();
    let d = tempfile::tempdir().unwrap();
    let lock = d.path().join("lock");
    locked(&idx, &lock);
    (idx, d, lock)
}

/// Locks the loopback profile with real uv; the lock dir holds the result.
pub(crate) fn locked(idx: &Server, lock: &Path) {
    std::fs::create_dir_all(lock).unwrap();
    // not-locked until reviewed, as a new profile starts out
    std::fs::write(
        lock.join("matrix.toml"),
        matrix(&idx.index_url(), "not-locked"),
    )
    .unwrap();
    let o = update(lock, &lock.join("../uv-cache"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("still marks rocm10.1 as not locked"),
        "{}",
        stderr(&o)
    );
    std::fs::write(lock.join("matrix.toml"), matrix(&idx.index_url(), "locked")).unwrap();
}

#[test]
fn lock_update_records_each_targets_device_wheels_under_its_extra() {
    let (_idx, _d, lock) = locked_set();
    let text = std::fs::read_to_string(lock.join("pylock.rocm10-1.toml")).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let extras: Vec<&str> = doc["extras"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(
        extras,
        [
            "device-gfx942",
            "device-gfx1103",
            "device-gfx1150",
            "device-gfx1151"
        ],
        "{text}"
    );
    // host wheels: no marker; the sdist-only `rocm` left out
    assert_eq!(marker(&doc, "torch"), None, "{text}");
    assert_eq!(marker(&doc, "rocm-sdk-libraries"), None, "{text}");
    assert!(
        !doc["packages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"].as_str() == Some("rocm")),
        "{text}"
    );
    assert_eq!(marker(&doc, "rocm-sdk-core"), None, "{text}");
    // each target's own device wheels
    for g in TARGETS {
        let want = format!("'device-{g}' in extras");
        assert_eq!(
            marker(&doc, &format!("amd-torch-device-{g}")).as_deref(),
            Some(want.as_str()),
            "{text}"
        );
        assert_eq!(
            marker(&doc, &format!("rocm-sdk-device-{g}")).as_deref(),
            Some(want.as_str()),
            "{text}"
        );
    }
    // a family wheel shared by two targets: either selects it
    assert_eq!(
        marker(&doc, "amd-torch-device-gfx115x").as_deref(),
        Some("('device-gfx1150' in extras or 'device-gfx1151' in extras)"),
        "{text}"
    );
    // every wheel is the index's, with its sha256
    for p in doc["packages"].as_array().unwrap() {
        for w in p["wheels"].as_array().unwrap() {
            assert_eq!(w["hashes"]["sha256"].as_str().unwrap().len(), 64, "{text}");
        }
    }
    // greta's own check: every target resolves and adds device wheels; the
    // only problem is the loopback index's plain http
    let o = greta_lock(&lock, &["check", "--json"]);
    let v = json(&o);
    let rep = crate::support::find_by(&v["profiles"], "profile", "rocm10.1")
        .unwrap()
        .clone();
    let py = py_xy();
    let sets: Vec<String> = rep["wheel_sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{} {}", s[0].as_str().unwrap(), s[1]))
        .collect();
    assert_eq!(
        sets,
        [
            format!("{py} device-gfx942 5"),
            format!("{py} device-gfx1103 5"),
            format!("{py} device-gfx1150 6"),
            format!("{py} device-gfx1151 6")
        ],
        "{rep:#}"
    );
    for p in rep["problems"].as_array().unwrap() {
        assert!(
            p["message"].as_str().unwrap().contains("non-https URL"),
            "{p:#}"
        );
    }
}

/// Without `exclude = ["rocm"]` the sdist-only `rocm` makes uv's
/// wheels-only resolution fail, and the error says so (what happens
/// against AMD's index too); the previous lockfile stays.
#[test]
fn an_sdist_only_dependency_fails_the_update_unless_excluded() {
    let idx = amd_like_index();
    let d = tempfile::tempdir().unwrap();
    let lock = d.path().join("lock");
    std::fs::create_dir_all(&lock).unwrap();
    std::fs::write(
        lock.join("matrix.toml"),
        matrix_with(&idx.index_url(), "not-locked", ""),
    )
    .unwrap();
    let o = update(&lock, &d.path().join("uv-cache"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("uv could not resolve profile rocm10.1") && e.contains("rocm"),
        "{e}"
    );
    assert!(!lock.join("pylock.rocm10-1.toml").exists());
}

#[test]
fn show_gives_host_wheels_plus_exactly_the_chosen_targets() {
    let (_idx, _d, lock) = locked_set();
    let py = py_xy();
    let names = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["show", "rocm10.1", "--python", py.as_str(), "--json"];
        all.extend_from_slice(args);
        let o = greta_lock(&lock, &all);
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
        wheel_names(&json(&o)["sets"][0])
    };
    assert_eq!(
        names(&["--device", "gfx1103"]),
        [
            "amd-torch-device-gfx1103",
            "rocm-sdk-core",
            "rocm-sdk-device-gfx1103",
            "rocm-sdk-libraries",
            "torch"
        ]
    );
    // two GPUs of different targets in one machine: each one's
    assert_eq!(
        names(&["--device", "gfx942", "--device", "gfx1151"]),
        [
            "amd-torch-device-gfx1151",
            "amd-torch-device-gfx115x",
            "amd-torch-device-gfx942",
            "rocm-sdk-core",
            "rocm-sdk-device-gfx1151",
            "rocm-sdk-device-gfx942",
            "rocm-sdk-libraries",
            "torch"
        ]
    );
    // a target the profile does not carry is refused, naming those it does
    let o = greta_lock(
        &lock,
        &["show", "rocm10.1", "--python", &py, "--device", "gfx90a"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("has no device wheels `device-gfx90a`"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("device-gfx1103"), "{}", stdout(&o));
}

/// The PEP 751 file greta wrote is one real uv installs for one chosen
/// target: the host wheels and that target's device wheels, no other's.
#[test]
fn real_uv_installs_the_lockfile_for_one_target() {
    let (_idx, d, lock) = locked_set();
    let uv = which::which("uv").expect("uv must be installed for this test");
    let venv = d.path().join("venv");
    let run = |args: &[&str]| {
        let o = std::process::Command::new(&uv)
            .args(args)
            .env("UV_CACHE_DIR", d.path().join("uv-cache"))
            .env("UV_NO_CONFIG", "1")
            .env("UV_PREVIEW_FEATURES", "pylock")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "uv {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let py = crate::support::uvtool::real_python();
    run(&[
        "venv",
        "-q",
        "-p",
        py.to_str().unwrap(),
        venv.to_str().unwrap(),
    ]);
    let vpy = venv.join("bin/python");
    let file = lock.join("pylock.rocm10-1.toml");
    run(&[
        "pip",
        "install",
        "-q",
        "-p",
        vpy.to_str().unwrap(),
        "-r",
        file.to_str().unwrap(),
        "--extra",
        "device-gfx1151",
    ]);
    assert_eq!(installed(&venv), GFX1151_SET);
}

/// The distributions installed in `venv` (names of its `*.dist-info`,
/// normalized to dashes), sorted.
pub(crate) fn installed(venv: &Path) -> Vec<String> {
    let site = venv.join(format!("lib/python{}/site-packages", py_xy()));
    let mut names: Vec<String> = std::fs::read_dir(&site)
        .unwrap_or_else(|e| panic!("{}: {e}", site.display()))
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let stem = n.strip_suffix(".dist-info")?;
            let (name, _version) = stem.split_once('-')?;
            Some(name.to_lowercase().replace('_', "-"))
        })
        .collect();
    names.sort();
    names
}

/// A captured machine (`greta doctor --capture` layout): the 780M capture
/// with its KFD GPU nodes replaced by `gpus` (gfx_target_version, name).
/// Kernel 6.17 names a node `ip discovery`; the target comes from
/// `gfx_target_version`, whose stepping digit is hex (110501 = gfx1151).
pub(crate) fn machine(gpus: &[(u64, &str)]) -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe/tests/sysroots/phoenix-apu");
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(&src)
        .arg(&m)
        .status()
        .unwrap();
    assert!(cp.success());
    // the capture's environment sets the 780M's override: not wanted here
    std::fs::write(
        m.join(".greta/env"),
        "PATH=/usr/bin:/bin\nHOME=/home/ann\nUSER=ann\n",
    )
    .unwrap();
    let nodes = m.join("sys/class/kfd/kfd/topology/nodes");
    let gpu = std::fs::read_to_string(nodes.join("1/properties")).unwrap();
    std::fs::remove_dir_all(nodes.join("1")).unwrap();
    for (i, (version, name)) in gpus.iter().enumerate() {
        let dir = nodes.join((i + 1).to_string());
        std::fs::create_dir_all(&dir).unwrap();
        // each node its own GPU: another PCI location and device id
        let props = gpu
            .replace(
                "gfx_target_version 110003",
                &format!("gfx_target_version {version}"),
            )
            .replace(
                "location_id 34304",
                &format!("location_id {}", 34304 + 256 * i),
            )
            .replace("device_id 5567", &format!("device_id {}", 5567 + i))
            .replace(
                "drm_render_minor 128",
                &format!("drm_render_minor {}", 128 + i),
            )
            .replace(
                "unique_id 11673270660693242239",
                &format!("unique_id {}", 1000 + i),
            );
        std::fs::write(dir.join("properties"), props).unwrap();
        std::fs::write(dir.join("name"), format!("{name}\n")).unwrap();
    }
    tmp
}

/// `greta install --dry-run --lock-dir LOCK --sysroot SYSROOT ARGS`.
fn dry_run_output(lock: &Path, sysroot: &Path, args: &[&str]) -> Output {
    crate::support::greta()
        .args(["install", "--dry-run", "--lock-dir"])
        .arg(lock)
        .arg("--sysroot")
        .arg(sysroot)
        .args(args)
        .output()
        .unwrap()
}

fn dry_run(lock: &Path, sysroot: &Path) -> serde_json::Value {
    let o = dry_run_output(lock, sysroot, &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    v["plan"].clone()
}

/// The names of the wheels of a plan, a `lock show` set or a receipt,
/// sorted.
pub(crate) fn wheel_names(holder: &serde_json::Value) -> Vec<String> {
    crate::support::sorted_strings(&holder["wheels"], "name")
}

/// `greta install --dry-run --sysroot` plans for a captured machine: the
/// host wheels plus exactly its GPUs' device wheels, and says why.
#[test]
fn dry_run_for_a_captured_machine_plans_its_own_device_wheels() {
    let (_idx, _d, lock) = locked_set();

    // Strix Halo on kernel 6.17: node name "ip discovery", 110501 = gfx1151
    let halo = machine(&[(110501, "ip discovery")]);
    let plan = dry_run(&lock, &halo.path().join("m"));
    assert_eq!(plan["profile"], "rocm10.1", "{plan:#}");
    assert_eq!(plan["device_extras"], serde_json::json!(["device-gfx1151"]));
    assert_eq!(wheel_names(&plan), GFX1151_SET);
    let why = plan["reasons"].to_string();
    assert!(why.contains("gfx1151 -> device-gfx1151"), "{why}");
    assert!(plan["env_vars"].as_object().unwrap().is_empty(), "{plan:#}");

    // The 780M: gfx1103 natively, no HSA override
    let apu = machine(&[(110003, "ip discovery")]);
    let plan = dry_run(&lock, &apu.path().join("m"));
    assert_eq!(plan["device_extras"], serde_json::json!(["device-gfx1103"]));
    assert!(plan["env_vars"].as_object().unwrap().is_empty(), "{plan:#}");

    // An iGPU and a dGPU of different families: each one's device wheels
    let two = machine(&[(110003, "ip discovery"), (90402, "ip discovery")]);
    let plan = dry_run(&lock, &two.path().join("m"));
    assert_eq!(
        plan["device_extras"],
        serde_json::json!(["device-gfx1103", "device-gfx942"]),
        "{plan:#}"
    );
    assert_eq!(
        wheel_names(&plan),
        [
            "amd-torch-device-gfx1103",
            "amd-torch-device-gfx942",
            "rocm-sdk-core",
            "rocm-sdk-device-gfx1103",
            "rocm-sdk-device-gfx942",
            "rocm-sdk-libraries",
            "torch"
        ]
    );
}

/// "what would greta install on that node?" for the captured
/// machines, with the lock set that ships: the 780M (gfx1103) gets rocm7.2
/// through the override and is told of the native, not-locked rocm10.1 and
/// the command that locks it; MI300X (VF capture, and bare metal as a KFD
/// node 90402), Strix Halo (110501, node named "ip discovery" as on kernel
/// 6.17) and RX 9070 XT (120001) get rocm7.2 natively; the RX 7900 XTX
/// capture without /dev/kfd is refused with the fix.
#[test]
fn dry_run_plans_for_the_captured_machines_with_the_shipped_lock_set() {
    let lock = shipped_lock_dir();
    let captured = |name: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../probe/tests/sysroots/{name}"))
    };
    // 780M, as captured (its environment sets HSA_OVERRIDE_GFX_VERSION)
    let plan = dry_run(&lock, &captured("phoenix-apu"));
    assert_eq!(plan["profile"], "rocm7.2", "{plan:#}");
    assert_eq!(plan["env_vars"]["HSA_OVERRIDE_GFX_VERSION"], "11.0.0");
    let w = plan["warnings"].to_string();
    assert!(
        w.contains("rocm10.1 carries gfx1103 natively but is not locked")
            && w.contains("greta lock update rocm10.1 --lock-dir lock"),
        "{w}"
    );
    // MI300X VF, as captured
    let plan = dry_run(&lock, &captured("mi300x-vf"));
    assert_eq!(plan["profile"], "rocm7.2", "{plan:#}");
    assert!(plan["reasons"]
        .to_string()
        .contains("gfx942 is in its wheel targets"));
    assert!(plan["env_vars"].as_object().unwrap().is_empty());
    for (version, gfx) in [(90402, "gfx942"), (110501, "gfx1151"), (120001, "gfx1201")] {
        let m = machine(&[(version, "ip discovery")]);
        let plan = dry_run(&lock, &m.path().join("m"));
        assert_eq!(plan["profile"], "rocm7.2", "{gfx}: {plan:#}");
        assert!(
            plan["reasons"]
                .to_string()
                .contains(&format!("{gfx} is in its wheel targets")),
            "{gfx}: {plan:#}"
        );
        assert!(plan["env_vars"].as_object().unwrap().is_empty(), "{gfx}");
        assert!(plan.get("device_extras").is_none(), "{gfx}: {plan:#}");
    }
    // RX 7900 XTX capture whose /dev/kfd is missing: refused, with the fix
    let o = dry_run_output(&lock, &captured("two-rocm-no-kfd"), &[]);
    assert_ne!(o.status.code(), Some(0));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        all.contains("gfx1100") && all.contains("/dev/kfd does not exist"),
        "{all}"
    );
}

/// A host with AMD GPUs of two families, the 780M iGPU
/// (gfx1103, KFD node 1: HIP device 0) and an RX 9070 (gfx1201). The
/// shipped rocm7.2 carries gfx1201 but not gfx1103, and its override
/// (HSA_OVERRIDE_GFX_VERSION=11.0.0) is process-wide: it would run the
/// RX 9070 as a gfx1100 too. So the plan sets no override, serves the
/// RX 9070 natively, says the iGPU is not served, and sets
/// HIP_VISIBLE_DEVICES=1 so that the env's programs (and the framework
/// gates) see only the RX 9070.
#[test]
fn a_two_family_host_is_served_natively_without_a_process_wide_override() {
    let lock = shipped_lock_dir();
    let m = machine(&[(110003, "ip discovery"), (120001, "ip discovery")]);
    let plan = dry_run(&lock, &m.path().join("m"));
    assert_eq!(plan["profile"], "rocm7.2", "{plan:#}");
    // no process-wide override; the env's programs see only the RX 9070
    assert_eq!(
        plan["env_vars"],
        serde_json::json!({"HIP_VISIBLE_DEVICES": "1"}),
        "{plan:#}"
    );
    let reasons = plan["reasons"].to_string();
    assert!(
        reasons.contains("gfx1201 is in its wheel targets"),
        "{reasons}"
    );
    let w = plan["warnings"].to_string();
    assert!(
        w.contains("gfx1103") && w.contains("not served") && w.contains("HIP_VISIBLE_DEVICES=1"),
        "{w}"
    );
    assert!(
        w.contains("HSA_OVERRIDE_GFX_VERSION"),
        "says why no override: {w}"
    );
    // the probe summary (receipt, activation) marks the same GPU served
    let served: Vec<(String, bool)> = plan["probe"]["hip_devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["gfx"].as_str().unwrap().to_string(),
                d["served"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        served,
        [
            ("gfx1103".to_string(), false),
            ("gfx1201".to_string(), true)
        ]
    );
    // `--profile rocm7.2` chosen by hand plans the same: no override
    let o = dry_run_output(
        &lock,
        &m.path().join("m"),
        &["--json", "--profile", "rocm7.2"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let forced: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        forced["plan"]["env_vars"],
        serde_json::json!({"HIP_VISIBLE_DEVICES": "1"}),
        "{forced:#}"
    );
    assert_eq!(
        forced["plan"]["probe"]["hip_devices"],
        plan["probe"]["hip_devices"]
    );
}

/// The doctor reads TheRock's Python ROCm in an env
/// (`rocm_sdk_core`, `amd_torch_device_*` dist-info) and finds a torch
/// without this machine's device wheel, the hipErrorInvalidImage case.
#[test]
fn doctor_finds_a_therock_torch_without_this_gpus_device_wheel() {
    let m = machine(&[(110003, "ip discovery")]);
    let root = m.path().join("m");
    let sp = root.join("home/ann/.local/share/greta/envs/rocm10.1/lib/python3.12/site-packages");
    let dist = |dir: &str, name: &str, version: &str| {
        let d = sp.join(format!("{dir}-{version}.dist-info"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n"),
        )
        .unwrap();
    };
    dist("torch", "torch", "2.14.0+rocm10.1.0");
    dist("rocm_sdk_core", "rocm-sdk-core", "10.1.0");
    dist(
        "amd_torch_device_gfx942",
        "amd-torch-device-gfx942",
        "2.14.0+rocm10.1.0",
    );
    let doctor = || {
        let o = crate::support::greta()
            .args(["doctor", "--json", "--sysroot"])
            .arg(&root)
            .output()
            .unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
        crate::support::find_by(&v["findings"], "id", "framework.device-wheel-missing").cloned()
    };
    let f = doctor().expect("finding framework.device-wheel-missing");
    assert_eq!(f["severity"], "fail");
    let ev = f["evidence"].to_string();
    assert!(
        ev.contains("device wheels for gfx942 only") && ev.contains("is gfx1103"),
        "{ev}"
    );
    // with this GPU's device wheel installed, no finding
    dist(
        "amd_torch_device_gfx1103",
        "amd-torch-device-gfx1103",
        "2.14.0+rocm10.1.0",
    );
    assert!(doctor().is_none());
}
