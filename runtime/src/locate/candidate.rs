//! One place a library may be loaded from: the path, the rule of the
//! search order that put it there, and what is at that path now, found by
//! looking (`stat`, a non-blocking `open`), never by loading.

use std::fmt;
use std::path::{Path, PathBuf};

/// Which rule of a search order put a candidate in the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// `$GRETA_HIP_LIB`, `$GRETA_CUDA_LIB`, `$GRETA_NVRTC_LIB`: the user's
    /// choice, and then the only candidate (a wrong one is an error, not a
    /// fall-through).
    Override { var: &'static str },
    /// A greta env's (or venv's) torch wheel, which carries its own ROCm.
    RocmWheels { env: PathBuf },
    /// A greta env's NVIDIA pip wheels (`nvidia/cu13/lib`, ...).
    NvidiaWheels { env: PathBuf },
    /// `$ROCM_PATH`, `$HIP_PATH`, `$CUDA_PATH`, `$CUDA_HOME`.
    Variable { var: &'static str },
    /// A ROCm install directory (`/opt/rocm`, `/opt/rocm-6.3.1`).
    RocmInstall { dir: PathBuf },
    /// A CUDA toolkit directory (`/usr/local/cuda`, `/usr/local/cuda-12.4`).
    CudaToolkit { dir: PathBuf },
    /// The dynamic loader asked for `name`: where it would find it
    /// (`via`), or `None` where none of its places holds the name and only
    /// `dlopen` itself can still answer.
    Loader { name: String, via: Option<Via> },
}

/// Where the dynamic loader finds a name, in its own order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    LdLibraryPath,
    /// The cache `ldconfig` wrote (`/etc/ld.so.cache`).
    LdCache,
    /// A directory `/etc/ld.so.conf` names, where there is no cache to
    /// read (a captured machine without one).
    LdSoConf,
    /// `/lib`, `/usr/lib` and their multiarch and 64-bit kin.
    StandardDir,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Override { var } | Rule::Variable { var } => write!(f, "${var}"),
            Rule::RocmWheels { env } => {
                write!(f, "the env's own ROCm (torch wheel) in {}", env.display())
            }
            Rule::NvidiaWheels { env } => write!(f, "the env's NVIDIA wheels in {}", env.display()),
            Rule::RocmInstall { dir } => write!(f, "ROCm install {}", dir.display()),
            Rule::CudaToolkit { dir } => write!(f, "CUDA toolkit {}", dir.display()),
            Rule::Loader { via: None, .. } => f.write_str("the dynamic loader's search path"),
            Rule::Loader { via: Some(v), .. } => {
                write!(f, "the dynamic loader's search path ({v})")
            }
        }
    }
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Via::LdLibraryPath => "LD_LIBRARY_PATH",
            Via::LdCache => "ld.so.cache",
            Via::LdSoConf => "ld.so.conf",
            Via::StandardDir => "a standard directory",
        })
    }
}

/// What is at a candidate's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// A regular file (or a link to one) that opens for reading: where the
    /// library would be loaded from. Not loaded.
    Found,
    /// Nothing there.
    Missing,
    /// A symbolic link whose target is not there.
    DanglingLink { target: PathBuf },
    /// A directory, FIFO, device...: never handed to `dlopen` (a FIFO
    /// would block it for ever).
    NotRegular { kind: &'static str },
    /// It, or a directory on the way, cannot be read (permissions, a loop
    /// of links).
    Unreadable { error: String },
    /// A bare name that none of the loader's places holds: left to
    /// `dlopen` (a path greta cannot see, such as an executable's RUNPATH).
    ByName,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::Found => f.write_str("found, not loaded"),
            State::Missing => f.write_str("not there"),
            State::DanglingLink { target } => {
                write!(f, "a link to {}, which is not there", target.display())
            }
            State::NotRegular { kind } => write!(
                f,
                "is a {kind}, not a library file (only a regular file is loaded)"
            ),
            State::Unreadable { error } => f.write_str(error),
            State::ByName => {
                f.write_str("in none of the loader's places; left to the dynamic loader")
            }
        }
    }
}

/// One place to try, in search order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The file (under the search's root), or a bare name for the loader.
    pub path: PathBuf,
    pub rule: Rule,
    pub state: State,
}

impl Candidate {
    /// The file at `path`, as it is now.
    pub fn at(path: impl Into<PathBuf>, rule: Rule) -> Candidate {
        let path = path.into();
        let state = state_of(&path);
        Candidate { path, rule, state }
    }

    /// A bare name left to the dynamic loader.
    pub fn by_name(name: &str) -> Candidate {
        Candidate {
            path: name.into(),
            rule: Rule::Loader {
                name: name.to_string(),
                via: None,
            },
            state: State::ByName,
        }
    }

    /// Whether `path` is this candidate's file, by another name too (with
    /// `/lib` a link to `usr/lib`, `/lib/x86_64-linux-gnu/libvulkan.so.1`
    /// and `/usr/lib/x86_64-linux-gnu/libvulkan.so.1` are one file).
    pub(crate) fn is_at(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        if self.path == path {
            return true;
        }
        match (std::fs::metadata(&self.path), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
            _ => false,
        }
    }

    /// The rule that put it here, as text (what a loaded library keeps as
    /// its `why`).
    pub fn why(&self) -> String {
        self.rule.to_string()
    }
}

/// `/opt/rocm/lib/libamdhip64.so.6 ($ROCM_PATH): found, not loaded`.
impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.path.display(), self.rule, self.state)
    }
}

/// What is at `path`: looked at with `lstat`, `stat` and a non-blocking
/// open of the file (a FIFO does not block it), never mapped.
pub(crate) fn state_of(path: &Path) -> State {
    let m = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return State::Missing,
        Err(e) => {
            return State::Unreadable {
                error: e.to_string(),
            }
        }
        Ok(m) => m,
    };
    if m.file_type().is_symlink() {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return State::DanglingLink {
                    target: std::fs::read_link(path).unwrap_or_default(),
                }
            }
            Err(e) => {
                return State::Unreadable {
                    error: e.to_string(),
                }
            }
            Ok(_) => {}
        }
    }
    match greta_fsread::open_regular(path) {
        Ok(_) => State::Found,
        Err(greta_fsread::Error::NotRegular { kind, .. }) => State::NotRegular { kind },
        Err(e) => State::Unreadable {
            error: e.into_io().to_string(),
        },
    }
}
