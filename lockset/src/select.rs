//! Choosing a profile from probe facts. The ROCm torch wheels bundle their
//! own ROCm user space (HIP runtime, rocBLAS, MIOpen... under torch/lib), so
//! what has to match on the host is not /opt/rocm but:
//!   * the GPU's gfx target must be one the wheels carry kernels for, and
//!   * the kernel driver (amdgpu KMD, through /dev/kfd) must be in the window
//!     AMD supports for that user-space release (+/- about two releases).
//!
//! /opt/rocm's version is used only as evidence of which KMD release was
//! installed alongside it (amdgpu-install ships both), and said so.

use super::matrix::{loose_version, Backend, GfxOverride, LockStatus, Matrix, Profile};
use super::Refusal;
use anyhow::Result;
use greta_probe::{Facts, Vendor};
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

/// What greta knows about the AMD side of the host.
struct AmdHost {
    gfx: Vec<String>,
    names: Vec<String>,
    kfd: KfdState,
    /// Host ROCm release taken as evidence of the KMD release, with where it came from.
    release: Option<(semver::Version, String)>,
    hsa_override: Option<String>,
    /// amdgpu module version (DKMS builds report one; in-tree drivers do not).
    driver_version: Option<String>,
    /// Each AMD GPU's gfx target in ROCr's order (HIP device i with no
    /// selection set), where the facts give that order (the KFD topology).
    hip_order: Vec<Option<String>>,
}

enum KfdState {
    Present(String),
    Missing(String),
    Unknown,
}

fn amd_host(f: &Facts) -> Option<AmdHost> {
    let amd: Vec<_> = f.gpus.iter().filter(|g| g.vendor == Vendor::Amd).collect();
    if amd.is_empty() && f.rocm.agent_gfx.is_empty() {
        return None;
    }
    let mut gfx: Vec<String> = amd.iter().filter_map(|g| g.gfx.clone()).collect();
    gfx.extend(f.rocm.agent_gfx.iter().cloned());
    gfx.iter_mut().for_each(|g| *g = g.to_ascii_lowercase());
    gfx.sort();
    gfx.dedup();
    let mut names: Vec<String> = amd
        .iter()
        .map(|g| g.name.clone())
        .filter(|n| !n.is_empty())
        .collect();
    names.dedup();
    let node = f.device_nodes.iter().find(|n| n.path == "/dev/kfd");
    let seen_by_kfd = amd
        .iter()
        .any(|g| g.seen_by.iter().any(|s| s == "kfd" || s == "rocminfo"));
    let kfd = match node {
        Some(n) if n.exists => KfdState::Present("/dev/kfd present".into()),
        Some(_) => KfdState::Missing("/dev/kfd does not exist".into()),
        None if seen_by_kfd || f.rocm.runtime_sees_gpu == Some(true) => {
            KfdState::Present("the KFD/HSA runtime reports the GPU".into())
        }
        None => KfdState::Unknown,
    };
    let release = f.rocm.version.as_deref().and_then(|v| {
        let sv = loose_version(v)?;
        let active = f.rocm.installs.iter().find(|i| i.active);
        let at = match (active, &f.rocm.active_reason) {
            (Some(i), Some(r)) => format!("ROCm {v} at {} ({r})", i.path),
            (Some(i), None) => format!("ROCm {v} at {}", i.path),
            (None, Some(r)) => format!("ROCm {v} ({r})"),
            (None, None) => format!("ROCm {v}"),
        };
        Some((sv, at))
    });
    let driver_version = f
        .drivers
        .iter()
        .find(|d| d.name == "amdgpu")
        .and_then(|d| d.version.clone())
        .or_else(|| f.kernel_driver_version.clone());
    Some(AmdHost {
        gfx,
        names,
        kfd,
        release,
        hsa_override: f.rocm.hsa_override_gfx_version.clone(),
        driver_version,
        hip_order: greta_probe::hip_devices(f)
            .filter(|h| h.from == greta_probe::OrderFrom::Kfd)
            .map(|h| {
                h.gpus
                    .into_iter()
                    .map(|g| g.gfx.map(|x| x.to_ascii_lowercase()))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

fn nvidia_driver(f: &Facts) -> Option<String> {
    f.drivers
        .iter()
        .find(|d| d.name == "nvidia")
        .and_then(|d| d.version.clone())
        .or_else(|| {
            let has_nv = f.gpus.iter().any(|g| g.vendor == Vendor::Nvidia);
            let bound_nv = f.drivers.iter().any(|d| d.name == "nvidia" && d.loaded);
            if has_nv && (bound_nv || !f.drivers.iter().any(|d| d.name == "amdgpu" && d.loaded)) {
                f.kernel_driver_version.clone()
            } else {
                None
            }
        })
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
    /// Choose the profile for this machine; `Err(Refusal)` explains why none fits.
    pub fn select(&self, facts: &Facts) -> Result<Selection> {
        self.select_with(facts, None)
    }

    /// As [`select`](Self::select), or check a profile named by `--profile`.
    pub fn select_with(&self, facts: &Facts, forced: Option<&str>) -> Result<Selection> {
        if let Some(name) = forced {
            return self.check_forced(facts, self.profile(name)?);
        }
        if facts.gpus.iter().any(|g| g.vendor == Vendor::Nvidia) {
            return self.select_cuda(facts);
        }
        if let Some(host) = amd_host(facts) {
            return self.select_rocm(&host);
        }
        let p = self.first_of(Backend::Cpu)?;
        p.ensure_locked()?;
        let others: Vec<String> = facts
            .gpus
            .iter()
            .filter(|g| !matches!(g.vendor, Vendor::Cpu))
            .map(|g| format!("{} ({:?})", g.name, g.vendor).to_lowercase())
            .collect();
        let why = if others.is_empty() {
            "no NVIDIA or AMD GPU found -> cpu".to_string()
        } else {
            format!(
                "no NVIDIA or AMD GPU found (only {}) -> cpu",
                others.join(", ")
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

    fn first_of(&self, b: Backend) -> Result<&Profile> {
        self.profiles
            .iter()
            .find(|p| p.backend == b)
            .ok_or_else(|| {
                Refusal {
                    message: format!("{} has no {} profile", self.path.display(), b.as_str()),
                    fix: "restore lock/matrix.toml from greta's repository".into(),
                }
                .into()
            })
    }

    fn select_cuda(&self, facts: &Facts) -> Result<Selection> {
        let p = self.first_of(Backend::Cuda)?;
        p.ensure_locked()?;
        let name = facts
            .gpus
            .iter()
            .find(|g| g.vendor == Vendor::Nvidia)
            .map(|g| g.name.clone())
            .unwrap_or_default();
        let mut reasons = vec![format!("NVIDIA GPU {name} -> {}", p.name)];
        let mut warnings = vec![];
        match (nvidia_driver(facts), &p.driver) {
            (Some(v), Some(req)) => match loose_version(&v) {
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

    fn select_rocm(&self, host: &AmdHost) -> Result<Selection> {
        let gpu = if host.names.is_empty() {
            "AMD GPU".to_string()
        } else {
            host.names.join(", ")
        };
        if host.gfx.is_empty() {
            return Err(Refusal {
                message: format!("{gpu} found but its gfx target is unknown (no KFD topology or rocminfo agent)"),
                fix: "make sure amdgpu is loaded and /dev/kfd exists (`greta doctor` explains), or choose a profile with --profile (e.g. --profile cpu)".into(),
            }
            .into());
        }
        let kfd_line = match &host.kfd {
            KfdState::Missing(why) => {
                return Err(Refusal {
                    message: format!("{gpu} ({}) found but {why}: ROCm wheels talk to the GPU only through the KFD", host.gfx.join(", ")),
                    fix: "load the amdgpu kernel driver; in a container pass --device /dev/kfd --device /dev/dri; or use --profile cpu".into(),
                }
                .into())
            }
            KfdState::Present(why) => format!("kernel driver: {why}"),
            KfdState::Unknown => "kernel driver: /dev/kfd not checked by this probe source".to_string(),
        };
        let kfd_line = match &host.driver_version {
            Some(v) => format!("{kfd_line}; amdgpu module version {v}"),
            None => kfd_line,
        };
        let mut skipped = Vec::new();
        // First pass: a profile whose wheels carry every target natively;
        // second: one usable through a documented gfx override, where the
        // override suits every GPU of the host (HSA_OVERRIDE_GFX_VERSION is
        // process-wide: it makes every GPU report the override's target);
        // third, for GPUs of several families: a profile that carries some
        // of them natively, serving those and saying which are not served.
        for pass in [Pass::Native, Pass::Override, Pass::Subset] {
            if pass == Pass::Subset && host.gfx.len() < 2 {
                break;
            }
            for p in self.rocm_profiles() {
                let mut env_vars = Vec::new();
                let mut gfx_lines = Vec::new();
                let mut unserved = Vec::new();
                let mut fits = true;
                for g in &host.gfx {
                    if p.has_gfx(g) {
                        gfx_lines.push(format!("{g} is in its wheel targets"));
                    } else if let Some(o) = self.gfx_override(g).filter(|o| {
                        pass == Pass::Override
                            && p.has_gfx(&o.as_gfx)
                            && override_suits_all(o, &host.gfx)
                    }) {
                        gfx_lines.push(format!(
                            "{g} is not in its wheel targets; running it as {} via {}",
                            o.as_gfx,
                            fmt_env(&o.env)
                        ));
                        env_vars.extend(o.env.iter().cloned());
                    } else if pass == Pass::Subset {
                        unserved.push(g.clone());
                    } else {
                        fits = false;
                    }
                }
                if unserved.len() == host.gfx.len() {
                    fits = false;
                }
                if !fits {
                    if pass == Pass::Native {
                        skipped.push(format!(
                            "{}: wheels lack {}",
                            p.name,
                            host.gfx
                                .iter()
                                .filter(|g| !p.has_gfx(g))
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    continue;
                }
                let driver_line = match &host.release {
                    Some((v, at)) if p.serves.matches(v) => format!("{at} -> {}; its wheels serve kernel-driver releases {}", p.name, p.serves),
                    Some((v, _)) => {
                        skipped.push(format!("{}: host ROCm {v} is outside its driver window {}", p.name, p.serves));
                        continue;
                    }
                    None => format!("no host ROCm release recorded -> {} (newest with this target; its wheels bring their own ROCm {} user space)", p.name, p.backend_version.as_deref().unwrap_or("?")),
                };
                if !p.is_locked() {
                    skipped.push(format!("{}: not yet locked", p.name));
                    continue;
                }
                let mut reasons = vec![
                    format!("{driver_line}; {}", gfx_lines.join("; ")),
                    kfd_line.clone(),
                ];
                let mut warnings = Vec::new();
                if !env_vars.is_empty() {
                    for g in &host.gfx {
                        if let Some(o) = self.gfx_override(g).filter(|_| !p.has_gfx(g)) {
                            warnings.push(format!(
                                "{g}: {}; risk: {} (source: {})",
                                fmt_env(&o.env),
                                o.risk,
                                o.source
                            ));
                        }
                    }
                }
                if let Some(h) = &host.hsa_override {
                    reasons.push(format!(
                        "HSA_OVERRIDE_GFX_VERSION={h} is already set in this environment"
                    ));
                }
                if matches!(host.kfd, KfdState::Unknown) {
                    warnings.push(
                        "could not confirm /dev/kfd; greta install checks the GPU after installing"
                            .into(),
                    );
                }
                if host.release.is_none() {
                    warnings.push(format!(
                        "kernel-driver release unknown; {} needs an amdgpu KMD in {}",
                        p.name, p.serves
                    ));
                }
                self.serve_subset(p, host, &unserved, &mut env_vars, &mut warnings);
                if pass != Pass::Native {
                    // A profile that carries the target natively exists but
                    // could not be used: say which, why, and how to lock it.
                    for n in self.rocm_profiles() {
                        if n.name != p.name && host.gfx.iter().all(|g| n.has_gfx(g)) {
                            if let LockStatus::NotLocked { reason } = &n.status {
                                warnings.push(format!(
                                    "{} carries {} natively but is not locked ({reason}); lock it with `greta lock update {} --lock-dir lock` on a machine that reaches {}, then `greta install --profile {}`",
                                    n.name,
                                    host.gfx.join(", "),
                                    n.name,
                                    n.indexes.first().map_or("its index".into(), |i| redact(i)),
                                    n.name
                                ));
                            }
                        }
                    }
                }
                let device_extras = device_extras(self, p, &host.gfx, &mut reasons);
                return Ok(Selection {
                    profile: p.name.clone(),
                    reasons: std::mem::take(&mut reasons),
                    env_vars,
                    warnings,
                    device_extras,
                    served: served_gfx(host, &unserved),
                });
            }
        }
        let with_gfx: Vec<&str> = self
            .rocm_profiles()
            .into_iter()
            .filter(|p| host.gfx.iter().all(|g| p.has_gfx(g)))
            .map(|p| p.name.as_str())
            .collect();
        Err(Refusal {
            message: format!("no locked ROCm profile fits {gpu} ({}): {}", host.gfx.join(", "), skipped.join("; ")),
            fix: if with_gfx.is_empty() {
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
                    n.indexes.first().map_or("its index".into(), |i| redact(i))
                )
            } else {
                format!("install an amdgpu kernel driver in the window of {} (see docs/profiles.md), or run `greta lock update` for it", with_gfx.join(" or "))
            },
        }
        .into())
    }

    fn check_forced(&self, facts: &Facts, p: &Profile) -> Result<Selection> {
        p.ensure_locked()?;
        let mut reasons = vec![format!("--profile {} (chosen by the user)", p.name)];
        let mut warnings = Vec::new();
        let mut env_vars = Vec::new();
        let mut served = Vec::new();
        match p.backend {
            Backend::Cpu => {}
            Backend::Cuda => {
                if !facts.gpus.iter().any(|g| g.vendor == Vendor::Nvidia) {
                    warnings.push("no NVIDIA GPU found: torch will run on the CPU only".into());
                }
            }
            Backend::Rocm => match amd_host(facts) {
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
                    self.serve_subset(p, &host, &unserved, &mut env_vars, &mut warnings);
                    served = served_gfx(&host, &unserved);
                    if let Some((v, at)) = &host.release {
                        if !p.serves.matches(v) {
                            warnings.push(format!(
                                "{at} is outside {}'s kernel-driver window {}",
                                p.name, p.serves
                            ));
                        }
                    }
                }
            },
        }
        let device_extras = match (p.backend, amd_host(facts)) {
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
        host: &AmdHost,
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

/// The host's targets a plan serves: every one but `unserved` (the others
/// run natively or through the plan's override, or the plan was refused).
fn served_gfx(host: &AmdHost, unserved: &[String]) -> Vec<String> {
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
#[derive(Clone, Copy, PartialEq, Eq)]
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
fn served_hip_devices(p: &Profile, host: &AmdHost) -> Vec<String> {
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
    host: &AmdHost,
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
