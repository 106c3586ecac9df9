//! Device discovery, selection, validation messenger and failure modes.

use crate::common::*;
use greta_runtime::{Backend, BackendKind, DeviceSelect, RuntimeError};
use greta_runtime::{CacheDir, VulkanDevice as Device, VulkanOptions as OpenOptions};
use greta_vocab::{EnvVars, VkDriver};

#[test]
fn lists_lavapipe() {
    let list = greta_runtime::list_devices(BackendKind::Vulkan).expect("list");
    assert!(list.iter().any(|d| d.is_cpu()), "{list:#?}");
    for (i, d) in list.iter().enumerate() {
        assert_eq!(d.index, i);
        assert_eq!(d.uuid.map(|u| u.hex().len()), Some(32), "{d:?}");
    }
    let cpu = list.iter().find(|d| d.is_cpu()).unwrap();
    assert_eq!(cpu.driver_id, VkDriver::Lavapipe);
    assert!(cpu.subgroup_size >= 1 && cpu.max_storage_buffer_range > 0);
}

#[test]
fn auto_falls_back_to_cpu_and_says_so() {
    let dev = device_with(OpenOptions {
        select: DeviceSelect::Auto,
        validation: Some(true),
        cache: CacheDir::Off,
        max_storage_range: None,
        ..Default::default()
    });
    if dev.info().is_cpu() {
        assert!(
            dev.info().notes.iter().any(|n| n.contains("CPU")),
            "{:?}",
            dev.info().notes
        );
    }
    assert_clean(&dev);
}

#[test]
fn selection_errors_are_clear() {
    let err = Device::open_with(&OpenOptions {
        select: DeviceSelect::Index(99),
        validation: Some(false),
        ..Default::default()
    })
    .err()
    .expect("index 99 must not exist");
    assert!(matches!(err, RuntimeError::NoDevice(_)), "{err}");
    assert!(err.to_string().contains("no Vulkan device 99"), "{err}");
    let err = Device::open_with(&OpenOptions {
        select: "no-such-gpu".parse().unwrap(),
        validation: Some(false),
        ..Default::default()
    })
    .err()
    .unwrap();
    assert!(err.to_string().contains("no-such-gpu"), "{err}");
}

#[test]
fn selector_parsing() {
    assert_eq!("auto".parse::<DeviceSelect>().unwrap(), DeviceSelect::Auto);
    assert_eq!("CPU".parse::<DeviceSelect>().unwrap(), DeviceSelect::Cpu);
    assert_eq!("2".parse::<DeviceSelect>().unwrap(), DeviceSelect::Index(2));
    assert_eq!(
        "Radeon".parse::<DeviceSelect>().unwrap(),
        DeviceSelect::Name("Radeon".into())
    );
    assert!("".parse::<DeviceSelect>().is_err());
}

/// The messenger really records: a deliberately invalid call shows up.
#[test]
fn validation_messages_are_recorded() {
    let dev = device();
    assert_clean(&dev);
    dev.provoke_validation_error();
    let msgs = dev.validation_messages();
    assert!(
        !msgs.is_empty(),
        "the validation layer reported nothing for an invalid vkCreateBuffer"
    );
    assert!(msgs.iter().any(|m| m.contains("usage")), "{msgs:?}");
}

/// No driver at all: a clear error, not a panic. Runs in a child process
/// because the loader reads VK_DRIVER_FILES once per process.
#[test]
fn no_driver_is_a_clear_error() {
    if std::env::var(EnvVars::GRETA_CHILD_NO_DRIVER).is_ok() {
        let err = Device::open(&DeviceSelect::Auto)
            .err()
            .expect("no device expected");
        assert!(matches!(err, RuntimeError::NoDevice(_)), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("VK_DRIVER_FILES") || msg.contains("no Vulkan device"),
            "{msg}"
        );
        let err = greta_runtime::list_devices(BackendKind::Vulkan).expect_err("no device expected");
        assert!(matches!(err, RuntimeError::NoDevice(_)), "{err:?}");
        println!("CHILD-OK: {msg}");
        return;
    }
    rerun_as_child("device::no_driver_is_a_clear_error", |c| {
        c.env(EnvVars::GRETA_CHILD_NO_DRIVER, "1")
            .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
            .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
    });
}

/// Runs test `name` of this binary again in a child process set up by
/// `setup` (the Vulkan loader reads its variables once per process), and
/// asserts that the child passed and printed `CHILD-OK`.
fn rerun_as_child(
    name: &str,
    setup: impl FnOnce(&mut std::process::Command) -> &mut std::process::Command,
) {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", name, "--nocapture"])
        .env_remove(EnvVars::GRETA_VK_VALIDATION);
    let out = setup(&mut cmd).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && text.contains("CHILD-OK"), "{text}");
}

/// One device behind two ICD manifests (the loader lists it twice, same
/// deviceUUID) is counted once, and the entry says so.
#[test]
fn duplicate_icd_counted_once() {
    if std::env::var(EnvVars::GRETA_CHILD_DUP_ICD).is_ok() {
        let list = greta_runtime::list_devices(BackendKind::Vulkan).unwrap();
        assert_eq!(list.len(), 1, "{list:#?}");
        assert_eq!(list[0].also_exposed_by, vec![VkDriver::Lavapipe]);
        assert!(
            list[0].notes.iter().any(|n| n.contains("listed twice")),
            "{:?}",
            list[0].notes
        );
        let dev = Device::open(&DeviceSelect::Cpu).unwrap();
        assert_eq!(dev.info().index, 0);
        println!("CHILD-OK");
        return;
    }
    let icd = [
        "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
        "/usr/share/vulkan/icd.d/lvp_icd.json",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists());
    let Some(icd) = icd else {
        panic!("lavapipe ICD manifest not found (install mesa-vulkan-drivers)");
    };
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    std::fs::copy(icd, &a).unwrap();
    std::fs::copy(icd, &b).unwrap();
    rerun_as_child("device::duplicate_icd_counted_once", |c| {
        c.env(EnvVars::GRETA_CHILD_DUP_ICD, "1")
            .env(
                "VK_DRIVER_FILES",
                format!("{}:{}", a.display(), b.display()),
            )
            .env_remove("VK_ICD_FILENAMES")
    });
}

/// An open that fails part-way destroys what it created, children before
/// parents (a failed pipeline-cache creation used to destroy the
/// instance while its device and command pool lived). The validation
/// layer's object tracker reports a `vkDestroyInstance` with a live
/// `VkDevice` (UNASSIGNED-ObjectTracker-ObjectLeak,
/// VUID-vkDestroyInstance-instance-00629) and a `vkDestroyDevice` with live
/// children (VUID-vkDestroyDevice-device-00378); the log is read after the
/// instance is gone, so those are seen.
#[test]
fn failed_open_destroys_what_it_created() {
    use greta_runtime::OpenStep;
    for step in [
        OpenStep::PipelineCache,
        OpenStep::Allocator,
        OpenStep::CommandPool,
    ] {
        let log = greta_runtime::MessageLog::default();
        let err = Device::open_with(&OpenOptions {
            select: DeviceSelect::Cpu,
            validation: Some(true),
            cache: CacheDir::Off,
            fail_at: Some(step),
            messages: Some(log.clone()),
            ..Default::default()
        })
        .err()
        .unwrap_or_else(|| panic!("{step:?}: the open must fail"));
        assert!(matches!(err, RuntimeError::Api { .. }), "{step:?}: {err:?}");
        let msgs = log.lock().unwrap().clone();
        assert!(msgs.is_empty(), "{step:?}: {msgs:#?}");
        // The instance held the log's other `Arc`: it was dropped, not leaked.
        assert_eq!(std::sync::Arc::strong_count(&log), 1, "{step:?}");
    }
}

/// The log of [`OpenOptions::messages`] is the messenger's own: it keeps
/// what the layer said, also once the device is dropped.
#[test]
fn message_log_outlives_the_device() {
    let log = greta_runtime::MessageLog::default();
    let dev = device_with(OpenOptions {
        select: DeviceSelect::Cpu,
        validation: Some(true),
        cache: CacheDir::Off,
        messages: Some(log.clone()),
        ..Default::default()
    });
    assert_clean(&dev);
    dev.provoke_validation_error();
    drop(dev);
    let msgs = log.lock().unwrap().clone();
    assert!(msgs.iter().any(|m| m.contains("usage")), "{msgs:?}");
}

/// A device that ran ops (pipelines, pooled buffers, per-run objects)
/// destroys all of it on drop: the layer's object tracker, which reports
/// any child left at `vkDestroyDevice` / `vkDestroyInstance`, says nothing.
#[test]
fn dropped_device_leaves_nothing_behind() {
    use greta_kernels::{DType, HostBuf, Op};
    let log = greta_runtime::MessageLog::default();
    let mut dev = device_with(OpenOptions {
        select: DeviceSelect::Cpu,
        validation: Some(true),
        cache: CacheDir::Off,
        messages: Some(log.clone()),
        ..Default::default()
    });
    for n in [64, 64, 1000] {
        let mut out = vec![HostBuf::poisoned(DType::U32, n)];
        dev.run(greta_runtime::Job::new(
            &Op::Copy { n },
            &[HostBuf::U32((0..n as u32).collect())],
            &mut out,
            &greta_runtime::RunOpts::default(),
        ))
        .unwrap();
        assert_eq!(out[0], HostBuf::U32((0..n as u32).collect()));
    }
    assert_clean(&dev);
    drop(dev);
    let msgs = log.lock().unwrap().clone();
    assert!(msgs.is_empty(), "{msgs:#?}");
    // The instance held the log's other `Arc`: it was dropped (and with it
    // the device, which holds the instance), not leaked.
    assert_eq!(std::sync::Arc::strong_count(&log), 1);
}
