//! Tests of the root: replays, live commands, nodes.
use super::*;

#[test]
fn parses_id_output() {
    let id = Identity::parse_id("uid=1000(ann) gid=1001(ann) groups=1001(ann),44(video),27(sudo)")
        .unwrap();
    assert_eq!(id.uid, 1000);
    assert_eq!(id.user.as_deref(), Some("ann"));
    assert_eq!(id.gid, 1001);
    assert_eq!(id.groups, vec![1001, 44, 27]);
    let line = id.to_id_line(|g| (g == 44).then(|| "video".to_string()));
    assert_eq!(line, "uid=1000(ann) gid=1001 groups=1001,44(video),27");
    assert_eq!(Identity::parse_id("garbage"), None);
    assert_eq!(Identity::parse_id("uid=x(y)"), None);
}

#[test]
fn node_and_status_lines_round_trip() {
    let n = NodeMeta {
        path: "/dev/kfd".into(),
        kind: 'c',
        mode: 0o660,
        uid: 0,
        gid: 109,
        open: Some(Err("EACCES".into())),
    };
    assert_eq!(n.to_line(), "/dev/kfd c 0660 0 109 open=EACCES");
    assert_eq!(NodeMeta::from_line(&n.to_line()), Some(n));
    for s in [
        CmdStatus::Exited(3),
        CmdStatus::TimedOut,
        CmdStatus::NotFound,
        CmdStatus::Error("spawn failed".into()),
    ] {
        assert_eq!(CmdStatus::from_line(&s.to_line()), s);
    }
}

#[test]
fn env_file_keeps_only_allow_listed_keys() {
    let env = parse_env(
        "PATH=/usr/bin\nAWS_SECRET_ACCESS_KEY=x\nexport ROCM_PATH=\"/opt/rocm-6.2.0\"\n=bad\n",
    );
    assert_eq!(env.get("PATH").map(String::as_str), Some("/usr/bin"));
    assert_eq!(
        env.get("ROCM_PATH").map(String::as_str),
        Some("/opt/rocm-6.2.0")
    );
    assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"));
}

#[test]
fn sysroot_symlinks_stay_inside_the_tree() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("opt/rocm-9.9.9/.info")).unwrap();
    std::fs::write(d.path().join("opt/rocm-9.9.9/.info/version"), "9.9.9-1\n").unwrap();
    std::os::unix::fs::symlink("/opt/rocm-9.9.9", d.path().join("opt/rocm")).unwrap();
    // A link that tries to climb out of the tree stays at its top.
    std::os::unix::fs::symlink("../../../../../../etc", d.path().join("opt/escape")).unwrap();
    // A self-loop with an absolute target must not read the host's file.
    std::fs::create_dir_all(d.path().join("proc/sys/kernel")).unwrap();
    std::os::unix::fs::symlink(
        "/proc/sys/kernel/osrelease",
        d.path().join("proc/sys/kernel/osrelease"),
    )
    .unwrap();
    let r = Root::sysroot(d.path()).unwrap();
    assert_eq!(
        r.read_trim("/opt/rocm/.info/version").as_deref(),
        Some("9.9.9-1")
    );
    assert_eq!(
        r.read_link("/opt/rocm"),
        Some(PathBuf::from("/opt/rocm-9.9.9"))
    );
    assert!(r.host_path("/opt/escape/passwd").starts_with(d.path()));
    assert!(r.read("/opt/escape/passwd").is_err());
    assert!(r.read("/proc/sys/kernel/osrelease").is_err());
}

#[test]
fn command_time_out_is_reported_not_waited() {
    let r = Root::live().with_cmd_timeout(Duration::from_millis(300));
    let t0 = std::time::Instant::now();
    let out = r.run("sleep", "/bin/sh", &["-c", "echo started; exec sleep 30"]);
    assert_eq!(out.status, CmdStatus::TimedOut);
    assert!(
        out.text.contains("started"),
        "partial output kept: {:?}",
        out.text
    );
    // Generous bound: the point is "not 30 s", not a timing measurement.
    assert!(t0.elapsed() < Duration::from_secs(20));
    let ok = r.run("echo", "/bin/sh", &["-c", "echo hi; echo err >&2; exit 3"]);
    assert_eq!(ok.status, CmdStatus::Exited(3));
    assert!(ok.text.contains("hi") && ok.text.contains("err"));
    let missing = r.run("nope", "definitely-not-a-program-greta", &[]);
    assert_eq!(missing.status, CmdStatus::NotFound);
}
