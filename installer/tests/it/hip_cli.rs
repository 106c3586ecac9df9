//! HIP and CUDA through the real `greta` binary on this machine: Debian 12
//! with ROCm 5.2's libamdhip64.so.5 and hiprtc, no AMD GPU, no NVIDIA driver.

use crate::support::run::Run;
use std::path::Path;
use std::process::Command;

/// greta with `args`, `envs` and its data and cache under `data`.
fn command(args: &[&str], envs: &[(&str, &str)], data: &Path) -> Command {
    let mut c = crate::support::greta();
    c.args(args)
        .env("XDG_DATA_HOME", data)
        .env("XDG_CACHE_HOME", data.join("cache"));
    for (k, v) in envs {
        c.env(k, v);
    }
    c
}

fn greta(args: &[&str], envs: &[(&str, &str)], data: &Path) -> Run {
    Run::of(command(args, envs, data))
}

#[test]
fn the_binary_links_no_hip_or_cuda_library() {
    let o = Command::new("ldd")
        .arg(env!("CARGO_BIN_EXE_greta"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_lowercase();
    assert!(text.contains("libc.so"), "ldd said: {text}");
    for lib in [
        "amdhip",
        "hiprtc",
        "libcuda",
        "nvrtc",
        "cublas",
        "hsa-runtime",
    ] {
        assert!(!text.contains(lib), "greta links {lib}: {text}");
    }
}

/// `greta smoke --backend BACKEND --profile ultrasafe` with `envs`, which
/// must be exit 2 (no such device here) with each of `says` on stderr.
fn refused_smoke(backend: &str, envs: &[(&str, &str)], says: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let r = greta(
        &["smoke", "--backend", backend, "--profile", "ultrasafe"],
        envs,
        d.path(),
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    for s in says {
        assert!(r.stderr.contains(s), "{s:?} not in: {}", r.stderr);
    }
}

#[test]
fn smoke_backend_hip_without_a_gpu_says_why_and_which_library() {
    if Path::new("/dev/kfd").exists() {
        return;
    }
    refused_smoke(
        "hip",
        &[],
        &[
            "no HIP device found",
            "/dev/kfd and /sys/class/kfd do not exist",
            "libamdhip64.so.5",
        ],
    );
}

#[test]
fn a_wrong_greta_hip_lib_names_the_places_looked() {
    refused_smoke(
        "hip",
        &[("GRETA_HIP_LIB", "/nowhere/libamdhip64.so")],
        &[
            "/nowhere/libamdhip64.so ($GRETA_HIP_LIB): not there",
            "greta install",
        ],
    );
}

#[test]
fn smoke_backend_cuda_without_a_driver_is_exit_2_and_clear() {
    if Path::new("/dev/nvidiactl").exists() {
        return;
    }
    refused_smoke("cuda", &[], &["no CUDA driver library (libcuda) found"]);
}

#[test]
fn hiprtc_builds_every_kernel_through_greta_and_survives_a_compiler_crash() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("kernels");
    let cache_s = cache.to_str().unwrap();
    let build = |targets: &[&str]| {
        let mut args = vec!["__gpu", "build-kernels", "--cache-dir", cache_s];
        for t in targets {
            args.extend(["--target", t]);
        }
        let r = greta(&args, &[], d.path());
        let v: serde_json::Value = serde_json::from_str(r.stdout.trim())
            .unwrap_or_else(|e| panic!("{e}: {}{}", r.stdout, r.stderr));
        (r, v)
    };
    let (r, v) = build(&["gfx90a", "gfx1030"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(v["schema"], "greta.gpu-kernels/v1");
    for b in v["built"].as_array().unwrap() {
        assert_eq!(b["object"]["compiled"], true, "{b}");
        assert!(b["compiler"].as_str().unwrap().contains("hiprtc"), "{b}");
    }
    // A second run compiles nothing.
    let (_, again) = build(&["gfx90a"]);
    assert_eq!(again["built"][0]["object"]["compiled"], false, "{again}");
    // ROCm 5.2's hiprtc aborts its process on gfx942: greta must not go
    // down with it, and must say what happened.
    let (r, v) = build(&["gfx942"]);
    let e = v["built"][0]["error"].as_str().unwrap_or("");
    if e.is_empty() {
        return; // a ROCm whose hiprtc knows gfx942
    }
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        e.contains("crashed while compiling greta's kernels for gfx942")
            || e.contains("cannot compile for gfx942"),
        "{e}"
    );
    if e.contains("crashed") {
        assert!(
            e.contains("SIGABRT") && e.contains("greta itself is fine"),
            "{e}"
        );
    }
}

/// The device child's two command lines give the same bytes: `devices`
/// (flags, for a person) and `serve` (the typed request greta's parents
/// send on stdin); a request that is no request is exit 2, said on stderr.
#[test]
fn serve_answers_a_devices_request_as_the_devices_verb_does() {
    let d = tempfile::tempdir().unwrap();
    let flags = greta(&["__gpu", "devices", "--backend", "hip"], &[], d.path());
    let serve = |input: &str| {
        Run::fed(
            command(&["__gpu", "serve"], &[], d.path()),
            Some(input.as_bytes()),
        )
    };
    let typed = serve(r#"{"devices":{"backend":"hip"}}"#);
    assert_eq!(typed.code, flags.code, "{}", typed.stderr);
    assert_eq!(typed.stdout, flags.stdout);
    let v: serde_json::Value = serde_json::from_str(typed.stdout.trim()).unwrap();
    assert_eq!(v["schema"], "greta.gpu-devices/v1", "{v}");
    let bad = serve(r#"{"devices":{"backend":"vulkan"}}"#);
    assert_eq!(bad.code, 2);
    assert!(bad.stdout.is_empty(), "{}", bad.stdout);
    assert!(
        bad.stderr
            .contains("greta __gpu serve: the request on stdin: unknown variant `vulkan`"),
        "{}",
        bad.stderr
    );
}

/// `--no-save` writes no results, so an unusable results directory does not
/// stop a HIP run (as it never stopped a Vulkan one): the run goes on to
/// the child, which says why there is no HIP device here.
#[test]
fn no_save_does_not_need_a_results_directory_on_hip() {
    if Path::new("/dev/kfd").exists() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = file.join("sub");
    let smoke = |extra: &[&str]| {
        let mut args = vec!["smoke", "--backend", "hip", "--profile", "ultrasafe"];
        args.extend_from_slice(extra);
        args.extend(["--out", out.to_str().unwrap()]);
        greta(&args, &[], d.path())
    };
    let r = smoke(&["--no-save"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("not writable"), "{}", r.stderr);
    assert!(r.stderr.contains("no HIP device found"), "{}", r.stderr);
    // Without --no-save the directory is checked first, as on Vulkan.
    let r = smoke(&[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("bad arguments: results directory") && r.stderr.contains("not writable"),
        "{}",
        r.stderr
    );
}

/// `--tune --backend hip|cuda` goes through the device child like a smoke
/// run: without the GPU it is exit 2 with the runtime's reason, and no
/// tuning cache is written.
#[test]
fn tune_on_hip_or_cuda_without_a_gpu_is_exit_2_with_the_reason() {
    if Path::new("/dev/kfd").exists() || Path::new("/dev/nvidiactl").exists() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for (backend, why) in [
        ("hip", "no HIP device found"),
        ("cuda", "no CUDA driver library (libcuda) found"),
    ] {
        let r = greta(
            &[
                "smoke",
                "--tune",
                "--backend",
                backend,
                "--gate",
                "gemm_f16.4096",
            ],
            &[],
            d.path(),
        );
        assert_eq!(r.code, 2, "{backend}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("greta smoke --tune: could not run") && r.stderr.contains(why),
            "{backend}: {}",
            r.stderr
        );
    }
    assert!(
        !d.path().join("cache/greta/tuning").exists(),
        "a tuning cache was written"
    );
}
