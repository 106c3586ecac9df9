//! Where greta's library search finds libamdhip64, libcuda, libnvrtc and
//! libvulkan on this machine, without loading them (checked against
//! `/proc/self/maps`), then the CUDA and Vulkan backends opened from that
//! search: each must have mapped the first file the search found for it.
//! scripts/gpu/library-search.sh runs it on the GPU machine. Exit 1 when
//! the search mapped a library or a backend loaded another file than the
//! search's first find.

use greta_runtime::{
    find_library, open, BackendKind, CandidateState, DeviceSelect, LibraryCandidate, SearchEnv,
    VendorLibrary,
};
use std::path::PathBuf;
use std::process::ExitCode;

/// The lines of `/proc/self/maps` that map a GPU library.
fn mapped() -> Vec<String> {
    let names = ["libamdhip64", "libcuda.so", "libnvrtc", "libvulkan.so"];
    let mut v: Vec<String> = std::fs::read_to_string("/proc/self/maps")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| names.iter().any(|n| p.contains(n)))
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

fn first_found(c: &[LibraryCandidate]) -> Option<PathBuf> {
    let f = c.iter().find(|c| c.state == CandidateState::Found)?;
    Some(std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone()))
}

fn main() -> ExitCode {
    let mut ok = true;
    let before = mapped();
    println!("mapped before the search: {before:?}");
    let env = SearchEnv::live();
    let mut found = Vec::new();
    for lib in VendorLibrary::ALL {
        match find_library(lib, &env) {
            Err(e) => println!("{}: refused: {e}", lib.name()),
            Ok(c) => {
                for x in &c {
                    println!("{}: {x}", lib.name());
                }
                found.push((lib, first_found(&c)));
            }
        }
    }
    let after = mapped();
    println!("mapped after the search: {after:?}");
    if after != before {
        println!("FAIL: the search mapped a library");
        ok = false;
    }
    for (kind, lib) in [
        (BackendKind::Cuda, VendorLibrary::Cuda),
        (BackendKind::Vulkan, VendorLibrary::Vulkan),
    ] {
        // The backend is held while the maps are read: a Vulkan loader
        // is unloaded again when its last instance goes.
        let held = match open(kind, &DeviceSelect::Auto) {
            Ok(b) => {
                println!("{kind:?}: opened {}", b.info().name);
                Some(b)
            }
            Err(e) => {
                println!("{kind:?}: {e}");
                None
            }
        };
        let want = found
            .iter()
            .find(|(l, _)| *l == lib)
            .and_then(|(_, p)| p.clone());
        let now = mapped();
        println!("{kind:?}: search's first find {want:?}; mapped now {now:?}");
        if let (Some(w), Some(_)) = (want, &held) {
            if !now.iter().any(|m| std::path::Path::new(m) == w) {
                println!("FAIL: {kind:?} did not load the search's first find");
                ok = false;
            }
        }
        drop(held);
    }
    println!("{}", if ok { "PASS" } else { "FAIL" });
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
