//! The one way the integration tests start greta: the real binary with
//! nothing of the developer's own state that changes what greta does. Every
//! builder in these tests starts here and then sets only what its test asks
//! for (a private HOME and XDG dirs, a lock dir, `GRETA_VK_VALIDATION`...).

use std::ffi::{OsStr, OsString};
use std::process::Command;

/// Variables cleared besides every `GRETA_*` and `XDG_*`: an active venv
/// (the doctor and the frameworks smoke look at it), colour, and the GPU
/// selection and gfx override a developer's shell may carry.
const CLEARED: [&str; 4] = [
    "VIRTUAL_ENV",
    "NO_COLOR",
    "CUDA_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
];

/// The quickest real smoke run: the ultrasafe profile on lavapipe (the CPU
/// Vulkan device every test machine has), no result file, no progress.
pub const CPU_SMOKE: [&str; 7] = [
    "smoke",
    "--device",
    "cpu",
    "--profile",
    "ultrasafe",
    "--no-save",
    "--no-progress",
];

/// Whether a variable of the tests' own environment is kept from greta.
pub fn cleared(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    name.starts_with("GRETA_") || name.starts_with("XDG_") || CLEARED.contains(&name)
}

/// Removes from `c` every variable of `inherited` (the environment the
/// child would inherit) that [`cleared`] names.
pub fn clean(c: &mut Command, inherited: impl IntoIterator<Item = OsString>) {
    for name in inherited {
        if cleared(&name) {
            c.env_remove(name);
        }
    }
    // Names the tests' environment lacks now may be set by the time a
    // child starts only through `c` itself, so these need no listing.
}

/// `greta` with this process's `GRETA_*`, `XDG_*`, `VIRTUAL_ENV`,
/// `NO_COLOR`, `CUDA_VISIBLE_DEVICES` and `HSA_OVERRIDE_GFX_VERSION` removed.
pub fn greta() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_greta"));
    clean(&mut c, std::env::vars_os().map(|(k, _)| k));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real child (`env`) started through [`clean`] sees none of the
    /// cleared variables and every other one.
    #[test]
    fn a_cleaned_child_sees_no_greta_xdg_venv_or_colour_variable() {
        let names = [
            "GRETA_HOME",
            "GRETA_LOCK_DIR",
            "XDG_DATA_HOME",
            "XDG_CACHE_HOME",
            "VIRTUAL_ENV",
            "NO_COLOR",
            "CUDA_VISIBLE_DEVICES",
            "HSA_OVERRIDE_GFX_VERSION",
            "KEPT_BY_CLEAN",
            "GRETAX",
        ];
        let mut c = Command::new("env");
        for n in names {
            c.env(n, "set");
        }
        clean(&mut c, names.map(OsString::from));
        let o = c.output().expect("env runs");
        let seen = String::from_utf8(o.stdout).unwrap();
        let set: Vec<&str> = seen
            .lines()
            .filter_map(|l| l.strip_suffix("=set"))
            .collect();
        assert_eq!(set.len(), 2, "{seen}");
        assert!(
            set.contains(&"KEPT_BY_CLEAN") && set.contains(&"GRETAX"),
            "{seen}"
        );
    }

    /// What this process has of them is removed from greta's command.
    #[test]
    fn greta_starts_without_this_processes_cleared_variables() {
        let c = greta();
        let removed: Vec<&OsStr> = c
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k)
            .collect();
        for (k, _) in std::env::vars_os() {
            assert_eq!(cleared(&k), removed.contains(&k.as_os_str()), "{k:?}");
        }
    }
}
