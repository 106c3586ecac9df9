//! Runs one target on saved inputs and times each: `replay TARGET FILE...`
//! (from the repository root). Built by plain cargo, without AFL++'s
//! instrumentation (`scripts/fuzz.sh --replay TARGET FILE...`), it is how
//! an AFL++ "hang" is judged against the 1 s bar; built by `cargo afl`, it
//! shows what the instrumentation costs. Each input runs in a process of
//! its own (a fresh one per file, as greta reads a file), under the same
//! 1 GiB single-allocation cap as the harnesses. Prints, per file, the
//! wall time, the CPU time and the process's peak RSS; exit 1 when any
//! input took longer than `--limit-ms` (default 1000) of wall time.
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

#[global_allocator]
static A: greta_fuzz::Bounded = greta_fuzz::Bounded;

fn usage() -> ! {
    eprintln!("usage: replay [--limit-ms N] TARGET FILE...");
    std::process::exit(2);
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // The child: `replay --one TARGET FILE` runs one input and reports.
    if args.first().map(String::as_str) == Some("--one") {
        let [_, target, file] = &args[..] else {
            usage()
        };
        one(target, &PathBuf::from(file));
        return;
    }
    let mut limit_ms: u128 = 1000;
    if args.first().map(String::as_str) == Some("--limit-ms") {
        limit_ms = args
            .get(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| usage());
        args.drain(..2);
    }
    let Some((target, files)) = args.split_first() else {
        usage()
    };
    if files.is_empty() || !greta_fuzz_targets::TARGETS.contains(&target.as_str()) {
        usage();
    }
    let me = std::env::current_exe().expect("own path");
    let mut over = 0;
    for f in files {
        let out = Command::new(&me)
            .args(["--one", target, f])
            .output()
            .expect("runs");
        let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let ms: Option<u128> = line.split_whitespace().next().and_then(|s| s.parse().ok());
        let slow = ms.is_none_or(|m| m > limit_ms);
        if slow {
            over += 1;
        }
        let status = if out.status.success() {
            String::new()
        } else {
            format!(" {}", out.status)
        };
        println!("{f}: {line}{status}{}", if slow { "  OVER" } else { "" });
        if !out.status.success() {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
        }
    }
    std::process::exit(i32::from(over > 0));
}

/// Runs `target` on `file` once; prints `WALL_MS ms wall, CPU_MS ms cpu, PEAK_MIB MiB peak`.
fn one(target: &str, file: &std::path::Path) {
    let data = std::fs::read(file).unwrap_or_else(|e| {
        eprintln!("{}: {e}", file.display());
        std::process::exit(2)
    });
    let scratch = greta_fuzz_targets::Scratch::new().expect("scratch directory");
    let t = Instant::now();
    greta_fuzz_targets::run(target, &scratch, &data);
    let wall = t.elapsed().as_millis();
    // SAFETY: getrusage fills a plain C struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to that struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let cpu = (u.ru_utime.tv_sec + u.ru_stime.tv_sec) as i128 * 1000
        + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) as i128 / 1000;
    println!(
        "{wall} ms wall, {cpu} ms cpu, {} MiB peak",
        u.ru_maxrss >> 10
    );
}
