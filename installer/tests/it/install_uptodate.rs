//! `greta install` on an env that is already exactly what it would build:
//! a verified no-op ("up to date"), taken only when everything matches; a
//! changed lockfile, interpreter or activation script, or an env whose
//! files were deleted, truncated or upgraded behind greta's back, is
//! rebuilt (and says why); `--reinstall` always rebuilds. Also: the import
//! check, whose interpreter starts before the wheels are installed, sees
//! what the wheels' `.pth` files add, as a fresh interpreter would.

use crate::support;
use crate::support::{finding_ids, text, wheel, Harness};
use std::path::Path;

fn install_json(h: &Harness, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["--installer", "uv", "--json"];
    args.extend_from_slice(extra);
    let o = h.install_plain(&args);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

fn site_packages(h: &Harness) -> std::path::PathBuf {
    h.env_dir("cpu")
        .join("lib")
        .join(format!("python{}", support::python_xy()))
        .join("site-packages")
}

#[test]
fn second_install_is_a_verified_no_op_and_reinstall_rebuilds() {
    support::require_uv();
    let h = Harness::new(100_000);
    let first = install_json(&h, &[]);
    assert_eq!(first["result"], "installed");
    let receipt = h.receipt_bytes("cpu");

    h.server.clear_log();
    let j = install_json(&h, &[]);
    assert_eq!(j["result"], "up-to-date", "{j}");
    assert_eq!(j["report"]["up_to_date"], true);
    assert_eq!(j["report"]["installed"], false);
    // Every RECORD entry with a size was looked at: the three blobs and
    // more (modules, METADATA, WHEEL).
    assert!(
        j["report"]["verified"]["files"].as_u64().unwrap() >= 9,
        "{j}"
    );
    assert_eq!(j["report"]["verified"]["distributions"], 3);
    for w in j["report"]["wheels"].as_array().unwrap() {
        assert_eq!(w["source"], "installed", "{w}");
    }
    assert!(h.server.log().is_empty(), "{:?}", h.server.log());
    assert_eq!(
        h.receipt_bytes("cpu"),
        receipt,
        "an up-to-date env is not touched"
    );
    // People are told, and how to rebuild anyway.
    let o = h.install_plain(&["--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    let err = support::stderr(&o);
    assert!(
        err.contains("is up to date") && err.contains("--reinstall"),
        "{err}"
    );
    // ... and how to use it, as after an install.
    let activate = format!(". {}/greta-activate", h.env_dir("cpu").display());
    assert!(err.contains(&format!("activate with: {activate}")), "{err}");

    // --reinstall (alias --force) rebuilds from the cache, import check included.
    for flag in ["--reinstall", "--force"] {
        let j = install_json(&h, &[flag]);
        assert_eq!(j["result"], "installed", "{flag}: {j}");
        assert_eq!(j["report"]["up_to_date"], false);
        assert_eq!(j["report"]["checks"]["torch"]["ok"], true, "{j}");
        assert_ne!(h.receipt_bytes("cpu"), receipt, "{flag}: not rebuilt");
        for w in j["report"]["wheels"].as_array().unwrap() {
            assert_eq!(w["source"], "cache", "{w}");
        }
    }
    assert!(h.server.log().is_empty(), "{:?}", h.server.log());
    assert_eq!(install_json(&h, &[])["result"], "up-to-date");
    h.import_in_env("cpu");
}

/// Breaks one thing, expects a rebuild that names it, and then a no-op
/// again (the rebuilt env verifies).
fn expect_rebuild(h: &Harness, case: &str, why: &str, extra: &[&str]) {
    let j = install_json(h, extra);
    assert_eq!(j["result"], "installed", "{case}: {j}");
    let because = j["report"]["rebuilt_because"].as_str().unwrap_or("");
    assert!(
        because.contains(why),
        "{case}: rebuilt because {because:?}, expected {why:?}"
    );
    assert_eq!(h.import_in_env("cpu")["torch"], "2.5.1", "{case}");
    assert_eq!(
        install_json(h, extra)["result"],
        "up-to-date",
        "{case}: the rebuilt env does not verify"
    );
}

#[test]
fn anything_that_differs_or_was_tampered_with_is_rebuilt() {
    support::require_uv();
    let h = Harness::new(60_000);
    assert_eq!(install_json(&h, &[])["result"], "installed");
    assert_eq!(install_json(&h, &[])["result"], "up-to-date");

    // A file of torch deleted.
    std::fs::remove_file(site_packages(&h).join("torch").join("_blob.bin")).unwrap();
    expect_rebuild(&h, "deleted file", "_blob.bin (of torch)", &[]);

    // A file of triton truncated (same name, other size).
    let blob = site_packages(&h).join("triton").join("_blob.bin");
    let bytes = std::fs::read(&blob).unwrap();
    std::fs::write(&blob, &bytes[..bytes.len() / 2]).unwrap();
    expect_rebuild(&h, "truncated file", "its RECORD says", &[]);

    // jax "upgraded" behind greta's back.
    let meta = site_packages(&h)
        .join("jax-0.4.35.dist-info")
        .join("METADATA");
    let m = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, m.replace("Version: 0.4.35", "Version: 0.4.36")).unwrap();
    expect_rebuild(&h, "other version", "jax 0.4.36 is installed", &[]);

    // A second copy of a distribution.
    let dup = site_packages(&h).join("jax-0.4.34.dist-info");
    std::fs::create_dir(&dup).unwrap();
    std::fs::write(
        dup.join("METADATA"),
        "Metadata-Version: 2.1\nName: jax\nVersion: 0.4.34\n",
    )
    .unwrap();
    expect_rebuild(&h, "duplicate dist", "jax is installed 2 times", &[]);

    // The lockfile changed (same wheels, other bytes: another sha256).
    let lock = h.lock_dir().join("pylock.cpu.toml");
    let mut text = std::fs::read_to_string(&lock).unwrap();
    text.push_str("# edited\n");
    std::fs::write(&lock, text).unwrap();
    expect_rebuild(&h, "lockfile", "the lockfile (sha256) changed", &[]);

    // The activation script edited.
    let act = h.env_dir("cpu").join("greta-activate");
    let mut a = std::fs::read_to_string(&act).unwrap();
    a.push_str("export EVIL=1\n");
    std::fs::write(&act, a).unwrap();
    expect_rebuild(
        &h,
        "activation script",
        "greta-activate is missing or not",
        &[],
    );

    // A receipt from a greta that did not record the base interpreter.
    let rp = h.env_dir("cpu").join("greta-env.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rp).unwrap()).unwrap();
    r["python"].as_object_mut().unwrap().remove("base");
    std::fs::write(&rp, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    expect_rebuild(
        &h,
        "old receipt",
        "does not record the base interpreter",
        &[],
    );

    // Another interpreter path (a link to the same Python): the env is
    // rebuilt from it, then verifies through the link.
    let link_dir = tempfile::tempdir().unwrap();
    let link = link_dir.path().join("python3");
    // To the interpreter itself: a pyenv-style shim would be resolved to it.
    let real = std::process::Command::new(support::python())
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let real = String::from_utf8(real.stdout).unwrap();
    std::os::unix::fs::symlink(real.trim(), &link).unwrap();
    let j = install_link(&h, &link);
    assert_eq!(j["result"], "installed", "{j}");
    assert!(
        j["report"]["rebuilt_because"]
            .as_str()
            .unwrap()
            .contains("the interpreter changed"),
        "{j}"
    );
    assert_eq!(install_link(&h, &link)["result"], "up-to-date");
    h.import_in_env("cpu");
}

fn install_link(h: &Harness, python: &Path) -> serde_json::Value {
    let o = h
        .install_with(python, &["--no-smoke", "--installer", "uv", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn import_check_sees_what_the_wheels_pth_files_add() {
    support::require_uv();
    // This jax is importable only through the .pth file its wheel installs:
    // the check's interpreter, started before the install, must process it
    // as a fresh interpreter's start-up would.
    let jax = wheel::build(
        "jax",
        "0.4.35",
        "jax_src",
        &[
            (
                "jax_src/jax/__init__.py",
                "__version__ = '0.4.35'\ndef devices():\n    return ['cpu']\n".to_string(),
            ),
            ("greta_test_jax.pth", "jax_src\n".to_string()),
        ],
        10_000,
    );
    let h = Harness::with_wheels(vec![
        wheel::torch("2.5.1", None, None, 20_000),
        wheel::triton("3.1.0", 10_000),
        jax,
    ]);
    let j = install_json(&h, &[]);
    assert_eq!(j["result"], "installed", "{j}");
    let jax = &j["report"]["checks"]["jax"];
    assert_eq!(jax["ok"], true, "{j}");
    assert_eq!(jax["version"], "0.4.35");
    assert!(
        jax["file"]
            .as_str()
            .unwrap()
            .contains("jax_src/jax/__init__.py"),
        "{jax}"
    );

    // And a module that does not import is still a failed check that keeps
    // the previous env, with the error as Python said it (quotes, a
    // newline, a backslash and non-ASCII survive the check's JSON).
    let broken = wheel::build(
        "jax",
        "0.4.36",
        "jax",
        &[(
            "jax/__init__.py",
            "raise ImportError('bad \"quote\"\\nnew line \\u00fc \\U0001d11e \\\\ end')\n"
                .to_string(),
        )],
        10_000,
    );
    h.server
        .add_wheel(&broken.project, &broken.filename, broken.bytes.clone());
    let torch = h.wheel("torch");
    let triton = h.wheel("triton");
    std::fs::write(
        h.lock_dir().join("pylock.cpu.toml"),
        h.pylock_for(&[torch, triton, &broken]),
    )
    .unwrap();
    let o = h.install_plain(&["--installer", "uv", "--json"]);
    assert!(!o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids = finding_ids(&j["report"]);
    assert_eq!(ids, ["framework.import-failed"], "{j}");
    assert_eq!(
        j["report"]["findings"][0]["evidence"][0],
        "ImportError: bad \"quote\"\nnew line \u{fc} \u{1d11e} \\ end"
    );
    // The previous env (jax 0.4.35) is untouched.
    assert_eq!(h.import_in_env("cpu")["jax"], "0.4.35");
}

#[test]
fn console_scripts_point_at_the_final_env_and_their_records_stay_true() {
    support::require_uv();
    // uv and pip write each console script's `#!` line for the staging
    // path; greta rewrites it for the final path, and must update the
    // script's RECORD entry too, or the env would never verify again.
    let torch = wheel::build(
        "torch",
        "2.5.1",
        "torch",
        &[
            (
                "torch/__init__.py",
                "from . import version\n__version__ = version.__version__\n\ndef main():\n    print('torchrun ok')\n".to_string(),
            ),
            (
                "torch/version.py",
                "__version__ = '2.5.1'\nhip = None\ncuda = None\n".to_string(),
            ),
            (
                "torch-2.5.1.dist-info/entry_points.txt",
                "[console_scripts]\ntorchrun = torch:main\n".to_string(),
            ),
        ],
        20_000,
    );
    let h = Harness::with_wheels(vec![
        torch,
        wheel::triton("3.1.0", 10_000),
        wheel::jax("0.4.35", 10_000),
    ]);
    for (name, tool) in [("cpu", "uv"), ("pip-env", "pip")] {
        let o = h.install_plain(&["--installer", tool, "--name", name, "--json"]);
        assert!(o.status.success(), "{tool}: {}", text(&o));
        let env = h.env_dir(name);
        let script = env.join("bin").join("torchrun");
        let first = std::fs::read_to_string(&script).unwrap();
        let shebang = first.lines().next().unwrap();
        assert!(
            shebang.contains(env.join("bin").join("python").to_str().unwrap())
                && !shebang.contains(".staging"),
            "{tool}: {shebang}"
        );
        let run = std::process::Command::new(&script).output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&run.stdout),
            "torchrun ok\n",
            "{tool}"
        );
        // RECORD has the script's real size (and hash).
        let site = env
            .join("lib")
            .join(format!("python{}", support::python_xy()))
            .join("site-packages");
        let record =
            std::fs::read_to_string(site.join("torch-2.5.1.dist-info").join("RECORD")).unwrap();
        let line = record
            .lines()
            .find(|l| l.contains("bin/torchrun"))
            .unwrap_or_else(|| panic!("{tool}: no torchrun in RECORD:\n{record}"));
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields[2], first.len().to_string(), "{tool}: {line}");
        let o = h.install_plain(&["--installer", tool, "--name", name, "--json"]);
        assert!(o.status.success(), "{tool}: {}", text(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["result"], "up-to-date", "{tool}: {j}");
    }
}
