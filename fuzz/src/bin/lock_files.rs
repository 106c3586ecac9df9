//! The lock set's parsers: the first byte picks `matrix.toml`, a
//! `pylock.*.toml` or `tools.toml`; the rest is its text. A matrix that
//! parses is also checked (`lock check`) against the built-in lockfiles.
use greta::lock::{LockDir, Lockfile, Matrix, Origin};
use std::path::Path;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    afl::fuzz!(|data: &[u8]| {
        let Some((&which, rest)) = data.split_first() else {
            return;
        };
        let Ok(text) = std::str::from_utf8(rest) else {
            return;
        };
        match which % 3 {
            0 => {
                if let Ok(m) = Matrix::parse(&LockDir::built_in(), text.to_string()) {
                    let _ = greta::lock::check::check_matrix(&m);
                }
            }
            1 => {
                if let Ok(l) = Lockfile::parse(Path::new("pylock.fuzz.toml"), text.to_string()) {
                    for p in &l.packages {
                        for w in &p.wheels {
                            if let Some(u) = &w.url {
                                let _ = greta::lock::check::url_problem(u, &w.filename);
                            }
                        }
                    }
                }
            }
            _ => {
                std::fs::write(dir.path().join("tools.toml"), text).unwrap();
                let _ = greta::envs::uv_bootstrap::load(&LockDir::at(dir.path(), Origin::Flag));
            }
        }
    });
}
