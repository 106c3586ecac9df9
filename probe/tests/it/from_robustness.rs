//! The `--from` engine must never panic, whatever is pasted: every fixture
//! file cut at random points, with lines shuffled, duplicated or spliced
//! from other tools, random bytes inserted. Fresh seed each run (printed,
//! so a failure can be replayed with GRETA_FUZZ_SEED).

use std::path::{Path, PathBuf};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn fixture_texts() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x != "md" && x != "toml") {
                out.push((p.clone(), std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 40, "fixtures found: {}", out.len());
    out
}

fn mutate(rng: &mut Rng, texts: &[(PathBuf, String)], base: &str) -> Vec<u8> {
    let mut lines: Vec<String> = base.lines().map(String::from).collect();
    for _ in 0..1 + rng.below(6) {
        match rng.below(7) {
            0 if !lines.is_empty() => {
                let i = rng.below(lines.len());
                let l = &lines[i];
                let mut cut = rng.below(l.len() + 1);
                while !l.is_char_boundary(cut) {
                    cut -= 1;
                }
                lines[i] = l[..cut].to_string();
            }
            1 if lines.len() > 1 => {
                let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
                lines.swap(a, b);
            }
            2 if !lines.is_empty() => {
                let i = rng.below(lines.len());
                let dup = lines[i].clone();
                lines.insert(rng.below(lines.len()), dup);
            }
            3 => {
                let other = &texts[rng.below(texts.len())].1;
                let ol: Vec<&str> = other.lines().collect();
                if !ol.is_empty() {
                    let start = rng.below(ol.len());
                    let n = 1 + rng.below(10);
                    let at = rng.below(lines.len() + 1);
                    for (k, l) in ol.iter().skip(start).take(n).enumerate() {
                        lines.insert(at + k, l.to_string());
                    }
                }
            }
            4 if !lines.is_empty() => {
                let n = rng.below(lines.len());
                lines.truncate(n);
            }
            5 => {
                let at = rng.below(lines.len() + 1);
                lines.insert(
                    at,
                    [
                        "{", "}", "[", "GPU0:", "Name:", "= ", "|", "0x", "gfx", "[  ]",
                    ][rng.below(10)]
                    .to_string(),
                );
            }
            _ => {}
        }
    }
    let mut bytes = lines.join("\n").into_bytes();
    if rng.below(4) == 0 && !bytes.is_empty() {
        let at = rng.below(bytes.len());
        bytes.insert(at, (rng.next() >> 11) as u8);
    }
    bytes
}

#[test]
fn mutated_fixtures_never_panic() {
    let seed = std::env::var("GRETA_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("GRETA_FUZZ_SEED={seed}");
    let mut rng = Rng(seed);
    let texts = fixture_texts();
    let rounds = std::env::var("GRETA_FUZZ_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    for round in 0..rounds {
        let base = &texts[round % texts.len()].1;
        let bytes = mutate(&mut rng, &texts, base);
        let text = match greta_probe::decode(&bytes) {
            Ok(t) => t,
            Err(_) => continue,
        };
        let r = std::panic::catch_unwind(|| {
            let (_, facts) = greta_probe::parse_text(&text, "fuzz.txt");
            let facts = greta_probe::merge(vec![facts]);
            let _ = greta_probe::diagnose(&facts);
        });
        assert!(
            r.is_ok(),
            "panic with GRETA_FUZZ_SEED={seed}, round {round}, input:\n{text}"
        );
    }
}

/// One rocminfo dump of `n` GPU agents (rocminfo's layout, trimmed to the
/// keys doctor reads), a distinct BDFID each.
fn rocminfo_of(n: usize) -> String {
    use std::fmt::Write as _;
    let mut text = String::from(
        "ROCk module version 6.16.13 is loaded\nHSA Agents\n*******\nAgent 1\n*******\n  Name: AMD EPYC 9654\n  Device Type: CPU\n",
    );
    for i in 0..n {
        let _ = write!(
            text,
            "*******\nAgent {}\n*******\n  Name: gfx942\n  Marketing Name: AMD Instinct MI300X\n  Vendor Name: AMD\n  Device Type: GPU\n  Chip ID: 29857(0x74a1)\n  BDFID: {i}\n",
            i + 2
        );
    }
    text.push_str("*** Done ***\n");
    text
}

/// CPU seconds the calling thread has used. The parse, merge and report
/// run on the calling thread (only the Python check, trivial in these
/// sysroots, has its own), so unlike wall time this does not grow when
/// other tests or builds share the cores.
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; the clock id is a constant of this OS.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// CPU seconds `doctor --from` and `doctor --sysroot` take on a dump of `n`
/// agents (the report included: its evidence lists every GPU).
fn doctor_seconds(n: usize) -> (f64, f64) {
    let text = rocminfo_of(n);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rocminfo.txt");
    std::fs::write(&file, &text).unwrap();
    let t0 = thread_cpu_seconds();
    let r = greta_probe::from_files(&[file]).unwrap().into_report();
    let from = thread_cpu_seconds() - t0;
    // What a paste claims beyond the limit is counted, not kept.
    assert_eq!(r.facts.gpus.len(), n.min(greta_probe::MAX_LISTED));
    let claims = format!("this paste claims {n} GPUs; greta read the first 128");
    assert!(
        r.notes.iter().any(|x| x.ends_with(&claims)),
        "{:?}",
        r.notes
    );
    let root_dir = dir.path().join("root");
    std::fs::create_dir_all(root_dir.join(".greta/cmd")).unwrap();
    std::fs::write(root_dir.join(".greta/cmd/rocminfo.txt"), &text).unwrap();
    // rocminfo is replayed only where /dev/kfd or an AMD GPU is seen.
    std::fs::write(root_dir.join(".greta/dev-nodes"), "/dev/kfd c 0666 0 0\n").unwrap();
    let t0 = thread_cpu_seconds();
    let root = greta_probe::Root::sysroot(&root_dir).unwrap();
    let r = greta_probe::Probe::new(&root).run().into_report(Vec::new());
    let sysroot = thread_cpu_seconds() - t0;
    assert_eq!(r.facts.gpus.len(), n.min(greta_probe::MAX_LISTED));
    let claims = format!("a captured command output claims {n} GPUs; greta read the first 128");
    assert!(r.notes.contains(&claims), "{:?}", r.notes);
    (from, sysroot)
}

/// One rocminfo of N GPU agents took time quadratic in N
/// (each agent's GPU compared with every GPU before it in the merge, each
/// evidence line with every line before it in the report: 40,000 agents
/// 25 s, 95,000 over two minutes, release build). Eight times the agents
/// must cost about eight times the CPU time (at most 20: quadratic gave ~50
/// here), and 32,000 agents well under 30 s even in a debug build. CPU
/// time of the test's thread, not wall time: the test failed once on wall
/// time while other builds loaded the two cores.
#[test]
fn rocminfo_agents_take_linear_time() {
    let small = (0..2)
        .map(|_| doctor_seconds(4_000))
        .fold((f64::MAX, f64::MAX), |a, b| (a.0.min(b.0), a.1.min(b.1)));
    let big = doctor_seconds(32_000);
    for (what, s, b) in [("--from", small.0, big.0), ("--sysroot", small.1, big.1)] {
        assert!(b < 30.0, "{what}: 32,000 agents took {b:.1} s");
        assert!(
            b < 20.0 * s.max(0.001),
            "{what}: 4,000 agents {s:.3} s, 32,000 agents {b:.3} s: not linear"
        );
    }
}
