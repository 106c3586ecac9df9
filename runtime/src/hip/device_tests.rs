//! HIP and CUDA on this machine: Debian's ROCm 5.2 runtime, no AMD GPU, no
//! NVIDIA driver. Each answer must say what happened and where greta looked.

use crate::gpu::driver::{Driver, GpuError};
use crate::hip::Hip;
use crate::locate::{Candidate, Rule};
use greta_vocab::EnvVars;

#[test]
fn debians_libamdhip64_opens_and_explains_the_missing_gpu() {
    let hip =
        Hip::open_from(&[Candidate::by_name("libamdhip64.so.5")]).unwrap_or_else(|e| panic!("{e}"));
    let lib = hip.library();
    assert!(
        lib.path.is_absolute() && lib.path.to_string_lossy().contains("libamdhip64.so.5"),
        "{lib:?}"
    );
    assert!(
        lib.why.contains("the dynamic loader's search path"),
        "{lib:?}"
    );
    if std::path::Path::new("/dev/kfd").exists() {
        return; // a machine with an AMD GPU: nothing to explain
    }
    let e = hip.device_count().unwrap_err();
    let msg = e.to_string();
    assert!(e.is_no_device(), "{msg}");
    assert!(msg.starts_with("no HIP device found: "), "{msg}");
    assert!(msg.contains("libamdhip64.so.5"), "names the library: {msg}");
    assert!(
        msg.contains("/dev/kfd and /sys/class/kfd do not exist"),
        "says why: {msg}"
    );
    // Pinned host memory is looked up in ROCm 5.2 and called: with no GPU
    // the runtime itself refuses, naming the call.
    let e = hip.host_alloc(4096).unwrap_err().to_string();
    assert!(e.starts_with("hipHostMalloc failed: "), "{e}");
}

#[test]
fn a_wrong_library_path_names_every_place_looked() {
    let e = Hip::open_from(&[
        Candidate::at(
            "/nowhere/libamdhip64.so",
            Rule::Override {
                var: EnvVars::GRETA_HIP_LIB,
            },
        ),
        Candidate::by_name("libgreta-not-a-hip.so.5"),
    ])
    .err()
    .unwrap();
    let msg = e.to_string();
    assert!(matches!(e, GpuError::LibraryMissing(_)), "{msg}");
    assert!(
        msg.contains(&format!(
            "/nowhere/libamdhip64.so (${}): not there",
            EnvVars::GRETA_HIP_LIB
        )),
        "{msg}"
    );
    assert!(msg.contains("libgreta-not-a-hip.so.5"), "{msg}");
    assert!(msg.contains("greta install"), "says what to do: {msg}");
}

#[test]
fn no_cuda_driver_is_a_clear_error() {
    if std::path::Path::new("/dev/nvidiactl").exists() {
        return;
    }
    let e = crate::cuda::Cuda::open().err().unwrap();
    let msg = e.to_string();
    assert!(e.is_no_device(), "{msg}");
    assert!(
        msg.contains("no CUDA driver library (libcuda) found"),
        "{msg}"
    );
    assert!(msg.contains("libcuda.so.1"), "{msg}");
}
