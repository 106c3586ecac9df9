//! Where the HIP runtime (libamdhip64) and the other ROCm libraries are
//! looked for, in order, each place with the rule that put it there.

use crate::gpu::search::{self, Candidate};
use greta_vocab::EnvVars;
use std::path::{Path, PathBuf};

/// What the HIP library search reads, gathered by [`SearchEnv::live`] and
/// passed in so the order is testable anywhere.
#[derive(Clone, Debug, Default)]
pub struct SearchEnv {
    /// `$GRETA_HIP_LIB`: a file, or a directory holding libamdhip64.
    pub greta_hip_lib: Option<PathBuf>,
    /// greta env roots to look in (`$GRETA_ENV`, then `$VIRTUAL_ENV`).
    pub env_roots: Vec<PathBuf>,
    pub rocm_path: Option<PathBuf>,
    pub hip_path: Option<PathBuf>,
    /// `/opt/rocm`, then `/opt/rocm-*` newest first.
    pub opt_rocm: Vec<PathBuf>,
}

impl SearchEnv {
    pub fn live() -> SearchEnv {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let mut opt_rocm = vec![PathBuf::from("/opt/rocm")];
        opt_rocm.extend(search::versioned_dirs(Path::new("/opt"), "rocm-"));
        SearchEnv {
            greta_hip_lib: var(EnvVars::GRETA_HIP_LIB),
            env_roots: [EnvVars::GRETA_ENV, "VIRTUAL_ENV"]
                .iter()
                .filter_map(|k| var(k))
                .collect(),
            rocm_path: var("ROCM_PATH"),
            hip_path: var("HIP_PATH"),
            opt_rocm,
        }
    }
}

const LOADER_NAMES: [&str; 4] = [
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];

/// Where to look for libamdhip64, in order, each with the rule that put it
/// there. An explicit `GRETA_HIP_LIB` is the only candidate: a wrong one is
/// an error, not a fallthrough.
pub fn search_candidates(env: &SearchEnv) -> Vec<Candidate> {
    if let Some(p) = &env.greta_hip_lib {
        let files = if p.is_dir() {
            search::lib_files(p, "libamdhip64.so")
        } else {
            vec![p.clone()]
        };
        if files.is_empty() {
            return vec![Candidate::new(
                p.join("libamdhip64.so"),
                format!("${}", EnvVars::GRETA_HIP_LIB),
            )];
        }
        return files
            .into_iter()
            .map(|f| Candidate::new(f, format!("${}", EnvVars::GRETA_HIP_LIB)))
            .collect();
    }
    lib_candidates(env, "libamdhip64.so", &LOADER_NAMES)
}

/// Candidates for the ROCm library `stem` (`libamdhip64.so`,
/// `librocblas.so`): the env's torch wheels, `ROCM_PATH`, `HIP_PATH`,
/// `/opt/rocm*`, then the loader's `names`. A folder without the file is
/// listed as `<folder>/<stem>` so the error names every place looked.
pub(crate) fn lib_candidates(env: &SearchEnv, stem: &str, names: &[&str]) -> Vec<Candidate> {
    let mut v = Vec::new();
    let mut dir = |d: PathBuf, why: String| {
        let files = search::lib_files(&d, stem);
        if files.is_empty() {
            v.push(Candidate::new(d.join(stem), why));
        } else {
            v.extend(files.into_iter().map(|f| Candidate::new(f, why.clone())));
        }
    };
    for root in &env.env_roots {
        for lib in search::site_packages(root, "torch/lib") {
            dir(
                lib,
                format!("the env's own ROCm (torch wheel) in {}", root.display()),
            );
        }
    }
    if let Some(p) = &env.rocm_path {
        dir(p.join("lib"), "$ROCM_PATH".into());
    }
    if let Some(p) = &env.hip_path {
        dir(p.join("lib"), "$HIP_PATH".into());
    }
    for p in &env.opt_rocm {
        if p.is_dir() {
            dir(p.join("lib"), format!("ROCm install {}", p.display()));
        }
    }
    for n in names {
        v.push(Candidate::new(*n, "the dynamic loader's search path"));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_order_is_the_documented_one() {
        let t = tempfile::tempdir().unwrap();
        let venv = t.path().join("env");
        let torch = venv.join("lib/python3.12/site-packages/torch/lib");
        std::fs::create_dir_all(&torch).unwrap();
        std::fs::write(torch.join("libamdhip64.so"), "").unwrap();
        std::fs::create_dir_all(t.path().join("opt/rocm-6.3.1/lib")).unwrap();
        let env = SearchEnv {
            greta_hip_lib: None,
            env_roots: vec![venv.clone()],
            rocm_path: Some(t.path().join("rocm")),
            hip_path: Some(t.path().join("hip")),
            opt_rocm: vec![t.path().join("opt/rocm-6.3.1")],
        };
        let c = search_candidates(&env);
        let whys: Vec<&str> = c.iter().map(|c| c.why.as_str()).collect();
        assert!(
            whys[0].starts_with("the env's own ROCm (torch wheel)"),
            "{whys:?}"
        );
        assert_eq!(c[0].path, torch.join("libamdhip64.so"));
        assert_eq!(whys[1..3], ["$ROCM_PATH", "$HIP_PATH"]);
        assert!(whys[3].starts_with("ROCm install"), "{whys:?}");
        let names: Vec<String> = c[4..]
            .iter()
            .map(|c| c.path.display().to_string())
            .collect();
        assert_eq!(names, LOADER_NAMES);
        // An explicit GRETA_HIP_LIB is all there is.
        let only = search_candidates(&SearchEnv {
            greta_hip_lib: Some("/nowhere/libamdhip64.so".into()),
            ..env
        });
        assert_eq!(
            only,
            [Candidate::new(
                "/nowhere/libamdhip64.so",
                format!("${}", EnvVars::GRETA_HIP_LIB)
            )]
        );
    }
}
