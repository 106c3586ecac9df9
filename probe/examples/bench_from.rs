//! Benchmark (not a test): `doctor --from` on one large paste of unrelated
//! text (the licence texts and Rust sources of this machine, repeated to
//! the size asked) with a few launcher system-information lines mixed in, so
//! every reader and the format-agnostic scan run over every line. Times the
//! call doctor makes (read, recognise, parse, merge, report) REPEAT times
//! and prints the best and the median. Run through
//! scripts/bench/doctor-from-50mb.sh.
//!
//! usage: bench_from [MB [REPEAT]]   (default 50 MB, 3 runs)

use std::path::Path;
use std::time::Instant;

/// Real text of this machine, as the shell script's paste: every licence
/// text, then up to 2,000 Rust sources of the cargo registry.
fn source_text() -> String {
    let mut s = String::new();
    let read_dir_sorted = |dir: &Path, out: &mut Vec<std::path::PathBuf>| {
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut v: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
            v.sort();
            out.extend(v);
        }
    };
    let mut lic = Vec::new();
    read_dir_sorted(Path::new("/usr/share/common-licenses"), &mut lic);
    for p in lic {
        if let Ok(t) = std::fs::read_to_string(&p) {
            s.push_str(&t);
        }
    }
    let home = std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap_or_default()));
    let mut stack = vec![Path::new(&home).join("registry/src")];
    let mut n = 0;
    while let Some(d) = stack.pop() {
        let mut entries = Vec::new();
        read_dir_sorted(&d, &mut entries);
        for p in entries {
            if n >= 2000 {
                break;
            }
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                if let Ok(t) = std::fs::read_to_string(&p) {
                    s.push_str(&t);
                    n += 1;
                }
            }
        }
    }
    if s.is_empty() {
        // A bare machine: a paragraph of prose stands in.
        s.push_str("The quick brown fox jumps over the lazy dog; the device driver was loaded.\n");
    }
    s.push_str(
        "Vulkan Drivers:  AMD Radeon RX 7800 XT (RADV NAVI32) (1.3.246)\nGPU: Radeon Pro W7900\n",
    );
    s
}

/// User and system CPU time of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mb: usize = args.next().map_or(50, |a| a.parse().expect("MB: a number"));
    let repeat: usize = args
        .next()
        .map_or(3, |a| a.parse().expect("REPEAT: a number"));
    let src = source_text();
    let want = mb << 20;
    let mut paste = String::with_capacity(want + src.len());
    while paste.len() < want {
        paste.push_str(&src);
    }
    let mut cut = want;
    while !paste.is_char_boundary(cut) {
        cut -= 1;
    }
    paste.truncate(cut);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("paste.txt");
    std::fs::write(&file, &paste).expect("write paste");
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let mut gpus = 0;
    for _ in 0..repeat.max(1) {
        let c0 = cpu_seconds();
        let t0 = Instant::now();
        let r = greta_probe::from_files(std::slice::from_ref(&file))
            .expect("--from")
            .into_report();
        times.push(t0.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c0);
        gpus = r.facts.gpus.len();
    }
    times.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    // Wall time on a shared machine follows its load; the CPU time the
    // process spent is what the code costs.
    println!(
        "paste {} bytes: wall best {:.3} s, median {:.3} s; CPU best {:.3} s, median {:.3} s; {} runs ({} GPUs read)",
        paste.len(),
        times[0],
        times[times.len() / 2],
        cpu[0],
        cpu[cpu.len() / 2],
        times.len(),
        gpus
    );
}
