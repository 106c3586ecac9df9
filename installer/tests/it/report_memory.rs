//! `greta report` over a results directory of many big results: the peak
//! memory of the real binary (its `ru_maxrss`, from `wait4` on its pid)
//! must stay near one result's size, not grow with the number of results.
//! `--history` kept every whole result (400 copies of one 15 MB result
//! reached 5.7 GB), and so did `greta report DIR` (its newest run) while it
//! picked the newest.

use greta_smoke::results::Report;
use std::path::Path;
use std::process::{Command, Stdio};

/// A real lavapipe run of eight devices, made about `mb` MB big by what a
/// history never draws: each device's notes and validation messages and
/// each gate's reason (text a damaged or hostile file can make any size).
fn big_result(mb: usize) -> String {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/data/lavapipe-default.json");
    let mut r: Report = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let one = r.devices[0].clone();
    r.devices = (0..8)
        .map(|i| {
            let mut d = one.clone();
            d.index = i;
            d
        })
        .collect();
    let per_device = (mb << 20) / 8;
    // Text of about `bytes` bytes: `unit` repeated.
    let fill = |unit: String, bytes: usize| unit.repeat(bytes / unit.len());
    for (i, d) in r.devices.iter_mut().enumerate() {
        d.notes.push(fill(format!("note {i} "), per_device / 3));
        d.validation_messages
            .push(fill(format!("message {i} "), per_device / 3));
        let gates = d.gates.len().max(1);
        for g in &mut d.gates {
            g.reason = Some(fill(format!("{} ", g.id), per_device / 3 / gates));
        }
    }
    r.to_json()
}

/// Runs `cmd` and returns its exit code, its stderr and its peak resident
/// memory in MiB (the kernel's `ru_maxrss` of that one child).
// The child is waited for by wait4 (std's wait has no rusage).
#[allow(clippy::zombie_processes)]
fn peak_mib(cmd: Command, stderr: &Path) -> (i32, String, f64) {
    // The peak is taken by a small Python parent, not by this test process:
    // a child's ru_maxrss keeps the high-water mark of the memory it had
    // before exec, which for a child spawned from here (vfork) is this whole
    // test process's, hundreds of MiB while other tests run beside it.
    const PARENT: &str = "import resource, subprocess, sys\n\
        r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n\
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
        sys.exit(r.returncode if r.returncode >= 0 else 128 - r.returncode)\n";
    let mut parent = Command::new("python3");
    parent
        .arg("-c")
        .arg(PARENT)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => parent.env(k, v),
            None => parent.env_remove(k),
        };
    }
    if let Some(d) = cmd.get_current_dir() {
        parent.current_dir(d);
    }
    let out = parent
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(stderr).unwrap())
        .output()
        .expect("python3 (the test's measuring parent) runs");
    let kib: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("python3 printed no peak ({e}): {:?}", out.stdout));
    (
        out.status.code().unwrap_or(-1),
        std::fs::read_to_string(stderr).unwrap_or_default(),
        kib / 1024.0,
    )
}

#[test]
fn many_big_results_cost_one_results_memory() {
    const COPIES: usize = 40;
    const MB: usize = 12;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("results");
    std::fs::create_dir(&d).unwrap();
    let text = big_result(MB);
    assert!(text.len() > (MB - 1) << 20 && (text.len() as u64) < greta_report::FILE_CAP);
    // Hard links: forty results on disk for the room of one.
    let first = d.join("smoke-00.json");
    std::fs::write(&first, &text).unwrap();
    for i in 1..COPIES {
        std::fs::hard_link(&first, d.join(format!("smoke-{i:02}.json"))).unwrap();
    }
    let all_mib = (text.len() * COPIES) as f64 / f64::from(1 << 20);
    // One result read, parsed and dropped at a time: some 3 of them at the
    // peak, plus the binary and the page. Holding all of them is 480 MB of
    // text and more in memory.
    let bound = 160.0;

    let page = dir.path().join("history.html");
    let mut cmd = crate::support::greta();
    cmd.args(["report", "--history"])
        .arg(&d)
        .arg("--out")
        .arg(&page);
    let (code, err, mib) = peak_mib(cmd, &dir.path().join("history.err"));
    eprintln!(
        "report --history: {COPIES} results of {MB} MB ({all_mib:.0} MiB): peak {mib:.0} MiB"
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("{COPIES} runs, 0 files not used")),
        "{err}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<svg class=\"history\"").count(),
        11,
        "a chart per gate"
    );
    assert!(!html.contains("note 0 note 0"), "the notes are not drawn");
    assert!(
        mib < bound,
        "report --history peaked at {mib:.0} MiB over {all_mib:.0} MiB of results (bound {bound} MiB)"
    );

    // A DIR given to `greta report` stands for its newest run: the others
    // are read and dropped.
    let newest = dir.path().join("newest.html");
    let mut cmd = crate::support::greta();
    cmd.arg("report").arg(&d).arg("--out").arg(&newest);
    let (code, err, mib) = peak_mib(cmd, &dir.path().join("newest.err"));
    eprintln!("report DIR: peak {mib:.0} MiB");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 run, 0 files not used"), "{err}");
    assert!(
        mib < bound,
        "report DIR peaked at {mib:.0} MiB over {all_mib:.0} MiB of results (bound {bound} MiB)"
    );
}

/// `greta report F1 F2 …` draws each file as it reads it and drops the
/// run: 40 results of 12 MB cost about two of them, not forty (it held
/// every run, then drew them). A page draws at most `PAGE_BYTES` of
/// results: the files past it are named, each with why.
#[test]
fn many_named_results_are_drawn_within_the_page_caps() {
    const COPIES: usize = 40;
    const MB: usize = 12;
    let dir = tempfile::tempdir().unwrap();
    let text = big_result(MB);
    let first = dir.path().join("smoke-00.json");
    std::fs::write(&first, &text).unwrap();
    let mut files = vec![first.clone()];
    for i in 1..COPIES {
        let p = dir.path().join(format!("smoke-{i:02}.json"));
        std::fs::hard_link(&first, &p).unwrap();
        files.push(p);
    }
    let all_mib = (text.len() * COPIES) as f64 / f64::from(1 << 20);
    let fit = (greta_report::PAGE_BYTES / text.len() as u64) as usize;
    assert_eq!(fit, 2, "the test is built for two results on the page");
    let page = dir.path().join("page.html");
    let mut cmd = crate::support::greta();
    cmd.arg("report").args(&files).arg("--out").arg(&page);
    let (code, err, mib) = peak_mib(cmd, &dir.path().join("page.err"));
    eprintln!("report of {COPIES} files of {MB} MB ({all_mib:.0} MiB): peak {mib:.0} MiB");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("{fit} runs, {} files not used", COPIES - fit)),
        "{err}"
    );
    // Each file past the cap is named, with the cap.
    let third = files[fit].display().to_string();
    assert!(
        err.lines()
            .any(|l| l.contains(&third) && l.contains("at most 32 MiB of results")),
        "{err}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<section class=\"run\"").count(), fit);
    // Two results held at most, and the page of two: holding all forty
    // is 480 MB of text and more in memory.
    let bound = 220.0;
    assert!(
        mib < bound,
        "report of {COPIES} files peaked at {mib:.0} MiB over {all_mib:.0} MiB of results (bound {bound} MiB)"
    );
}

/// Many small results: a page draws at most `PAGE_RUNS` of them and names
/// the others.
#[test]
fn a_page_of_more_runs_than_its_cap_names_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/data/lavapipe-default.json");
    let n = greta_report::PAGE_RUNS + 5;
    let files: Vec<_> = (0..n)
        .map(|i| {
            let f = dir.path().join(format!("r{i:03}.json"));
            std::fs::copy(&p, &f).unwrap();
            f
        })
        .collect();
    let page = dir.path().join("page.html");
    let out = crate::support::greta()
        .arg("report")
        .args(&files)
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "{} runs, 5 files not used",
            greta_report::PAGE_RUNS
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}: the page draws at most {} runs",
            files[n - 1].display(),
            greta_report::PAGE_RUNS
        )),
        "{err}"
    );
}
