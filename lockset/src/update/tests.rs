//! Tests of the lock update.
/// uv (here a shell) past its limit is killed with what it started,
/// and a failure carries the tail of its stderr and how it ended.
#[test]
fn run_capture_is_bounded_and_says_how_it_failed() {
    let sh = Path::new("/bin/sh");
    let args = |s: &str| vec!["-c".to_string(), s.to_string()];
    let start = std::time::Instant::now();
    let e = run_capture(sh, &args("sleep 600 & wait"), Duration::from_millis(300)).unwrap_err();
    assert!(e.to_string().contains("did not finish within 0.3 s"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(60));
    let e = run_capture(
        sh,
        &args("echo resolving >&2; echo no solution >&2; exit 2"),
        Duration::from_secs(60),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("exit status 2") && e.ends_with("resolving\nno solution"),
        "{e}"
    );
    assert_eq!(
        run_capture(sh, &args("echo ok"), Duration::from_secs(60)).unwrap(),
        "ok\n"
    );
}

use super::*;

fn m(pairs: &[(&str, Option<&str>)]) -> BTreeMap<String, Option<String>> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
        .collect()
}

#[test]
fn markers_combine_by_python() {
    let all = vec!["3.11".to_string(), "3.12".to_string()];
    assert_eq!(
        combine_markers(&m(&[("3.11", None), ("3.12", None)]), &all).unwrap(),
        None
    );
    assert_eq!(
        combine_markers(&m(&[("3.12", None)]), &all)
            .unwrap()
            .as_deref(),
        Some("python_version == '3.12'")
    );
    assert_eq!(
        combine_markers(&m(&[("3.11", Some("sys_platform == 'linux'"))]), &all)
            .unwrap()
            .as_deref(),
        Some("(sys_platform == 'linux') and python_version == '3.11'")
    );
    let both = combine_markers(
        &m(&[("3.11", Some("sys_platform == 'linux'")), ("3.12", None)]),
        &all,
    )
    .unwrap()
    .unwrap();
    assert!(
        both.contains("python_version == '3.11'") && both.contains("python_version == '3.12'"),
        "{both}"
    );
}

#[test]
fn atomic_write_replaces() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("f.toml");
    std::fs::write(&p, "old").unwrap();
    write_atomic(&p, "new").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
}

/// A device requirement keeps its marker as written. Printed through
/// uv-pep508's tree, `(p00a or p00b) and ... (p23a or p23b)` (a small
/// decision diagram, within the marker bounds) ran past 10 minutes: its
/// disjunctive normal form has 2^24 terms.
#[test]
fn a_device_requirement_keeps_its_marker_as_written() {
    let r = "torch[cuda]==2.9.0 ; python_version >= '3.12'";
    let req = crate::marker::requirement(r, &crate::marker::Budget::per_file()).unwrap();
    assert_eq!(
        with_device_extra(r, req, "device-gfx942").unwrap(),
        "torch[cuda,device-gfx942]==2.9.0 ; python_version >= '3.12'"
    );
    let pairs: Vec<String> = (0..24)
        .map(|i| format!("('p{i:02}a' in extras or 'p{i:02}b' in extras)"))
        .collect();
    let r = format!("torch==2.9.0 ; {}", pairs.join(" and "));
    let req = crate::marker::requirement(&r, &crate::marker::Budget::per_file()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(with_device_extra(&r, req, "device-gfx942").map(|s| s.len()));
    });
    let got = rx.recv_timeout(Duration::from_secs(60));
    assert!(matches!(got, Ok(Ok(n)) if n > 24 * 40), "{got:?}");
}
