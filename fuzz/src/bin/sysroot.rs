//! `greta doctor --sysroot`: the input becomes the files a captured machine
//! holds (split at `--8<--` lines, in the order of `FILES`), then the whole
//! collection runs on it.
use greta_probe::{Probe, Root};

const FILES: &[&str] = &[
    ".greta/env",
    ".greta/id",
    ".greta/dev-nodes",
    ".greta/cmd/rocminfo.txt",
    ".greta/cmd/vulkaninfo.txt",
    ".greta/cmd/hipconfig.txt",
    "sys/class/kfd/kfd/topology/nodes/1/properties",
    "sys/bus/pci/devices/0000:03:00.0/class",
    "sys/bus/pci/devices/0000:03:00.0/vendor",
    "sys/bus/pci/devices/0000:03:00.0/device",
    "etc/group",
    "etc/vulkan/icd.d/radeon_icd.x86_64.json",
    "opt/rocm/.info/version",
    "proc/version",
];

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    afl::fuzz!(|data: &[u8]| {
        let _ = std::fs::remove_dir_all(dir.path().join("m"));
        let base = dir.path().join("m");
        for (name, bytes) in FILES.iter().zip(greta_fuzz::parts(data, FILES.len())) {
            let p = base.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, bytes).unwrap();
        }
        let root = Root::sysroot(&base).expect("a directory");
        // As doctor runs it: greta's envs where the installer puts them.
        let facts = Probe::new(&root)
            .envs_at(greta::envs::EnvRoot::dir_in)
            .run()
            .facts;
        serde_json::to_string(&facts).expect("facts serialise");
    });
}
