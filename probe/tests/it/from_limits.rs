//! A paste may claim no more of a machine than the largest real node
//! holds, with room to spare: `greta_probe::MAX_LISTED` (128) GPUs, Vulkan
//! devices, ... A 16 MiB paste of `Name: gfx942` lines once became 1.2
//! million GPUs, 1.3 GB of memory and 638 MB of JSON. Every reader that
//! turns a short line into a GPU, fed 5,000 of them: the report keeps 128,
//! a note says how many the paste claims, the JSON stays small, and the
//! time stays linear in the paste (each reader once kept a list it
//! searched per line).

use greta_probe::MAX_LISTED;

/// (what, the text of `n` devices, the claim the note must give)
fn shapes(n: usize) -> Vec<(&'static str, String, String)> {
    let lines = |head: &str, f: &dyn Fn(usize) -> String| {
        let mut t = head.to_string();
        for i in 0..n {
            t.push_str(&f(i));
        }
        t
    };
    let gpus = format!("claims {n} GPUs");
    vec![
        (
            "rocminfo agents",
            lines("HSA Agents\n", &|_| "  Name: gfx942\n".into()),
            gpus.clone(),
        ),
        (
            "rocm_agent_enumerator",
            lines("$ rocm_agent_enumerator\n", &|_| "gfx942\n".into()),
            gpus.clone(),
        ),
        (
            "nvidia-smi -L",
            lines("", &|i| {
                format!("GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:08x})\n")
            }),
            gpus.clone(),
        ),
        (
            "dmesg addresses",
            lines("", &|i| {
                format!(
                    "[    1.000000] amdgpu 0000:{:02x}:{:02x}.{}: amdgpu: SE 6, SH per SE 2\n",
                    i / 256,
                    i / 8 % 32,
                    i % 8
                )
            }),
            gpus.clone(),
        ),
        (
            "amd-smi keys",
            lines("AMD-SMI 24.6.3\n", &|i| {
                format!("GPU: {i}\n    MARKET_NAME: MI300X\n")
            }),
            gpus.clone(),
        ),
        (
            "ollama",
            lines("", &|i| {
                format!(
                    "time=2025-01-01T00:00:00Z level=INFO source=types.go:1 msg=\"inference compute\" id={i} library=rocm compute=gfx1100 name=ROCm{i} description=\"Radeon RX 7900 XTX\"\n"
                )
            }),
            gpus.clone(),
        ),
        (
            "vulkaninfo devices",
            lines("==========\nVULKANINFO\n==========\n", &|i| {
                format!("GPU{i}:\n\tdeviceName = AMD Radeon {i} (RADV GFX1100)\n\tdriverID = DRIVER_ID_MESA_RADV\n")
            }),
            format!("{n} Vulkan devices"),
        ),
        (
            "rocm bench",
            lines("", &|i| {
                format!("Device ID {i} : AMD Radeon VII gfx906:sramecc+:xnack-\n")
            }),
            gpus,
        ),
    ]
}

fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; the clock id is a constant of this OS.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(r, 0);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// CPU seconds of `--from` on `text`, and its report.
fn run(text: &str) -> (f64, greta_probe::Report) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("paste.txt");
    std::fs::write(&p, text).unwrap();
    let t0 = cpu_seconds();
    let r = greta_probe::from_files(&[p]).unwrap().into_report();
    (cpu_seconds() - t0, r)
}

#[test]
fn a_paste_claims_at_most_the_limit_and_says_what_it_claimed() {
    for (what, text, claim) in shapes(5000) {
        let (_, r) = run(&text);
        assert!(
            r.facts.gpus.len() <= MAX_LISTED,
            "{what}: {}",
            r.facts.gpus.len()
        );
        assert!(r.facts.vulkan.devices.len() <= MAX_LISTED, "{what}");
        assert!(!r.facts.gpus.is_empty(), "{what}: the first GPUs are kept");
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains(&claim) && n.contains("greta read the first 128")),
            "{what}: {:?}",
            r.notes
        );
        // The file's check says it, too.
        assert_eq!(r.checks[0].status, greta_probe::CheckStatus::Warn, "{what}");
        let json = r.to_json();
        assert!(json.len() < 400_000, "{what}: {} bytes of JSON", json.len());
    }
}

#[test]
fn a_paste_within_the_limit_is_read_whole_without_a_note() {
    for (what, text, _) in shapes(MAX_LISTED) {
        let (_, r) = run(&text);
        assert!(
            !r.notes.iter().any(|n| n.contains("claims")),
            "{what}: {:?}",
            r.notes
        );
    }
    // 64 logical GPUs, a real node's most (eight MI300X in CPX mode).
    let (_, text, _) = shapes(64).swap_remove(0);
    assert_eq!(run(&text).1.facts.gpus.len(), 64);
}

/// Eight times the lines cost about eight times the CPU time (at most 20:
/// a list searched per line gives ~64), each reader, best of two runs.
#[test]
fn each_reader_takes_time_linear_in_what_a_paste_claims() {
    let small = shapes(1_000);
    let big = shapes(8_000);
    for ((what, s, _), (_, b, _)) in small.iter().zip(&big) {
        let t_small = (0..2).map(|_| run(s).0).fold(f64::MAX, f64::min);
        let t_big = run(b).0;
        assert!(
            t_big < 20.0 * t_small.max(0.002),
            "{what}: 1,000 lines {t_small:.3} s, 8,000 lines {t_big:.3} s: not linear"
        );
    }
}
