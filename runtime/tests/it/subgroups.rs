//! Subgroup sizes on lavapipe (one size, 8, and subgroup-size control): a
//! `wave` tuning requires that size of the pipeline
//! (`VkPipelineShaderStageRequiredSubgroupSizeCreateInfo`), which the
//! validation layers check and the kernels run with; a size the device does
//! not have is refused before any work. Compile-only needs
//! VK_KHR_pipeline_executable_properties.

use crate::common::{assert_clean, device, run_checked, seed};
use greta_kernels::Op;
use greta_runtime::{CacheDir, VulkanDevice as Device, VulkanOptions as OpenOptions};
use greta_runtime::{DeviceSelect, Knob, RunOpts, RuntimeError, Tuning};

fn wave(w: u32) -> RunOpts {
    RunOpts {
        tuning: Some(Tuning::default().with(Knob::Wave, w)),
        ..RunOpts::default()
    }
}

#[test]
fn a_required_subgroup_size_runs_and_is_recorded() {
    let mut dev = device();
    let s = seed();
    for op in [
        Op::RmsNorm {
            rows: 5,
            cols: 1000,
            eps: 1e-6,
        },
        Op::Softmax { rows: 3, cols: 257 },
        Op::GemvF16 {
            rows: 37,
            cols: 256,
        },
        Op::Copy { n: 4099 },
    ] {
        let out = run_checked(&mut dev, &op, s, &wave(8));
        assert!(out.passes(), "{op} wave=8: {:?}", out.comparisons);
        assert_eq!(out.stats.tuning.get(Knob::Wave), Some(8), "{op}");
    }
    assert_clean(&dev);
}

#[test]
fn a_subgroup_size_the_device_lacks_is_refused() {
    let mut dev = device();
    let op = Op::RmsNorm {
        rows: 5,
        cols: 1000,
        eps: 1e-6,
    };
    let inputs = crate::common::inputs(&op, 1);
    let mut outputs: Vec<_> = op
        .outputs()
        .iter()
        .map(|s| greta_kernels::HostBuf::zeros(s.dtype, s.len))
        .collect();
    let Err(err) = greta_runtime::Backend::run(
        &mut dev,
        greta_runtime::Job::new(&op, &inputs, &mut outputs, &wave(64)),
    ) else {
        panic!("wave=64 ran on lavapipe");
    };
    assert!(
        matches!(err, RuntimeError::BadInput(_)) && err.to_string().contains("subgroups of 8 only"),
        "{err}"
    );
    assert_clean(&dev);
}

#[test]
fn compile_only_reports_statistics_or_says_why_not() {
    let op = Op::RmsNorm {
        rows: 5,
        cols: 1000,
        eps: 1e-6,
    };
    // Not opened for it: refused.
    let mut plain = device();
    let err = plain.compile_only(&op, None).err().unwrap();
    assert!(err.to_string().contains("statistics"), "{err}");
    match Device::open_with(&OpenOptions {
        select: DeviceSelect::Cpu,
        validation: Some(true),
        cache: CacheDir::Off,
        statistics: true,
        ..Default::default()
    }) {
        // Debian 12's lavapipe (Mesa 22.3) lacks the extension.
        Err(e) => assert!(
            matches!(e, RuntimeError::Unsupported(_))
                && e.to_string()
                    .contains("VK_KHR_pipeline_executable_properties"),
            "{e}"
        ),
        Ok(mut dev) => {
            let got = dev.compile_only(&op, None).unwrap();
            assert_eq!(got.len(), 1, "{got:?}");
            assert!(got[0].kernel.starts_with("rmsnorm"), "{got:?}");
            assert!(!got[0].executables.is_empty(), "{got:?}");
            assert_clean(&dev);
        }
    }
}
