//! hipcc, the fallback where no hiprtc exists: found on `HIP_PATH`,
//! `ROCM_PATH`, `PATH` or `/opt/rocm`, and run in its own bounded child.

use crate::gpu::arch::Arch;
use crate::gpu::compiler::{
    compiler_label, io, CompileError, Compiler, CompilerChoice, CompilerKind, COMPILE_LIMIT,
};
use crate::locate::{Loaded, SearchEnv};
use greta_vocab::child::Child;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// How long `hipcc --version` may take (it starts clang once: seconds).
const VERSION_LIMIT: Duration = Duration::from_secs(30);

/// The hipcc to use for `target`, with its version. Text is accepted too
/// (the installer asks with a placeholder target only to find hipcc).
pub fn choice(target: impl Into<Arch>) -> Result<CompilerChoice, String> {
    let target: Arch = target.into();
    let mut looked = Vec::new();
    // `HIP_PATH`/`ROCM_PATH` as the library search reads them (a value
    // that is not an absolute directory is left out, with a warning).
    let env = SearchEnv::live();
    let mut cands: Vec<(PathBuf, &str)> = Vec::new();
    if let Some(p) = env.hip_path {
        cands.push((p.join("bin/hipcc"), "$HIP_PATH"));
    }
    if let Some(p) = env.rocm_path {
        cands.push((p.join("bin/hipcc"), "$ROCM_PATH"));
    }
    if let Ok(p) = which_hipcc() {
        cands.push((p, "PATH"));
    } else {
        looked.push("PATH".to_string());
    }
    cands.push(("/opt/rocm/bin/hipcc".into(), "/opt/rocm"));
    pick(target, cands, looked, VERSION_LIMIT)
}

/// The first candidate that is a file and answers `--version` within
/// `limit`; else every place looked at and why it was passed over.
fn pick(
    target: Arch,
    cands: Vec<(PathBuf, &str)>,
    mut looked: Vec<String>,
    limit: Duration,
) -> Result<CompilerChoice, String> {
    for (p, why) in cands {
        if !p.is_file() {
            looked.push(p.display().to_string());
            continue;
        }
        let mut ask = Command::new(&p);
        ask.arg("--version");
        // hipcc is a Perl/clang wrapper: a broken ROCm can hang it, and
        // finding a compiler must not.
        let out = Child::new(ask)
            .named("hipcc --version")
            .own_group()
            .output(Some(limit));
        let version = match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
                .lines()
                .find(|l| l.contains("HIP version"))
                .unwrap_or("unknown version")
                .trim()
                .to_string(),
            Ok(o) => {
                looked.push(format!("{}: --version ended with {}", p.display(), o.how()));
                continue;
            }
            Err(e) => {
                looked.push(format!("{}: --version: {e}", p.display()));
                continue;
            }
        };
        return Ok(CompilerChoice {
            kind: CompilerKind::Hipcc,
            library: Loaded {
                what: "hipcc".into(),
                path: p,
                why: why.into(),
            },
            version,
            options: vec![
                "--genco".into(),
                "-O3".into(),
                format!("--offload-arch={target}"),
            ],
            target,
        });
    }
    Err(format!("hipcc not found (looked in {})", looked.join(", ")))
}

fn which_hipcc() -> Result<PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path)
        .map(|d| d.join("hipcc"))
        .find(|p| p.is_file())
        .ok_or(())
}

/// hipcc, set for one target.
pub(crate) struct Hipcc(pub(crate) CompilerChoice);

impl Compiler for Hipcc {
    fn choice(&self) -> &CompilerChoice {
        &self.0
    }

    /// A code object; hipcc's own output is not kept as a log.
    fn compile(&self, unit: &str) -> Result<(Vec<u8>, String), CompileError> {
        Ok((compile(&self.0, unit)?, String::new()))
    }
}

/// Compiles `unit` with hipcc into a code object.
fn compile(choice: &CompilerChoice, unit: &str) -> Result<Vec<u8>, CompileError> {
    let dir = tempfile::tempdir().map_err(io("creating a directory for hipcc"))?;
    let src = dir.path().join("greta_kernels.hip");
    let out = dir.path().join("greta_kernels.co");
    std::fs::write(&src, unit).map_err(io("writing greta_kernels.hip"))?;
    let mut cmd = Command::new(&choice.library.path);
    cmd.current_dir(dir.path())
        .args(&choice.options)
        .arg(&src)
        .arg("-o")
        .arg(&out);
    let limit: Duration = COMPILE_LIMIT;
    let o = Child::new(cmd)
        .named("hipcc")
        .own_group()
        .output(Some(limit))
        .map_err(|e| match e {
            greta_vocab::child::ChildError::TimedOut { .. } => CompileError::TimedOut {
                target: choice.target.to_string(),
                compiler: compiler_label(choice),
            },
            other => CompileError::Child(other.to_string()),
        })?;
    if !o.status.success() {
        return Err(crate::gpu::rtc::classify_failure(
            &choice.target.to_string(),
            &compiler_label(choice),
            &format!("hipcc ended with {}:\n{}", o.how(), o.stderr),
        ));
    }
    std::fs::read(&out).map_err(io(format!("reading {}", out.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fake hipcc in its own directory running `body`.
    fn fake(dir: &std::path::Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name).join("hipcc");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    /// A hipcc that hangs or fails is passed over with the reason, and the
    /// next one that answers is taken with its version (before, a hanging
    /// hipcc hung greta: `Command::output()` had no time limit).
    #[test]
    fn a_hanging_or_failing_hipcc_is_passed_over_with_the_reason() {
        let d = tempfile::tempdir().unwrap();
        let hang = fake(d.path(), "hang", "exec sleep 600");
        let fail = fake(d.path(), "fail", "echo broken >&2; exit 3");
        let good = fake(d.path(), "good", "echo 'HIP version: 6.4.43483'");
        let start = std::time::Instant::now();
        let c = pick(
            Arch::from("gfx942"),
            vec![
                (hang, "$HIP_PATH"),
                (fail, "$ROCM_PATH"),
                (good.clone(), "PATH"),
            ],
            vec![],
            Duration::from_millis(300),
        )
        .unwrap();
        assert!(start.elapsed() < Duration::from_secs(60));
        assert_eq!(c.library.path, good);
        assert_eq!(c.version, "HIP version: 6.4.43483");
        let e = pick(
            Arch::from("gfx942"),
            vec![
                (d.path().join("hang/hipcc"), "$HIP_PATH"),
                (d.path().join("fail/hipcc"), "PATH"),
            ],
            vec![],
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(e.contains("did not finish within 300ms"), "{e}");
        assert!(e.contains("ended with exit status 3"), "{e}");
    }
}
