//! Step 1, plan: matrix → profile (explained), interpreter, lockfile →
//! wheel set. Everything that can be wrong with the inputs fails here,
//! before a single file is written.

use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use greta_vocab::{size, Visible};

use super::detect::probe_facts;
use crate::envs::{installer, ProbeSummary};
use crate::fetch::{Cache, PinnedWheel};
use greta_lockset::{self as lock, Interpreter, LockDir, Matrix, Profile, Selection, WheelPin};

/// What was decided before anything is written.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub profile: String,
    pub backend: greta_vocab::Backend,
    pub backend_version: Option<String>,
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
    pub env_vars: BTreeMap<String, String>,
    /// The device extras installed besides the host wheels (a profile with
    /// per-GPU device wheels): this machine's GPU targets, each one's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_extras: Vec<String>,
    pub python: PythonPlan,
    pub lockfile: PathBuf,
    /// The lock set the profile came from, and why it is in effect.
    pub lock_dir: LockDir,
    pub lock_sha256: greta_vocab::Sha256,
    pub wheels: Vec<WheelPin>,
    /// Probe summary (what the profile was chosen from).
    pub probe: ProbeSummary,
    /// The interpreter query's answer, stored in the query cache once the
    /// install starts writing (planning writes nothing).
    #[serde(skip)]
    pub queried_interpreter: Option<Interpreter>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PythonPlan {
    pub path: Option<PathBuf>,
    pub version: String,
    pub why: String,
}

pub struct PlanInput<'a> {
    pub lock_dir: &'a LockDir,
    pub profile: Option<&'a str>,
    /// A real interpreter to inspect.
    pub python: Option<&'a Path>,
    /// "X.Y" for a synthetic interpreter (bundles for another node).
    pub python_version: Option<&'a str>,
    pub sysroot: Option<&'a Path>,
    /// Probe this machine (install); a bundle is for another node, so its
    /// facts would be the wrong ones.
    pub probe: bool,
}

/// Step 1: every input read and validated, nothing written.
///
/// The probe runs on its own thread while the interpreter is asked (when
/// the profile or the interpreter path is already known) and the lockfile of
/// a `--profile` is read: a warm `greta install` spends its plan time on
/// whichever is slowest, not on their sum.
pub fn plan(input: &PlanInput) -> Result<Plan> {
    let matrix = Matrix::load(input.lock_dir)?;
    let cache_dir = Cache::default_root().ok();
    let forced = input.profile.and_then(|n| matrix.profile(n).ok());
    std::thread::scope(|s| {
        let probe = input
            .probe
            .then(|| s.spawn(|| probe_facts(input.sysroot, input.profile.is_some())));
        // The interpreter does not depend on the facts when its path is
        // given or the profile is forced: ask it while the probe runs.
        let early = match (input.python, forced) {
            (Some(_), _) | (None, Some(_)) if input.probe => {
                let cache = cache_dir.as_deref();
                Some(s.spawn(move || match forced {
                    Some(p) => interpreter(p, input.python, input.python_version, cache),
                    None => interpreter_at(input.python.expect("path given"), cache),
                }))
            }
            _ => None,
        };
        let forced_lock = forced.map(|p| (p.name.clone(), p.load_lockfile()));
        let (facts, mut probe) = match probe {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("the probe panicked"))??,
            None => (
                Default::default(),
                ProbeSummary::not_probed("not probed: bundle for another node"),
            ),
        };
        let sel: Selection = matrix.select_with(&super::host::of(&facts), input.profile)?;
        let profile = matrix.profile(&sel.profile)?.clone();
        profile.ensure_locked()?;
        // Which of several AMD GPUs the env serves: the selection decided
        // it (natively carried, or run through the override it sets).
        probe.mark_served(|gfx| sel.served.iter().any(|s| s.eq_ignore_ascii_case(gfx)));
        let (interp, why, queried) = match early {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("interpreter check panicked"))??,
            None => interpreter(
                &profile,
                input.python,
                input.python_version,
                cache_dir.as_deref(),
            )?,
        };
        let lockfile = match forced_lock {
            Some((name, l)) if name == profile.name => l?,
            _ => profile.load_lockfile()?,
        };
        let wheels = lock::resolve(&profile, &lockfile, &interp, &sel.device_extras)?;
        if wheels.is_empty() {
            bail!(
                "{}: no package applies to {}",
                lockfile.path.display(),
                interp.describe()
            );
        }
        for w in &wheels {
            crate::fetch::validate(&artifact(w))?;
        }
        Ok(Plan {
            profile: profile.name.clone(),
            backend: profile.backend,
            backend_version: profile.backend_version.clone(),
            reasons: sel.reasons,
            warnings: sel.warnings,
            env_vars: sel.env_vars.into_iter().collect(),
            device_extras: sel.device_extras,
            python: PythonPlan {
                path: interp.path.clone(),
                version: interp.version.clone(),
                why,
            },
            lockfile: lockfile.path.clone(),
            lock_dir: input.lock_dir.clone(),
            lock_sha256: lockfile.sha256,
            wheels,
            probe,
            queried_interpreter: queried,
        })
    })
}

pub fn artifact(w: &WheelPin) -> PinnedWheel {
    w.wheel.clone()
}

/// `--python PATH`, else the newest interpreter on PATH the profile supports.
fn interpreter(
    profile: &Profile,
    path: Option<&Path>,
    version: Option<&str>,
    cache: Option<&Path>,
) -> Result<Found> {
    if let Some(v) = version {
        let i = Interpreter::synthetic(v, lock::host_glibc())?;
        if !profile.supports_python(&i.xy()) {
            bail!(lock::Refusal {
                message: format!(
                    "profile `{}` does not support Python {}",
                    profile.name,
                    i.xy()
                ),
                fix: format!("use one of Python {}", profile.python.join(", ")),
            });
        }
        return Ok((i, format!("--python {v} (no interpreter run)"), None));
    }
    if let Some(p) = path {
        return interpreter_at(p, cache);
    }
    let mut tried = Vec::new();
    for xy in profile
        .python
        .iter()
        .rev()
        .filter(|v| profile.supports_python(v))
    {
        let exe = format!("python{xy}");
        if let Ok(p) = which::which(&exe) {
            match Interpreter::inspect_cached(&p, cache) {
                Ok((i, hit)) if i.xy() == *xy => {
                    return Ok((
                        behind_shim(i.clone()),
                        format!(
                            "newest Python on PATH that {} supports ({exe})",
                            profile.name
                        ),
                        (!hit).then_some(i),
                    ));
                }
                Ok((i, _)) => tried.push(format!("{} is {}", p.display(), i.version)),
                Err(e) => tried.push(format!("{}: {e:#}", p.display())),
            }
        }
    }
    if let Ok(p) = which::which("python3") {
        if let Ok((i, hit)) = Interpreter::inspect_cached(&p, cache) {
            if profile.supports_python(&i.xy()) {
                return Ok((
                    behind_shim(i.clone()),
                    "python3 on PATH".to_string(),
                    (!hit).then_some(i),
                ));
            }
            tried.push(format!("{} is {}", p.display(), i.version));
        }
    }
    Err(lock::Refusal {
        message: format!(
            "python.missing: no Python that profile `{}` supports ({}) was found on PATH{}",
            profile.name,
            profile.python.join(", "),
            if tried.is_empty() { String::new() } else { format!(" (tried: {})", tried.join("; ")) }
        ),
        fix: format!("install one (e.g. apt-get install python3 python3-venv) or pass --python PATH to a Python {}", profile.python.join("/")),
    }
    .into())
}

/// An interpreter to build with, why it was chosen, and, when the query
/// cache did not have it, the answer as asked (before a shim was looked
/// behind), to be stored there.
type Found = (Interpreter, String, Option<Interpreter>);

/// `--python PATH`: that interpreter (behind a pyenv-style shim).
fn interpreter_at(p: &Path, cache: Option<&Path>) -> Result<Found> {
    let (i, hit) = Interpreter::inspect_cached(p, cache)?;
    Ok((
        behind_shim(i.clone()),
        format!("--python {}", p.display()),
        (!hit).then_some(i),
    ))
}

/// pyenv/asdf put shell scripts named `python3.X` on PATH that cost a
/// shell and a lookup on every start; the env is built from (and records)
/// the interpreter behind them.
fn behind_shim(mut i: Interpreter) -> Interpreter {
    let Some(p) = i.path.clone() else { return i };
    let mut head = [0u8; 2];
    let is_script = crate::read::open_regular(&p)
        .ok()
        .is_some_and(|mut f| std::io::Read::read_exact(&mut f, &mut head).is_ok())
        && &head == b"#!";
    if !is_script {
        return i;
    }
    let mut cmd = std::process::Command::new(&p);
    cmd.args(["-I", "-S", "-c", "import sys; print(sys.executable)"]);
    if let Ok(o) = installer::run(cmd, Some(Duration::from_secs(20))) {
        let real = PathBuf::from(o.stdout.trim());
        if o.status.success() && real.is_absolute() && real.is_file() {
            i.path = Some(real);
        }
    }
    i
}

/// The plan, one line per decision, for people.
/// How much of the plan to say: `Summary` is the default install's few
/// lines (which profile and why, the Python, the lock, one line for the
/// wheels); `Wheels` adds each wheel with the marker and tag that chose it
/// (`--dry-run`, `-v`, `greta bundle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// The profile, why, and the lock: no word of the wheels (an env that
    /// is already up to date fetches none).
    Choice,
    Summary,
    Wheels,
}

///
/// The lock set, the probed machine and the interpreter are outside
/// greta: every string of theirs is printed through [`Visible`].
pub fn explain(plan: &Plan, detail: Detail) -> String {
    let mut s = format!("profile {} ({}):\n", Visible(&plan.profile), plan.backend);
    for r in &plan.reasons {
        s.push_str(&format!("  - {}\n", Visible(r)));
    }
    for w in &plan.warnings {
        s.push_str(&format!("  ! {}\n", Visible(w)));
    }
    for (k, v) in &plan.env_vars {
        s.push_str(&format!(
            "  env: {}={} (set by greta-activate)\n",
            Visible(k),
            Visible(v)
        ));
    }
    s.push_str(&format!(
        "python {}: {}\n",
        Visible(&plan.python.version.to_string()),
        Visible(&plan.python.why)
    ));
    s.push_str(&format!("lock set: {}\n", Visible(&plan.lock_dir.why())));
    s.push_str(&format!(
        "lockfile {} (sha256 {})\n",
        Visible(&plan.lockfile.display().to_string()),
        &plan.lock_sha256.to_string()[..16]
    ));
    if plan.backend == greta_vocab::Backend::Rocm {
        let gfx = plan.probe.amd_gfx();
        s.push_str(&format!(
            "HIP step: no build; greta loads libamdhip64 + hiprtc at run time (the env's own ROCm wheels first), the smoke gate runs with --backend hip{}\n",
            if gfx.is_empty() {
                String::new()
            } else {
                format!(
                    " (kernels compiled by hiprtc for {})",
                    Visible(&gfx.join(", "))
                )
            }
        ));
    }
    let total = total_size(plan);
    if !plan.device_extras.is_empty() {
        s.push_str(&format!(
            "device wheels: {} (this machine's GPU targets; the host wheels are shared)\n",
            Visible(&plan.device_extras.join(", "))
        ));
    }
    if detail == Detail::Choice {
        return s;
    }
    if detail == Detail::Summary {
        s.push_str(&format!(
            "{} wheels, {total} (each wheel and why: --dry-run or -v)\n",
            plan.wheels.len(),
        ));
        return s;
    }
    s.push_str(&format!("{} wheels, {total}:\n", plan.wheels.len()));
    for w in &plan.wheels {
        let size = w.wheel.size.map_or_else(
            || ", size not recorded".to_string(),
            |b| format!(", {}", size::bytes(b)),
        );
        s.push_str(&format!(
            "  {} {}  {}{size}\n      {}\n",
            Visible(&w.wheel.name),
            Visible(&w.wheel.version.to_string()),
            Visible(&w.wheel.filename),
            Visible(&w.why)
        ));
    }
    s
}

/// The download as the lockfile records it: `2.9 GiB in all`, or, when
/// some wheels have no recorded size, what is known and which are not
/// counted (a plan holding torch is not "295.8 MiB").
fn total_size(plan: &Plan) -> String {
    let known: u64 = plan.wheels.iter().filter_map(|w| w.wheel.size).sum();
    let unknown: Vec<&str> = plan
        .wheels
        .iter()
        .filter(|w| w.wheel.size.is_none())
        .map(|w| w.wheel.name.as_str())
        .collect();
    match unknown.as_slice() {
        [] => format!("{} in all", size::bytes(known)),
        names => {
            const SHOWN: usize = 3;
            let mut list = names
                .iter()
                .take(SHOWN)
                .map(|n| Visible(n).to_string())
                .collect::<Vec<_>>()
                .join(", ");
            if names.len() > SHOWN {
                list += &format!(" and {} more", names.len() - SHOWN);
            }
            format!(
                "{} recorded plus {} whose size the lockfile does not record ({list})",
                size::bytes(known),
                names.len()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wheel without a recorded size is never counted as nothing: the
    /// total says how many are missing and names them.
    #[test]
    fn an_unrecorded_size_is_said_not_summed_as_zero() {
        let mut p = plan_for("cpu", "3.12").unwrap();
        let all = p.wheels.len();
        let whole = explain(&p, Detail::Summary);
        assert!(whole.contains(" in all "), "{whole}");
        let torch = p
            .wheels
            .iter_mut()
            .find(|w| w.wheel.name.as_str() == "torch")
            .unwrap();
        let torch_size = torch.wheel.size.take().unwrap();
        assert!(torch_size > 0);
        let s = explain(&p, Detail::Summary);
        assert!(!s.contains(" in all"), "{s}");
        assert!(
            s.contains(&format!("{all} wheels, "))
                && s.contains("plus 1 whose size the lockfile does not record (torch)"),
            "{s}"
        );
        let d = explain(&p, Detail::Wheels);
        assert!(d.contains("size not recorded"), "{d}");
    }

    /// A plan for another node: no probe, no interpreter run, the built-in
    /// lock set. Nothing here touches the network or a GPU.
    fn plan_for(profile: &str, python: &str) -> Result<Plan> {
        plan(&PlanInput {
            lock_dir: &LockDir::built_in(),
            profile: Some(profile),
            python: None,
            python_version: Some(python),
            sysroot: None,
            probe: false,
        })
    }

    #[test]
    fn a_forced_profile_plans_its_wheels_without_probing() {
        let p = plan_for("cpu", "3.12").unwrap();
        assert_eq!(
            (p.profile.as_str(), p.backend),
            ("cpu", greta_vocab::Backend::Cpu)
        );
        assert_eq!(p.python.why, "--python 3.12 (no interpreter run)");
        assert!(p.python.path.is_none());
        assert_eq!(p.probe.sources(), ["not probed: bundle for another node"]);
        assert!(p.lockfile.ends_with("pylock.cpu.toml"), "{:?}", p.lockfile);
        assert!(
            p.wheels.iter().any(|w| w.wheel.name == "torch"),
            "{:?}",
            p.wheels
        );
        for w in &p.wheels {
            crate::fetch::validate(&artifact(w)).unwrap();
            assert!(
                w.wheel.filename.contains("312") || w.wheel.filename.contains("py3"),
                "{}",
                w.wheel.filename
            );
        }
        assert!(p.queried_interpreter.is_none());
    }

    #[test]
    fn an_unsupported_python_is_refused_with_the_supported_ones() {
        let e = plan_for("cpu", "3.9").unwrap_err();
        let r = e.downcast_ref::<lock::Refusal>().expect("a refusal");
        assert_eq!(r.message, "profile `cpu` does not support Python 3.9");
        assert!(r.fix.contains("3.12"), "{}", r.fix);
    }

    #[test]
    fn the_explanation_has_one_line_per_decision() {
        let p = plan_for("cpu", "3.12").unwrap();
        let s = explain(&p, Detail::Wheels);
        assert!(s.starts_with("profile cpu (cpu):\n"), "{s}");
        assert!(
            s.contains("python 3.12.0: --python 3.12 (no interpreter run)\n"),
            "{s}"
        );
        assert!(s.contains(&format!("{} wheels, ", p.wheels.len())), "{s}");
        assert!(!s.contains("HIP step"), "{s}");
        assert!(s.contains("no marker; tag "), "{s}");
    }

    /// The default install says which profile and why in a few
    /// lines; the per-wheel reasoning (two lines a wheel) only on request.
    #[test]
    fn the_summary_leaves_out_the_per_wheel_reasoning() {
        let p = plan_for("cpu", "3.12").unwrap();
        let s = explain(&p, Detail::Summary);
        assert!(s.starts_with("profile cpu (cpu):\n"), "{s}");
        assert!(!s.contains("no marker") && !s.contains("(rank "), "{s}");
        assert!(
            s.contains(&format!(
                "{} wheels, {} in all (each wheel and why: --dry-run or -v)\n",
                p.wheels.len(),
                size::bytes(p.wheels.iter().filter_map(|w| w.wheel.size).sum())
            )),
            "{s}"
        );
        assert!(s.lines().count() < 10, "{s}");
        assert!(explain(&p, Detail::Wheels).lines().count() > 2 * p.wheels.len());
    }
}
