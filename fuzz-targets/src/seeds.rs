//! Each target's seed corpus, built from the repository's real data (the
//! captured pastes and machines, the lock set, the data files) plus the
//! inputs under `fuzz/regressions/TARGET/` that once found a defect. One
//! place: `scripts/fuzz.sh` writes AFL++'s corpus with `fuzz/src/bin/seeds.rs`,
//! and `tests/replay.rs` replays the same list.
use std::io;
use std::path::{Path, PathBuf};

/// AFL++ wants small seeds; larger pastes are left out of the corpus.
const MAX_SEED: u64 = 256 * 1024;
/// Each sysroot file is cut to this many bytes in a seed.
const MAX_SYSROOT_PART: usize = 64 * 1024;
const SEP: &[u8] = b"\n--8<--\n";

/// The seeds of `target` from the repository at `repo`, named, in a stable
/// order. A missing fixture directory is an error: the corpus must not
/// silently shrink.
pub fn seeds(target: &str, repo: &Path) -> io::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    match target {
        "from_text" => {
            for f in files_under(&repo.join("probe/tests/fixtures"))? {
                let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
                let skip = name.as_deref() == Some("expect.toml")
                    || f.extension().is_some_and(|e| e == "md")
                    || std::fs::metadata(&f)?.len() >= MAX_SEED;
                if !skip {
                    out.push((rel(repo, &f), std::fs::read(&f)?));
                }
            }
        }
        "sysroot" => {
            for m in dirs_in(&repo.join("probe/tests/sysroots"))? {
                let mut seed = Vec::new();
                for (i, name) in crate::SYSROOT_FILES.iter().enumerate() {
                    if i > 0 {
                        seed.extend_from_slice(SEP);
                    }
                    if let Ok(mut bytes) = std::fs::read(m.join(name)) {
                        bytes.truncate(MAX_SYSROOT_PART);
                        seed.extend_from_slice(&bytes);
                    }
                }
                out.push((rel(repo, &m), seed));
            }
        }
        "lock_files" => {
            out.push(tagged(repo, 0, &repo.join("lock/matrix.toml"))?);
            for f in glob(&repo.join("lock"), "pylock.", ".toml")? {
                out.push(tagged(repo, 1, &f)?);
            }
            out.push(tagged(repo, 2, &repo.join("lock/tools.toml"))?);
        }
        "data_files" => {
            let seeds = repo.join("fuzz/seeds");
            for f in glob(&seeds, "baseline-", ".json")? {
                out.push(tagged(repo, 0, &f)?);
            }
            out.push(tagged(repo, 1, &repo.join("smoke/data/deny.toml"))?);
            out.push(tagged(repo, 2, &repo.join("smoke/data/floors.toml"))?);
            for f in glob(&seeds, "receipt-", ".json")? {
                out.push(tagged(repo, 3, &f)?);
            }
            for f in glob(&seeds, "tuning-", ".json")? {
                out.push(tagged(repo, 4, &f)?);
            }
        }
        "cache_paths" => {
            for f in glob(&repo.join("fuzz/seeds"), "cache-", ".bin")? {
                out.push((rel(repo, &f), std::fs::read(&f)?));
            }
        }
        "report" => {
            // Real results as files, drawn as the page (tag 0) and the
            // history (tag 2); then the generator's knobs.
            let mut real = glob(&repo.join("report/tests/data"), "", ".json")?;
            real.extend(glob(&repo.join("fuzz/seeds"), "baseline-", ".json")?);
            for f in &real {
                out.push(tagged(repo, 0, f)?);
                out.push(tagged(repo, 2, f)?);
            }
            for f in glob(&repo.join("fuzz/seeds"), "report-", ".bin")? {
                out.push((rel(repo, &f), std::fs::read(&f)?));
            }
        }
        "lock_markers" => out.extend(crate::markers::seeds(repo)?),
        "gemm_plan" => {
            for f in glob(&repo.join("fuzz/seeds"), "plan-", ".bin")? {
                out.push((rel(repo, &f), std::fs::read(&f)?));
            }
        }
        other => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no fuzz target named {other:?}"),
            ))
        }
    }
    let saved = repo.join("fuzz/regressions").join(target);
    if saved.is_dir() {
        for f in files_under(&saved)? {
            if f.file_name().is_some_and(|n| n != "README.md") {
                out.push((rel(repo, &f), std::fs::read(&f)?));
            }
        }
    }
    Ok(out)
}

fn tagged(repo: &Path, tag: u8, f: &Path) -> io::Result<(String, Vec<u8>)> {
    let mut seed = vec![tag];
    seed.extend(std::fs::read(f)?);
    Ok((rel(repo, f), seed))
}

fn rel(repo: &Path, f: &Path) -> String {
    f.strip_prefix(repo).unwrap_or(f).display().to_string()
}

fn sorted(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut v = std::fs::read_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<Vec<_>>>()?;
    v.sort();
    Ok(v)
}

fn dirs_in(dir: &Path) -> io::Result<Vec<PathBuf>> {
    Ok(sorted(dir)?.into_iter().filter(|p| p.is_dir()).collect())
}

fn glob(dir: &Path, prefix: &str, suffix: &str) -> io::Result<Vec<PathBuf>> {
    Ok(sorted(dir)?
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
        })
        .collect())
}

/// Regular files below `dir`, depth first, sorted (links are not followed).
fn files_under(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in sorted(dir)? {
        let t = std::fs::symlink_metadata(&p)?.file_type();
        if t.is_dir() {
            out.extend(files_under(&p)?);
        } else if t.is_file() {
            out.push(p);
        }
    }
    Ok(out)
}
