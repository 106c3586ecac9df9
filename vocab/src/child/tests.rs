use super::*;

#[test]
fn output_and_status_come_back() {
    let mut c = Command::new("sh");
    c.args(["-c", "echo out; echo err >&2; exit 3"]);
    let o = run(c, Some(Duration::from_secs(60))).unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert_eq!((o.stdout.as_str(), o.stderr.as_str()), ("out\n", "err\n"));
}

#[test]
fn a_child_past_its_limit_is_killed_and_reported() {
    let mut c = Command::new("sleep");
    c.arg("600");
    let t = std::time::Instant::now();
    let e = run(c, Some(Duration::from_millis(200))).unwrap_err();
    assert!(matches!(e, ChildError::TimedOut { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_missing_program_is_a_spawn_error_naming_it() {
    let e = run(Command::new("/nonexistent/greta-nope"), None).unwrap_err();
    assert!(matches!(e, ChildError::Spawn { .. }));
    assert!(e.to_string().contains("greta-nope"), "{e}");
}

#[test]
fn stdin_is_piped_when_asked() {
    let mut r = Child::new(Command::new("cat"))
        .stdin_piped()
        .start()
        .unwrap();
    r.send_and_close(b"hello").unwrap();
    let f = r.finish(Some(Duration::from_secs(60)));
    assert_eq!(f.stdout.text(), "hello");
    assert!(!f.timed_out && !f.pipes_held);
}

/// Whether process `pid` is gone (or a zombie waiting for init), waiting
/// up to 10 s for that state.
fn gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.split_whitespace().nth(2).unwrap_or("").to_string());
        if matches!(state.as_deref(), Err(_) | Ok("Z")) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::yield_now();
    }
}

/// The pid a child wrote into `file` (it writes it before anything else).
fn pid_in(file: &std::path::Path) -> i32 {
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Runs, in its own group, a shell that starts `sleep 300` in the
/// background (`redirect` after it), writes its pid, then does `then`;
/// returns how the run ended and the grandchild's pid.
fn with_grandchild(redirect: &str, then: &str, limit: Duration) -> (Finished, i32) {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!(
        "sleep 300 {redirect} & echo $! > {}; {then}",
        pidfile.display()
    ));
    let f = Child::new(cmd)
        .own_group()
        .finish_within(Some(limit))
        .unwrap();
    (f, pid_in(&pidfile))
}

#[test]
fn a_grandchild_dies_with_its_group_at_the_time_limit() {
    let (f, pid) = with_grandchild("", "exec sleep 300", Duration::from_millis(300));
    assert!(f.timed_out);
    assert!(gone(pid), "the grandchild survived its group");
}

#[test]
fn a_grandchild_dies_with_its_group_when_the_child_exits() {
    // The grandchild keeps no pipe open: only the group kill can end it.
    let (f, pid) = with_grandchild(
        "</dev/null >/dev/null 2>&1",
        "exit 0",
        Duration::from_secs(60),
    );
    assert!(!f.timed_out);
    assert_eq!(f.status.and_then(|s| s.code()), Some(0));
    assert!(gone(pid), "the grandchild outlived the run");
}

#[test]
fn output_over_the_cap_is_cut_and_said_to_be() {
    let mut cmd = Command::new("sh");
    // 1 MiB of output against a 4 KiB cap.
    cmd.arg("-c").arg("head -c 1048576 /dev/zero | tr '\\0' x");
    let f = Child::new(cmd)
        .cap(4096)
        .finish_within(Some(Duration::from_secs(60)))
        .unwrap();
    assert_eq!(f.stdout.bytes.len(), 4096);
    assert!(f.stdout.cut && !f.stderr.cut);
    assert!(f.stdout.bytes.iter().all(|&b| b == b'x'));
}

#[test]
fn input_the_child_never_reads_does_not_block_it() {
    // 8 MiB is far more than a pipe holds; the child exits without reading.
    let f = Child::new(Command::new("true"))
        .stdin_bytes(vec![7u8; 8 << 20])
        .finish_within(Some(Duration::from_secs(60)))
        .unwrap();
    assert!(!f.timed_out);
    assert_eq!(f.status.and_then(|s| s.code()), Some(0));
}

#[test]
fn exit_codes_and_signals_are_described() {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg("cat; echo oops >&2; exit 3");
    let f = Child::new(cmd)
        .stdin_bytes(b"hello".to_vec())
        .finish_within(Some(Duration::from_secs(30)))
        .unwrap();
    let status = f.status.unwrap();
    assert_eq!(
        (
            describe(status).as_str(),
            f.stdout.text().as_str(),
            f.stderr.text().trim()
        ),
        ("exit status 3", "hello", "oops")
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg("kill -ABRT $$");
    let f = Child::new(cmd)
        .finish_within(Some(Duration::from_secs(30)))
        .unwrap();
    assert_eq!(describe(f.status.unwrap()), "killed by signal 6 (SIGABRT)");
}

/// Merged streams keep the order the child wrote them in (the doctor shows
/// a tool's error beside the line it failed on), and a child that leaves
/// after its limit keeps what it printed until then.
#[test]
fn merged_stderr_interleaves_in_order_and_survives_a_timeout() {
    let mut c = Command::new("sh");
    c.args(["-c", "echo 1; echo 2 >&2; echo 3; echo 4 >&2"]);
    let f = Child::new(c)
        .merge_stderr()
        .finish_within(Some(Duration::from_secs(60)))
        .unwrap();
    assert_eq!(f.stdout.text(), "1\n2\n3\n4\n");
    assert_eq!(f.stderr.text(), "");
    assert_eq!(f.status.and_then(|s| s.code()), Some(0));

    let mut c = Command::new("sh");
    c.args(["-c", "echo before >&2; exec sleep 600"]);
    let f = Child::new(c)
        .merge_stderr()
        .own_group()
        .finish_within(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(f.timed_out && !f.pipes_held);
    assert_eq!(f.stdout.text(), "before\n");
}
