//! The host-copy run on lavapipe (validation layers on): fresh random
//! bytes each round go to the device from one host-visible buffer and come
//! back into another, byte for byte, each direction timed.

use crate::common::*;
use greta_runtime::{Backend, HostCopyData, HostCopyJob, RuntimeError, TimingSource};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use std::time::Duration;

/// Random bytes per round, the poison in the return buffer, and what came
/// back compared with what was written (not merely with `sent`).
struct Data {
    rng: StdRng,
    wrote: Vec<u8>,
    rounds_seen: Vec<u32>,
    mismatches: usize,
}

impl HostCopyData for Data {
    fn fill(&mut self, round: u32, up: &mut [u8], down: &mut [u8]) {
        self.rng.fill_bytes(up);
        down.fill(0xA5);
        self.wrote = up.to_vec();
        self.rounds_seen.push(round);
    }
    fn check(&mut self, _round: u32, sent: &[u8], back: &[u8]) {
        assert_eq!(
            sent,
            &self.wrote[..],
            "the pinned source kept what was written"
        );
        self.mismatches += back.iter().zip(sent).filter(|(a, b)| a != b).count();
        assert_eq!(back.len(), sent.len());
    }
}

#[test]
fn bytes_go_to_the_device_and_back_unchanged_each_direction_timed() {
    let mut dev = device();
    for bytes in [4096usize, 1_000_003, 16 << 20] {
        let mut data = Data {
            rng: StdRng::seed_from_u64(seed()),
            wrote: Vec::new(),
            rounds_seen: Vec::new(),
            mismatches: 0,
        };
        let stats = dev
            .host_copy(HostCopyJob {
                bytes,
                rounds: 3,
                timeout: Duration::from_secs(60),
                data: &mut data,
            })
            .expect("Vulkan has host copies")
            .unwrap_or_else(|e| panic!("{bytes} bytes: {e}"));
        assert_eq!(data.rounds_seen, [0, 1, 2]);
        assert_eq!(data.mismatches, 0, "{bytes} bytes");
        assert_eq!((stats.up_ns.len(), stats.down_ns.len()), (3, 3));
        assert!(
            stats.up_ns.iter().chain(&stats.down_ns).all(|&ns| ns > 0),
            "{stats:?}"
        );
        assert!(
            stats.how.contains("vkCmdCopyBuffer") && stats.how.contains("HOST_VISIBLE"),
            "{}",
            stats.how
        );
        if dev.info().timestamps {
            assert_eq!(stats.timing, TimingSource::DeviceTimestamps);
        }
    }
    assert_clean(&dev);
}

#[test]
fn a_host_copy_of_nothing_or_no_rounds_is_refused_before_the_device() {
    let mut dev = device();
    let mut data = Data {
        rng: StdRng::seed_from_u64(1),
        wrote: Vec::new(),
        rounds_seen: Vec::new(),
        mismatches: 0,
    };
    for (bytes, rounds, timeout, why) in [
        (0, 1, 1, "0 bytes"),
        (16, 0, 1, "at least 1 round"),
        (16, 1, 0, "timeout must be more than 0"),
    ] {
        let e = dev
            .host_copy(HostCopyJob {
                bytes,
                rounds,
                timeout: Duration::from_secs(timeout),
                data: &mut data,
            })
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(&e, RuntimeError::BadInput(m) if m.contains(why)),
            "{e}"
        );
    }
    assert!(data.rounds_seen.is_empty());
    let e = dev
        .host_copy(HostCopyJob {
            bytes: usize::MAX / 2,
            rounds: 1,
            timeout: Duration::from_secs(1),
            data: &mut data,
        })
        .unwrap()
        .unwrap_err();
    assert!(
        e.to_string().contains("over maxMemoryAllocationSize"),
        "{e}"
    );
    assert!(dev.lost().is_none());
    assert_clean(&dev);
}
