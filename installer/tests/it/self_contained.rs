//! One clone, one binary: the tests need nothing outside the repository, and
//! the `greta` binary needs nothing outside itself.
//!
//! `GRETA_STANDALONE_BIN=PATH` runs the standalone checks against another
//! binary (scripts/release.sh points it at the release build and at the
//! `greta` a wheel installed); by default they run the test build.

use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("installer/ sits in the repository")
        .to_path_buf()
}

fn binary() -> PathBuf {
    std::env::var_os("GRETA_STANDALONE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_greta")))
}

/// A scratch machine: the binary copied alone into an empty directory, and
/// empty HOME / XDG directories; nothing of the source tree is reachable.
struct Alone {
    dir: tempfile::TempDir,
    bin: PathBuf,
}

/// Copies an executable and waits until no forked child still holds a
/// write descriptor to it (running it is then free of ETXTBSY): the check
/// is an exec that must not fail with "text file busy".
fn copy_then_settle(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
    for _ in 0..1000 {
        match Command::new(to).arg("--version").output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::yield_now()
            }
            _ => return,
        }
    }
    panic!("{} stayed busy (ETXTBSY)", to.display());
}

impl Alone {
    fn new() -> Alone {
        let dir = tempfile::tempdir().unwrap();
        for d in ["bin", "home", "cache", "data", "config", "state", "cwd"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        // A release binary is checked where it was put (unpacked alone, or
        // installed by pip into a fresh venv); the test build is copied out.
        let bin = match std::env::var_os("GRETA_STANDALONE_BIN") {
            Some(b) => PathBuf::from(b),
            None => {
                // A hard link where it can be: a copy is a file open for
                // writing, and a child another test thread forks at that
                // moment holds it until its exec, so running the copy can
                // fail with ETXTBSY (all installer tests share one binary).
                let bin = dir.path().join("bin/greta");
                if std::fs::hard_link(binary(), &bin).is_err() {
                    copy_then_settle(&binary(), &bin);
                }
                bin
            }
        };
        Alone { dir, bin }
    }

    fn run(&self, args: &[&str]) -> Output {
        let p = |s: &str| self.dir.path().join(s);
        Command::new(&self.bin)
            .args(args)
            .current_dir(p("cwd"))
            .env_clear()
            // The system's own tools only (python3 for the interpreter
            // query); not the test runner's PATH.
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", p("home"))
            .env("XDG_CACHE_HOME", p("cache"))
            .env("XDG_DATA_HOME", p("data"))
            .env("XDG_CONFIG_HOME", p("config"))
            .env("XDG_STATE_HOME", p("state"))
            .output()
            .unwrap()
    }
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn binary_alone_lists_its_built_in_lock_set() {
    let a = Alone::new();
    let o = a.run(&["lock", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with("lock set: built into greta"),
        "{}",
        text(&o)
    );
    for p in ["cpu", "cuda", "rocm7.2"] {
        assert!(
            // The first word of a row, after the `*` that marks this machine's.
            out.lines()
                .any(|l| l.split_whitespace().find(|w| *w != "*") == Some(p)),
            "profile {p} missing: {out}"
        );
    }
    let o = a.run(&["lock", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("lock list --json");
    assert_eq!(v["lock_set"]["origin"], "built-in");
    assert!(v["lock_set"]["dir"].is_null());
    assert_eq!(v["matrix"], "<built-in>/lock/matrix.toml");
}

#[test]
fn binary_alone_runs_doctor_json() {
    let a = Alone::new();
    let o = a.run(&["doctor", "--json"]);
    assert!(matches!(o.status.code(), Some(0) | Some(1)), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("doctor --json");
    assert_eq!(v["schema"], "greta.doctor/v1", "{}", text(&o));
    assert!(v["facts"].is_object() && v["findings"].is_array());
}

#[test]
fn binary_alone_plans_the_cpu_profile() {
    let a = Alone::new();
    let o = a.run(&["install", "--dry-run", "--profile", "cpu"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let all = text(&o);
    assert!(all.contains("lock set: built into greta"), "{all}");
    assert!(all.contains("<built-in>/lock/pylock.cpu.toml"), "{all}");
    assert!(all.contains("torch"), "{all}");
    // A dry run writes nothing: no env, no cache.
    for d in ["data", "cache"] {
        let n = std::fs::read_dir(a.dir.path().join(d)).unwrap().count();
        assert_eq!(n, 0, "{d} written by a dry run");
    }
}

/// The release binary runs on glibc 2.28 and newer: no symbol version it
/// needs from glibc is newer (read from the ELF's version-needed section).
#[test]
#[ignore = "checks the release build: scripts/release.sh runs it with GRETA_STANDALONE_BIN"]
fn release_binary_needs_glibc_2_28_at_most() {
    let data = std::fs::read(binary()).unwrap();
    let needed = glibc_versions(&data);
    assert!(
        !needed.is_empty(),
        "no GLIBC_ version needed: not a glibc binary?"
    );
    let newest = needed.iter().max().unwrap();
    assert!(
        *newest <= (2, 28),
        "{} needs GLIBC_{}.{} (all: {needed:?})",
        binary().display(),
        newest.0,
        newest.1
    );
}

/// The release binary opens GPU libraries at run time only: it links no
/// Vulkan, HIP or CUDA library, so it starts on a machine with none.
#[test]
#[ignore = "checks the release build: scripts/release.sh runs it with GRETA_STANDALONE_BIN"]
fn release_binary_links_no_gpu_library() {
    use object::read::elf::ElfFile64;
    use object::{Endianness, Object};
    let data = std::fs::read(binary()).unwrap();
    let elf = ElfFile64::<Endianness>::parse(&*data).unwrap();
    let libs: Vec<String> = elf
        .imports()
        .unwrap()
        .iter()
        .map(|i| String::from_utf8_lossy(i.library()).into_owned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for bad in ["vulkan", "amdhip", "hiprtc", "cuda", "nvrtc"] {
        assert!(
            !libs.iter().any(|l| l.contains(bad)),
            "links {bad}: {libs:?}"
        );
    }
}

/// `(major, minor)` of every `GLIBC_x.y` version the ELF needs.
fn glibc_versions(data: &[u8]) -> Vec<(u32, u32)> {
    use object::read::elf::{ElfFile64, FileHeader};
    use object::Endianness;
    let elf = ElfFile64::<Endianness>::parse(data).expect("an ELF64 file");
    let endian = elf.endian();
    let sections = elf.elf_header().sections(endian, data).unwrap();
    let mut out = Vec::new();
    let Some((mut verneed, link)) = sections.gnu_verneed(endian, data).unwrap() else {
        return out;
    };
    let strings = sections.strings(endian, data, link).unwrap();
    while let Some((_, mut auxs)) = verneed.next().unwrap() {
        while let Some(aux) = auxs.next().unwrap() {
            let name = String::from_utf8_lossy(aux.name(endian, strings).unwrap()).into_owned();
            if let Some(v) = name.strip_prefix("GLIBC_") {
                let mut it = v.split('.').map(|n| n.parse::<u32>().unwrap_or(0));
                out.push((it.next().unwrap_or(0), it.next().unwrap_or(0)));
            }
        }
    }
    out
}

/// The test build is a host build: it needs this machine's glibc, so the
/// ELF reader above must find a version newer than 2.28 here (the check
/// can fail), and none in a file that is not an ELF.
#[test]
fn glibc_reader_sees_host_versions() {
    if std::env::var_os("GRETA_STANDALONE_BIN").is_some() {
        return;
    }
    let data = std::fs::read(env!("CARGO_BIN_EXE_greta")).unwrap();
    let v = glibc_versions(&data);
    assert!(v.iter().all(|x| x.0 == 2), "{v:?}");
    let host_newest = v.iter().max().copied().unwrap();
    assert!(
        host_newest > (2, 28),
        "host build needs only {host_newest:?}: the release check could not fail"
    );
}

/// `--lock-dir` beats `GRETA_LOCK_DIR`, which beats the built-in set; each
/// says so.
#[test]
fn lock_set_in_effect_says_why() {
    let a = Alone::new();
    let dir = a.dir.path().join("mylock");
    std::fs::create_dir(&dir).unwrap();
    let repo_lock = repo_root().join("lock");
    for f in ["matrix.toml", "pylock.cpu.toml"] {
        std::fs::copy(repo_lock.join(f), dir.join(f)).unwrap();
    }
    let dir_s = dir.to_str().unwrap();
    let via_env = Command::new(&a.bin)
        .args(["lock", "list"])
        .env("GRETA_LOCK_DIR", &dir)
        .output()
        .unwrap();
    let first = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(
        first(&via_env),
        format!("lock set: {dir_s} (from GRETA_LOCK_DIR)")
    );
    let via_flag = Command::new(&a.bin)
        .args(["lock", "list", "--lock-dir", dir_s])
        .env("GRETA_LOCK_DIR", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(
        first(&via_flag),
        format!("lock set: {dir_s} (from --lock-dir)"),
        "{}",
        text(&via_flag)
    );
    // -v lists each file of the set with its digest, and what it lacks.
    let v = Command::new(&a.bin)
        .args(["lock", "list", "-v", "--lock-dir", dir_s])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&v.stdout);
    let want = format!("{dir_s}/pylock.cpu.toml");
    assert!(
        out.lines()
            .any(|l| l.contains(&want) && l.contains("sha256 ")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("tools.toml") && l.contains("(absent)")),
        "{out}"
    );
    // The built-in set cannot be rewritten by `lock update`.
    let o = Command::new(&a.bin)
        .args(["lock", "update", "cpu"])
        .env_remove("GRETA_LOCK_DIR")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--lock-dir"));
}

/// The built-in set is exactly the repository's `lock/` (no stale copy).
#[test]
fn built_in_set_matches_the_repository() {
    if std::env::var_os("GRETA_STANDALONE_BIN").is_some() {
        return; // a release binary may be checked from another checkout
    }
    let a = Alone::new();
    let o = a.run(&["lock", "list", "-v"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut seen = 0;
    for e in std::fs::read_dir(repo_root().join("lock")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !p.is_file()
            || !(name == "matrix.toml" || name == "tools.toml" || name.starts_with("pylock."))
        {
            continue;
        }
        let sha = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(std::fs::read(&p).unwrap()))
        };
        let shown = format!("<built-in>/lock/{name}");
        assert!(
            out.lines().any(|l| l.contains(&shown) && l.ends_with(&sha)),
            "{name} in the binary differs from lock/{name}:\n{out}"
        );
        seen += 1;
    }
    assert!(seen >= 3, "{out}");
}

/// Names of the project's shared folder beside the checkout (spelt in
/// pieces so this file does not name them itself).
const OUTSIDE: &[&str] = &[
    concat!("..", "/shared"),
    concat!("shared", "/fixtures"),
    concat!("shared", "/pins"),
];

/// Every path a test, build script or script names stays inside the
/// repository: a clone with nothing beside it runs the whole suite.
#[test]
fn no_test_or_script_path_leaves_the_repository() {
    let root = repo_root();
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    assert!(files.len() > 50, "walked only {} files", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        for (i, line) in text.lines().enumerate() {
            // A lockfile's header records the command that made it (history).
            if rel.starts_with("lock/pylock.") && line.starts_with('#') {
                continue;
            }
            let code =
                ["sh", "py", "rs", "toml", "yml", "yaml"].contains(&ext) || rel.starts_with(".ci/");
            if code && OUTSIDE.iter().any(|n| line.contains(n)) {
                bad.push(format!("{rel}:{}: {}", i + 1, line.trim()));
            }
            if ext == "rs" {
                for target in rust_paths(line, f, &root) {
                    if !inside(&root, &target) {
                        bad.push(format!(
                            "{rel}:{}: {} resolves outside the repository",
                            i + 1,
                            target.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "paths outside the repository:\n{}",
        bad.join("\n")
    );
}

/// The paths a Rust line builds from its crate or file: `include_str!`,
/// `include_bytes!` (relative to the file) and string literals on a line
/// naming `CARGO_MANIFEST_DIR` (relative to the crate).
fn rust_paths(line: &str, file: &Path, root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let lits = literals(line);
    if line.contains("include_str!(\"") || line.contains("include_bytes!(\"") {
        if let Some(l) = lits.first() {
            out.push(file.parent().unwrap().join(l));
        }
    }
    if line.contains("CARGO_MANIFEST_DIR") {
        let krate = crate_dir(file, root);
        for l in lits.iter().filter(|l| l.contains("..")) {
            out.push(krate.join(l.trim_start_matches('/')));
        }
    }
    out
}

fn literals(line: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut rest = line;
    while let Some(a) = rest.find('"') {
        let after = &rest[a + 1..];
        let Some(b) = after.find('"') else { break };
        v.push(after[..b].to_string());
        rest = &after[b + 1..];
    }
    v.retain(|s| s != "CARGO_MANIFEST_DIR");
    v
}

fn crate_dir(file: &Path, root: &Path) -> PathBuf {
    let mut d = file.parent().unwrap();
    while d != root {
        if d.join("Cargo.toml").is_file() {
            return d.to_path_buf();
        }
        d = d.parent().unwrap();
    }
    root.to_path_buf()
}

/// Lexically normalised `p` lies under `root`.
fn inside(root: &Path, p: &Path) -> bool {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out.starts_with(root)
}

fn walk(root: &Path, d: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            // Build output, VCS data, fixtures (text captured elsewhere,
            // never code) and local tool folders are not sources.
            if p.parent() == Some(root)
                && [".git", "target", "dist", ".gl", ".venv"].contains(&name.as_ref())
            {
                continue;
            }
            if name == "fixtures" || name == "target" {
                continue;
            }
            walk(root, &p, out);
        } else if ft.is_file() {
            out.push(p);
        }
    }
}
