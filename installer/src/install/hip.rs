//! Step 5b for rocm profiles, the HIP runtime: no build, only the runtime
//! and compiler greta will load for the staged env, recorded in the
//! receipt.

use super::{say, Plan};
use crate::envs::{self, build::Staging, check};

/// Step 5b for rocm profiles: no build. Finds the HIP runtime greta will
/// load for this env (the staged env's own ROCm wheels first, then the
/// host's) and its compiler, records both; the smoke gate then runs
/// `--backend hip` on them. No HIP runtime anywhere: a finding, and the
/// previous env stays.
pub(super) fn hip_step(
    plan: &Plan,
    staging: &Staging,
    verbose: bool,
) -> std::result::Result<envs::receipt::HipRef, Box<check::Finding>> {
    use greta_runtime::gpu::Driver;
    use greta_runtime::hip::{search_candidates, Hip, SearchEnv};
    let mut env = SearchEnv::live();
    env.env_roots.insert(0, staging.path.clone());
    let hip = Hip::open_from(&search_candidates(&env)).map_err(|e| {
        Box::new(check::Finding {
            id: "hip.runtime-missing".into(),
            severity: greta_vocab::Severity::Fail,
            title: "No HIP runtime for this rocm profile".into(),
            message: "No HIP runtime (libamdhip64) was found in the staged env or on this machine, so the profile's HIP step cannot run.".into(),
            evidence: vec![e.to_string()],
            fix: greta_vocab::Fix {
                text: "The profile's torch wheels should carry libamdhip64 in torch/lib: check the lockfile; or install ROCm \
                       (or set GRETA_HIP_LIB) and rerun `greta install`; `--profile cpu` installs without HIP."
                    .into(),
                commands: vec![],
            },
        })
    })?;
    let lib = hip.library().clone();
    // hiprtc beside the runtime, else hipcc (the target is a placeholder:
    // only which compiler would be used is recorded here).
    let compiler = greta_runtime::hip::compiler_for_target(&hip, "gfx")
        .ok()
        .map(|c| c.library.to_string());
    say(
        verbose,
        format!(
            "HIP runtime {lib}; compiler {}",
            compiler.as_deref().unwrap_or("none found")
        ),
    );
    Ok(envs::receipt::HipRef {
        library: lib.path.display().to_string(),
        library_why: lib.why,
        compiler,
        gfx: plan.probe.amd_gfx(),
    })
}
