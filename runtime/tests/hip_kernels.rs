//! The HIP kernels compile with this machine's hipcc, unsupported targets
//! fail clearly, and the code-object cache rebuilds only when it must.
//! Needs hipcc (CI: Debian 12's ROCm 5.2 via scripts/setup.sh --test); no GPU.
#![cfg(feature = "hip")]

use greta_runtime::hip::{CompileError, Hipcc, KernelCache, KernelSources};

fn hipcc() -> Hipcc {
    Hipcc::locate().unwrap_or_else(|e| panic!("these tests need hipcc: {e}"))
}

/// Every kernel of `kernels/hip` compiles for a CDNA (gfx90a) and an RDNA
/// (gfx1030) target, in one hipcc call, and each `greta_<op>` kernel (with
/// its kernel descriptor) is in the code object for both.
#[test]
fn every_kernel_compiles_for_gfx90a_and_gfx1030() {
    let hipcc = hipcc();
    let sources = KernelSources::bundled();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("all.co");
    hipcc
        .compile(&sources, &["gfx90a", "gfx1030"], &out)
        .unwrap_or_else(|e| panic!("{e}"));
    let bytes = std::fs::read(&out).unwrap();
    let has = |needle: &str| {
        bytes
            .windows(needle.len())
            .filter(|w| *w == needle.as_bytes())
            .count()
    };
    for target in ["gfx90a", "gfx1030"] {
        assert!(
            has(&format!("amdgcn-amd-amdhsa--{target}")) > 0,
            "no {target} code in the bundle"
        );
    }
    let mut kernels = 0;
    for (file, _) in sources.files().iter().filter(|(f, _)| f.ends_with(".hip")) {
        let symbol = format!("greta_{}.kd", file.trim_end_matches(".hip"));
        assert!(
            has(&symbol) >= 2,
            "{symbol} missing from one of the two targets' code"
        );
        kernels += 1;
    }
    assert_eq!(kernels, 13);
}

#[test]
fn gfx942_on_an_old_hipcc_is_a_clear_unsupported_target() {
    let hipcc = hipcc();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.co");
    match hipcc.compile(&KernelSources::bundled(), &["gfx942"], &out) {
        Err(e @ CompileError::UnsupportedTarget { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with("gfx target gfx942 is not supported by this hipcc (HIP version: "),
                "{msg}"
            );
            assert!(!out.exists());
        }
        // ROCm >= 5.7 knows gfx942: then it must simply work.
        Ok(()) => assert!(
            !hipcc.short_version().contains("HIP version: 5.2"),
            "gfx942 built with {}",
            hipcc.version
        ),
        Err(e) => panic!("expected an unsupported-target error, got: {e}"),
    }
    // A made-up target is refused the same way on every ROCm.
    let e = hipcc
        .compile(&KernelSources::bundled(), &["gfx9999"], &out)
        .unwrap_err();
    assert!(
        matches!(e, CompileError::UnsupportedTarget { ref gfx, .. } if gfx == "gfx9999"),
        "{e}"
    );
}

#[test]
fn a_source_error_points_at_the_file_and_line() {
    let mut files = KernelSources::bundled().files().to_vec();
    let (_, text) = files.iter_mut().find(|(n, _)| n == "fill.hip").unwrap();
    text.push_str("\nthis is not C++;\n");
    let lines = text.lines().count();
    let dir = tempfile::tempdir().unwrap();
    let e = hipcc()
        .compile(
            &KernelSources::new(files),
            &["gfx90a"],
            &dir.path().join("x.co"),
        )
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, CompileError::Failed { .. }), "{msg}");
    assert!(msg.contains(&format!("fill.hip:{lines}:")), "{msg}");
}

/// Second use of the same sources/compiler/target is a cache hit (no hipcc
/// run: the file is untouched); a changed source builds a new object.
#[test]
fn the_cache_rebuilds_only_for_changed_sources() {
    let hipcc = hipcc();
    let dir = tempfile::tempdir().unwrap();
    let cache = KernelCache::new(dir.path().join("cache"));
    let sources = KernelSources::bundled();

    let first = cache.get_or_build(&hipcc, &sources, "gfx90a").unwrap();
    assert!(first.compiled);
    let mtime = std::fs::metadata(&first.path).unwrap().modified().unwrap();
    let second = cache.get_or_build(&hipcc, &sources, "gfx90a").unwrap();
    assert!(!second.compiled, "second call recompiled");
    assert_eq!(second.path, first.path);
    assert_eq!(
        std::fs::metadata(&second.path).unwrap().modified().unwrap(),
        mtime
    );

    let mut files = sources.files().to_vec();
    files
        .iter_mut()
        .find(|(n, _)| n == "vec_add.hip")
        .unwrap()
        .1
        .push_str("\n// changed\n");
    let changed = cache
        .get_or_build(&hipcc, &KernelSources::new(files), "gfx90a")
        .unwrap();
    assert!(
        changed.compiled,
        "a changed source was served from the cache"
    );
    assert_ne!(changed.path, first.path);
    assert!(first.path.is_file());

    // Nothing half-written is left behind.
    let names: Vec<String> = std::fs::read_dir(cache.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("gfx90a-") && n.ends_with(".co")),
        "{names:?}"
    );
}
