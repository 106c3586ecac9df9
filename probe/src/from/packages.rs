//! Package and module listings users paste to say what they installed:
//! `dpkg -l | grep rocm` (`ii  rocm-core  7.0.0.70000-17~24.04  amd64 ...`),
//! `rpm -qa` (`rocm-core-6.2.4.60204-139.el9.x86_64`), `pacman -Q`
//! (`rocm-core 6.2.4-1`), `apt show` / `dpkg -s` stanzas (`Package: rocm-core`
//! then `Version: 5.7.0.50700-63~22.04`), `dkms status` (`amdgpu/6.14.14-2193512.24.04,
//! 6.14.0-29-generic, x86_64: installed`) and `modinfo amdgpu` (`version:`
//! after a `filename: .../amdgpu.ko` line). `rocm-core` carries the ROCm
//! release; AMD's dkms package and modinfo carry the kernel driver's.

use super::shared_lines::lines_of;
use crate::facts::Facts;

/// Packages whose version is the ROCm release (`rocm-libs` is the
/// meta-package of ROCm 4.x and 5.x).
const ROCM_PACKAGES: &[&str] = &[
    "rocm-core",
    "rocm-hip-runtime",
    "rocm-dev",
    "rocm-libs",
    "rocm",
];

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "packages",
    label: "package list (dpkg/rpm/pacman/dkms)",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[ROCM_PACKAGES, &["amdgpu/", "amdgpu, ", "filename:"]],
};

pub fn recognise(text: &str) -> bool {
    lines_of(text).any(|l| {
        let t = l.trim_start();
        package_line(t).is_some()
            || stanza_package(t).is_some()
            || dkms_amdgpu(t).is_some()
            || (t.starts_with("filename:") && modinfo_gpu_driver(t))
    })
}

/// `modinfo`'s `filename:` line of a GPU kernel driver whose `version:` is
/// the driver's: amdgpu, or NVIDIA's `nvidia.ko` (`modinfo nvidia`,
/// Frogging-Family/nvidia-all#394: `.../updates/dkms/nvidia.ko.zst`).
fn modinfo_gpu_driver(t: &str) -> bool {
    t.contains("/amdgpu.ko") || t.contains("/nvidia.ko")
}

/// (package, version) of one dpkg/rpm/pacman line naming a ROCm package.
fn package_line(t: &str) -> Option<(&str, &str)> {
    let mut w = t.split_whitespace();
    let first = w.next()?;
    // dpkg -l: state column, name, version
    if matches!(first, "ii" | "hi" | "iU" | "rc") {
        let name = w.next()?.split(':').next()?;
        let ver = w.next()?;
        return ROCM_PACKAGES.contains(&name).then_some((name, ver));
    }
    // pacman -Q: "rocm-core 6.2.4-1"; -Qs/-Ss name the repository:
    // "local/rocm-core 5.4.3-4", "extra/rocm-core 6.4.1-1 [installed]".
    let first = match first.split_once('/') {
        Some((repo, name))
            if !repo.is_empty()
                && repo
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') =>
        {
            name
        }
        _ => first,
    };
    if ROCM_PACKAGES.contains(&first) {
        let ver = w.next()?;
        return ver
            .starts_with(|c: char| c.is_ascii_digit())
            .then_some((first, ver));
    }
    // rpm -qa: "rocm-core-6.2.4.60204-139.el9.x86_64"
    for p in ROCM_PACKAGES {
        if let Some(v) = first.strip_prefix(p).and_then(|r| r.strip_prefix('-')) {
            if v.starts_with(|c: char| c.is_ascii_digit()) && w.next().is_none() {
                return Some((p, v));
            }
        }
    }
    None
}

/// `Package: rocm-core`, the first line of an `apt show` / `dpkg -s`
/// stanza naming a ROCm package; its `Version:` follows in the stanza.
fn stanza_package(t: &str) -> Option<&str> {
    let name = t.strip_prefix("Package:")?.trim();
    ROCM_PACKAGES.contains(&name).then_some(name)
}

/// "amdgpu/6.14.14-2193512.24.04, 6.14.0-29-generic, x86_64: installed" -> 6.14.14
/// (older dkms: "amdgpu, 6.2.4-1684516.22.04, ...: installed").
fn dkms_amdgpu(t: &str) -> Option<String> {
    if !t.ends_with(": installed") {
        return None;
    }
    let rest = t
        .strip_prefix("amdgpu/")
        .or_else(|| t.strip_prefix("amdgpu, "))?;
    let v = rest.split([',', '-']).next()?.trim();
    (v.split('.').count() >= 2 && v.split('.').all(|p| p.parse::<u32>().is_ok()))
        .then(|| v.to_string())
}

/// "7.0.0.70000-17~24.04" -> "7.0.0".
fn release(v: &str) -> Option<String> {
    let parts: Vec<&str> = v
        .split(['.', '-', '~'])
        .take(3)
        .take_while(|p| p.parse::<u32>().is_ok())
        .collect();
    (parts.len() >= 2).then(|| parts.join("."))
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut in_modinfo = false;
    let mut in_stanza = false;
    for l in lines_of(text) {
        let t = l.trim_start();
        // A stanza ends at a blank line or the next `Package:`.
        if t.trim().is_empty() || t.starts_with("Package:") {
            in_stanza = stanza_package(t).is_some();
        } else if in_stanza {
            if let Some(v) = t.strip_prefix("Version:") {
                if f.rocm.version.is_none() {
                    f.rocm.version = release(v.trim());
                }
                in_stanza = false;
            }
        }
        if let Some((_, v)) = package_line(t) {
            if f.rocm.version.is_none() {
                f.rocm.version = release(v);
            }
        }
        if let Some(v) = dkms_amdgpu(t) {
            if f.kernel_driver_version.is_none() {
                f.kernel_driver_version = Some(v);
            }
        }
        if t.starts_with("filename:") {
            in_modinfo = modinfo_gpu_driver(t);
        } else if in_modinfo {
            if let Some(v) = t.strip_prefix("version:") {
                // modinfo says what is installed, not whether it is loaded.
                f.kernel_driver_version.get_or_insert(v.trim().to_string());
                in_modinfo = false;
            }
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_managers_and_dkms() {
        let f = parse("ii  rocm-core                                     7.0.0.70000-17~24.04                       amd64        ROCm Runtime software stack\namdgpu/6.14.14-2193512.24.04, 6.14.0-29-generic, x86_64: installed\n");
        assert_eq!(f.rocm.version.as_deref(), Some("7.0.0"));
        assert_eq!(f.kernel_driver_version.as_deref(), Some("6.14.14"));
        assert_eq!(
            parse("rocm-core-6.2.4.60204-139.el9.x86_64\n")
                .rocm
                .version
                .as_deref(),
            Some("6.2.4")
        );
        assert_eq!(
            parse("rocm-core 6.2.4-1\n").rocm.version.as_deref(),
            Some("6.2.4")
        );
        assert!(!recognise("rocm-core is great\nii  vim 2:9.0 amd64\n"));
    }

    #[test]
    fn modinfo_of_amdgpu_or_nvidia_gives_the_driver_version() {
        let nv = "filename:       /lib/modules/7.0.12-zen1-1-zen/updates/dkms/nvidia.ko.zst\nimport_ns:      DMA_BUF\nversion:        595.80\n";
        assert!(recognise(nv));
        assert_eq!(parse(nv).kernel_driver_version.as_deref(), Some("595.80"));
        let amd = "filename:       /lib/modules/6.8.0-45-generic/updates/dkms/amdgpu.ko.zst\nversion:        6.8.5\n";
        assert_eq!(parse(amd).kernel_driver_version.as_deref(), Some("6.8.5"));
        // nvidia_drm's own modinfo has no driver version of interest.
        let drm = "filename:       /lib/modules/6.5.0/kernel/nvidia-drm.ko\nversion:        1.0\n";
        assert!(!recognise(drm));
    }

    /// `pacman -Qs`/`-Ss` name packages with their repository
    /// (tsl0922/pytorch-gfx803#3: `local/rocm-core 5.4.3-4`; `extra/...`).
    #[test]
    fn pacman_repository_prefixes() {
        let t = "local/comgr 5.4.3-1\nlocal/rocm-core 5.4.3-4\nlocal/rocminfo 5.4.3-1\n";
        assert!(recognise(t));
        assert_eq!(parse(t).rocm.version.as_deref(), Some("5.4.3"));
        assert_eq!(
            parse("extra/rocm-core 6.4.1-1 [installed]\n")
                .rocm
                .version
                .as_deref(),
            Some("6.4.1")
        );
        // A path is no repository.
        assert!(!recognise("/opt/rocm-core 6.2\n"));
    }

    /// `apt show` / `dpkg -s` print a stanza, `Package:` then `Version:`
    /// (pytorch#70036: `apt show rocm-libs -a` on ROCm 4.2; a ROCm 5.7
    /// notebook's `apt show rocm-core -a` with more fields after it).
    #[test]
    fn apt_show_stanzas_of_a_rocm_package() {
        let old = "$apt show rocm-libs -a   \nPackage: rocm-libs\nVersion: 4.2.0.40200-21\n";
        assert!(recognise(old));
        assert_eq!(parse(old).rocm.version.as_deref(), Some("4.2.0"));
        let core = "Package: rocm-core\nVersion: 5.7.0.50700-63~22.04\nPriority: optional\nSection: devel\nMaintainer: ROCm Dev Support <rocm-dev.support@amd.com>\n";
        assert_eq!(parse(core).rocm.version.as_deref(), Some("5.7.0"));
        // Another package's stanza says nothing of the ROCm release.
        let other = "Package: vim\nVersion: 2:9.1.0016-1ubuntu7\n";
        assert!(!recognise(other));
        // A Version: of a later stanza is not the ROCm package's.
        let two =
            "Package: rocm-core\nStatus: install ok installed\n\nPackage: vim\nVersion: 9.1\n";
        assert_eq!(parse(two).rocm.version, None);
    }
}
