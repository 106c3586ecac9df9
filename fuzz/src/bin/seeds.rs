//! Writes each target's seed corpus for AFL++: `seeds OUT [TARGET...]`
//! (run from the repository root) fills `OUT/TARGET/NNNN` from
//! `greta_fuzz_targets::seeds`, the list the CI replay uses too.
use std::path::{Path, PathBuf};

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(out) = args.next().map(PathBuf::from) else {
        eprintln!("usage: seeds OUT [TARGET...]");
        std::process::exit(2);
    };
    let mut targets: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    if targets.is_empty() {
        targets = greta_fuzz_targets::TARGETS.iter().map(|t| t.to_string()).collect();
    }
    for t in &targets {
        let seeds = match greta_fuzz_targets::seeds(t, Path::new(".")) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("seeds: {t}: {e}");
                std::process::exit(2);
            }
        };
        let dir = out.join(t);
        let _ = std::fs::remove_dir_all(&dir);
        let written = std::fs::create_dir_all(&dir).and_then(|()| {
            seeds
                .iter()
                .enumerate()
                .try_for_each(|(i, (_, data))| std::fs::write(dir.join(format!("{i:04}")), data))
        });
        if let Err(e) = written {
            eprintln!("seeds: {}: {e}", dir.display());
            std::process::exit(2);
        }
        println!("{t}: {} seeds", seeds.len());
    }
}
