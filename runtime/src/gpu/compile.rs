//! Kernels compiled on the node, for the device in hand, and cached.
//!
//! The sources embedded in greta (`kernels/hip/*.hip`) are joined into one
//! translation unit behind the backend's prelude and compiled by the
//! vendor's run-time compiler — hiprtc for HIP (inside libamdhip64 on ROCm
//! 5, `libhiprtc.so.N` on ROCm 6/7), NVRTC for CUDA; hipcc only where hiprtc
//! is missing. The result is cached on disk by (source hash, compiler and
//! version, target, options) and written atomically (a file beside, then a
//! rename), so a crash or a concurrent greta never leaves half an object.
//!
//! A compiler can crash its process (ROCm 5.2's hiprtc aborts on gfx942), so
//! when the binary registered a helper ([`greta_vocab::child::helper`]) the
//! compile runs in
//! a child and a crash becomes a [`CompileError::Crashed`] that says so.

use super::compiler::{
    compiler_label, io, CompileError, Compiler, CompilerChoice, CompilerKind, COMPILE_LIMIT,
};
use super::driver::Api;
use greta_vocab::child;
use greta_vocab::EnvVars;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The kernel sources to compile: `(file name, text)` pairs, `common.h`
/// first, and the per-API preludes.
#[derive(Debug, Clone)]
pub struct KernelSources {
    files: Vec<(String, String)>,
    prelude_hip: String,
    prelude_cuda: String,
}

impl KernelSources {
    pub fn new(files: Vec<(String, String)>) -> KernelSources {
        KernelSources {
            files,
            prelude_hip: greta_kernels::hip_src::PRELUDE_HIP.to_string(),
            prelude_cuda: greta_kernels::hip_src::PRELUDE_CUDA.to_string(),
        }
    }

    /// Greta's bundled kernels (`kernels/hip/*`).
    pub fn bundled() -> KernelSources {
        KernelSources::new(
            greta_kernels::hip_src::SOURCES
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
        )
    }

    #[cfg(test)]
    pub fn files(&self) -> &[(String, String)] {
        &self.files
    }

    /// One translation unit: the API's prelude, then every file under a
    /// `#line` directive (so a compiler message names `file.hip:line`), with
    /// `#include "common.h"` dropped (common.h is the first file).
    pub fn translation_unit(&self, api: Api) -> String {
        let prelude = match api {
            Api::Hip => &self.prelude_hip,
            Api::Cuda => &self.prelude_cuda,
        };
        let mut s = format!("#line 1 \"prelude_{}.h\"\n{prelude}\n", api.as_str());
        for (name, text) in &self.files {
            s.push_str(&format!("#line 1 \"{name}\"\n"));
            for line in text.lines() {
                if line.trim() == "#include \"common.h\"" || line.trim() == "#pragma once" {
                    s.push_str("//\n");
                } else {
                    s.push_str(line);
                    s.push('\n');
                }
            }
        }
        s
    }
}

/// Cache key: sha256 over the translation unit, compiler kind and version,
/// target and options (each length-prefixed).
pub fn cache_key(choice: &CompilerChoice, unit: &str) -> String {
    let mut h = Sha256::new();
    let opts = choice.options.join("\u{1f}");
    let target = choice.target.to_string();
    for part in [
        unit,
        choice.kind.as_str(),
        choice.version.as_str(),
        target.as_str(),
        opts.as_str(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    hex::encode(h.finalize())
}

/// Built code objects on disk.
#[derive(Debug, Clone)]
pub struct KernelCache {
    dir: PathBuf,
}

/// A code object from the cache, and whether this call had to build it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedObject {
    pub path: PathBuf,
    pub key: String,
    pub compiled: bool,
}

impl KernelCache {
    pub fn new(dir: impl Into<PathBuf>) -> KernelCache {
        KernelCache { dir: dir.into() }
    }

    /// `$GRETA_KERNEL_CACHE`, else `$XDG_CACHE_HOME/greta/gpu-kernels`
    /// (default `~/.cache/greta/gpu-kernels`; `greta_vocab::dirs`). Err:
    /// the variable is not UTF-8 or holds a control character.
    pub fn default_dir() -> Result<PathBuf, String> {
        if let Some(d) = greta_vocab::Setting::text_path(EnvVars::GRETA_KERNEL_CACHE)? {
            return Ok(d.value);
        }
        // With no HOME at all (a bare service account), a directory of its
        // own under the temporary directory: compiles still get cached.
        use greta_vocab::dirs;
        Ok(
            dirs::greta_dir(dirs::Base::Cache, "gpu-kernels", &dirs::process_env)
                .unwrap_or_else(|| std::env::temp_dir().join("greta").join("gpu-kernels")),
        )
    }

    fn path_for(&self, choice: &CompilerChoice, key: &str) -> PathBuf {
        let ext = if choice.kind == CompilerKind::Nvrtc {
            "cubin"
        } else {
            "co"
        };
        self.dir
            .join(format!("{}-{}.{ext}", choice.target, &key[..24]))
    }

    /// The code object for `compiler`'s target, compiled only when the
    /// cache has none for these exact sources, compiler, target and options.
    pub fn get_or_build(
        &self,
        compiler: &dyn Compiler,
        sources: &KernelSources,
        api: Api,
    ) -> Result<CachedObject, CompileError> {
        let choice = compiler.choice();
        let unit = sources.translation_unit(api);
        let key = cache_key(choice, &unit);
        let path = self.path_for(choice, &key);
        if std::fs::metadata(&path)
            .map(|m| m.len() > 0)
            .unwrap_or(false)
        {
            return Ok(CachedObject {
                path,
                key,
                compiled: false,
            });
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(io(format!("creating {}", self.dir.display())))?;
        let staging = tempfile::Builder::new()
            .prefix(".building-")
            .tempfile_in(&self.dir)
            .map_err(io(format!("creating a file in {}", self.dir.display())))?;
        compile(compiler, &unit, staging.path())?;
        staging.persist(&path).map_err(|e| CompileError::Io {
            what: format!("renaming into {}", path.display()),
            source: e.error,
        })?;
        Ok(CachedObject {
            path,
            key,
            compiled: true,
        })
    }
}

/// Builds with the first of `compilers` that compiles
/// (`Driver::compilers_for`: NVRTC's `sm_90a`, then `sm_90`). A compiler
/// that cannot build for its target (an unknown target, a failed compile, a
/// crash) hands over to the next, and says so in the log; any other error
/// (no compiler, a full disk, a timeout) ends the search, since the next
/// compiler would meet it too.
pub fn first_that_builds<T>(
    compilers: Vec<Box<dyn Compiler>>,
    mut build: impl FnMut(&dyn Compiler) -> Result<T, CompileError>,
) -> Result<(Box<dyn Compiler>, T), CompileError> {
    let mut compilers = compilers.into_iter().peekable();
    let mut failed = None;
    while let Some(c) = compilers.next() {
        match build(&*c) {
            Ok(t) => return Ok((c, t)),
            Err(
                e @ (CompileError::UnsupportedTarget { .. }
                | CompileError::Failed { .. }
                | CompileError::Crashed { .. }),
            ) => {
                if let Some(next) = compilers.peek() {
                    tracing::warn!(
                        "{} could not build greta's kernels for {}; falling back to {}: {}",
                        c.choice().kind.as_str(),
                        c.choice().target,
                        next.choice().target,
                        e.to_string().lines().next().unwrap_or("")
                    );
                }
                failed = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(failed.unwrap_or_else(|| {
        CompileError::Unavailable("no compiler was chosen for this device".into())
    }))
}

/// What a compile child is asked (JSON on its stdin).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompileRequest {
    pub compiler: CompilerChoice,
    pub source: String,
    /// Where the child writes the code object.
    pub out: PathBuf,
}

/// What a compile child answers (JSON on its stdout).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompileAnswer {
    pub bytes: u64,
    /// `None` on success.
    pub error: Option<CompileFailure>,
    /// The compiler's log of a successful compile (warnings, remarks);
    /// absent when empty, as in answers from before it was added.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub log: String,
}

/// A compile error as it crosses the process boundary.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CompileFailure {
    Unavailable { message: String },
    UnsupportedTarget { detail: String },
    Failed { log: String },
    Other { message: String },
}

impl CompileFailure {
    fn of(e: &CompileError) -> CompileFailure {
        match e {
            CompileError::Unavailable(m) => CompileFailure::Unavailable { message: m.clone() },
            CompileError::UnsupportedTarget { detail, .. } => CompileFailure::UnsupportedTarget {
                detail: detail.clone(),
            },
            CompileError::Failed { log, .. } => CompileFailure::Failed { log: log.clone() },
            other => CompileFailure::Other {
                message: other.to_string(),
            },
        }
    }

    fn into_error(self, choice: &CompilerChoice) -> CompileError {
        let compiler = compiler_label(choice);
        let target = choice.target.to_string();
        match self {
            CompileFailure::Unavailable { message } => CompileError::Unavailable(message),
            CompileFailure::UnsupportedTarget { detail } => CompileError::UnsupportedTarget {
                target,
                compiler,
                detail,
            },
            CompileFailure::Failed { log } => CompileError::Failed {
                target,
                compiler,
                log,
            },
            CompileFailure::Other { message } => CompileError::Child(message),
        }
    }
}

/// Compiles `unit` with `compiler` into `out`: in a helper child when one
/// is registered, else in this process.
pub fn compile(compiler: &dyn Compiler, unit: &str, out: &Path) -> Result<(), CompileError> {
    compile_with_log(compiler, unit, out).map(|_| ())
}

/// [`compile`], returning the compiler's log of the successful compile
/// (hiprtc's and NVRTC's; empty for hipcc). `greta __gpu build-kernels
/// --resource-usage` reads the compiler's own register, occupancy and
/// spill figures from it.
pub fn compile_with_log(
    compiler: &dyn Compiler,
    unit: &str,
    out: &Path,
) -> Result<String, CompileError> {
    match child::helper() {
        Some(h) => compile_in_child(h, compiler.choice(), unit, out),
        None => compile_here(compiler, unit, out),
    }
}

/// Compiles in this process (what the child does); returns the compiler's log.
fn compile_here(compiler: &dyn Compiler, unit: &str, out: &Path) -> Result<String, CompileError> {
    let choice = compiler.choice();
    let (code, log) = compiler.compile(unit)?;
    if code.is_empty() {
        return Err(CompileError::Failed {
            target: choice.target.to_string(),
            compiler: compiler_label(choice),
            log: "the compiler reported success but produced no code".into(),
        });
    }
    std::fs::write(out, &code).map_err(io(format!("writing {}", out.display())))?;
    Ok(log)
}

fn compile_in_child(
    h: &child::Helper,
    choice: &CompilerChoice,
    unit: &str,
    out: &Path,
) -> Result<String, CompileError> {
    let req = CompileRequest {
        compiler: choice.clone(),
        source: unit.to_string(),
        out: out.to_path_buf(),
    };
    let input = serde_json::to_vec(&req).map_err(|e| CompileError::Child(e.to_string()))?;
    let what = format!("{} compiling for {}", choice.kind.as_str(), choice.target);
    let res = h
        .child("compile", &what, &[])
        .stdin_bytes(input)
        .output(Some(COMPILE_LIMIT));
    let o = match res {
        Ok(o) => o,
        Err(child::ChildError::TimedOut { .. }) => {
            return Err(CompileError::TimedOut {
                target: choice.target.to_string(),
                compiler: compiler_label(choice),
            })
        }
        Err(e) => return Err(CompileError::Child(e.to_string())),
    };
    let stderr_tail = || {
        let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
        if tail.is_empty() {
            String::new()
        } else {
            format!(": {tail}")
        }
    };
    if o.status.code().is_none() {
        return Err(CompileError::Crashed {
            target: choice.target.to_string(),
            compiler: compiler_label(choice),
            how: o.how(),
            stderr: stderr_tail(),
        });
    }
    let answer: CompileAnswer = serde_json::from_slice(&o.stdout).map_err(|e| {
        CompileError::Child(format!(
            "the compile child ended with {} and no readable answer ({e}){}",
            o.how(),
            stderr_tail()
        ))
    })?;
    match answer.error {
        None => Ok(answer.log),
        Some(f) => Err(f.into_error(choice)),
    }
}

/// The child's side: reads a [`CompileRequest`] from `input` (at most 64
/// MiB), compiles in this process with the compiler `compiler_of` makes of
/// the request's choice, prints a [`CompileAnswer`]; 0 on success.
pub fn serve_compile(
    input: impl Read,
    output: &mut dyn std::io::Write,
    compiler_of: &dyn Fn(CompilerChoice) -> Box<dyn Compiler>,
) -> u8 {
    let mut text = Vec::new();
    let answer = match input.take(64 << 20).read_to_end(&mut text) {
        Err(e) => CompileAnswer {
            bytes: 0,
            error: Some(CompileFailure::Other {
                message: format!("reading the request: {e}"),
            }),
            log: String::new(),
        },
        Ok(_) => match serde_json::from_slice::<CompileRequest>(&text) {
            Err(e) => CompileAnswer {
                bytes: 0,
                error: Some(CompileFailure::Other {
                    message: format!("the compile request does not parse: {e}"),
                }),
                log: String::new(),
            },
            Ok(req) => match compile_here(&*compiler_of(req.compiler), &req.source, &req.out) {
                Ok(log) => CompileAnswer {
                    bytes: std::fs::metadata(&req.out).map(|m| m.len()).unwrap_or(0),
                    error: None,
                    log,
                },
                Err(e) => CompileAnswer {
                    bytes: 0,
                    error: Some(CompileFailure::of(&e)),
                    log: String::new(),
                },
            },
        },
    };
    let ok = answer.error.is_none();
    let _ = serde_json::to_writer(&mut *output, &answer);
    let _ = output.flush();
    if ok {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_translation_unit_keeps_file_names_and_drops_local_includes() {
        let s = KernelSources::new(vec![
            ("common.h".into(), "#pragma once\n#define X 1\n".into()),
            ("a.hip".into(), "#include \"common.h\"\nint a = X;\n".into()),
        ]);
        let hip = s.translation_unit(Api::Hip);
        assert!(hip.starts_with("#line 1 \"prelude_hip.h\"\n"), "{hip}");
        assert!(hip.contains("typedef _Float16 greta_f16;"), "{hip}");
        assert!(hip.contains("#line 1 \"a.hip\"\n//\nint a = X;\n"), "{hip}");
        assert!(!hip.contains("#include"), "{hip}");
        let cuda = s.translation_unit(Api::Cuda);
        assert!(cuda.contains("cvt.f32.f16"), "{cuda}");
        assert_ne!(hip, cuda);
    }

    #[test]
    fn a_compile_answer_carries_its_log_only_when_there_is_one() {
        // An answer from a child without the field still reads.
        let old: CompileAnswer = serde_json::from_str(r#"{"bytes":3,"error":null}"#).unwrap();
        assert_eq!((old.bytes, old.log.as_str()), (3, ""));
        let quiet = CompileAnswer {
            bytes: 3,
            error: None,
            log: String::new(),
        };
        assert_eq!(
            serde_json::to_string(&quiet).unwrap(),
            r#"{"bytes":3,"error":null}"#
        );
        let remarks = CompileAnswer {
            log: "t.cu:1:1: remark: VGPRs: 3".into(),
            ..quiet
        };
        let back: CompileAnswer =
            serde_json::from_str(&serde_json::to_string(&remarks).unwrap()).unwrap();
        assert_eq!(back.log, remarks.log);
    }

    /// The warnings `f` logs, as text.
    fn warnings_of<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
        use std::sync::{Arc, Mutex};
        struct Collect(Arc<Mutex<Vec<String>>>);
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" {
                    *self.0 = format!("{v:?}");
                }
            }
        }
        impl tracing::Subscriber for Collect {
            fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
                *m.level() == tracing::Level::WARN
            }
            fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
                tracing::span::Id::from_u64(1)
            }
            fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
            fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
            fn event(&self, e: &tracing::Event<'_>) {
                let mut s = String::new();
                e.record(&mut Message(&mut s));
                self.0.lock().unwrap().push(s);
            }
            fn enter(&self, _: &tracing::span::Id) {}
            fn exit(&self, _: &tracing::span::Id) {}
        }
        let log = Arc::new(Mutex::new(Vec::new()));
        let t = tracing::subscriber::with_default(Collect(log.clone()), f);
        let lines = log.lock().unwrap().clone();
        (t, lines)
    }

    /// A compiler that only names itself: what `first_that_builds` is
    /// handed, never asked to compile here.
    struct Named(CompilerChoice);

    impl Compiler for Named {
        fn choice(&self) -> &CompilerChoice {
            &self.0
        }

        fn compile(&self, _: &str) -> Result<(Vec<u8>, String), CompileError> {
            Err(CompileError::Unavailable(
                "a test compiler compiles nothing".into(),
            ))
        }
    }

    fn nvrtc_for(target: &str) -> Box<dyn Compiler> {
        Box::new(Named(CompilerChoice {
            kind: CompilerKind::Nvrtc,
            library: crate::locate::Loaded {
                what: "NVRTC".into(),
                path: "/x/libnvrtc.so.12".into(),
                why: "test".into(),
            },
            version: "12.4".into(),
            target: target.into(),
            options: vec![format!("--gpu-architecture={target}")],
        }))
    }

    /// sm_90a first; when NVRTC cannot build it, sm_90, and the log says
    /// which failed and what was taken instead. Errors no other target can
    /// mend end the search at once.
    #[test]
    fn a_target_that_does_not_build_falls_back_to_the_next_and_says_so() {
        let choices = || vec![nvrtc_for("sm_90a"), nvrtc_for("sm_90")];
        // The first builds: taken, nothing logged, the second never tried.
        let mut tried = Vec::new();
        let ((c, n), log) = warnings_of(|| {
            first_that_builds(choices(), |c| {
                tried.push(c.choice().target.to_string());
                Ok::<_, CompileError>(7)
            })
            .unwrap()
        });
        assert_eq!(
            (c.choice().target.to_string(), n),
            ("sm_90a".to_string(), 7)
        );
        assert_eq!(tried, ["sm_90a"]);
        assert!(log.is_empty(), "{log:?}");
        // sm_90a unknown to this NVRTC: sm_90, said in the log.
        for fail in [
            CompileError::UnsupportedTarget {
                target: "sm_90a".into(),
                compiler: "NVRTC 11.7".into(),
                detail: "nvrtc error: invalid value 'sm_90a' for option -arch".into(),
            },
            CompileError::Failed {
                target: "sm_90a".into(),
                compiler: "NVRTC 12.4".into(),
                log: "gemm_f16.hip:3:1: error: something".into(),
            },
        ] {
            let mut fail = Some(fail);
            let (r, log) = warnings_of(|| {
                first_that_builds(choices(), |c| {
                    match c.choice().target.to_string().as_str() {
                        "sm_90a" => Err(fail.take().unwrap()),
                        _ => Ok(c.choice().options.clone()),
                    }
                })
            });
            let (c, opts) = r.unwrap();
            assert_eq!(c.choice().target.to_string(), "sm_90");
            assert_eq!(opts, ["--gpu-architecture=sm_90"]);
            assert_eq!(log.len(), 1, "{log:?}");
            assert!(
                log[0].starts_with(
                    "NVRTC could not build greta's kernels for sm_90a; falling back to sm_90: "
                ),
                "{log:?}"
            );
        }
        // Both fail: the last error, one warning (nothing after sm_90).
        let (r, log) = warnings_of(|| {
            first_that_builds(choices(), |c| {
                Err::<(), _>(CompileError::Failed {
                    target: c.choice().target.to_string(),
                    compiler: "NVRTC".into(),
                    log: "broken".into(),
                })
            })
        });
        assert!(
            matches!(r, Err(CompileError::Failed { ref target, .. }) if target == "sm_90"),
            "{:?}",
            r.map(|(c, _)| c.choice().clone())
        );
        assert_eq!(log.len(), 1, "{log:?}");
        // An error no other target mends: no second try.
        let mut tried = 0;
        let r = first_that_builds(choices(), |_| {
            tried += 1;
            Err::<(), _>(CompileError::Unavailable("no NVRTC".into()))
        });
        assert!(
            matches!(r, Err(CompileError::Unavailable(_))),
            "{:?}",
            r.map(|(c, _)| c.choice().clone())
        );
        assert_eq!(tried, 1);
        assert!(matches!(
            first_that_builds(vec![], |_| Ok(())),
            Err(CompileError::Unavailable(_))
        ));
    }

    #[test]
    fn the_key_follows_sources_compiler_target_and_options() {
        let c = CompilerChoice {
            kind: CompilerKind::Hiprtc,
            library: crate::locate::Loaded {
                what: "hiprtc".into(),
                path: "/x".into(),
                why: "test".into(),
            },
            version: "9.0".into(),
            target: "gfx90a".into(),
            options: vec!["--offload-arch=gfx90a".into(), "-O3".into()],
        };
        let k = cache_key(&c, "src");
        // The key hashes the target's text: the same as when targets were
        // strings, so existing cache entries still match.
        assert_eq!(
            k,
            "006049fd47c890f6e297bf0d24e1e5ea468cee876c7b655d7ea5bb0639813f54"
        );
        assert_eq!(
            c.target,
            crate::gpu::arch::Arch::Gfx(greta_vocab::Gfx::new(9, 0, 10))
        );
        assert_eq!(k, cache_key(&c.clone(), "src"));
        assert_ne!(k, cache_key(&c, "src2"));
        for change in [
            CompilerChoice {
                version: "9.1".into(),
                ..c.clone()
            },
            CompilerChoice {
                target: "gfx1030".into(),
                ..c.clone()
            },
            CompilerChoice {
                options: vec!["-O2".into()],
                ..c.clone()
            },
            CompilerChoice {
                kind: CompilerKind::Hipcc,
                ..c.clone()
            },
        ] {
            assert_ne!(k, cache_key(&change, "src"), "{change:?}");
        }
    }
}
