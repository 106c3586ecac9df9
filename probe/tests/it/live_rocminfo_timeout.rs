//! rocminfo hangs on some broken stacks: doctor must kill it after its time
//! limit, keep what it printed, and report the hang as a signal.

//! (The live half, a fake rocminfo that hangs, is a unit test beside the
//! collector: `live::rocm::tests::hanging_rocminfo_is_killed_and_reported`,
//! since it seeds an AMD GPU the front door cannot.)

use greta_probe::{Probe, Root};

use crate::common::copy_tree;

#[test]
fn replayed_timeout_status_gives_the_same_signal() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sysroots/mi300x-vf");
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&src, tmp.path());
    std::fs::write(
        tmp.path().join(".greta/cmd/rocminfo.txt"),
        "ROCk module version 6.16.13 is loaded\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join(".greta/cmd/rocminfo.status"), "timeout\n").unwrap();
    let f = Probe::new(&Root::sysroot(tmp.path()).unwrap()).run().facts;
    assert!(f.signals.iter().any(|s| s.id == "rocminfo-timeout"));
    // No agents: the runtime did not answer.
    assert!(f.rocm.agent_gfx.is_empty());
}
