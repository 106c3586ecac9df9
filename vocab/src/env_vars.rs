//! Every `GRETA_*` environment variable, documented once (after uv's
//! `uv-static` `EnvVars`). Code names a variable by its constant here
//! (`EnvVars::GRETA_LOCK_DIR`), `docs/env.md` is generated from this list,
//! and a test fails when the source, the scripts or the docs name a
//! variable that is not here, or when one here is used nowhere.

/// Who a variable is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Read by greta: a user may set it.
    User,
    /// Set by greta for what runs in its envs (the activate script).
    Exported,
    /// Read by the scripts beside greta (`scripts/slurm`, `scripts/gpu`).
    Script,
    /// Test and development hooks; never needed in normal use.
    Test,
}

impl Scope {
    pub fn title(self) -> &'static str {
        match self {
            Scope::User => "Read by greta",
            Scope::Exported => "Set by greta in its envs",
            Scope::Script => "Read by the scripts beside greta",
            Scope::Test => "Test and development hooks",
        }
    }
}

/// One variable of the registry.
#[derive(Clone, Copy, Debug)]
pub struct EnvVar {
    pub name: &'static str,
    pub scope: Scope,
    /// What it does, one paragraph (the doc comment of its constant).
    pub doc: &'static str,
}

macro_rules! env_vars {
    ($( $(#[doc = $doc:literal])+ $scope:ident $name:ident; )*) => {
        /// The `GRETA_*` variables, one constant each.
        pub struct EnvVars;

        impl EnvVars {
            $(
                $(#[doc = $doc])+
                pub const $name: &'static str = stringify!($name);
            )*

            /// The whole registry, in declaration order.
            pub const ALL: &'static [EnvVar] = &[
                $( EnvVar { name: stringify!($name), scope: Scope::$scope, doc: concat!($($doc),+) }, )*
            ];
        }
    };
}

env_vars! {
    /// The lock set to use (a directory with `matrix.toml` and the
    /// `pylock.*.toml` files) instead of the one built into greta; `--lock-dir`
    /// wins over it. `greta lock list` says which set is in effect and why.
    User GRETA_LOCK_DIR;
    /// Where greta keeps its envs (`$GRETA_HOME/envs`); else
    /// `$XDG_DATA_HOME/greta/envs`, else `~/.local/share/greta/envs`. An
    /// absolute path without control characters (it is written into each
    /// env's activation script).
    User GRETA_HOME;
    /// The uv binary to install wheels with (instead of uv on PATH or the
    /// pinned uv greta bootstraps); refused by name unless its `--version`
    /// answers as uv's does.
    User GRETA_UV;
    /// Downloads at once (default 4, at least 1, at most 64).
    User GRETA_FETCH_JOBS;
    /// Attempts per file that add no byte before a download gives up
    /// (default 5, at least 1: the first attempt counts).
    User GRETA_FETCH_ATTEMPTS;
    /// First retry delay in milliseconds, doubled per attempt.
    User GRETA_FETCH_BACKOFF_MS;
    /// Seconds without progress before a download attempt is abandoned
    /// (at least 1).
    User GRETA_FETCH_TIMEOUT_S;
    /// `1`: re-hash every cached wheel on every use, not only when its
    /// verification stamp no longer matches (bit rot).
    User GRETA_VERIFY_CACHE;
    /// `1`: turn the Vulkan validation layers on for every device greta opens.
    User GRETA_VK_VALIDATION;
    /// Milliseconds of warm-up before Vulkan timings (measurements); a whole
    /// number, at most 60000 (larger values are 60000).
    User GRETA_VK_WARMUP_MS;
    /// Seconds `greta doctor --from` waits on a pipe or FIFO (`--from
    /// <(rocminfo)`, `--from -`) for its writer to open it, write more or
    /// close it, before it gives up on that file (default 60, at most 3600).
    User GRETA_FROM_WAIT_S;
    /// The tuning cache directory, or `off` (default `$XDG_CACHE_HOME/greta/tuning`).
    /// A path in UTF-8 without control characters: another is refused,
    /// named, and the run's tuning kept in memory.
    User GRETA_TUNING_CACHE;
    /// The compiled-kernel cache of the HIP/CUDA backends (default
    /// `$XDG_CACHE_HOME/greta/gpu-kernels`). A path in UTF-8 without
    /// control characters: another is refused, named (exit 2).
    User GRETA_KERNEL_CACHE;
    /// The HIP runtime library to load (a file, or a directory holding it),
    /// before greta's search. A path in UTF-8 without control characters:
    /// another is refused, named.
    User GRETA_HIP_LIB;
    /// The CUDA driver library to load (a file), before the loader's names.
    /// A path in UTF-8 without control characters: another is refused, named.
    User GRETA_CUDA_LIB;
    /// The NVRTC library to load (a file), before greta's search. A path
    /// in UTF-8 without control characters: another is refused, named.
    User GRETA_NVRTC_LIB;
    /// The one architecture greta's CUDA kernels are compiled for, in place
    /// of the device's list (on compute capability 9.0: `sm_90a`, then
    /// `sm_90`). It must be one of them: `sm_90` on an H100 or H200 builds
    /// without the sm_90a kernels (the Hopper GEMMs of gemm_f16 and
    /// linear_f16), so every gate runs the `mma.sync` kernels; another
    /// value is refused, named, and the device is not opened.
    User GRETA_CUDA_ARCH;
    /// The greta env in use: exported by its `bin/activate`; the HIP search
    /// looks in its ROCm wheels first. An absolute directory in UTF-8
    /// without control characters: another is not searched, with a warning
    /// naming it.
    Exported GRETA_ENV;
    /// The profile of the active greta env, exported by its `bin/activate`.
    Exported GRETA_PROFILE;
    /// Slurm health check: its configuration file.
    Script GRETA_HC_CONF;
    /// Slurm health check: seconds before greta is stopped (default 50).
    Script GRETA_HC_TIMEOUT;
    /// Slurm health check: a file to append one line per run to.
    Script GRETA_HC_LOG;
    /// Slurm health check: `0` keeps a node up when greta cannot decide (exit 2).
    Script GRETA_HC_DRAIN_ON_UNKNOWN;
    /// Slurm health check: greta's arguments (default `--profile health --device all`).
    Script GRETA_ARGS;
    /// Slurm health check: also write a node_exporter textfile here.
    Script GRETA_PROM;
    /// `scripts/gpu/bench.sh`: extra arguments for every smoke run.
    Script GRETA_SMOKE_ARGS;
    /// TEST-ONLY: faults to inject into a smoke run (`--inject`), also
    /// passed to the HIP/CUDA device child.
    Test GRETA_SMOKE_INJECT;
    /// TEST-ONLY: `1` makes the deliberately broken and slow gates selectable.
    Test GRETA_SMOKE_TEST_GATES;
    /// TEST-ONLY: hold greta at the named step (an install step, or an
    /// output written but not yet renamed into place: `write-prom`,
    /// `write-page`, `write-result`, `write-capture`, `write-fix`), so the kill and
    /// interrupt tests send their signal at an observed state.
    Test GRETA_TEST_PAUSE_AT;
    /// TEST-ONLY: the python the installer tests build envs with.
    Test GRETA_TEST_PYTHON;
    /// TEST-ONLY: `1` runs the framework gates on a real CPU-profile install.
    Test GRETA_TEST_CPU_PROFILE;
    /// TEST-ONLY: where the CPU-profile test keeps its downloaded wheels.
    Test GRETA_TEST_CACHE;
    /// TEST-ONLY: a file whose presence holds the import check (interrupt tests).
    Test GRETA_TEST_IMPORT_HOLD;
    /// TEST-ONLY: the seed of the runtime tests' random inputs (printed by each run).
    Test GRETA_TEST_SEED;
    /// TEST-ONLY: a child test process that must find no Vulkan driver.
    Test GRETA_CHILD_NO_DRIVER;
    /// TEST-ONLY: a child test process that sees one GPU through two ICDs.
    Test GRETA_CHILD_DUP_ICD;
    /// TEST-ONLY: the release binary the standalone tests check (and the one
    /// the every-target HIP compile test runs in the sid chroot).
    Test GRETA_STANDALONE_BIN;
    /// TEST-ONLY: seconds of blind mutation per fuzz target in the CI run (default 15).
    Test GRETA_FUZZ_SECS;
    /// TEST-ONLY: the mutator seed of a fuzz run to replay (printed by each run).
    Test GRETA_FUZZ_SEED;
    /// TEST-ONLY: rounds of the probe's `--from` robustness test.
    Test GRETA_FUZZ_ROUNDS;
    /// TEST-ONLY: `1` rewrites the generated docs: `docs/env.md` from this
    /// registry, and docs/hip.md's target tables (installer's hip_targets and
    /// cuda_targets tests).
    Test GRETA_UPDATE_DOCS;
    /// A published-peak file for `greta smoke` to use instead of the built-in
    /// `smoke/data/specs.toml` (same format): fractions of spec and the
    /// `perf` profile's spec floors for a device greta does not know, or
    /// corrected figures for one it does (docs/smoke.md).
    User GRETA_SPECS;
    /// TEST-ONLY: the Debian sid chroot with ROCm 6.4.3 (`scripts/sid-chroot.sh`'s
    /// cache, e.g. `target/sid-rocm`) the every-target HIP compile test uses; set
    /// (scripts/test.sh sets it), that test is required and fails without it.
    Test GRETA_SID_ROCM;
    /// TEST-ONLY: the Debian sid chroot with Mesa's RADV and amdgpu drm-shim
    /// (`scripts/sid-chroot.sh --profile radv`'s cache, e.g. `target/sid-radv`) the
    /// every-Radeon Vulkan compile test uses; set (scripts/test.sh sets it), that
    /// test is required and fails without it.
    Test GRETA_SID_RADV;
    /// TEST-ONLY: where Debian sid's NVRTC is unpacked (`scripts/sid-nvrtc.sh`'s
    /// cache, e.g. `target/sid-nvrtc`) for the every-architecture CUDA compile
    /// test, which fetches it itself when missing and skips only when the
    /// Debian mirror cannot be reached; set (scripts/test.sh sets it), that
    /// test is required and fails then too.
    Test GRETA_SID_NVRTC;
}

/// `docs/env.md`, rendered from the registry.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Environment variables\n\nGenerated from `vocab/src/env_vars.rs` (the one list greta's code reads\n\
         its variables from); a test fails when this page and the list differ\n\
         (`GRETA_UPDATE_DOCS=1 cargo test -p greta-vocab` rewrites it).\n",
    );
    for scope in [Scope::User, Scope::Exported, Scope::Script, Scope::Test] {
        out.push_str(&format!(
            "\n## {}\n\n| variable | meaning |\n| --- | --- |\n",
            scope.title()
        ));
        for v in EnvVars::ALL.iter().filter(|v| v.scope == scope) {
            let doc = v.doc.split_whitespace().collect::<Vec<_>>().join(" ");
            out.push_str(&format!("| `{}` | {} |\n", v.name, doc.replace('|', "\\|")));
        }
    }
    out
}
