//! ROCm userspace: every install (`/opt/rocm*`, Debian's packages in `/usr`,
//! `ROCM_PATH`/`HIP_PATH`), which one is active and why, `hipconfig`,
//! `rocminfo` (with a time limit: it hangs on some broken stacks), the HIP
//! runtime library and the environment variables that change what runs.

use super::{scanned, signal};
use crate::facts::{Facts, RocmInstall, Vendor};
use crate::root::{CmdStatus, Root};

/// Parser for `rocminfo` output (the `--from` parser), passed in by collect.
pub type TextParser = fn(&str, &str, &mut Facts);

const MULTIARCH_LIB: &str = if cfg!(target_arch = "aarch64") {
    "/usr/lib/aarch64-linux-gnu"
} else {
    "/usr/lib/x86_64-linux-gnu"
};

/// "6.2.0-66" -> "6.2.0": the build number after '-' is not a version part.
pub fn normalize_version(v: &str) -> Option<String> {
    let v = v.lines().next()?.trim();
    let core = v.split(['-', ' ', '~', '+']).next()?.trim();
    (!core.is_empty() && core.starts_with(|c: char| c.is_ascii_digit())).then(|| core.to_string())
}

fn lib_dir_of(install: &str) -> String {
    if install == "/usr" {
        MULTIARCH_LIB.to_string()
    } else {
        format!("{install}/lib")
    }
}

/// `libamdhip64.so*` files in a directory.
fn hip_libs_in(root: &Root, dir: &str) -> Vec<String> {
    root.list(dir)
        .into_iter()
        .filter(|n| n.starts_with("libamdhip64.so"))
        .map(|n| {
            let p = format!("{dir}/{n}");
            root.note_path(&p);
            p
        })
        .collect()
}

/// Debian/Ubuntu ROCm packages (hipcc, libamdhip64-5) install into /usr;
/// the HIP version is in the library's file name (libamdhip64.so.5.2.21153).
fn distro_install(root: &Root) -> Option<RocmInstall> {
    let libs = hip_libs_in(root, MULTIARCH_LIB);
    let has_hipcc = root.exists("/usr/bin/hipcc");
    if libs.is_empty() && !has_hipcc {
        return None;
    }
    let version = libs
        .iter()
        .filter_map(|l| l.rsplit_once("libamdhip64.so.").map(|(_, v)| v))
        .filter(|v| v.matches('.').count() >= 2)
        .max_by_key(|v| v.len())
        .map(str::to_string);
    Some(RocmInstall {
        path: "/usr".into(),
        version,
        active: false,
    })
}

fn install_at(root: &Root, path: &str) -> Option<RocmInstall> {
    if !root.is_dir(path) {
        return None;
    }
    let read_version = |dir: &str| {
        root.read_trim(&format!("{dir}/.info/version"))
            .or_else(|| root.read_trim(&format!("{dir}/.info/version-dev")))
            .and_then(|v| v.lines().next().map(str::to_string))
            .filter(|v| !v.is_empty())
    };
    // ROCm 10's system install (`amdrocm-*` packages) keeps its core in a
    // versioned directory, `/opt/rocm/core-10.0`: the version is there (or,
    // failing that, in the directory's name).
    let version = read_version(path).or_else(|| {
        let mut cores: Vec<String> = root
            .list(path)
            .into_iter()
            .filter(|n| {
                n.strip_prefix("core-").is_some_and(|v| {
                    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                })
            })
            .collect();
        cores.sort_by_key(|n| {
            n["core-".len()..]
                .split('.')
                .map(|p| p.parse::<u32>().unwrap_or(0))
                .collect::<Vec<_>>()
        });
        let newest = cores.pop()?;
        let dir = format!("{path}/{newest}");
        root.note_path(&dir);
        read_version(&dir).or_else(|| Some(newest["core-".len()..].to_string()))
    });
    Some(RocmInstall {
        path: path.into(),
        version,
        active: false,
    })
}

/// Every install, deduplicated by canonical path, plus the `/opt/rocm`
/// symlink target when there is one.
fn find_installs(root: &Root) -> (Vec<RocmInstall>, Option<String>) {
    let mut installs: Vec<RocmInstall> = Vec::new();
    let mut opt_rocm_target = None;
    let push = |i: RocmInstall, installs: &mut Vec<RocmInstall>| {
        if !installs.iter().any(|x| x.path == i.path) {
            installs.push(i);
        }
    };
    for name in root.list("/opt") {
        if !name.starts_with("rocm") {
            continue;
        }
        let p = format!("/opt/{name}");
        if root.read_link(&p).is_some() {
            let target = root.canonical(&p);
            if name == "rocm" && root.is_dir(&target) {
                opt_rocm_target = Some(target.clone());
            }
            if let Some(i) = install_at(root, &target) {
                push(i, &mut installs);
            }
        } else if let Some(i) = install_at(root, &p) {
            push(i, &mut installs);
        }
    }
    if let Some(i) = distro_install(root) {
        push(i, &mut installs);
    }
    for var in ["ROCM_PATH", "HIP_PATH"] {
        if let Some(v) = root.env_nonempty(var) {
            let p = install_root_of(root, v);
            if let Some(i) = install_at(root, &p) {
                push(i, &mut installs);
            }
        }
    }
    installs.sort_by(|a, b| a.path.cmp(&b.path));
    (installs, opt_rocm_target)
}

/// Canonical install root for a ROCM_PATH/HIP_PATH value (`.../hip` -> its parent).
fn install_root_of(root: &Root, v: &str) -> String {
    let c = root.canonical(v.trim_end_matches('/'));
    match c.strip_suffix("/hip") {
        Some(parent) if root.is_dir(&format!("{parent}/bin")) => parent.to_string(),
        _ => c,
    }
}

/// HIP version as `hipconfig --version` prints it, from the file it reads
/// (`share/hip/version`; ROCm 5 also `bin/.hipVersion`):
/// MAJOR.MINOR.PATCH-GITHASH, or -PACKAGING_VERSION_PATCH without a hash.
pub fn hip_version_file(root: &Root, install: &str) -> Option<String> {
    let text = [
        "share/hip/version",
        "bin/.hipVersion",
        "hip/bin/.hipVersion",
    ]
    .iter()
    .find_map(|rel| root.read(&format!("{install}/{rel}")).ok())?;
    parse_hip_version_file(&text)
}

pub fn parse_hip_version_file(text: &str) -> Option<String> {
    let get = |k: &str| {
        text.lines().find_map(|l| {
            let (key, v) = l.split_once('=')?;
            (key.trim() == k).then(|| v.trim().to_string())
        })
    };
    let (major, minor, patch) = (
        get("HIP_VERSION_MAJOR")?,
        get("HIP_VERSION_MINOR")?,
        get("HIP_VERSION_PATCH")?,
    );
    if [&major, &minor, &patch]
        .iter()
        .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let suffix = get("HIP_VERSION_GITHASH")
        .filter(|h| !h.is_empty())
        .or_else(|| get("HIP_PACKAGING_VERSION_PATCH").filter(|p| !p.is_empty()));
    Some(match suffix {
        Some(s) => format!("{major}.{minor}.{patch}-{s}"),
        None => format!("{major}.{minor}.{patch}"),
    })
}

/// ROCm as a HIP program or a framework build would see it: the installs
/// and which is active (and why), the HIP runtime libraries, the versions,
/// the environment that changes what runs, and (where there is something
/// AMD) what rocminfo's agents say. Returns the one-line summary.
pub fn collect(root: &Root, f: &mut Facts, rocminfo_parser: Option<TextParser>) -> String {
    let (mut installs, opt_rocm) = find_installs(root);
    scanned(f, "rocm");
    let hipconfig_on_path = root.which("hipconfig");
    let active = active_install(root, f, &installs, opt_rocm, hipconfig_on_path.as_deref());
    if let Some((p, why)) = &active {
        for i in &mut installs {
            i.active = i.path == *p;
        }
        f.rocm.active_reason = Some(why.clone());
        f.rocm.version = installs
            .iter()
            .find(|i| i.active)
            .and_then(|i| i.version.as_deref())
            .and_then(normalize_version);
    }
    let active_path = active.map(|(p, _)| p);
    hip_libraries(root, f, &installs);
    hip_version(root, f, active_path.as_deref(), hipconfig_on_path);
    environment(root, f, &installs);
    f.rocm.installs = installs;
    let rocminfo_note = rocminfo(root, f, active_path.as_deref(), rocminfo_parser);
    summary(f, active_path.as_deref(), &rocminfo_note)
}

/// The install a HIP program or framework build would use, and why:
/// `ROCM_PATH`/`HIP_PATH`, else the hipconfig on PATH, else the
/// `/opt/rocm` symlink, `/opt/rocm`, or the only install.
fn active_install(
    root: &Root,
    f: &mut Facts,
    installs: &[RocmInstall],
    opt_rocm: Option<String>,
    hipconfig_on_path: Option<&str>,
) -> Option<(String, String)> {
    let known = |p: &str| installs.iter().any(|i| i.path == p);
    if let Some((var, v)) = ["ROCM_PATH", "HIP_PATH"]
        .into_iter()
        .find_map(|var| root.env_nonempty(var).map(|v| (var, v)))
    {
        let p = install_root_of(root, v);
        if known(&p) {
            return Some((p, format!("{var}={v}")));
        }
        signal(
            f,
            "rocm-path-missing",
            var,
            &format!("{var}={v} does not point at a ROCm install"),
        );
    }
    if let Some(h) = hipconfig_on_path {
        let c = root.canonical(h);
        let inst = c.strip_suffix("/bin/hipconfig").unwrap_or("");
        let inst = install_root_of(root, if inst.is_empty() { "/usr" } else { inst });
        if known(&inst) {
            return Some((inst, format!("hipconfig on PATH ({h})")));
        }
    }
    if let Some(t) = opt_rocm {
        let why = format!("/opt/rocm symlink -> {t}");
        Some((t, why))
    } else if known("/opt/rocm") {
        Some(("/opt/rocm".into(), "/opt/rocm".into()))
    } else if installs.len() == 1 {
        Some((installs[0].path.clone(), "only install".into()))
    } else {
        None
    }
}

/// `libamdhip64.so*` in every install's library directory and on
/// `LD_LIBRARY_PATH`: the HIP runtime a framework would load.
fn hip_libraries(root: &Root, f: &mut Facts, installs: &[RocmInstall]) {
    let mut dirs: Vec<String> = installs.iter().map(|i| lib_dir_of(&i.path)).collect();
    // ROCm 10: the HIP runtime lives in `/opt/rocm/core-10.0/lib`.
    for i in installs {
        for n in root.list(&i.path) {
            if n.starts_with("core-") {
                dirs.push(format!("{}/{n}/lib", i.path));
            }
        }
    }
    if let Some(ld) = root.env("LD_LIBRARY_PATH") {
        // As the loader does, an entry that is no directory is skipped.
        dirs.extend(
            ld.split(':')
                .filter(|d| d.starts_with('/') && root.is_dir(d))
                .map(str::to_string),
        );
    }
    for d in dirs {
        for l in hip_libs_in(root, d.trim_end_matches('/')) {
            if !f.rocm.hip_libraries.contains(&l) {
                f.rocm.hip_libraries.push(l);
            }
        }
    }
}

/// The HIP version: from the active install's `.hipVersion` file (what
/// hipconfig reads, without 100-200 ms of perl), else `hipconfig --version`.
fn hip_version(
    root: &Root,
    f: &mut Facts,
    active_path: Option<&str>,
    hipconfig_on_path: Option<String>,
) {
    let hipconfig = hipconfig_on_path.or_else(|| {
        let p = format!("{}/bin/hipconfig", active_path?);
        root.exists(&p).then_some(p)
    });
    f.rocm.hipconfig = hipconfig.clone();
    if let Some(v) = active_path.and_then(|p| hip_version_file(root, p)) {
        f.rocm.hip_version = Some(v);
    } else if let Some(h) = &hipconfig {
        let out = root.run("hipconfig-version", h, &["--version"]);
        if let (CmdStatus::Exited(0), Some(t)) = (&out.status, out.text()) {
            f.rocm.hip_version = t
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with(|c: char| c.is_ascii_digit()))
                .map(str::to_string);
        } else if out.status == CmdStatus::TimedOut {
            signal(
                f,
                "hipconfig-timeout",
                "hipconfig --version",
                "hipconfig --version did not finish",
            );
        }
    }
    if f.rocm.version.is_none() {
        f.rocm.version = f.rocm.hip_version.as_deref().and_then(normalize_version);
    }
}

/// The environment that changes what runs: `HSA_OVERRIDE_GFX_VERSION` and
/// the `LD_LIBRARY_PATH` entries that point into a ROCm tree.
fn environment(root: &Root, f: &mut Facts, installs: &[RocmInstall]) {
    f.rocm.hsa_override_gfx_version = root
        .env_nonempty("HSA_OVERRIDE_GFX_VERSION")
        .map(str::to_string);
    // Set but empty counts: it hides every device.
    for k in crate::hip_order::SELECTION_VARS {
        if let Some(v) = root.env(k) {
            f.rocm.visible_devices.push((k.to_string(), v.to_string()));
        }
    }
    let Some(ld) = root.env("LD_LIBRARY_PATH") else {
        return;
    };
    for e in ld.split(':').filter(|e| !e.is_empty()) {
        let e_trim = e.trim_end_matches('/');
        let in_tree = e_trim.contains("/rocm")
            || installs.iter().any(|i| {
                i.path != "/usr"
                    && (e_trim == i.path || e_trim.starts_with(&format!("{}/", i.path)))
            });
        if in_tree && !f.rocm.ld_library_path_rocm.iter().any(|x| x == e) {
            f.rocm.ld_library_path_rocm.push(e.to_string());
        }
    }
}

/// rocminfo, only where there is something AMD to talk to (elsewhere it
/// only prints "ROCk module is NOT loaded" and costs time); its agents go
/// through `parse`. Returns a note for the summary ("" when not run).
fn rocminfo(
    root: &Root,
    f: &mut Facts,
    active_path: Option<&str>,
    parse: Option<TextParser>,
) -> String {
    let amd_present = f.gpus.iter().any(|g| g.vendor == Vendor::Amd)
        || f.device_nodes
            .iter()
            .any(|n| n.path == "/dev/kfd" && n.exists);
    if !amd_present {
        return String::new();
    }
    let prog = root.which("rocminfo").or_else(|| {
        let p = format!("{}/bin/rocminfo", active_path?);
        root.exists(&p).then_some(p)
    });
    let out = match &prog {
        Some(p) => root.run("rocminfo", p, &[]),
        // Replays have no PATH lookup to do: the capture says.
        None if !root.is_live() => root.run("rocminfo", "rocminfo", &[]),
        None => crate::root::CmdOutput {
            name: "rocminfo".into(),
            status: CmdStatus::NotFound,
            text: String::new(),
        },
    };
    let mut note = match &out.status {
        CmdStatus::TimedOut => {
            signal(
                f,
                "rocminfo-timeout",
                "rocminfo",
                "rocminfo did not finish within the time limit and was killed (the HSA runtime hangs: driver/firmware/KFD state)",
            );
            "rocminfo timed out".to_string()
        }
        CmdStatus::NotFound => "rocminfo not found".into(),
        CmdStatus::Error(e) | CmdStatus::Unknown(e) => format!("rocminfo: {e}"),
        CmdStatus::Exited(code) => format!("rocminfo exit {code}"),
    };
    if let (Some(text), Some(parse)) = (out.text(), parse) {
        parse(text, "rocminfo", f);
        if !f.rocm.agent_gfx.is_empty() {
            note = format!("rocminfo agents {}", f.rocm.agent_gfx.join(", "));
        }
    }
    note
}

/// The one-line summary doctor prints for ROCm.
fn summary(f: &Facts, active_path: Option<&str>, rocminfo_note: &str) -> String {
    let mut s = match (active_path, f.rocm.installs.len()) {
        (_, 0) => "no ROCm install".to_string(),
        (Some(p), n) => format!(
            "ROCm {} at {p} ({}){}",
            f.rocm.version.as_deref().unwrap_or("?"),
            f.rocm.active_reason.as_deref().unwrap_or(""),
            if n > 1 {
                format!(", {n} installs")
            } else {
                String::new()
            }
        ),
        (None, n) => format!("{n} ROCm installs, none active"),
    };
    if let Some(h) = &f.rocm.hip_version {
        s.push_str(&format!("; HIP {h}"));
    }
    if !rocminfo_note.is_empty() {
        s.push_str(&format!("; {rocminfo_note}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{Gpu, Vendor};
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};

    #[test]
    fn hip_version_file_matches_hipconfig_output() {
        // Debian 12's /usr/share/hip/version; hipconfig --version prints 5.2.21153-0.
        let debian = "# Auto-generated by cmake\nHIP_PACKAGING_VERSION_PATCH=0\nCPACK_DEBIAN_PACKAGE_RELEASE=local\nHIP_VERSION_MAJOR=5\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=21153\nHIP_VERSION_GITHASH=\n";
        assert_eq!(
            parse_hip_version_file(debian).as_deref(),
            Some("5.2.21153-0")
        );
        let rocm6 = "HIP_VERSION_MAJOR=6\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=41133\nHIP_VERSION_GITHASH=dd7f95766\n";
        assert_eq!(
            parse_hip_version_file(rocm6).as_deref(),
            Some("6.2.41133-dd7f95766")
        );
        assert_eq!(parse_hip_version_file("HIP_VERSION_MAJOR=x\n"), None);
    }

    /// ROCm 10's system install keeps its core in
    /// `/opt/rocm/core-10.0`; the version is read there.
    #[test]
    fn rocm10_core_directory_gives_the_version() {
        let tmp = tempfile::tempdir().unwrap();
        let core = tmp.path().join("opt/rocm/core-10.0");
        std::fs::create_dir_all(core.join(".info")).unwrap();
        std::fs::create_dir_all(tmp.path().join("opt/rocm/core-9.9")).unwrap();
        std::fs::write(core.join(".info/version"), "10.0.0-4\n").unwrap();
        let root = Root::sysroot(tmp.path()).unwrap();
        let (installs, _) = find_installs(&root);
        assert_eq!(installs.len(), 1, "{installs:?}");
        assert_eq!(installs[0].path, "/opt/rocm");
        assert_eq!(installs[0].version.as_deref(), Some("10.0.0-4"));
        // no version file: the directory's name
        std::fs::remove_file(core.join(".info/version")).unwrap();
        let (installs, _) = find_installs(&Root::sysroot(tmp.path()).unwrap());
        assert_eq!(installs[0].version.as_deref(), Some("10.0"));
    }

    #[test]
    fn versions_lose_build_suffix() {
        assert_eq!(normalize_version("6.2.0-66\n").as_deref(), Some("6.2.0"));
        assert_eq!(
            normalize_version("5.2.21153-0").as_deref(),
            Some("5.2.21153")
        );
        assert_eq!(normalize_version("7.2.4").as_deref(), Some("7.2.4"));
        assert_eq!(normalize_version("garbage"), None);
        assert_eq!(normalize_version(""), None);
    }

    fn amd_machine() -> Facts {
        Facts {
            gpus: vec![Gpu {
                vendor: Vendor::Amd,
                name: "AMD Instinct MI300X VF".into(),
                vendor_id: Some(0x1002),
                device_id: Some(0x74b5),
                ..Gpu::default()
            }],
            ..Facts::default()
        }
    }

    /// rocminfo hangs on some broken stacks: doctor must kill it after its
    /// time limit, keep what it printed, and report the hang as a signal.
    #[test]
    fn hanging_rocminfo_is_killed_and_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let fake = bin.join("rocminfo");
        // Prints the first line a real rocminfo prints, then hangs like a stuck HSA init.
        std::fs::write(
            &fake,
            "#!/bin/sh\necho 'ROCk module version 6.16.13 is loaded'\nexec sleep 600\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut env = BTreeMap::new();
        env.insert("PATH".to_string(), bin.display().to_string());
        let root = Root::live_recording()
            .with_env(env)
            .with_cmd_timeout(Duration::from_millis(500));
        let mut f = amd_machine();
        let t0 = Instant::now();
        let summary = collect(&root, &mut f, Some(crate::collect::parse_into));
        // Not a timing measurement: only "did not wait for sleep 600".
        assert!(t0.elapsed() < Duration::from_secs(60));
        assert!(summary.contains("rocminfo timed out"), "{summary}");
        let s = f
            .signals
            .iter()
            .find(|s| s.id == "rocminfo-timeout")
            .expect("timeout signal");
        assert_eq!(s.source, "rocminfo");
        // The partial output was kept and recorded for a capture.
        let rec = root.take_record().unwrap();
        let cmd = rec.cmds.iter().find(|c| c.name == "rocminfo").unwrap();
        assert_eq!(cmd.status, CmdStatus::TimedOut);
        assert!(cmd.text.contains("ROCk module version 6.16.13 is loaded"));
        // The rules turn it into a finding.
        let ids: Vec<String> = crate::rules::diagnose(&f)
            .into_iter()
            .map(|x| x.id)
            .collect();
        assert!(!ids.is_empty(), "a hung rocminfo must raise a finding");
    }
}
