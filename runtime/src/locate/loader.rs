//! A bare library name (`libvulkan.so.1`) resolved as glibc's dynamic
//! loader resolves it for `dlopen`, by reading its places instead of
//! asking it: `LD_LIBRARY_PATH`, the cache `ldconfig` wrote (where there is
//! none, the directories `ld.so.conf` names, which the cache is built
//! from), then the standard directories.

use super::candidate::{Candidate, Rule, State, Via};
use super::SearchEnv;
use greta_vocab::ld_so;
use std::path::{Path, PathBuf};

/// The loader's places under a search's root, read once per search.
pub(crate) struct LoaderPlaces {
    ld_library_path: Vec<PathBuf>,
    cache: Cache,
    standard: Vec<PathBuf>,
}

/// An `ld.so.conf` file is a few lines.
const CONF_CAP: u64 = 1 << 20;

enum Cache {
    /// `/etc/ld.so.cache`'s bytes.
    Read(Vec<u8>),
    /// No cache: the directories `ld.so.conf` names.
    Conf(Vec<PathBuf>),
    /// A cache that cannot be read or is not one: the loader ignores it,
    /// and so does the search.
    Ignored,
}

impl LoaderPlaces {
    pub(crate) fn of(env: &SearchEnv) -> LoaderPlaces {
        let under = |d: &String| env.under(Path::new(d));
        let cache_file = env.under(Path::new(ld_so::CACHE));
        let cache = match greta_fsread::bytes(&cache_file, ld_so::CACHE_CAP) {
            Ok(b) => Cache::Read(b),
            Err(e) if e.is_not_found() => {
                let read = |f: &str| greta_fsread::text(&env.under(Path::new(f)), CONF_CAP).ok();
                let list = |d: &str| -> Vec<String> {
                    let mut v: Vec<String> = std::fs::read_dir(env.under(Path::new(d)))
                        .into_iter()
                        .flatten()
                        .filter_map(|e| e.ok()?.file_name().into_string().ok())
                        .collect();
                    v.sort();
                    v
                };
                Cache::Conf(ld_so::conf_dirs(&read, &list).iter().map(under).collect())
            }
            Err(_) => Cache::Ignored,
        };
        LoaderPlaces {
            ld_library_path: ld_so::ld_library_path_dirs(env.ld_library_path.as_deref())
                .iter()
                .map(under)
                .collect(),
            cache,
            standard: ld_so::standard_dirs().iter().map(under).collect(),
        }
    }

    /// Every file the loader's places hold for `name`, in its order (the
    /// loader passes over one it cannot load and takes the next), each
    /// with what is there now; only a bare-name candidate where none
    /// holds it.
    pub(crate) fn resolve(&self, name: &str, env: &SearchEnv) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = Vec::new();
        let mut add = |path: PathBuf, via: Via, even_missing: bool| {
            if out.iter().any(|c| c.is_at(&path)) {
                return;
            }
            let rule = Rule::Loader {
                name: name.to_string(),
                via: Some(via),
            };
            let c = Candidate::at(path, rule);
            if even_missing || c.state != State::Missing {
                out.push(c);
            }
        };
        for d in &self.ld_library_path {
            add(d.join(name), Via::LdLibraryPath, false);
        }
        match &self.cache {
            // A file the cache names that is gone is shown (a stale cache).
            Cache::Read(bytes) => {
                if let Ok(Some(p)) = ld_so::cache_lookup(bytes, name) {
                    add(env.under(Path::new(&p)), Via::LdCache, true);
                }
            }
            Cache::Conf(dirs) => {
                for d in dirs {
                    add(d.join(name), Via::LdSoConf, false);
                }
            }
            Cache::Ignored => {}
        }
        for d in &self.standard {
            add(d.join(name), Via::StandardDir, false);
        }
        if out.is_empty() {
            out.push(Candidate::by_name(name));
        }
        out
    }
}
