//! Benchmark (not a test): `doctor --from` and `doctor --sysroot` on one
//! rocminfo dump listing N GPU agents (both were quadratic
//! in N). Writes the dump, then times the same calls doctor makes: the
//! `--from` report and a sysroot replay with the dump as its captured
//! rocminfo. Run through scripts/bench/doctor-agents.sh.
//!
//! usage: bench_agents N [N...]   prints `N bytes from_s sysroot_s`

use std::time::Instant;

/// One rocminfo GPU agent block, as rocminfo prints it (trimmed to the keys
/// doctor reads, about 160 bytes, so 95,000 agents fit under the 16 MiB
/// read cap as in the issue).
fn agent(i: usize, out: &mut String) {
    use std::fmt::Write as _;
    let _ = write!(
        out,
        "*******\nAgent {}\n*******\n  Name: gfx942\n  Marketing Name: AMD Instinct MI300X\n  Vendor Name: AMD\n  Device Type: GPU\n  Chip ID: 29857(0x74a1)\n  BDFID: {}\n",
        i + 2,
        // A distinct bus:dev.fn per agent (rocminfo's packing, bus << 8 |
        // dev << 3 | fn), up to 2^16 functions, then repeating.
        i % 0x10000
    );
}

fn dump(n: usize) -> String {
    let mut s = String::from(
        "ROCk module version 6.16.13 is loaded\n=====================\nHSA System Attributes\n=====================\nRuntime Version:         1.18\n\n==========\nHSA Agents\n==========\n*******\nAgent 1\n*******\n  Name:                    AMD EPYC 9654\n  Vendor Name:             CPU\n  Device Type:             CPU\n",
    );
    for i in 0..n {
        agent(i, &mut s);
    }
    s.push_str("*** Done ***\n");
    s
}

fn main() {
    let ns: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("N: a number of agents"))
        .collect();
    if ns.is_empty() {
        eprintln!("usage: bench_agents N [N...]");
        std::process::exit(2);
    }
    println!("agents bytes from_s sysroot_s gpus");
    for n in ns {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = dump(n);
        let file = dir.path().join("rocminfo.txt");
        std::fs::write(&file, &text).expect("write dump");
        let t0 = Instant::now();
        let r = greta_probe::from_files(&[file])
            .expect("--from")
            .into_report();
        let from_s = t0.elapsed().as_secs_f64();
        let gpus = r.facts.gpus.len();
        let root_dir = dir.path().join("root");
        std::fs::create_dir_all(root_dir.join(".greta/cmd")).expect("mkdir");
        std::fs::write(root_dir.join(".greta/cmd/rocminfo.txt"), &text).expect("write");
        // rocminfo is asked only where an AMD GPU or /dev/kfd is seen.
        std::fs::write(root_dir.join(".greta/dev-nodes"), "/dev/kfd c 0666 0 0\n").expect("write");
        let t0 = Instant::now();
        let root = greta_probe::Root::sysroot(&root_dir).expect("sysroot");
        let r2 = greta_probe::Probe::new(&root).run().into_report(Vec::new());
        let sys_s = t0.elapsed().as_secs_f64();
        assert_eq!(r2.facts.gpus.len(), gpus, "both paths see the same GPUs");
        println!("{n} {} {from_s:.3} {sys_s:.3} {gpus}", text.len());
    }
}
