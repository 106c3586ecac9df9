//! Choosing a profile for a machine (a [`Host`] its caller summarised). The ROCm torch wheels bundle their
//! own ROCm user space (HIP runtime, rocBLAS, MIOpen... under torch/lib), so
//! what has to match on the host is not /opt/rocm but:
//!   * the GPU's gfx target must be one the wheels carry kernels for, and
//!   * the kernel driver (amdgpu KMD, through /dev/kfd) must be in the window
//!     AMD supports for that user-space release (+/- about two releases).
//!
//! /opt/rocm's version is used only as evidence of which KMD release was
//! installed alongside it (amdgpu-install ships both), and said so.

use super::matrix::{loose_version, Backend, GfxOverride, LockStatus, Matrix, Profile};
use super::{Amd, Host, Kfd, Nvidia, Refusal, Result};
use greta_vocab::url_secrets::redact;

/// The chosen profile and the facts that chose it, one line each.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Selection {
    pub profile: String,
    pub reasons: Vec<String>,
    /// Variables the env's activation script must set (e.g. HSA_OVERRIDE_GFX_VERSION).
    pub env_vars: Vec<(String, String)>,
    /// Things that will not stop the install but the user should know.
    pub warnings: Vec<String>,
    /// The PEP 751 extras of this machine's GPU targets (`device-gfx1103`),
    /// for a profile with per-GPU device wheels: each GPU's own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_extras: Vec<String>,
    /// The AMD gfx targets the env's wheels run, natively or through an
    /// override the plan sets (empty for a CUDA or CPU profile): which of
    /// several GPUs the env serves.
    #[serde(skip)]
    pub served: Vec<String>,
}

/// The device extras of `gfx` on `p` (a target run through a gfx override
/// takes the device wheels of the target it runs as), one reason line.
fn device_extras(
    m: &Matrix,
    p: &Profile,
    gfx: &[String],
    reasons: &mut Vec<String>,
) -> Vec<String> {
    if p.device_extra.is_none() {
        return vec![];
    }
    let mut out: Vec<String> = Vec::new();
    let mut parts = Vec::new();
    for g in gfx {
        let as_gfx = if p.has_gfx(g) {
            g.clone()
        } else {
            match m.gfx_override(g) {
                Some(o) if p.has_gfx(&o.as_gfx) => o.as_gfx.clone(),
                _ => continue,
            }
        };
        if let Some(e) = p.device_extra_for(&as_gfx) {
            parts.push(format!("{g} -> {e}"));
            if !out.contains(&e) {
                out.push(e);
            }
        }
    }
    if !out.is_empty() {
        reasons.push(format!(
            "device wheels for each GPU target of this machine: {} (host wheels are shared)",
            parts.join(", ")
        ));
    }
    out
}

impl Matrix {
    /// Choose the profile for this machine; [`Error::Refused`](crate::Error::Refused)
    /// explains why none fits.
    pub fn select(&self, host: &Host) -> Result<Selection> {
        self.select_with(host, None)
    }

    /// As [`select`](Self::select), or check a profile named by `--profile`.
    pub fn select_with(&self, host: &Host, forced: Option<&str>) -> Result<Selection> {
        if let Some(name) = forced {
            return self.check_forced(host, self.profile(name)?);
        }
        if let Some(nv) = &host.nvidia {
            return self.select_cuda(nv);
        }
        if let Some(amd) = &host.amd {
            return Ok(self.select_rocm(amd)?);
        }
        let p = self.first_of(Backend::Cpu)?;
        p.ensure_locked()?;
        let why = if host.other_gpus.is_empty() {
            "no NVIDIA or AMD GPU found -> cpu".to_string()
        } else {
            format!(
                "no NVIDIA or AMD GPU found (only {}) -> cpu",
                host.other_gpus.join(", ")
            )
        };
        Ok(Selection {
            profile: p.name.clone(),
            reasons: vec![why],
            env_vars: vec![],
            warnings: vec![],
            device_extras: vec![],
            served: vec![],
        })
    }

    fn first_of(&self, b: Backend) -> Result<&Profile, Refusal> {
        self.profiles
            .iter()
            .find(|p| p.backend == b)
            .ok_or_else(|| Refusal {
                message: format!("{} has no {} profile", self.path.display(), b.as_str()),
                fix: "restore lock/matrix.toml from greta's repository".into(),
            })
    }

    fn select_cuda(&self, nv: &Nvidia) -> Result<Selection> {
        let p = self.first_of(Backend::Cuda)?;
        p.ensure_locked()?;
        let mut reasons = vec![format!("NVIDIA GPU {} -> {}", nv.name, p.name)];
        let mut warnings = vec![];
        match (&nv.driver, &p.driver) {
            (Some(v), Some(req)) => match loose_version(v) {
                Some(sv) if req.matches(&sv) => reasons.push(format!(
                    "NVIDIA driver {v} meets {}'s requirement {req}",
                    p.name
                )),
                Some(_) => {
                    return Err(Refusal {
                        message: format!(
                            "NVIDIA driver {v} is too old for profile {} (needs {req}, CUDA {})",
                            p.name,
                            p.backend_version.as_deref().unwrap_or("?")
                        ),
                        fix: format!(
                            "install an NVIDIA driver matching {req}, or use --profile cpu"
                        ),
                    }
                    .into())
                }
                None => warnings.push(format!(
                    "cannot read NVIDIA driver version {v:?}; {} needs {req}",
                    p.name
                )),
            },
            (None, Some(req)) => warnings.push(format!(
                "NVIDIA driver version unknown; {} needs {req}",
                p.name
            )),
            (_, None) => {}
        }
        Ok(Selection {
            profile: p.name.clone(),
            reasons,
            env_vars: vec![],
            warnings,
            device_extras: vec![],
            served: vec![],
        })
    }

    /// ROCm profiles, newest ROCm first.
    fn rocm_profiles(&self) -> Vec<&Profile> {
        let mut v: Vec<&Profile> = self
            .profiles
            .iter()
            .filter(|p| p.backend == Backend::Rocm)
            .collect();
        v.sort_by_key(|p| std::cmp::Reverse(p.backend_semver()));
        v
    }

    /// The newest locked ROCm profile that serves the host, trying each
    /// [`Pass`] in turn; a profile passed over says why in the refusal.
    fn select_rocm(&self, host: &Amd) -> Result<Selection, Refusal> {
        let gpu = gpu_label(host);
        known_gfx(host, &gpu)?;
        let kfd_line = kernel_driver(host, &gpu)?;
        let mut skipped = Vec::new();
        for pass in passes(host) {
            for p in self.rocm_profiles() {
                match self.try_rocm(p, host, pass, &kfd_line) {
                    Ok(sel) => return Ok(sel),
                    Err(Skip(Some(why))) => skipped.push(why),
                    Err(Skip(None)) => {}
                }
            }
        }
        Err(self.no_rocm_fits(host, &gpu, &skipped))
    }

    /// Profile `p` on pass `pass`: the selection, or why it was passed over.
    fn try_rocm(
        &self,
        p: &Profile,
        host: &Amd,
        pass: Pass,
        kfd_line: &str,
    ) -> Result<Selection, Skip> {
        let fit = self.gfx_fit(p, host, pass)?;
        let driver_line = driver_window(p, host).map_err(|why| Skip(Some(why)))?;
        locked(p).map_err(|why| Skip(Some(why)))?;
        let mut reasons = vec![
            format!("{driver_line}; {}", fit.lines.join("; ")),
            kfd_line.to_string(),
        ];
        let mut warnings = if fit.env_vars.is_empty() {
            Vec::new()
        } else {
            self.override_warnings(p, host)
        };
        if let Some(h) = &host.hsa_override {
            reasons.push(format!(
                "HSA_OVERRIDE_GFX_VERSION={h} is already set in this environment"
            ));
        }
        warnings.extend(unknown_host_warnings(p, host));
        let mut env_vars = fit.env_vars;
        self.serve_subset(p, host, &fit.unserved, &mut env_vars, &mut warnings);
        if pass != Pass::Native {
            warnings.extend(self.unlocked_native(p, host));
        }
        let device_extras = device_extras(self, p, &host.gfx, &mut reasons);
        Ok(Selection {
            profile: p.name.clone(),
            reasons,
            env_vars,
            warnings,
            device_extras,
            served: served_gfx(host, &fit.unserved),
        })
    }

    /// Step: how `p`'s wheels run each of the host's targets on `pass`
    /// (natively, through an override, or not at all on the subset pass),
    /// one line each; passed over (saying why on the native pass) when a
    /// target cannot run or none is served.
    fn gfx_fit(&self, p: &Profile, host: &Amd, pass: Pass) -> Result<GfxFit, Skip> {
        let mut fit = GfxFit::default();
        let mut fits = true;
        for g in &host.gfx {
            if p.has_gfx(g) {
                fit.lines.push(format!("{g} is in its wheel targets"));
            } else if let Some(o) = self.gfx_override(g).filter(|o| {
                pass == Pass::Override && p.has_gfx(&o.as_gfx) && override_suits_all(o, &host.gfx)
            }) {
                fit.lines.push(format!(
                    "{g} is not in its wheel targets; running it as {} via {}",
                    o.as_gfx,
                    fmt_env(&o.env)
                ));
                fit.env_vars.extend(o.env.iter().cloned());
            } else if pass == Pass::Subset {
                fit.unserved.push(g.clone());
            } else {
                fits = false;
            }
        }
        if fits && fit.unserved.len() < host.gfx.len() {
            return Ok(fit);
        }
        // The later passes try the same profiles again: the reason is said once.
        Err(Skip((pass == Pass::Native).then(|| {
            let lacks: Vec<&str> = host
                .gfx
                .iter()
                .filter(|g| !p.has_gfx(g))
                .map(String::as_str)
                .collect();
            format!("{}: wheels lack {}", p.name, lacks.join(", "))
        })))
    }

    /// The override warnings of a plan that runs some target through an
    /// override: what each sets, its risk and its source.
    fn override_warnings(&self, p: &Profile, host: &Amd) -> Vec<String> {
        host.gfx
            .iter()
            .filter(|g| !p.has_gfx(g))
            .filter_map(|g| {
                self.gfx_override(g).map(|o| {
                    format!(
                        "{g}: {}; risk: {} (source: {})",
                        fmt_env(&o.env),
                        o.risk,
                        o.source
                    )
                })
            })
            .collect()
    }

    /// A profile that carries every target natively but could not be
    /// used for want of its hashes: which, why, and how to lock it.
    fn unlocked_native(&self, p: &Profile, host: &Amd) -> Vec<String> {
        let mut out = Vec::new();
        for n in self.rocm_profiles() {
            if n.name != p.name && host.gfx.iter().all(|g| n.has_gfx(g)) {
                if let LockStatus::NotLocked { reason } = &n.status {
                    out.push(format!(
                        "{} carries {} natively but is not locked ({reason}); lock it with `greta lock update {} --lock-dir lock` on a machine that reaches {}, then `greta install --profile {}`",
                        n.name,
                        host.gfx.join(", "),
                        n.name,
                        first_index(n),
                        n.name
                    ));
                }
            }
        }
        out
    }

    /// Step: the refusal when no profile fits, with the fix that applies
    /// (no wheel carries the target; one does but waits for its hashes;
    /// the kernel driver is outside every window).
    fn no_rocm_fits(&self, host: &Amd, gpu: &str, skipped: &[String]) -> Refusal {
        let with_gfx: Vec<&str> = self
            .rocm_profiles()
            .into_iter()
            .filter(|p| host.gfx.iter().all(|g| p.has_gfx(g)))
            .map(|p| p.name.as_str())
            .collect();
        let fix = if with_gfx.is_empty() {
            format!(
                "no pinned torch wheel carries kernels for {}; use --profile cpu (or build torch with PYTORCH_ROCM_ARCH={})",
                host.gfx.join(", "),
                host.gfx.join(";")
            )
        } else if let Some(n) = self
            .rocm_profiles()
            .into_iter()
            .find(|p| !p.is_locked() && host.gfx.iter().all(|g| p.has_gfx(g)))
        {
            // The profile that carries the target is only waiting for
            // its hashes: say how to get them.
            format!(
                "lock {}: `greta lock update {} --lock-dir lock` on a machine that reaches {}, review the file, set status = \"locked\", then `greta install --lock-dir lock`",
                n.name,
                n.name,
                first_index(n)
            )
        } else {
            format!("install an amdgpu kernel driver in the window of {} (see docs/profiles.md), or run `greta lock update` for it", with_gfx.join(" or "))
        };
        Refusal {
            message: format!(
                "no locked ROCm profile fits {gpu} ({}): {}",
                host.gfx.join(", "),
                skipped.join("; ")
            ),
            fix,
        }
    }

    fn check_forced(&self, host: &Host, p: &Profile) -> Result<Selection> {
        p.ensure_locked()?;
        let mut reasons = vec![format!("--profile {} (chosen by the user)", p.name)];
        let mut warnings = Vec::new();
        let mut env_vars = Vec::new();
        let mut served = Vec::new();
        match p.backend {
            Backend::Cpu => {}
            Backend::Cuda => {
                if host.nvidia.is_none() {
                    warnings.push("no NVIDIA GPU found: torch will run on the CPU only".into());
                }
            }
            Backend::Rocm => match &host.amd {
                None => warnings.push("no AMD GPU found: torch will run on the CPU only".into()),
                Some(host) => {
                    let mut unserved = Vec::new();
                    for g in &host.gfx {
                        if p.has_gfx(g) {
                            reasons.push(format!("{g} is in its wheel targets"));
                        } else if let Some(o) = self
                            .gfx_override(g)
                            .filter(|o| p.has_gfx(&o.as_gfx) && override_suits_all(o, &host.gfx))
                        {
                            reasons.push(format!(
                                "{g} is not in its wheel targets; running it as {} via {}",
                                o.as_gfx,
                                fmt_env(&o.env)
                            ));
                            warnings.push(format!(
                                "{g}: {}; risk: {} (source: {})",
                                fmt_env(&o.env),
                                o.risk,
                                o.source
                            ));
                            env_vars.extend(o.env.iter().cloned());
                        } else if host.gfx.iter().any(|x| p.has_gfx(x)) {
                            // Another GPU of the host is carried natively:
                            // serve that one, as the automatic choice does.
                            unserved.push(g.clone());
                        } else {
                            let with: Vec<&str> = self
                                .rocm_profiles()
                                .into_iter()
                                .filter(|q| q.has_gfx(g))
                                .map(|q| q.name.as_str())
                                .collect();
                            return Err(Refusal {
                                message: format!("profile {} has no kernels for {g}: its torch wheels were built for {}", p.name, p.gfx.join(", ")),
                                fix: if with.is_empty() { "use --profile cpu".into() } else { format!("use --profile {}", with.join(" or ")) },
                            }
                            .into());
                        }
                    }
                    self.serve_subset(p, host, &unserved, &mut env_vars, &mut warnings);
                    served = served_gfx(host, &unserved);
                    if let Some((v, at)) = release(host) {
                        if !p.serves.matches(&v) {
                            warnings.push(format!(
                                "{at} is outside {}'s kernel-driver window {}",
                                p.name, p.serves
                            ));
                        }
                    }
                }
            },
        }
        let device_extras = match (p.backend, &host.amd) {
            (Backend::Rocm, Some(host)) => device_extras(self, p, &host.gfx, &mut reasons),
            _ => vec![],
        };
        Ok(Selection {
            profile: p.name.clone(),
            reasons,
            env_vars,
            warnings,
            device_extras,
            served,
        })
    }

    /// Where a plan serves only some of the host's GPUs (`unserved` the
    /// rest): the env's programs see only the served ones where HIP's order
    /// is known (an unserved GPU as HIP device 0 fails every launch with
    /// hipErrorInvalidImage), and a warning says which and why.
    fn serve_subset(
        &self,
        p: &Profile,
        host: &Amd,
        unserved: &[String],
        env_vars: &mut Vec<(String, String)>,
        warnings: &mut Vec<String>,
    ) {
        if unserved.is_empty() {
            return;
        }
        let served = served_hip_devices(p, host);
        if !served.is_empty() && served.len() < host.hip_order.len() {
            env_vars.push(("HIP_VISIBLE_DEVICES".to_string(), served.join(",")));
        }
        warnings.push(subset_warning(self, p, host, unserved, &served));
    }
}

/// A ROCm profile passed over on one pass, with the reason the refusal
/// gives when nothing fits (`None`: said on an earlier pass already).
#[derive(Debug, PartialEq, Eq)]
struct Skip(Option<String>);

/// How a profile's wheels run the host's targets.
#[derive(Debug, Default, PartialEq, Eq)]
struct GfxFit {
    /// One line per target: native, or run as another through an override.
    lines: Vec<String>,
    /// The overrides' variables.
    env_vars: Vec<(String, String)>,
    /// Targets it does not serve (the subset pass only).
    unserved: Vec<String>,
}

/// The host's GPUs as the messages name them.
fn gpu_label(host: &Amd) -> String {
    if host.names.is_empty() {
        "AMD GPU".to_string()
    } else {
        host.names.join(", ")
    }
}

/// Step: a GPU whose target is unknown cannot be matched to wheels.
fn known_gfx(host: &Amd, gpu: &str) -> Result<(), Refusal> {
    if host.gfx.is_empty() {
        return Err(Refusal {
            message: format!("{gpu} found but its gfx target is unknown (no KFD topology or rocminfo agent)"),
            fix: "make sure amdgpu is loaded and /dev/kfd exists (`greta doctor` explains), or choose a profile with --profile (e.g. --profile cpu)".into(),
        });
    }
    Ok(())
}

/// Step: the kernel driver's reason line; refused where /dev/kfd is
/// known to be missing (ROCm wheels reach the GPU only through it).
fn kernel_driver(host: &Amd, gpu: &str) -> Result<String, Refusal> {
    let line = match &host.kfd {
        Kfd::Missing(why) => {
            return Err(Refusal {
                message: format!("{gpu} ({}) found but {why}: ROCm wheels talk to the GPU only through the KFD", host.gfx.join(", ")),
                fix: "load the amdgpu kernel driver; in a container pass --device /dev/kfd --device /dev/dri; or use --profile cpu".into(),
            })
        }
        Kfd::Present(why) => format!("kernel driver: {why}"),
        Kfd::Unknown => "kernel driver: /dev/kfd not checked by this probe source".to_string(),
    };
    Ok(match &host.driver_version {
        Some(v) => format!("{line}; amdgpu module version {v}"),
        None => line,
    })
}

/// The selection passes for this host: native, then through an override,
/// then (GPUs of several families only) serving a subset.
fn passes(host: &Amd) -> impl Iterator<Item = Pass> + '_ {
    [Pass::Native, Pass::Override, Pass::Subset]
        .into_iter()
        .filter(|p| *p != Pass::Subset || host.gfx.len() >= 2)
}

/// The host's ROCm release as a version, with where it came from.
fn release(host: &Amd) -> Option<(semver::Version, &str)> {
    let r = host.rocm.as_ref()?;
    Some((loose_version(&r.version)?, r.at.as_str()))
}

/// Step: the kernel-driver window's reason line, or why `p` is passed over
/// (the host's release is outside its window).
fn driver_window(p: &Profile, host: &Amd) -> Result<String, String> {
    match release(host) {
        Some((v, at)) if p.serves.matches(&v) => Ok(format!(
            "{at} -> {}; its wheels serve kernel-driver releases {}",
            p.name, p.serves
        )),
        Some((v, _)) => Err(format!(
            "{}: host ROCm {v} is outside its driver window {}",
            p.name, p.serves
        )),
        None => Ok(format!(
            "no host ROCm release recorded -> {} (newest with this target; its wheels bring their own ROCm {} user space)",
            p.name,
            p.backend_version.as_deref().unwrap_or("?")
        )),
    }
}

/// Step: a profile waiting for its hashes is passed over.
fn locked(p: &Profile) -> Result<(), String> {
    if p.is_locked() {
        Ok(())
    } else {
        Err(format!("{}: not yet locked", p.name))
    }
}

/// What the chosen plan could not confirm about the host: /dev/kfd, and
/// the kernel driver's release.
fn unknown_host_warnings(p: &Profile, host: &Amd) -> Vec<String> {
    let mut out = Vec::new();
    if host.kfd == Kfd::Unknown {
        out.push(
            "could not confirm /dev/kfd; greta install checks the GPU after installing".into(),
        );
    }
    if release(host).is_none() {
        out.push(format!(
            "kernel-driver release unknown; {} needs an amdgpu KMD in {}",
            p.name, p.serves
        ));
    }
    out
}

/// A profile's first index as printed (credentials hidden).
fn first_index(p: &Profile) -> String {
    p.indexes
        .first()
        .map_or_else(|| "its index".into(), |i| redact(i).into_owned())
}

/// The host's targets a plan serves: every one but `unserved` (the others
/// run natively or through the plan's override, or the plan was refused).
fn served_gfx(host: &Amd, unserved: &[String]) -> Vec<String> {
    host.gfx
        .iter()
        .filter(|g| !unserved.contains(g))
        .cloned()
        .collect()
}

fn fmt_env(env: &[(String, String)]) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The passes of ROCm profile selection, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    Native,
    Override,
    Subset,
}

/// Whether an override's environment suits every GPU of the host: it
/// makes every GPU of the process report `as_gfx`, so each must be the
/// overridden target itself or already `as_gfx`.
fn override_suits_all(o: &GfxOverride, gfx: &[String]) -> bool {
    gfx.iter().all(|g| *g == o.gfx || *g == o.as_gfx)
}

/// The HIP device indices (ROCr's order, no selection set) of the GPUs
/// whose targets `p` carries natively; empty where the order is unknown.
fn served_hip_devices(p: &Profile, host: &Amd) -> Vec<String> {
    host.hip_order
        .iter()
        .enumerate()
        .filter(|(_, g)| g.as_deref().is_some_and(|g| p.has_gfx(g)))
        .map(|(i, _)| i.to_string())
        .collect()
}

/// What a plan that serves only some of a host's GPUs says: which are
/// not served and why no override, and how its programs see the served
/// ones.
fn subset_warning(
    m: &Matrix,
    p: &Profile,
    host: &Amd,
    unserved: &[String],
    served: &[String],
) -> String {
    let why = match unserved
        .iter()
        .find_map(|g| m.gfx_override(g).map(|o| (g, o)))
    {
        Some((g, o)) => format!(
            "{g}'s override ({}) is process-wide and would also run {} as {}",
            fmt_env(&o.env),
            host.gfx
                .iter()
                .filter(|x| !unserved.contains(x) && **x != o.as_gfx)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            o.as_gfx
        ),
        None => "no documented override exists for it".to_string(),
    };
    let select = if served.is_empty() || served.len() == host.hip_order.len() {
        "select the served GPU with HIP_VISIBLE_DEVICES (`greta doctor` lists HIP's device order)"
            .to_string()
    } else {
        format!(
            "the env sets HIP_VISIBLE_DEVICES={} (KFD order), so its programs see only the served GPU",
            served.join(",")
        )
    };
    format!(
        "{} not served: {} carries no kernels for {} and {why}; this env serves {}; {select}",
        unserved.join(", "),
        p.name,
        unserved.join(", "),
        served_gfx(host, unserved).join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LockDir;

    /// Two ROCm profiles: `new` (locked, ROCm 7.2 wheels for gfx942 and
    /// gfx1100) and `old` (not locked, gfx906 and gfx942); gfx1103 runs as
    /// gfx1100 through an override.
    fn matrix() -> Matrix {
        let text = r#"schema = 1

[profiles.cpu]
backend = "cpu"
summary = "cpu"
status = "locked"
serves = "*"
python = ["3.12"]
indexes = ["https://pypi.org/simple"]
requirements = ["torch==2.0.0"]
lockfile = "pylock.cpu.toml"

[profiles.new]
backend = "rocm"
summary = "new"
status = "locked"
backend-version = "7.2"
serves = ">=6.4.0, <7.3.0"
gfx = ["gfx942", "gfx1100"]
python = ["3.12"]
indexes = ["https://example.org/rocm7.2"]
requirements = ["torch==2.0.0"]
lockfile = "pylock.new.toml"

[profiles.old]
backend = "rocm"
summary = "old"
status = "not-locked"
not-locked-reason = "no hashes"
backend-version = "6.1"
serves = ">=5.7.0, <6.4.0"
gfx = ["gfx906", "gfx942"]
python = ["3.12"]
indexes = ["https://example.org/rocm6.1"]
requirements = ["torch==2.0.0"]
lockfile = "pylock.old.toml"

[[gfx-override]]
gfx = "gfx1103"
as = "gfx1100"
env = { HSA_OVERRIDE_GFX_VERSION = "11.0.0" }
risk = "untested kernels"
source = "a thread"
"#;
        Matrix::parse(&LockDir::built_in(), text.into()).unwrap()
    }

    fn amd(gfx: &[&str]) -> Amd {
        Amd {
            gfx: gfx.iter().map(|g| g.to_string()).collect(),
            names: vec!["Radeon".into()],
            kfd: Kfd::Present("/dev/kfd present".into()),
            ..Default::default()
        }
    }

    fn rocm(v: &str) -> Option<RocmRelease> {
        Some(RocmRelease {
            version: v.into(),
            at: format!("ROCm {v} at /opt/rocm"),
        })
    }

    use crate::RocmRelease;

    #[test]
    fn an_unknown_target_is_refused_before_any_profile() {
        let r = known_gfx(&amd(&[]), "Radeon").unwrap_err();
        assert_eq!(
            r.message,
            "Radeon found but its gfx target is unknown (no KFD topology or rocminfo agent)"
        );
        assert!(known_gfx(&amd(&["gfx942"]), "Radeon").is_ok());
    }

    #[test]
    fn the_kernel_driver_step_says_the_kfd_and_the_module_version() {
        let mut h = amd(&["gfx942"]);
        h.driver_version = Some("6.16.13".into());
        assert_eq!(
            kernel_driver(&h, "Radeon").unwrap(),
            "kernel driver: /dev/kfd present; amdgpu module version 6.16.13"
        );
        h.kfd = Kfd::Unknown;
        h.driver_version = None;
        assert_eq!(
            kernel_driver(&h, "Radeon").unwrap(),
            "kernel driver: /dev/kfd not checked by this probe source"
        );
        h.kfd = Kfd::Missing("/dev/kfd does not exist".into());
        let r = kernel_driver(&h, "Radeon").unwrap_err();
        assert_eq!(
            r.message,
            "Radeon (gfx942) found but /dev/kfd does not exist: ROCm wheels talk to the GPU only through the KFD"
        );
    }

    #[test]
    fn a_single_gpu_has_no_subset_pass() {
        let one: Vec<Pass> = passes(&amd(&["gfx942"])).collect();
        assert_eq!(one, [Pass::Native, Pass::Override]);
        let two: Vec<Pass> = passes(&amd(&["gfx942", "gfx1103"])).collect();
        assert_eq!(two, [Pass::Native, Pass::Override, Pass::Subset]);
    }

    #[test]
    fn the_gfx_step_gives_one_line_per_target_or_what_the_wheels_lack() {
        let m = matrix();
        let new = m.profile("new").unwrap();
        let fit = m.gfx_fit(new, &amd(&["gfx942"]), Pass::Native).unwrap();
        assert_eq!(fit.lines, ["gfx942 is in its wheel targets"]);
        assert!(fit.env_vars.is_empty() && fit.unserved.is_empty());

        let apu = amd(&["gfx1103"]);
        assert_eq!(
            m.gfx_fit(new, &apu, Pass::Native),
            Err(Skip(Some("new: wheels lack gfx1103".into())))
        );
        let fit = m.gfx_fit(new, &apu, Pass::Override).unwrap();
        assert_eq!(
            fit.lines,
            ["gfx1103 is not in its wheel targets; running it as gfx1100 via HSA_OVERRIDE_GFX_VERSION=11.0.0"]
        );
        assert_eq!(
            fit.env_vars,
            [("HSA_OVERRIDE_GFX_VERSION".to_string(), "11.0.0".to_string())]
        );
        // A later pass that does not fit says nothing new.
        assert_eq!(
            m.gfx_fit(new, &amd(&["gfx1010"]), Pass::Override),
            Err(Skip(None))
        );
    }

    #[test]
    fn the_subset_pass_serves_the_carried_target_only() {
        let m = matrix();
        let new = m.profile("new").unwrap();
        // gfx1103's override would also run gfx942 as gfx1100: not taken.
        let both = amd(&["gfx1103", "gfx942"]);
        assert_eq!(m.gfx_fit(new, &both, Pass::Override), Err(Skip(None)));
        let fit = m.gfx_fit(new, &both, Pass::Subset).unwrap();
        assert_eq!(fit.lines, ["gfx942 is in its wheel targets"]);
        assert_eq!(fit.unserved, ["gfx1103"]);
        // Serving none is no fit.
        assert_eq!(
            m.gfx_fit(new, &amd(&["gfx1010", "gfx1031"]), Pass::Subset),
            Err(Skip(None))
        );
    }

    #[test]
    fn the_driver_window_step_says_the_release_or_why_it_is_outside() {
        let m = matrix();
        let new = m.profile("new").unwrap();
        let mut h = amd(&["gfx942"]);
        h.rocm = rocm("7.2.4");
        assert_eq!(
            driver_window(new, &h).unwrap(),
            "ROCm 7.2.4 at /opt/rocm -> new; its wheels serve kernel-driver releases >=6.4.0, <7.3.0"
        );
        h.rocm = rocm("6.2.0");
        assert_eq!(
            driver_window(new, &h).unwrap_err(),
            "new: host ROCm 6.2.0 is outside its driver window >=6.4.0, <7.3.0"
        );
        // A release that does not read as a version counts as unknown.
        h.rocm = rocm("unknown");
        assert_eq!(
            driver_window(new, &h).unwrap(),
            "no host ROCm release recorded -> new (newest with this target; its wheels bring their own ROCm 7.2 user space)"
        );
        assert_eq!(
            unknown_host_warnings(new, &h),
            ["kernel-driver release unknown; new needs an amdgpu KMD in >=6.4.0, <7.3.0"]
        );
    }

    #[test]
    fn the_locked_step_passes_over_a_profile_without_hashes() {
        let m = matrix();
        assert_eq!(locked(m.profile("new").unwrap()), Ok(()));
        assert_eq!(
            locked(m.profile("old").unwrap()),
            Err("old: not yet locked".to_string())
        );
    }

    #[test]
    fn the_refusal_step_gives_the_fix_that_applies() {
        let m = matrix();
        // No wheel carries the target.
        let r = m.no_rocm_fits(
            &amd(&["gfx1010"]),
            "Radeon",
            &["new: wheels lack gfx1010".into()],
        );
        assert_eq!(
            r.message,
            "no locked ROCm profile fits Radeon (gfx1010): new: wheels lack gfx1010"
        );
        assert!(
            r.fix
                .starts_with("no pinned torch wheel carries kernels for gfx1010"),
            "{}",
            r.fix
        );
        // One does, waiting for its hashes.
        let r = m.no_rocm_fits(&amd(&["gfx906"]), "Radeon", &[]);
        assert!(r.fix.starts_with("lock old: `greta lock update old --lock-dir lock` on a machine that reaches https://example.org/rocm6.1"), "{}", r.fix);
        // A locked one does, outside the kernel driver's window.
        let r = m.no_rocm_fits(&amd(&["gfx1100"]), "Radeon", &[]);
        assert!(
            r.fix
                .starts_with("install an amdgpu kernel driver in the window of new"),
            "{}",
            r.fix
        );
    }

    #[test]
    fn the_steps_compose_into_the_selection() {
        let m = matrix();
        let mut h = amd(&["gfx1103"]);
        h.rocm = rocm("7.2.4");
        let host = Host {
            amd: Some(h),
            ..Default::default()
        };
        let sel = m.select(&host).unwrap();
        assert_eq!(sel.profile, "new");
        assert_eq!(
            sel.reasons,
            [
                "ROCm 7.2.4 at /opt/rocm -> new; its wheels serve kernel-driver releases >=6.4.0, <7.3.0; gfx1103 is not in its wheel targets; running it as gfx1100 via HSA_OVERRIDE_GFX_VERSION=11.0.0",
                "kernel driver: /dev/kfd present",
            ]
        );
        assert_eq!(
            sel.warnings,
            ["gfx1103: HSA_OVERRIDE_GFX_VERSION=11.0.0; risk: untested kernels (source: a thread)"]
        );
        assert_eq!(sel.served, ["gfx1103"]);
        // Nothing fits: the refusal is the crate's typed error.
        let host = Host {
            amd: Some(amd(&["gfx1010"])),
            ..Default::default()
        };
        let e = m.select(&host).unwrap_err();
        assert!(
            e.refusal().is_some_and(|r| r.message.contains("gfx1010")),
            "{e}"
        );
    }
}
