//! The registry of `GRETA_*` variables is complete and used: every variable
//! the code, the scripts or the docs name is registered, every registered
//! one is read or written somewhere, and `docs/env.md` is the registry's.
use greta_vocab::EnvVars;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Tokens of the form GRETA_X that are not environment variables.
/// (Kernel macros are found by [`kernel_macros`], not listed here.)
const NOT_VARIABLES: &[&str] = &[
    "GRETA_RESULT", // a file-name placeholder in scripts/gpu/ratio.py's usage
];

/// C preprocessor names of the kernels: every `GRETA_*` token of the HIP
/// sources (`kernels/hip`, which cannot read the environment), and every
/// token written after `#define ` anywhere (the generated `matrix_lanes.h`
/// is spelled out in `kernels/src/matrix_lanes.rs` and its tests). Rust code
/// that names these macros (the launch geometry, the lane tables) is not
/// naming a variable.
fn kernel_macros(all: &[PathBuf]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Ok(rd) = std::fs::read_dir(repo().join("kernels/hip")) {
        for e in rd.flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            out.extend(tokens(&text));
        }
    }
    for f in all {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, _) in text.match_indices("#define GRETA_") {
            out.extend(tokens(&text[i + "#define ".len()..]).into_iter().take(1));
        }
    }
    out
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" || name == "fixtures" {
            continue;
        }
        if p.is_dir() {
            files(&p, out);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("rs" | "sh" | "md" | "py")
        ) {
            out.push(p);
        }
    }
}

/// Every `GRETA_[A-Z0-9_]+` token in `text` (a trailing `_` is a prefix
/// in prose, `GRETA_FETCH_{JOBS,...}`, and is skipped).
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("GRETA_") {
        let start = i + at;
        let mut end = start + "GRETA_".len();
        while end < b.len()
            && (b[end].is_ascii_uppercase() || b[end].is_ascii_digit() || b[end] == b'_')
        {
            end += 1;
        }
        let before_ok =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        let t = &text[start..end];
        if before_ok && t.len() > "GRETA_".len() && !t.ends_with('_') {
            out.push(t.to_string());
        }
        i = end;
    }
    out
}

#[test]
fn every_variable_named_anywhere_is_registered_and_every_registered_one_is_used() {
    let registered: BTreeSet<&str> = EnvVars::ALL.iter().map(|v| v.name).collect();
    assert_eq!(
        registered.len(),
        EnvVars::ALL.len(),
        "a variable is registered twice"
    );
    let mut all = Vec::new();
    for top in [
        "installer",
        "probe",
        "runtime",
        "smoke",
        "kernels",
        "fsread",
        "fuzz-targets",
        "fuzz",
        "scripts",
        "docs",
    ] {
        files(&repo().join(top), &mut all);
    }
    all.push(repo().join("README.md"));
    let macros = kernel_macros(&all);
    let mut used = BTreeSet::new();
    let mut unknown = Vec::new();
    for f in &all {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for t in tokens(&text) {
            if NOT_VARIABLES.contains(&t.as_str()) || macros.contains(&t) {
                continue;
            }
            if registered.contains(t.as_str()) {
                used.insert(t);
            } else {
                unknown.push(format!(
                    "{}: {t}",
                    f.strip_prefix(repo()).unwrap_or(f).display()
                ));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "not in vocab/src/env_vars.rs:\n{}",
        unknown.join("\n")
    );
    // The registry's own docs page does not count as a use.
    let dead: Vec<&&str> = registered
        .iter()
        .filter(|n| !used.contains(**n) && **n != "GRETA_UPDATE_DOCS")
        .collect();
    assert!(dead.is_empty(), "registered but used nowhere: {dead:?}");
}

#[test]
fn the_scanner_sees_what_it_must() {
    assert_eq!(
        tokens("a GRETA_LOCK_DIR=x ${GRETA_HC_LOG:-} \"GRETA_UV\""),
        ["GRETA_LOCK_DIR", "GRETA_HC_LOG", "GRETA_UV"]
    );
    assert!(tokens("GRETA_FETCH_{JOBS} MYGRETA_X").is_empty());
}

#[test]
fn docs_env_md_is_the_registry() {
    let path = repo().join("docs/env.md");
    let want = greta_vocab::env_vars_markdown();
    if std::env::var_os(EnvVars::GRETA_UPDATE_DOCS).is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/env.md differs from vocab/src/env_vars.rs; rerun with GRETA_UPDATE_DOCS=1"
    );
}
