//! The post-install check: the framework gates (`greta-frameworks`) in the
//! staged env, before the swap. torch, triton and jax are imported in the
//! env's own interpreter (`-I`, a process group with a time limit) and,
//! unless `--no-smoke`, compute on the device against float64 references;
//! what torch says it was built for is compared with the profile.
//! Any failure is a finding and the previous env stays.

use anyhow::Result;
use greta_frameworks::{self as frameworks, judge, Request};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// A finding of the check: the doctor's shape (`greta install --json` and
/// `greta doctor --json` carry the same objects).
pub use greta_vocab::Finding;

#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Per module: what it reported (version, file, build, device, gates).
    pub modules: super::check_results::Checks,
    pub findings: Vec<Finding>,
}

/// What the profile promises about the torch build.
#[derive(Debug, Clone)]
pub struct Expect {
    pub profile: String,
    pub backend: greta_vocab::Backend,
    /// e.g. "6.4" for rocm6.4, "12.6" for a cuda profile; None: any.
    pub version: Option<String>,
    /// The probe summary the plan was made from (its GPUs name the device
    /// the gates must run on).
    pub probe: super::ProbeSummary,
}

impl Expect {
    /// The GPU a rocm or cuda profile's frameworks must use (the cpu
    /// profile runs on the CPU, whatever the machine has).
    fn gpu(&self) -> Option<judge::GpuWant> {
        let (vendor, key) = match self.backend {
            greta_vocab::Backend::Rocm => (judge::Vendor::Amd, greta_probe::Vendor::Amd),
            greta_vocab::Backend::Cuda => (judge::Vendor::Nvidia, greta_probe::Vendor::Nvidia),
            greta_vocab::Backend::Cpu => return None,
        };
        Some(judge::GpuWant {
            vendor,
            names: self.probe.gpu_names(key),
        })
    }
}

/// Module names to import for the wheel set: only what was installed.
pub fn modules_for(wheel_names: &[String]) -> Vec<String> {
    frameworks::modules_for(wheel_names)
}

/// The check's interpreter, started and waiting for [`Prestarted::run`].
pub struct Prestarted {
    started: Option<Result<frameworks::Started>>,
}

/// Starts the env's interpreter on the gate script for `modules`; it waits
/// for "go" before importing anything. Started while the wheels are still
/// being installed, its start-up is off the install's critical path, and
/// what it checks is unchanged (it re-reads site-packages first). With
/// `gates` off (`--no-smoke`) the modules are only imported and inspected.
/// Dropped without `run`, it is killed with everything it started.
pub fn prestart(
    venv: &Path,
    modules: &[String],
    env_vars: &BTreeMap<String, String>,
    gates: bool,
) -> Prestarted {
    let started = (!modules.is_empty()).then(|| {
        let mut req = Request::new(venv.join("bin").join("python"));
        req.modules = modules.to_vec();
        req.gates = gates;
        req.isolated = true;
        req.env = gate_env(env_vars, |k| std::env::var_os(k).is_some());
        req.expect.env_root = Some(venv.to_path_buf());
        req.expect.require_all = true;
        frameworks::start(req)
    });
    Prestarted { started }
}

/// The plan's variables as the gates get them: as the activation script
/// exports them, where a device selection the plan chose yields to one
/// already set (`is_set`), so the gates see the GPUs the env's users will.
fn gate_env(
    env_vars: &BTreeMap<String, String>,
    is_set: impl Fn(&str) -> bool,
) -> BTreeMap<String, String> {
    let user_selects = greta_probe::SELECTION_VARS.iter().any(|k| is_set(k));
    env_vars
        .iter()
        .filter(|(k, _)| !(user_selects && greta_probe::SELECTION_VARS.contains(&k.as_str())))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl Prestarted {
    /// Lets the interpreter import (and gate) the modules, each within
    /// `timeout`, and judges what they report against the profile.
    pub fn run(mut self, expect: &Expect, timeout: Duration) -> Result<CheckReport> {
        let Some(started) = self.started.take() else {
            return Ok(CheckReport {
                modules: Default::default(),
                findings: vec![],
            });
        };
        let mut p = started?;
        let req = p.request_mut();
        req.timeout = timeout;
        req.expect.label = format!("profile {}", expect.profile);
        req.expect.backend = Some(expect.backend);
        req.expect.version = expect.version.clone();
        req.expect.gpu = expect.gpu();
        let checked = p.run();
        Ok(CheckReport {
            modules: super::check_results::of_run(
                checked.run.as_ref(),
                &checked.judged,
                checked.request.seed,
                checked.request.gates,
            ),
            findings: checked.judged.findings,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    #[test]
    fn the_gates_get_the_plans_selection_only_where_none_is_set() {
        let mut plan = BTreeMap::new();
        plan.insert("HIP_VISIBLE_DEVICES".to_string(), "1".to_string());
        plan.insert("HSA_ENABLE_SDMA".to_string(), "0".to_string());
        assert_eq!(super::gate_env(&plan, |_| false), plan);
        let kept = super::gate_env(&plan, |k| k == "ROCR_VISIBLE_DEVICES");
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["HSA_ENABLE_SDMA"]);
    }
}
