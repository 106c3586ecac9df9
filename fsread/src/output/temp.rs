//! greta's temporary files and directories beside the outputs they become.
//!
//! Named `.greta-<tag>.<pid>@<scope>.<random>.tmp`, where `scope` is the
//! machine's boot (the first 8 hex digits of its boot id) and the pid
//! namespace: whoever finds one can tell which process made it, and a
//! later write to the same directory removes the ones whose process is
//! gone ([`sweep`]). Only those of this boot and pid namespace are judged
//! (a results directory on NFS is shared by many machines, a textfile
//! directory by many containers, where the same pid is another process),
//! and only those the caller owns.
//!
//! Every temporary alive in this process is in one registry, so the
//! thread that handles a stop signal removes them all ([`stop_writes`])
//! before greta dies of the signal; from then on any other thread that
//! would make one, or fails to rename one, waits for that end instead.

use super::walk::{open_path, Dir};
use rustix::fs::{AtFlags, Mode, OFlags};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::ThreadId;

/// Entries of one directory looked at by a sweep, at most.
const SWEEP_CAP: usize = 100_000;

const PREFIX: &str = ".greta-";
const SUFFIX: &str = ".tmp";

/// A temporary name, parsed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TempName {
    pub tag: String,
    pub pid: u32,
    pub scope: String,
    pub random: String,
}

impl TempName {
    fn new(tag: &str, scope: &str) -> TempName {
        TempName {
            tag: tag.to_string(),
            pid: std::process::id(),
            scope: scope.to_string(),
            random: random_word(),
        }
    }

    pub(crate) fn to_os_string(&self) -> OsString {
        format!(
            "{PREFIX}{}.{}@{}.{}{SUFFIX}",
            self.tag, self.pid, self.scope, self.random
        )
        .into()
    }

    /// `name` when it is one of greta's temporary names (a pid of 0 or
    /// past `i32::MAX` is not: `kill` would read it as a group).
    pub(crate) fn parse(name: &OsStr) -> Option<TempName> {
        let s = name.to_str()?.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
        let mut it = s.split('.');
        let (tag, owner, random) = (it.next()?, it.next()?, it.next()?);
        if it.next().is_some() {
            return None;
        }
        let (pid, scope) = owner.split_once('@')?;
        let word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric());
        let scope_ok = !scope.is_empty()
            && scope
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b'-' || b == b'x');
        if !word(tag) || !word(random) || !scope_ok || !pid.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let pid: u32 = pid.parse().ok()?;
        if pid == 0 || pid > i32::MAX as u32 {
            return None;
        }
        Some(TempName {
            tag: tag.into(),
            pid,
            scope: scope.into(),
            random: random.into(),
        })
    }
}

/// Eight lowercase letters and digits, different for every call.
fn random_word() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    let mut v = h.finish();
    (0..8)
        .map(|_| {
            let c = b"abcdefghijklmnopqrstuvwxyz0123456789"[(v % 36) as usize];
            v /= 36;
            c as char
        })
        .collect()
}

/// This boot and pid namespace (`None` where /proc cannot say: then
/// names carry `x` and nothing is swept).
pub(crate) fn scope() -> Option<&'static str> {
    static SCOPE: OnceLock<Option<String>> = OnceLock::new();
    SCOPE
        .get_or_init(|| {
            let boot = crate::text(std::path::Path::new("/proc/sys/kernel/random/boot_id"), 64)
                .ok()?
                .chars()
                .filter(char::is_ascii_hexdigit)
                .take(8)
                .collect::<String>();
            let ns = std::fs::read_link("/proc/self/ns/pid").ok()?;
            let ns: String = ns.to_str()?.chars().filter(char::is_ascii_digit).collect();
            (boot.len() == 8 && !ns.is_empty()).then(|| format!("{boot}-{ns}"))
        })
        .as_deref()
}

struct Live {
    id: u64,
    /// Its directory (a duplicate of the writer's handle) and that
    /// directory's path (a tree is removed by path).
    dir: File,
    dir_path: PathBuf,
    name: OsString,
    is_dir: bool,
}

struct Registry {
    next: u64,
    /// The thread handling a stop signal, once one came.
    stopper: Option<ThreadId>,
    live: Vec<Live>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 0,
    stopper: None,
    live: Vec::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether another thread is handling a stop signal: greta is about to die
/// of it, and this thread must not go on writing.
fn stopped_by_other(r: &Registry) -> bool {
    r.stopper.is_some_and(|t| t != std::thread::current().id())
}

fn hold_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// For the thread that handles a stop signal, before greta dies of it:
/// removes every temporary this process holds, and from now on holds any
/// other thread that would make one (or whose rename failed because its
/// temporary is gone). The calling thread may still write. Returns how
/// many were removed.
pub fn stop_writes() -> usize {
    let mut r = registry();
    r.stopper = Some(std::thread::current().id());
    let live = std::mem::take(&mut r.live);
    for l in &live {
        remove(&l.dir, &l.dir_path, &l.name, l.is_dir);
    }
    live.len()
}

/// Holds the calling thread when a stop is under way on another: for a
/// writer whose rename failed (its temporary was removed by the stop), so
/// that it says nothing misleading before greta dies of the signal.
pub(crate) fn hold_if_stopping() {
    if stopped_by_other(&registry()) {
        hold_forever();
    }
}

fn remove(dir: &File, dir_path: &std::path::Path, name: &OsStr, is_dir: bool) {
    if is_dir {
        let _ = std::fs::remove_dir_all(dir_path.join(name));
    } else {
        let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
    }
}

/// One temporary file or directory of this process, removed when dropped
/// unless [`Temp::settled`] (renamed into place).
pub(crate) struct Temp<'d> {
    dir: &'d Dir,
    name: OsString,
    id: u64,
    is_dir: bool,
    settled: bool,
}

impl<'d> Temp<'d> {
    /// A new file, mode 0600, opened for writing.
    pub fn file(dir: &'d Dir, tag: &str) -> io::Result<(Temp<'d>, File)> {
        let (t, f) = Temp::make(dir, tag, false)?;
        // `make` opens a file when asked for one.
        f.map(|f| (t, f))
            .ok_or_else(|| io::Error::other("no file was opened"))
    }

    /// A new directory, mode 0700.
    pub fn dir(dir: &'d Dir, tag: &str) -> io::Result<Temp<'d>> {
        Ok(Temp::make(dir, tag, true)?.0)
    }

    /// Made and registered under the registry's lock: a stop signal
    /// handled meanwhile either comes first (and this thread waits for
    /// the end) or finds it registered and removes it.
    fn make(dir: &'d Dir, tag: &str, is_dir: bool) -> io::Result<(Temp<'d>, Option<File>)> {
        let mut r = registry();
        if stopped_by_other(&r) {
            drop(r);
            hold_forever();
        }
        let scope = scope().unwrap_or("x");
        for _ in 0..64 {
            let name = TempName::new(tag, scope).to_os_string();
            let made = if is_dir {
                rustix::fs::mkdirat(&dir.fd, &name, Mode::from_raw_mode(0o700)).map(|()| None)
            } else {
                rustix::fs::openat(
                    &dir.fd,
                    &name,
                    OFlags::WRONLY
                        | OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o600),
                )
                .map(|fd| Some(File::from(fd)))
            };
            let file = match made {
                Ok(f) => f,
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            };
            let dup = match dir.fd.try_clone() {
                Ok(d) => d,
                Err(e) => {
                    remove(&dir.fd, &dir.path, &name, is_dir);
                    return Err(e);
                }
            };
            let id = r.next;
            r.next += 1;
            r.live.push(Live {
                id,
                dir: dup,
                dir_path: dir.path.clone(),
                name: name.clone(),
                is_dir,
            });
            let t = Temp {
                dir,
                name,
                id,
                is_dir,
                settled: false,
            };
            return Ok((t, file));
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free temporary name after 64 tries",
        ))
    }

    pub fn name(&self) -> &OsStr {
        &self.name
    }

    /// Renamed into place: nothing to remove any more.
    pub fn settled(mut self) {
        self.settled = true;
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        let mut r = registry();
        if !self.settled {
            remove(&self.dir.fd, &self.dir.path, &self.name, self.is_dir);
        }
        r.live.retain(|l| l.id != self.id);
    }
}

/// Whether process `pid` exists (a zombie does; one this user may not
/// signal does too).
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 sends nothing; it only asks whether `pid` exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes from `dir` greta's temporaries of this boot and pid namespace
/// whose process is gone and which the caller owns (left by a process
/// killed outright, SIGKILL or a power cut). Best effort: a directory
/// that cannot be listed is left as it is. Returns what was removed.
pub(crate) fn sweep(dir: &Dir) -> Vec<OsString> {
    let mut removed = Vec::new();
    let Some(ours) = scope() else {
        return removed;
    };
    let me = std::process::id();
    let Ok(listing) = rustix::fs::openat(
        &dir.fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return removed;
    };
    let Ok(entries) = rustix::fs::Dir::new(listing) else {
        return removed;
    };
    let stale: Vec<(OsString, u32)> = entries
        .take(SWEEP_CAP)
        .map_while(Result::ok)
        .filter_map(|e| {
            let name = OsStr::from_bytes(e.file_name().to_bytes()).to_owned();
            let t = TempName::parse(&name)?;
            (t.scope == ours && t.pid != me).then_some((name, t.pid))
        })
        .collect();
    let euid = super::walk::euid();
    for (name, pid) in stale {
        if alive(pid) {
            continue;
        }
        let Ok(m) = open_path(&dir.fd, &name, OFlags::NOFOLLOW).and_then(|f| f.metadata()) else {
            continue;
        };
        if m.uid() != euid || !(m.is_file() || m.is_dir()) {
            continue;
        }
        remove(&dir.fd, &dir.path, &name, m.is_dir());
        removed.push(name);
    }
    removed
}
