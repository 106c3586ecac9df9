//! `greta doctor` as a user runs it: the real binary on real captured text
//! (probe/tests/fixtures), its JSON contract, exit codes 0/1/2, hostile input
//! (garbage, binary, empty, huge) and colour rules.

use crate::support::{finding_ids, greta};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(rel: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../probe/tests/fixtures")
        .join(rel);
    assert!(p.exists(), "missing fixture {}", p.display());
    p
}

fn run(args: &[&str], files: &[PathBuf]) -> Output {
    let mut c = greta();
    c.arg("doctor").args(args);
    if !files.is_empty() {
        c.arg("--from").args(files);
    }
    c.output().expect("greta runs")
}

fn no_panic(o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "greta panicked: {err}");
}

fn json(o: &Output) -> Value {
    no_panic(o);
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

/// Fresh pseudo-random bytes per run (xorshift seeded from the clock and pid).
fn random_bytes(n: usize) -> Vec<u8> {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut x = (t ^ ((std::process::id() as u64) << 32)) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn json_report_for_mi300x_vf_follows_the_schema() {
    let o = run(
        &["--json"],
        &[
            fixture("mi300x-vf-rocm7.2/amd-smi.txt"),
            fixture("mi300x-vf-rocm7.2/rocminfo.txt"),
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    let j = json(&o);
    assert_eq!(j["schema"], "greta.doctor/v1");
    assert_eq!(j["mode"], "from");
    let gpus = j["facts"]["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 1, "amd-smi and rocminfo show one GPU: {gpus:?}");
    let g = &gpus[0];
    assert_eq!(g["vendor"], "amd");
    assert_eq!(g["gfx"], "gfx942");
    assert_eq!(g["vf"], true);
    assert_eq!(g["device_id"], 0x74b5);
    assert_eq!(j["facts"]["rocm"]["version"], "7.2.4");
    assert_eq!(j["facts"]["kernel_driver_version"], "6.16.13");
    for f in j["findings"].as_array().unwrap() {
        for k in ["id", "severity", "title", "message", "evidence", "fix"] {
            assert!(f.get(k).is_some(), "finding lacks {k}: {f}");
        }
        assert!(f["fix"]["text"].is_string() && f["fix"]["commands"].is_array());
    }
    assert_eq!(finding_ids(&j), vec!["gpu.sriov-vf"]);
    assert_eq!(j["summary"]["exit_code"], 0);
    assert_eq!(
        j["checks"].as_array().unwrap().len(),
        2,
        "one check line per file"
    );
}

#[test]
fn a_fail_finding_exits_1_with_evidence_and_fix() {
    let f = fixture(
        "broken-kfd-access/rocminfo-permission-denied-not-in-video-group-rootless-container.txt",
    );
    let o = run(&["--json"], std::slice::from_ref(&f));
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    let fnd =
        crate::support::find_by(&j["findings"], "id", "kfd.permission").expect("kfd.permission");
    assert_eq!(fnd["severity"], "fail");
    let ev = fnd["evidence"].to_string();
    assert!(
        ev.contains(":2: Unable to open /dev/kfd read-write: Permission denied"),
        "{ev}"
    );
    assert!(fnd["fix"]["commands"].to_string().contains("usermod"));
    // Human form: glyphs, the fix command and one summary line.
    let o = run(&[], &[f]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("✗ fail kfd.permission"), "{out}");
    assert!(out.contains("$ sudo usermod"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("Summary:")).count(),
        1,
        "{out}"
    );
    assert!(!out.contains('\u{1b}'), "no colour on a pipe");
}

#[test]
fn doctor_cannot_run_exits_2() {
    let missing = run(&[], &[PathBuf::from("/nonexistent/greta/rocminfo.txt")]);
    assert_eq!(missing.status.code(), Some(2));
    no_panic(&missing);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/greta/rocminfo.txt"));
    let dir = tempfile::tempdir().unwrap();
    let as_dir = run(&[], &[dir.path().to_path_buf()]);
    assert_eq!(as_dir.status.code(), Some(2));
    let bad_flag = greta().args(["doctor", "--no-such-flag"]).output().unwrap();
    assert_eq!(bad_flag.status.code(), Some(2));
    let bad_root = greta()
        .args(["doctor", "--sysroot", "/nonexistent/greta-root"])
        .output()
        .unwrap();
    assert_eq!(bad_root.status.code(), Some(2));
    no_panic(&bad_root);
    let bad_check = run(
        &["--check", "no.such-id"],
        &[fixture("mi300x-vf-rocm7.2/amd-smi.txt")],
    );
    assert_eq!(bad_check.status.code(), Some(2));
    let conflict = greta()
        .args(["doctor", "--sysroot", "/", "--from", "x"])
        .output()
        .unwrap();
    assert_eq!(conflict.status.code(), Some(2));
}

#[test]
fn garbage_binary_empty_and_huge_inputs_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("random.bin");
    std::fs::write(&bin, random_bytes(64 * 1024)).unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    let text = dir.path().join("prose.txt");
    let words: String = random_bytes(20_000)
        .iter()
        .map(|b| (b'a' + b % 26) as char)
        .collect::<Vec<_>>()
        .chunks(7)
        .map(|c| c.iter().collect::<String>() + " ")
        .collect();
    std::fs::write(&text, words).unwrap();
    // 17 MiB: random printable lines with a real error every 1000 lines.
    let huge = dir.path().join("huge.log");
    {
        let mut s = String::with_capacity(18 << 20);
        let r = random_bytes(4096);
        let mut i = 0usize;
        let mut next_error = 0usize;
        while s.len() < 17 << 20 {
            if i == next_error {
                next_error += 1000;
                s.push_str("hsa_init failed with 1008\n");
            }
            let a = r[i % r.len()] as usize;
            s.push_str(&format!(
                "{i} worker {a:02x} step ok {}\n",
                "x".repeat(a % 60)
            ));
            i += 1;
        }
        std::fs::write(&huge, s).unwrap();
    }
    let real = fixture("rx7900xtx-gfx1100/rocminfo-rocm6.2.2.txt");
    let o = run(
        &["--json"],
        &[bin.clone(), empty.clone(), text.clone(), huge.clone(), real],
    );
    let j = json(&o);
    // The huge log's HSA failure is a real `fail` finding; nothing else breaks.
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let notes = j["notes"].to_string();
    assert!(notes.contains("binary"), "{notes}");
    assert!(notes.contains("empty"), "{notes}");
    assert!(notes.contains("not recognised"), "{notes}");
    assert!(notes.contains("only the first 16 MiB"), "{notes}");
    assert!(finding_ids(&j).contains(&"kfd.rejected"));
    let sigs = j["facts"]["signals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"] == "hsa-init-failed")
        .count();
    assert!(
        (1..=20).contains(&sigs),
        "signals capped per id, got {sigs}"
    );
    // The real file still explains its GPU next to the junk.
    assert!(j["facts"]["gpus"]
        .to_string()
        .contains("Radeon RX 7900 XTX"));
    // Each hostile file alone: recognised as nothing, exit 0, a note.
    for p in [bin, empty, text] {
        let o = run(&["--json"], &[p]);
        assert_eq!(o.status.code(), Some(0));
        let j = json(&o);
        assert_eq!(j["checks"][0]["status"], "warn");
        assert!(j["findings"].as_array().unwrap().is_empty());
    }
}

#[test]
fn colour_only_on_a_tty_and_never_with_no_color() {
    let f = fixture("broken-kfd-access/rocminfo-invalid-argument-mi300x-in-docker-rocm6.2.1.txt");
    let cmd = format!(
        "{} doctor --from {}",
        env!("CARGO_BIN_EXE_greta"),
        f.display()
    );
    // `script` gives the command a real pseudo-terminal.
    let tty = |no_color: Option<&str>| {
        let mut c = Command::new("script");
        c.args(["-qec", &cmd, "/dev/null"]).env_remove("NO_COLOR");
        if let Some(v) = no_color {
            c.env("NO_COLOR", v);
        }
        c.output().expect("script(1) from util-linux runs")
    };
    let coloured = tty(None);
    assert_eq!(coloured.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&coloured.stdout).contains("\u{1b}[31m"),
        "colour on a TTY"
    );
    let plain = tty(Some("1"));
    let out = String::from_utf8_lossy(&plain.stdout);
    assert!(
        out.contains("kfd.rejected") && !out.contains('\u{1b}'),
        "NO_COLOR: {out}"
    );
}

#[test]
fn list_checks_and_check_filter() {
    let o = greta().args(["doctor", "--list-checks"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    // The contract's ids, listed once in the probe (which checks its rules
    // cover them).
    for id in greta_probe::CONTRACT_IDS {
        assert!(out.contains(id), "--list-checks lacks {id}");
    }
    let j: Value = serde_json::from_slice(
        &greta()
            .args(["doctor", "--list-checks", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["id"] == "rocm"));
    // Two findings (gfx-unsupported fail, small-vram warn): --check keeps one, and the exit follows it.
    let files = [
        fixture("phoenix-780m-gfx1103-rocm5.7-broken/rocminfo.txt"),
        fixture("phoenix-780m-gfx1103-rocm5.7-broken/rocblas-error.txt"),
    ];
    let all = json(&run(&["--json"], &files));
    assert!(
        finding_ids(&all).contains(&"rocm.gfx-unsupported")
            && finding_ids(&all).contains(&"apu.small-vram")
    );
    let only = run(&["--json", "--check", "apu.small-vram"], &files);
    assert_eq!(only.status.code(), Some(0), "only a warn is left");
    assert_eq!(finding_ids(&json(&only)), vec!["apu.small-vram"]);
}

#[test]
fn live_run_on_this_machine_has_no_false_fail() {
    // CI and dev boxes here have no GPU, only Mesa lavapipe.
    let o = greta().args(["doctor", "--json"]).output().unwrap();
    let j = json(&o);
    assert_eq!(j["mode"], "live");
    let fails: Vec<&Value> = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "fail")
        .collect();
    let has_gpu = j["facts"]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["vendor"] != "cpu");
    if !has_gpu {
        assert!(
            fails.is_empty(),
            "false fail on a GPU-less machine: {fails:?}"
        );
        assert_eq!(o.status.code(), Some(0));
        let devs = j["facts"]["vulkan"]["devices"].as_array().unwrap();
        if !devs.is_empty() {
            assert!(
                finding_ids(&j).contains(&"vulkan.cpu-only"),
                "{:?}",
                finding_ids(&j)
            );
        }
    }
    assert!(!j["checks"].as_array().unwrap().is_empty());
}

#[test]
fn capture_then_replay_gives_the_live_report() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("snapshot");
    let cap = greta()
        .args(["doctor", "--json", "--capture"])
        .arg(&snap)
        .output()
        .unwrap();
    let cap = json(&cap);
    assert!(
        cap["notes"].to_string().contains("snapshot of"),
        "{}",
        cap["notes"]
    );
    let replay = greta()
        .args(["doctor", "--json", "--sysroot"])
        .arg(&snap)
        .output()
        .unwrap();
    let code = replay.status.code();
    let replay = json(&replay);
    let live_out = greta().args(["doctor", "--json"]).output().unwrap();
    assert_eq!(code, live_out.status.code());
    let live = json(&live_out);
    assert_eq!(replay["mode"], "sysroot");
    let strip = |mut v: Value| {
        v["facts"].as_object_mut().unwrap().remove("sources");
        v
    };
    let (live, replay, cap) = (strip(live), strip(replay), strip(cap));
    assert_eq!(live["facts"], replay["facts"]);
    assert_eq!(cap["facts"], replay["facts"]);
    assert_eq!(live["findings"], replay["findings"]);
    let ids = |v: &Value| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["id"].clone(), c["status"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&live), ids(&replay));
    // A capture target that is not empty is refused: exit 2.
    let again = greta()
        .args(["doctor", "--capture"])
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    no_panic(&again);
}

#[test]
fn from_stdin() {
    use std::io::Write;
    let text = std::fs::read(fixture(
        "mi210-gfx90a-rocm6.2.4/rocminfo-excerpt-agents1-2.txt",
    ))
    .unwrap();
    let mut child = greta()
        .args(["doctor", "--json", "--from", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let j = json(&o);
    assert_eq!(j["facts"]["gpus"][0]["gfx"], "gfx90a");
    assert_eq!(j["checks"][0]["title"], "-");
}

/// Every file of the corpus on its own, as a user would paste it: greta
/// never panics, exits 0 or 1 (2 is only for files it cannot open), and
/// prints the versioned JSON report with every finding well formed.
#[test]
fn every_corpus_file_gives_a_json_report_and_exit_0_or_1() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe/tests/fixtures");
    let mut stack = vec![root.clone()];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(
        files.len() >= 150,
        "corpus too small: {} files",
        files.len()
    );
    let mut exits = [0usize; 2];
    for f in &files {
        let o = run(&["--json"], std::slice::from_ref(f));
        let code = o.status.code();
        assert!(
            matches!(code, Some(0) | Some(1)),
            "{}: exit {code:?}: {}",
            f.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let j = json(&o);
        assert_eq!(j["schema"], "greta.doctor/v1", "{}", f.display());
        assert_eq!(
            j["summary"]["exit_code"].as_i64(),
            code.map(i64::from),
            "{}",
            f.display()
        );
        for x in j["findings"].as_array().unwrap() {
            for k in ["id", "severity", "title"] {
                assert!(
                    x[k].as_str().is_some_and(|s| !s.is_empty()),
                    "{}: {x}",
                    f.display()
                );
            }
            assert!(x["evidence"].is_array() && x["fix"]["text"].is_string());
        }
        exits[code.unwrap_or(0) as usize] += 1;
    }
    // The corpus holds broken machines and working ones: both outcomes occur.
    assert!(exits[0] > 0 && exits[1] > 0, "exit codes {exits:?}");
}

/// A `--sysroot` capture whose `.greta/dev-nodes` is a
/// FIFO said "/dev/kfd does not exist" (`kfd.missing`, exit 1), and one
/// whose `.greta/id` is garbage dropped `kfd.permission` and exited 0. An
/// unreadable capture file is unknown: a note names it, no finding comes
/// of it, and with nothing else failing the exit code is 2 (undecided).
#[test]
fn sysroot_with_an_unreadable_capture_file_is_undecided() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe/tests/sysroots/phoenix-apu");
    let tmp = tempfile::tempdir().unwrap();
    let cp = Command::new("cp")
        .arg("-a")
        .arg(&src)
        .arg(tmp.path().join("m"))
        .status()
        .unwrap();
    assert!(cp.success());
    let m = tmp.path().join("m");
    let sysroot = |m: &Path| {
        greta()
            .args(["doctor", "--json", "--sysroot"])
            .arg(m)
            .output()
            .unwrap()
    };
    // The control: the intact capture fails on permissions.
    let intact = sysroot(&m);
    assert_eq!(intact.status.code(), Some(1));
    assert!(finding_ids(&json(&intact)).contains(&"kfd.permission"));

    let nodes = m.join(".greta/dev-nodes");
    std::fs::remove_file(&nodes).unwrap();
    let c = std::ffi::CString::new(nodes.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let o = sysroot(&m);
    let v = json(&o);
    assert!(!finding_ids(&v).contains(&"kfd.missing"), "{v}");
    assert_eq!(o.status.code(), Some(2), "{v}");
    assert_eq!(v["summary"]["exit_code"], 2);
    let notes = v["notes"].to_string();
    assert!(
        notes.contains(".greta/dev-nodes") && notes.contains("FIFO"),
        "{notes}"
    );

    std::fs::remove_file(&nodes).unwrap();
    std::fs::copy(src.join(".greta/dev-nodes"), &nodes).unwrap();
    std::fs::write(m.join(".greta/id"), "garbage id line\n").unwrap();
    let o = sysroot(&m);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(2), "{v}");
    assert!(v["notes"].to_string().contains(".greta/id"), "{v}");
}

/// A 4 MiB paste of `Name: gfx942` lines (280,000 GPU agents) once gave as
/// many GPUs: 70 MB of memory per MiB pasted and 40 MB of JSON per MiB.
/// Now the report keeps the first `greta_probe::MAX_LISTED` (128), says
/// how many the paste claims, and memory and output stay small. The
/// child's peak memory is read from the kernel (`wait4`).
#[test]
fn a_paste_claiming_hundreds_of_thousands_of_gpus_stays_small() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let paste = tmp.path().join("rocminfo.txt");
    let n = (4 << 20) / "  Name: gfx942\n".len();
    std::fs::write(
        &paste,
        format!("HSA Agents\n{}", "  Name: gfx942\n".repeat(n)),
    )
    .unwrap();
    let out = tmp.path().join("out.json");
    // Reaped below by wait4, which also gives its peak memory.
    #[allow(clippy::zombie_processes)]
    let child = greta()
        .args(["doctor", "--json", "--from"])
        .arg(&paste)
        .stdout(std::fs::File::create(&out).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, valid out-pointers.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let status = std::process::ExitStatus::from_raw(status);
    assert!(status.code().is_some(), "{status:?}");
    let json_len = std::fs::metadata(&out).unwrap().len();
    assert!(json_len < 1 << 20, "{json_len} bytes of JSON");
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["facts"]["gpus"].as_array().unwrap().len(), 128);
    let notes = v["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "this paste claims {n} GPUs; greta read the first 128"
        )),
        "{notes}"
    );
    // ru_maxrss is in KiB: the paste is 4 MiB, held a few times over.
    let peak_mib = usage.ru_maxrss / 1024;
    assert!(peak_mib < 150, "peak memory {peak_mib} MiB");
}
