//! Python interpreters on PATH and the frameworks installed in greta envs,
//! read from `*.dist-info/METADATA` and torch's `version.py`: importing
//! torch to ask would take seconds and can crash on a broken GPU stack.

use super::scanned;
use crate::facts::{Facts, Framework, Interpreter};
use crate::root::{CmdStatus, Root};

/// `python3` and `python3.N` (not `python3-config`, `python3.11m`...).
pub fn is_interpreter_name(n: &str) -> bool {
    match n.strip_prefix("python3") {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('.')
            .is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    }
}

/// Capture name of an interpreter's `--version` output.
pub fn version_cmd_name(path: &str) -> String {
    let safe: String = path
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("python-version{safe}")
}

/// Distributions that matter for GPU work (normalised names).
fn is_framework(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace('_', "-");
    [
        "torch",
        "torchvision",
        "torchaudio",
        "triton",
        "pytorch-triton",
        "jax",
        "jaxlib",
        "tensorflow",
        "vllm",
        "onnxruntime",
        "flash-attn",
        "xformers",
        "bitsandbytes",
        // TheRock's Python ROCm (ROCm 7.14+): the runtime torch links
        // (`_rocm_sdk_core`, `_rocm_sdk_libraries`) and the per-GPU device
        // wheels, whose names say which gfx targets the env can run.
        "rocm-sdk-core",
        "rocm-sdk-libraries",
        "rocm-sdk-device",
        "amd-torch-device",
        "amd-torchvision-device",
    ]
    .iter()
    .any(|f| n == *f || n.starts_with(&format!("{f}-")))
}

/// Name and Version headers of a METADATA file.
pub fn parse_metadata(text: &str) -> Option<(String, String)> {
    let mut name = None;
    let mut version = None;
    for line in text.lines() {
        if line.is_empty() {
            break; // headers end at the first blank line
        }
        if let Some(v) = line.strip_prefix("Name:") {
            name.get_or_insert_with(|| v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Version:") {
            version.get_or_insert_with(|| v.trim().to_string());
        }
    }
    Some((name?, version?)).filter(|(n, v)| !n.is_empty() && !v.is_empty())
}

/// `hip`/`cuda` assignments in torch/version.py (`hip: Optional[str] = '6.2.41133-dd7f95766'`).
pub fn parse_torch_version_py(text: &str) -> (Option<String>, Option<String>) {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let rest = l.trim_start().strip_prefix(key)?;
            let rest = rest.trim_start();
            let rest = if let Some(r) = rest.strip_prefix(':') {
                r.split_once('=')?.1
            } else {
                rest.strip_prefix('=')?
            };
            let v = rest.trim().trim_matches(|c| c == '\'' || c == '"');
            (v != "None" && !v.is_empty()).then(|| v.to_string())
        })
    };
    (get("hip"), get("cuda"))
}

/// Backend from a local version tag: `+rocm6.2` / `+cu124` / `+cpu`.
pub fn backend_from_version(version: &str) -> Option<(String, Option<String>)> {
    let local = version.split_once('+')?.1.to_ascii_lowercase();
    if let Some(v) = local.strip_prefix("rocm") {
        return Some(("rocm".into(), Some(v.to_string()).filter(|v| !v.is_empty())));
    }
    if let Some(v) = local.strip_prefix("cu") {
        // cu124 -> 12.4, cu118 -> 11.8
        let ver = (v.len() >= 2 && v.bytes().all(|b| b.is_ascii_digit()))
            .then(|| format!("{}.{}", &v[..v.len() - 1], &v[v.len() - 1..]));
        return Some(("cuda".into(), ver));
    }
    (local == "cpu").then(|| ("cpu".into(), None))
}

/// The frameworks installed in one env (a venv greta is building, checked
/// by its framework gates): what the doctor's rules about an env's
/// frameworks need (TheRock's device wheels included).
pub fn env_frameworks(root: &Root, env: &str) -> Vec<Framework> {
    let mut out = Vec::new();
    frameworks_in_env(root, env, &mut out);
    out
}

fn frameworks_in_env(root: &Root, env: &str, out: &mut Vec<Framework>) {
    for lib in root.list(&format!("{env}/lib")) {
        if !lib.starts_with("python") {
            continue;
        }
        for dir in ["site-packages", "dist-packages"] {
            frameworks_in_site(root, env, &format!("{env}/lib/{lib}/{dir}"), out);
        }
    }
}

/// Frameworks in one site directory `sp`, recorded as installed in `env`.
fn frameworks_in_site(root: &Root, env: &str, sp: &str, out: &mut Vec<Framework>) {
    {
        let sp = sp.to_string();
        for entry in root.list(&sp) {
            let Some(stem) = entry.strip_suffix(".dist-info") else {
                continue;
            };
            let dist_name = stem.split('-').next().unwrap_or(stem);
            if !is_framework(dist_name) {
                continue;
            }
            let Ok(meta) = root.read(&format!("{sp}/{entry}/METADATA")) else {
                continue;
            };
            let Some((name, version)) = parse_metadata(&meta) else {
                continue;
            };
            let mut fw = Framework {
                env: env.to_string(),
                name: name.clone(),
                version: version.clone(),
                backend: None,
                backend_version: None,
            };
            if name.eq_ignore_ascii_case("torch") {
                if let Ok(vp) = root.read(&format!("{sp}/torch/version.py")) {
                    match parse_torch_version_py(&vp) {
                        (Some(hip), _) => {
                            fw.backend = Some("rocm".into());
                            fw.backend_version = Some(hip);
                        }
                        (None, Some(cuda)) => {
                            fw.backend = Some("cuda".into());
                            fw.backend_version = Some(cuda);
                        }
                        (None, None) => fw.backend = Some("cpu".into()),
                    }
                }
            }
            if fw.backend.is_none() {
                if let Some((b, v)) = backend_from_version(&version) {
                    fw.backend = Some(b);
                    fw.backend_version = v;
                } else {
                    let n = name.to_ascii_lowercase();
                    if n.contains("rocm") {
                        fw.backend = Some("rocm".into());
                    } else if n.contains("cuda") {
                        fw.backend = Some("cuda".into());
                    }
                }
            }
            out.push(fw);
        }
    }
}

/// An env outside greta's and the site directories to read for it.
#[derive(Debug, PartialEq)]
pub struct Prefix {
    /// What `Framework::env` says: the env or interpreter prefix.
    pub env: String,
    pub sites: Vec<String>,
}

/// `VIRTUAL_ENV`, `CONDA_PREFIX`, and the prefix of the interpreter at
/// `interpreter` (resolved path, e.g. `/usr/bin/python3.11` -> `/usr`, with
/// Debian's `dist-packages` and the user site of that version).
pub fn active_prefixes(root: &Root, interpreter: Option<&str>) -> Vec<Prefix> {
    let mut out: Vec<Prefix> = Vec::new();
    let in_lib = |env: &str| -> Vec<String> {
        root.list(&format!("{env}/lib"))
            .into_iter()
            .filter(|l| l.starts_with("python"))
            .flat_map(|l| ["site-packages", "dist-packages"].map(|d| format!("{env}/lib/{l}/{d}")))
            .collect()
    };
    for key in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = root.env_nonempty(key).filter(|v| v.starts_with('/')) {
            let env = v.trim_end_matches('/').to_string();
            if !out.iter().any(|p| p.env == env) {
                out.push(Prefix {
                    sites: in_lib(&env),
                    env,
                });
            }
        }
    }
    let Some(exe) = interpreter.filter(|p| p.starts_with('/')) else {
        return out;
    };
    let Some((bin, name)) = exe.rsplit_once('/') else {
        return out;
    };
    let Some(prefix) = bin.strip_suffix("/bin") else {
        return out;
    };
    let prefix = if prefix.is_empty() { "/" } else { prefix };
    let base = prefix.trim_end_matches('/');
    // python3.11 -> "3.11"; plain python3 reads every version's dirs.
    let xy = name.strip_prefix("python").filter(|v| v.contains('.'));
    let mut sites = in_lib(base);
    if let Some(xy) = xy {
        sites.retain(|s| s.contains(&format!("/python{xy}/")));
        sites.push(format!("{base}/local/lib/python{xy}/dist-packages"));
        if let Some(h) = root.env_nonempty("HOME") {
            sites.push(format!(
                "{}/.local/lib/python{xy}/site-packages",
                h.trim_end_matches('/')
            ));
        }
    }
    sites.push(format!("{base}/lib/python3/dist-packages"));
    let env = if base.is_empty() {
        "/".into()
    } else {
        base.to_string()
    };
    if !out.iter().any(|p| p.env == env) {
        out.push(Prefix { env, sites });
    }
    out
}

/// The PYENV_ROOT a pyenv shim exports, when the file is a pyenv shim.
pub fn pyenv_shim_root(head: &str) -> Option<String> {
    if !head.starts_with("#!") || !head.contains("/libexec/pyenv\" exec") {
        return None;
    }
    head.lines()
        .find_map(|l| l.trim().strip_prefix("export PYENV_ROOT="))
        .map(|v| v.trim().trim_matches('"').to_string())
        .filter(|v| v.starts_with('/'))
}

fn version_names(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .flat_map(str::split_whitespace)
        .map(str::to_string)
        .collect()
}

/// Versions pyenv selects, in its order: PYENV_VERSION, a `.python-version`
/// in the working directory or above, `$PYENV_ROOT/version`, else "system".
pub fn pyenv_selected(root: &Root, pyenv_root: &str) -> Vec<String> {
    if let Some(v) = root.env_nonempty("PYENV_VERSION") {
        return v
            .split(':')
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect();
    }
    if let Some(pwd) = root.env_nonempty("PWD").filter(|p| p.starts_with('/')) {
        let mut dir = std::path::Path::new(pwd);
        loop {
            let f = format!("{}/.python-version", dir.display()).replace("//", "/");
            if let Ok(t) = root.read(&f) {
                let v = version_names(&t);
                if !v.is_empty() {
                    return v;
                }
            }
            match dir.parent() {
                Some(p) => dir = p,
                None => break,
            }
        }
    }
    let v = root
        .read(&format!("{pyenv_root}/version"))
        .map(|t| version_names(&t))
        .unwrap_or_default();
    if v.is_empty() {
        vec!["system".into()]
    } else {
        v
    }
}

/// What a pyenv shim would exec, found the way `pyenv exec` finds it, or
/// None where pyenv would answer "command not found". Running the shim
/// itself costs ~0.2 s of bash per name; this costs a few file lookups.
fn resolve_pyenv_shim(
    root: &Root,
    shim: &str,
    pyenv_root: &str,
    path_dirs: &[&str],
) -> Option<String> {
    let (shim_dir, program) = shim.rsplit_once('/')?;
    for v in pyenv_selected(root, pyenv_root) {
        if v == "system" {
            for d in path_dirs.iter().map(|d| d.trim_end_matches('/')) {
                let p = format!("{d}/{program}");
                if d != shim_dir
                    && !d.starts_with(&format!("{pyenv_root}/"))
                    && root.is_executable(&p)
                {
                    return Some(p);
                }
            }
        } else {
            let p = format!("{pyenv_root}/versions/{v}/bin/{program}");
            if root.is_executable(&p) {
                return Some(p);
            }
        }
    }
    None
}

/// Interpreters on PATH, and the frameworks in greta's envs (each
/// directory under one of `env_dirs`, as the installer places them) and in
/// the active env.
pub fn collect(root: &Root, f: &mut Facts, env_dirs: &[String]) -> String {
    let mut seen_real: Vec<String> = Vec::new();
    // (name on PATH, program to run for its version)
    let mut candidates: Vec<(String, String)> = Vec::new();
    if let Some(path) = root.env("PATH") {
        // As the shell does, an entry that is no directory (a file, a FIFO,
        // a loop of links) holds no program: skipped, not a directory the
        // doctor could not read.
        let path_dirs: Vec<&str> = path
            .split(':')
            .filter(|d| d.starts_with('/') && root.is_dir(d))
            .collect();
        for dir in &path_dirs {
            let dir = dir.trim_end_matches('/');
            for name in root.list(dir) {
                if !is_interpreter_name(&name) {
                    continue;
                }
                let p = format!("{dir}/{name}");
                if !root.is_executable(&p) {
                    continue;
                }
                let head = root
                    .read_prefix(&p, 1024)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let run = match pyenv_shim_root(&head) {
                    Some(pyenv_root) => match resolve_pyenv_shim(root, &p, &pyenv_root, &path_dirs)
                    {
                        Some(target) => target,
                        None => continue,
                    },
                    None => p.clone(),
                };
                let real = root.canonical(&run);
                if seen_real.contains(&real) {
                    continue;
                }
                seen_real.push(real);
                candidates.push((p, run));
            }
        }
        scanned(f, "python");
    }
    // In parallel: a pyenv shim alone takes ~0.3 s to answer.
    let check = crate::root::current_check();
    let versions: Vec<(String, Option<String>, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = candidates
            .iter()
            .map(|(p, run)| {
                s.spawn(move || {
                    let out = crate::root::reading_for(check, || {
                        root.run(&version_cmd_name(run), run, &["--version"])
                    });
                    let version = match (&out.status, out.text()) {
                        (CmdStatus::Exited(0), Some(t)) => t
                            .lines()
                            .find_map(|l| l.trim().strip_prefix("Python "))
                            .map(|v| v.trim().to_string()),
                        _ => None,
                    };
                    (p.clone(), version, out.status == CmdStatus::TimedOut)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (path, version, timed_out) in versions {
        if path.is_empty() {
            continue;
        }
        let plain = path.ends_with("/python3");
        // A `python3.N` that cannot say its version (e.g. a pyenv shim for a
        // version not installed) is not an interpreter; `python3` is always
        // listed, so a broken default python shows.
        if version.is_some() || plain {
            f.python.interpreters.push(Interpreter {
                path: path.clone(),
                version,
            });
        }
        if timed_out {
            super::signal(
                f,
                "python-timeout",
                &path,
                "python --version did not finish",
            );
        }
    }
    for env_root in env_dirs {
        for env in root.list(env_root) {
            // The envs directory also holds the installer's lock files
            // (`.NAME.lock`): an entry that is no directory is no env, not
            // an env that cannot be read.
            let env = format!("{env_root}/{env}");
            if root.is_dir(&env) {
                frameworks_in_env(root, &env, &mut f.python.frameworks);
            }
        }
    }
    // The frameworks people already have: the active virtualenv or conda
    // env, and the site directories of the first python3 on PATH (the one
    // `python3` runs), with its user site. Read, never imported.
    let active: Option<(String, String)> = candidates
        .iter()
        .find(|(p, _)| p.ends_with("/python3"))
        .or(candidates.first())
        .map(|(_, run)| (root.canonical(run), run.clone()));
    for prefix in active_prefixes(root, active.as_ref().map(|(c, _)| c.as_str())) {
        let known = f.python.frameworks.iter().any(|fw| fw.env == prefix.env);
        if !known {
            for sp in &prefix.sites {
                frameworks_in_site(root, &prefix.env, sp, &mut f.python.frameworks);
            }
        }
    }
    let interp: Vec<String> = f
        .python
        .interpreters
        .iter()
        .map(|i| {
            format!(
                "{} {}",
                i.path,
                i.version.as_deref().unwrap_or("(no version)")
            )
        })
        .collect();
    let mut s = if interp.is_empty() {
        "no python3 on PATH".to_string()
    } else {
        interp.join(", ")
    };
    if !f.python.frameworks.is_empty() {
        let fws: Vec<String> = f
            .python
            .frameworks
            .iter()
            .map(|fw| format!("{} {} ({})", fw.name, fw.version, fw.env))
            .collect();
        s.push_str(&format!("; frameworks: {}", fws.join(", ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyenv_shims_are_recognised_by_content() {
        let shim = "#!/usr/bin/env bash\nset -e\n[ -n \"$PYENV_DEBUG\" ] && set -x\n\nprogram=\"${0##*/}\"\n\nexport PYENV_ROOT=\"/root/.pyenv\"\nexec \"/root/.pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n";
        assert_eq!(pyenv_shim_root(shim).as_deref(), Some("/root/.pyenv"));
        assert_eq!(pyenv_shim_root("\u{7f}ELF\u{2}\u{1}"), None);
        assert_eq!(pyenv_shim_root("#!/bin/sh\nexec python3.11 \"$@\"\n"), None);
        assert_eq!(
            version_names("3.11.7\n# comment\n3.10.13\n"),
            vec!["3.11.7", "3.10.13"]
        );
    }

    #[test]
    fn interpreter_names() {
        assert!(is_interpreter_name("python3"));
        assert!(is_interpreter_name("python3.11"));
        assert!(!is_interpreter_name("python3-config"));
        assert!(!is_interpreter_name("python3.11-config"));
        assert!(!is_interpreter_name("python3."));
        assert!(!is_interpreter_name("python2.7"));
    }

    #[test]
    fn torch_version_py_both_styles() {
        let new = "__version__ = '2.5.1+rocm6.2'\ndebug = False\ncuda: Optional[str] = None\nhip: Optional[str] = '6.2.41133-dd7f95766'\n";
        assert_eq!(
            parse_torch_version_py(new),
            (Some("6.2.41133-dd7f95766".into()), None)
        );
        let old = "__version__ = '2.1.0+cu121'\ncuda = '12.1'\nhip = None\n";
        assert_eq!(parse_torch_version_py(old), (None, Some("12.1".into())));
        assert_eq!(parse_torch_version_py("garbage\u{0}"), (None, None));
    }

    #[test]
    fn metadata_and_local_tags() {
        let m = "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+rocm6.2\nSummary: x\n\nName: not-this\n";
        assert_eq!(
            parse_metadata(m),
            Some(("torch".into(), "2.5.1+rocm6.2".into()))
        );
        assert_eq!(parse_metadata("Name: x\n"), None);
        assert_eq!(
            backend_from_version("2.5.1+rocm6.2"),
            Some(("rocm".into(), Some("6.2".into())))
        );
        assert_eq!(
            backend_from_version("2.4.0+cu124"),
            Some(("cuda".into(), Some("12.4".into())))
        );
        assert_eq!(
            backend_from_version("2.4.0+cpu"),
            Some(("cpu".into(), None))
        );
        assert_eq!(backend_from_version("2.4.0"), None);
        assert!(
            is_framework("jax_rocm60_plugin")
                && is_framework("pytorch_triton_rocm")
                && !is_framework("numpy")
        );
    }
}
