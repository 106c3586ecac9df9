//! A GPU kernel module's version read by a command in a pasted terminal
//! session: `cat /sys/module/amdgpu/version` or `modinfo -F version amdgpu`
//! (also `nvidia`), the command echoed with its prompt and the version on
//! the next line. Cluster bug reports show the node this way (lsmod, ls
//! /dev/dri, the module version) when no tool output names the driver.
//! The in-tree amdgpu has no `version` file: `cat: ...: No such file or
//! directory` on the next line is no version.

use super::shared_lines::lines_of;
use crate::facts::{Facts, KernelDriver};

/// The module a line's command reads the version of, if it is such a command.
fn command_module(line: &str) -> Option<&'static str> {
    let l = line.trim_end();
    // Every such command ends with its module's name: most lines end
    // with neither, and cost no command strings.
    if !(l.ends_with("amdgpu") || l.ends_with("nvidia") || l.ends_with("/version")) {
        return None;
    }
    for m in ["amdgpu", "nvidia"] {
        let sysfs = format!("cat /sys/module/{m}/version");
        let modinfo = [
            format!("modinfo -F version {m}"),
            format!("modinfo --field version {m}"),
            format!("modinfo --field=version {m}"),
        ];
        if l.ends_with(&sysfs) || modinfo.iter().any(|c| l.ends_with(c.as_str())) {
            return Some(m);
        }
    }
    None
}

/// A version as the module prints it: "6.12.12", "510.47.03", "6.8.5".
fn version(line: &str) -> Option<&str> {
    let v = line.trim();
    (v.len() <= 32
        && v.contains('.')
        && v.starts_with(|c: char| c.is_ascii_digit())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'))
    .then_some(v)
}

/// (module, version) for each command whose next line is a version.
fn readings(text: &str) -> impl Iterator<Item = (&'static str, &str)> {
    let lines: Vec<&str> = lines_of(text).collect();
    (0..lines.len()).filter_map(move |i| {
        let m = command_module(lines[i])?;
        Some((m, version(lines.get(i + 1)?)?))
    })
}

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "module-version",
    label: "kernel module version (cat /sys/module/*/version, modinfo)",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&["/sys/module/", "modinfo"]],
};

pub fn recognise(text: &str) -> bool {
    readings(text).next().is_some()
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    for (m, v) in readings(text) {
        f.kernel_driver_version.get_or_insert_with(|| v.to_string());
        f.drivers.push(KernelDriver {
            name: m.into(),
            loaded: true,
            version: Some(v.into()),
        });
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ROCm/gpu-operator#183's `cat /sys/module/amdgpu/version` on an
    /// MI300X VF node and NVIDIA/gpu-operator#356's `modinfo -F version
    /// nvidia` behind a root prompt; ROCm/k8s-device-plugin#157's in-tree
    /// driver (no version file) and a command with no output are none.
    #[test]
    fn a_command_then_its_version_line() {
        let amd = "$ cat /sys/module/amdgpu/version\n6.12.12\n";
        assert!(recognise(amd));
        let f = parse(amd);
        assert_eq!(f.kernel_driver_version.as_deref(), Some("6.12.12"));
        assert_eq!(f.drivers[0].name, "amdgpu");
        let nv = "[root@test-rocky8-kvm63 ~]#  modinfo -F version nvidia\n510.47.03\n[root@test-rocky8-kvm63 ~]#    nvidia-smi\n";
        let f = parse(nv);
        assert_eq!(f.kernel_driver_version.as_deref(), Some("510.47.03"));
        assert_eq!(f.drivers[0].name, "nvidia");
        for none in [
            "cat /sys/module/amdgpu/version\ncat: /sys/module/amdgpu/version: No such file or directory\n",
            "$ cat /sys/module/amdgpu/version\n",
            "$ cat /sys/module/amdgpu/version\n\n$ ls /dev/dri\n",
            "6.12.12\n$ cat /sys/module/amdgpu/version\n$ uname -r\n",
        ] {
            assert!(!recognise(none), "{none:?}");
            assert!(parse(none).kernel_driver_version.is_none());
        }
    }
}
