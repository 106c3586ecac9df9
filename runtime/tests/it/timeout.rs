//! A kernel slower than the timeout: `RuntimeError::Timeout` promptly,
//! the device is then lost, and greta does not hang on the way out.

use crate::common::*;
use greta_kernels::{DType, HostBuf, Op};
use greta_runtime::{Backend, RunOpts, RuntimeError};
use std::time::{Duration, Instant};

/// Iterations that take a few seconds on lavapipe (tens of ns each), far
/// longer than the timeout; the abandoned kernel finishes on its own later.
const ITERS: u32 = 1_000_000_000;

#[test]
fn slow_kernel_times_out_promptly() {
    let mut dev = device();
    let mut out = vec![HostBuf::poisoned(DType::U32, 1)];
    let opts = RunOpts {
        repeats: 1,
        timeout: Duration::from_millis(100),
        tuning: None,
    };
    let start = Instant::now();
    let err = dev
        .run(greta_runtime::Job::new(
            &Op::TestSlow { iters: ITERS },
            &[],
            &mut out,
            &opts,
        ))
        .unwrap_err();
    let elapsed = start.elapsed();
    eprintln!("{err} after {elapsed:?}");
    assert!(matches!(err, RuntimeError::Timeout { .. }), "{err:?}");
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("did not complete within") && msg.contains("lost"),
        "{msg}"
    );
    assert!(dev.lost().is_some());
    // The device is not used again: later calls fail fast.
    let start = Instant::now();
    let err = dev
        .run(greta_runtime::Job::new(
            &Op::Copy { n: 4 },
            &[HostBuf::U32(vec![1; 4])],
            &mut [HostBuf::poisoned(DType::U32, 4)],
            &RunOpts::default(),
        ))
        .unwrap_err();
    assert!(matches!(err, RuntimeError::DeviceLost(_)), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(1));
    assert_clean(&dev);
    // Dropping a lost device must not wait for the queue.
    let start = Instant::now();
    drop(dev);
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// The slow kernel's result is right when it is given time (short chain:
/// lavapipe truncates loops beyond 65535 iterations).
#[test]
fn slow_kernel_result_when_given_time() {
    let mut dev = device();
    for iters in [1u32, 1000, 65_000] {
        let mut out = vec![HostBuf::poisoned(DType::U32, 1)];
        dev.run(greta_runtime::Job::new(
            &Op::TestSlow { iters },
            &[],
            &mut out,
            &RunOpts::default(),
        ))
        .unwrap();
        assert_eq!(
            out[0],
            HostBuf::U32(vec![greta_kernels::slow_hash(iters)]),
            "iters={iters}"
        );
    }
    assert_clean(&dev);
}

/// Shapes that would hit lavapipe's loop guard are refused, not run wrong.
#[test]
fn lavapipe_loop_guard_is_respected() {
    let dev = device();
    let err = dev
        .supports(&Op::Softmax {
            rows: 1,
            cols: (1 << 24) + 1,
        })
        .unwrap_err();
    assert!(err.contains("65535"), "{err}");
    assert!(dev
        .supports(&Op::Softmax {
            rows: 1,
            cols: 1 << 20
        })
        .is_ok());
}
