use super::temp::{scope, TempName};
use super::*;
use std::os::unix::fs::{symlink, FileTypeExt, PermissionsExt};

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).unwrap().is_symlink()
}

const NOBODY: u32 = 65534;

/// Links owned by another user can only be made by root; without root the
/// tests that need one say so on stderr and check the rest.
fn root() -> bool {
    let root = walk::euid() == 0;
    if !root {
        eprintln!("SKIPPED the parts that need root (a link owned by another user)");
    }
    root
}

#[test]
fn writes_are_atomic_readable_and_keep_the_old_file_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("greta.prom");
    write(&p, b"a 1\n", Purpose::Textfile).unwrap();
    write(&p, b"b 2\n", Purpose::Textfile).unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "b 2\n");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&p), 0o644);
    // Only the final file is left: no temporaries.
    assert_eq!(names(dir.path()), ["greta.prom"]);
    assert!(Output::check(&p).is_ok());
    assert_eq!(names(dir.path()), ["greta.prom"]);
    let bad = dir.path().join("missing/greta.prom");
    let e = Output::check(&bad).unwrap_err().to_string();
    assert!(e.contains("missing"), "{e}");
    assert!(write(&bad, b"x", Purpose::Textfile).is_err());
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "b 2\n");
    // A relative name, and a result file's private mode.
    let rel = dir.path().join("sub");
    std::fs::create_dir(&rel).unwrap();
    let d = OutputDir::open(&rel, false).unwrap();
    d.write_new("r.json", b"{}", Purpose::Result).unwrap();
    assert_eq!(mode(&rel.join("r.json")), 0o600);
    // Never replaced: the name is taken.
    let e = d.write_new("r.json", b"[]", Purpose::Result).unwrap_err();
    assert!(e.is_already_exists(), "{e}");
    assert_eq!(std::fs::read_to_string(rel.join("r.json")).unwrap(), "{}");
    assert_eq!(names(&rel), ["r.json"]);
}

/// A FIFO, a directory or a socket at the name is refused, by the check
/// before a run and by the write, and stays what it was: renaming over it
/// would replace the node (as root, `--prom /dev/full` turned /dev/full
/// into a regular file).
#[test]
fn a_target_that_is_not_a_regular_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.prom");
    mkfifo(&fifo);
    let sub = dir.path().join("dir.prom");
    std::fs::create_dir(&sub).unwrap();
    let sock = dir.path().join("sock.prom");
    let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    for (p, kind) in [(&fifo, "FIFO"), (&sub, "directory"), (&sock, "socket")] {
        let e = Output::check(p).unwrap_err().to_string();
        assert!(
            e.contains(&format!("is a {kind}, not a regular file")),
            "{e}"
        );
        let e = write(p, b"greta_smoke_status 0\n", Purpose::Textfile).unwrap_err();
        assert!(e.to_string().contains(kind), "{e}");
    }
    let t = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type();
    assert!(t(&fifo).is_fifo());
    assert!(t(&sub).is_dir());
    assert!(t(&sock).is_socket());
    // A link to one is refused the same way, and stays a link.
    let link = dir.path().join("link.prom");
    symlink(&fifo, &link).unwrap();
    let e = Output::check(&link).unwrap_err().to_string();
    assert!(e.contains("leads to a FIFO"), "{e}");
    assert!(write(&link, b"x\n", Purpose::Textfile).is_err());
    assert!(t(&link).is_symlink() && t(&fifo).is_fifo());
    // /dev/stdout when stdout is a pipe: a link to a /proc/self/fd link
    // whose text ("pipe:[N]") is no path; the pipe is refused.
    let mut fds = [-1; 2];
    // SAFETY: a two-int array for pipe(2).
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let stdout_like = dir.path().join("stdout.prom");
    symlink(format!("/proc/self/fd/{}", fds[1]), &stdout_like).unwrap();
    let e = Output::check(&stdout_like).unwrap_err().to_string();
    assert!(e.contains("leads to a FIFO"), "{e}");
    assert!(write(&stdout_like, b"x\n", Purpose::Textfile).is_err());
    assert!(t(&stdout_like).is_symlink());
    // SAFETY: both ends are ours, closed once.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    // A name that can only be a directory.
    for p in [
        dir.path().join("x/"),
        dir.path().join(".."),
        PathBuf::from("/"),
    ] {
        assert!(
            matches!(Output::resolve(&p), Err(OutputError::NotRegular { .. })),
            "{}",
            p.display()
        );
    }
    // No temporaries are left behind.
    assert_eq!(names(dir.path()).len(), 5);
}

/// A symlink in an ordinary directory is written through on purpose: the
/// regular file it names (or will name: a dangling link) gets the text,
/// the link stays.
#[test]
fn a_symlink_target_is_written_through_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let real_dir = dir.path().join("real");
    std::fs::create_dir(&real_dir).unwrap();
    let real = real_dir.join("greta.prom");
    std::fs::write(&real, "old 1\n").unwrap();
    let link = dir.path().join("greta.prom");
    symlink("real/greta.prom", &link).unwrap();
    let link2 = dir.path().join("greta2.prom");
    symlink("greta.prom", &link2).unwrap();
    let o = Output::check(&link2).unwrap();
    assert_eq!(o.path(), real);
    write(&link2, b"new 2\n", Purpose::Textfile).unwrap();
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "new 2\n");
    assert!(is_link(&link) && is_link(&link2));
    // Dangling: the file it names is created.
    let dangling = dir.path().join("later.prom");
    symlink("real/later.prom", &dangling).unwrap();
    write(&dangling, b"x 1\n", Purpose::Textfile).unwrap();
    assert_eq!(
        std::fs::read_to_string(real_dir.join("later.prom")).unwrap(),
        "x 1\n"
    );
    assert!(is_link(&dangling));
    // A link up and back down, and a linked directory on the way.
    let up = real_dir.join("up.prom");
    symlink("../real/greta.prom", &up).unwrap();
    write(&up, b"up 3\n", Purpose::Textfile).unwrap();
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "up 3\n");
    let via = dir.path().join("via");
    symlink("real", &via).unwrap();
    write(&via.join("greta.prom"), b"via 4\n", Purpose::Textfile).unwrap();
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "via 4\n");
    // A loop is an error, never a hang.
    let a = dir.path().join("a.prom");
    let b = dir.path().join("b.prom");
    symlink(&b, &a).unwrap();
    symlink(&a, &b).unwrap();
    assert!(matches!(Output::check(&a), Err(OutputError::Loop { .. })));
    assert!(write(&a, b"x", Purpose::Textfile).is_err());
    assert!(is_link(&a));
}

/// `/shared` is mode 1777 (as `/tmp` and many textfile directories are).
/// A link `nobody` planted there is refused, to an existing file and
/// dangling alike, at the last component and on the way; a link root (or
/// the caller) owns in the same place is followed; so is nobody's link in
/// a directory only its owner can write.
#[test]
fn a_link_in_a_sticky_directory_is_followed_only_when_the_caller_or_root_owns_it() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let elsewhere = dir.path().join("etc");
    std::fs::create_dir(&elsewhere).unwrap();
    let config = elsewhere.join("config");
    std::fs::write(&config, "keep me\n").unwrap();

    // The caller's own link is followed.
    let mine = shared.join("mine.prom");
    symlink(&config, &mine).unwrap();
    write(&mine, b"mine 1\n", Purpose::Textfile).unwrap();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "mine 1\n");
    std::fs::write(&config, "keep me\n").unwrap();
    if !root() {
        return;
    }
    let planted = shared.join("greta.prom");
    symlink(&config, &planted).unwrap();
    std::os::unix::fs::lchown(&planted, Some(NOBODY), Some(NOBODY)).unwrap();
    let e = Output::check(&planted).unwrap_err();
    assert!(
        matches!(e, OutputError::ForeignLink { owner: NOBODY, .. }),
        "{e}"
    );
    let msg = e.to_string();
    let link_text = format!("symbolic link {}", planted.display());
    for want in [
        link_text.as_str(),
        "owned by uid 65534",
        "a sticky, world-writable directory",
        "the user running greta (uid 0",
        "protected_symlinks",
    ] {
        assert!(msg.contains(want), "{want:?} not in: {msg}");
    }
    let e = write(&planted, b"pwned\n", Purpose::Textfile).unwrap_err();
    assert!(matches!(e, OutputError::ForeignLink { .. }), "{e}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "keep me\n");
    assert!(is_link(&planted));

    // Dangling: its target is not created.
    let target = elsewhere.join("new.conf");
    let dangling = shared.join("dangling.prom");
    symlink(&target, &dangling).unwrap();
    std::os::unix::fs::lchown(&dangling, Some(NOBODY), Some(NOBODY)).unwrap();
    assert!(matches!(
        write(&dangling, b"x\n", Purpose::Textfile),
        Err(OutputError::ForeignLink { .. })
    ));
    assert!(!target.exists());

    // On the way: a planted link to a directory.
    let sub = shared.join("sub");
    symlink(&elsewhere, &sub).unwrap();
    std::os::unix::fs::lchown(&sub, Some(NOBODY), Some(NOBODY)).unwrap();
    assert!(matches!(
        write(&sub.join("config"), b"x\n", Purpose::Textfile),
        Err(OutputError::ForeignLink { .. })
    ));
    assert!(matches!(
        OutputDir::open(&sub, true),
        Err(OutputError::ForeignLink { .. })
    ));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "keep me\n");

    // Root's link in the same directory is followed.
    let roots = shared.join("root.prom");
    symlink(&config, &roots).unwrap();
    write(&roots, b"root 1\n", Purpose::Textfile).unwrap();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "root 1\n");
    assert!(is_link(&roots));

    // World-writable without the sticky bit: refused as well.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = write(&planted, b"x\n", Purpose::Textfile).unwrap_err();
    assert!(e.to_string().contains("a world-writable directory"), "{e}");

    // nobody's link where only its owner writes: followed.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(&planted, b"owner's dir\n", Purpose::Textfile).unwrap();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "owner's dir\n");
    // No temporaries anywhere.
    assert!(names(&shared).iter().all(|n| !n.ends_with(".tmp")));
    assert_eq!(names(&elsewhere), ["config"]);
}

#[test]
fn temporary_names_carry_their_pid_and_parse_back() {
    let t = TempName {
        tag: "prom".into(),
        pid: 4242,
        scope: "0123abcd-4026531836".into(),
        random: "k3x9q0ab".into(),
    };
    let name = t.to_os_string();
    assert_eq!(name, ".greta-prom.4242@0123abcd-4026531836.k3x9q0ab.tmp");
    assert_eq!(TempName::parse(&name), Some(t));
    for not in [
        ".greta-prom.0@0123abcd-1.k3.tmp", // pid 0: a process group
        ".greta-prom.2147483648@0123abcd-1.k3.tmp", // past i32::MAX
        ".greta-prom.-1@0123abcd-1.k3.tmp",
        ".greta-prom.12@.k3.tmp",
        ".greta-prom.12@0123abcd-1.k3.x.tmp",
        ".greta-smoke-abc.prom.tmp", // an older greta's: no pid
        ".smoke-abc.tmp",
        "greta.prom",
    ] {
        assert_eq!(TempName::parse(OsStr::new(not)), None, "{not}");
    }
}

/// A pid that is certainly gone: a child that was waited for.
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// A write sweeps the temporaries of dead processes of this boot and pid
/// namespace that the caller owns, and nothing else: not a live
/// process's, not another machine's or container's, not another user's,
/// not a name of another form.
#[test]
fn a_write_sweeps_temporaries_of_dead_processes_only() {
    let Some(ours) = scope() else {
        panic!("no boot id or pid namespace in /proc: greta names temporaries it cannot sweep");
    };
    let dir = tempfile::tempdir().unwrap();
    let name = |pid: u32, scope: &str| {
        TempName {
            tag: "prom".into(),
            pid,
            scope: scope.into(),
            random: "abc".into(),
        }
        .to_os_string()
        .into_string()
        .unwrap()
    };
    let dead = name(dead_pid(), ours);
    let dead_dir = name(dead_pid(), ours).replace("abc", "dir");
    let live = name(1, ours);
    let other_boot = name(dead_pid(), "ffffffff-1");
    let older = ".greta-smoke-abc.prom.tmp".to_string();
    for n in [&dead, &live, &other_boot, &older] {
        std::fs::write(dir.path().join(n), "half").unwrap();
    }
    std::fs::create_dir(dir.path().join(&dead_dir)).unwrap();
    std::fs::write(dir.path().join(&dead_dir).join("f"), "x").unwrap();
    let mut kept = vec![live.clone(), other_boot.clone(), older.clone()];
    if walk::euid() == 0 {
        let foreign = name(dead_pid(), ours).replace("abc", "nobody");
        let p = dir.path().join(&foreign);
        std::fs::write(&p, "half").unwrap();
        std::os::unix::fs::lchown(&p, Some(NOBODY), Some(NOBODY)).unwrap();
        kept.push(foreign);
    }
    write(&dir.path().join("greta.prom"), b"x 1\n", Purpose::Textfile).unwrap();
    kept.push("greta.prom".into());
    kept.sort();
    assert_eq!(names(dir.path()), kept);
}

/// A snapshot directory is built beside its name and renamed into place:
/// it is whole or absent, replaces only an empty directory, and a failed
/// build leaves nothing.
#[test]
fn a_snapshot_is_whole_or_absent() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("new/parents/snap");
    let s = Snapshot::resolve(&target).unwrap();
    let n = s
        .build(|at| {
            std::fs::write(at.join("a"), "1")?;
            Ok(7)
        })
        .unwrap();
    assert_eq!(n, 7);
    assert_eq!(names(&target), ["a"]);
    assert!(matches!(
        Snapshot::resolve(&target),
        Err(SnapshotError::Exists(_))
    ));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    Snapshot::resolve(&empty)
        .unwrap()
        .build(|at| std::fs::write(at.join("b"), "2"))
        .unwrap();
    assert_eq!(names(&empty), ["b"]);
    let failed = dir.path().join("failed");
    let e = Snapshot::resolve(&failed)
        .unwrap()
        .build(|at| {
            std::fs::write(at.join("c"), "3")?;
            Err::<(), _>(io::Error::other("no more"))
        })
        .unwrap_err();
    assert!(e.to_string().contains("no more"), "{e}");
    assert_eq!(names(dir.path()), ["empty", "new"]);
}
