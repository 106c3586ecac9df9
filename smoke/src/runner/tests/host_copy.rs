//! The host-copy gate over a fake device whose copies can drop a byte,
//! skip the copy back, or run at any speed; its link floor from the links
//! a device's telemetry shows.

use super::*;
use crate::telemetry::{link_gbps, LinkState, HOST_LINK_FLOOR};
use greta_runtime::{HostCopyJob, HostCopyStats, Link};

/// A device whose host copies take `ns` each way for the job's bytes.
struct CopyFake {
    info: greta_runtime::DeviceInfo,
    up_ns: u64,
    down_ns: u64,
    /// Flip this byte of what comes back in round 1.
    flip: Option<usize>,
    /// The copy back never happens.
    no_copy_back: bool,
}

impl CopyFake {
    fn new(cpu: bool) -> CopyFake {
        let mut info = fake_info(true);
        if cpu {
            info.device_type = greta_vocab::DeviceType::Cpu;
        }
        CopyFake {
            info,
            up_ns: 1_000_000,
            down_ns: 1_000_000,
            flip: None,
            no_copy_back: false,
        }
    }
}

impl Backend for CopyFake {
    fn info(&self) -> &greta_runtime::DeviceInfo {
        &self.info
    }
    fn supports(&self, _: &Op) -> Result<(), String> {
        Ok(())
    }
    fn run(&mut self, _: Job<'_>) -> Result<RunStats, RuntimeError> {
        Err(RuntimeError::Unsupported("copies only".into()))
    }
    fn lost(&self) -> Option<&str> {
        None
    }
    fn host_copy(&mut self, job: HostCopyJob<'_>) -> Option<Result<HostCopyStats, RuntimeError>> {
        let n = job.bytes;
        let (mut up, mut down) = (vec![0u8; n], vec![0u8; n]);
        for r in 0..job.rounds {
            job.data.fill(r, &mut up, &mut down);
            if !self.no_copy_back {
                down.copy_from_slice(&up);
            }
            if let (1, Some(i)) = (r, self.flip) {
                down[i] ^= 0x10;
            }
            job.data.check(r, &up, &down);
        }
        Some(Ok(HostCopyStats {
            up_ns: vec![self.up_ns; job.rounds as usize],
            down_ns: vec![self.down_ns; job.rounds as usize],
            timing: TimingSource::DeviceTimestamps,
            how: "fake pinned memory".into(),
        }))
    }
}

/// 1 MiB each way.
fn gate() -> Gate {
    let mut c = crate::gates::Catalog::parse(
        "t.toml",
        "[[gate]]\nid = \"copy.host.t\"\nabout = \"\"\nop = { op = \"copy\", n = 262144 }\nprofiles = [\"acceptance\"]\nhost_link = true\n",
    )
    .unwrap();
    c.gates.remove(0)
}

fn gen5x16() -> Vec<(String, Link)> {
    let max = LinkState { gen: 5, width: 16 };
    vec![("nvml:0".into(), Link { current: max, max })]
}

fn run(dev: &mut CopyFake, links: &[(String, Link)]) -> GateResult {
    let f = Fixture::new();
    let g = gate();
    host_copy_gate::run_host_copy(dev, &g, &f.ctx(None), links).result
}

#[test]
fn link_rates_are_the_line_rate_after_coding() {
    let r = |gen, width| link_gbps(LinkState { gen, width });
    assert!((r(5, 16).unwrap() - 63.015).abs() < 1e-3, "{:?}", r(5, 16));
    assert!((r(4, 16).unwrap() - 31.508).abs() < 1e-3);
    assert!((r(3, 8).unwrap() - 7.877).abs() < 1e-3);
    assert_eq!(r(2, 16), Some(8.0));
    assert_eq!(r(1, 1), Some(0.25));
    assert!((r(6, 16).unwrap() - 121.0).abs() < 1e-9);
    assert_eq!((r(7, 16), r(5, 0), r(0, 16)), (None, None, None));
    // A link down a generation or at half its lanes is under the floor.
    for down in [r(4, 16), r(5, 8)] {
        assert!(down.unwrap() < HOST_LINK_FLOOR * r(5, 16).unwrap());
    }
}

#[test]
fn a_healthy_copy_passes_its_link_floor_each_way() {
    // 1 MiB in 20 us each way: 52.4 GB/s of Gen5 x16's 63.0 (0.83).
    let mut dev = CopyFake::new(false);
    dev.up_ns = 20_000;
    dev.down_ns = 20_000;
    let g = run(&mut dev, &gen5x16());
    assert_eq!(g.status, GateStatus::Pass, "{:?}", g.reason);
    let h = g.in_run.host_copy.as_ref().unwrap();
    assert_eq!((h.rounds, h.rounds_clean, h.bytes), (3, 3, 1 << 20));
    assert_eq!(h.up_gbps, Some(52.4288));
    assert_eq!(h.link, Some(LinkState { gen: 5, width: 16 }));
    let f = g.floor.as_ref().unwrap();
    assert!(f.passed && f.fraction == HOST_LINK_FLOOR);
    assert_eq!(f.source, "PCIe Gen5 x16 of nvml:0: 63.0 GB/s each way");
    assert_eq!(g.metrics.as_ref().unwrap().rate, Some(52.4288));
}

#[test]
fn a_slow_direction_fails_the_floor_and_names_both_rates() {
    // Down at 30 GB/s: a Gen4 x16 link's worth, under 0.6 of Gen5 x16.
    let mut dev = CopyFake::new(false);
    dev.up_ns = 20_000;
    dev.down_ns = 34_953;
    let g = run(&mut dev, &gen5x16());
    assert_eq!(g.status, GateStatus::Fail);
    let why = g.reason.as_deref().unwrap();
    assert!(
        why.starts_with("host to device 52.43 GB/s, device to host 30.00 GB/s: under the floor 37.81 GB/s (0.6 x 63.0 GB/s, PCIe Gen5 x16 of nvml:0"),
        "{why}"
    );
    assert_eq!(
        g.metrics
            .as_ref()
            .unwrap()
            .rate
            .map(|r| (r * 100.0).round()),
        Some(3000.0)
    );
}

#[test]
fn a_wrong_byte_or_a_copy_that_never_came_back_fails_with_where() {
    let mut dev = CopyFake::new(false);
    dev.up_ns = 20_000;
    dev.down_ns = 20_000;
    dev.flip = Some(777);
    let g = run(&mut dev, &gen5x16());
    assert_eq!(g.status, GateStatus::Fail);
    let why = g.reason.as_deref().unwrap();
    assert!(
        why.starts_with("1 of 3 rounds came back wrong: first in round 1 at byte 777: sent 0x"),
        "{why}"
    );
    assert_eq!(g.in_run.host_copy.as_ref().unwrap().rounds_clean, 2);
    let mut dev = CopyFake::new(false);
    dev.no_copy_back = true;
    let g = run(&mut dev, &gen5x16());
    let why = g.reason.as_deref().unwrap();
    assert!(
        why.starts_with("3 of 3 rounds came back wrong: first in round 0 at byte 0"),
        "{why}"
    );
}

#[test]
fn the_injected_corruption_and_slowness_reach_the_host_copy() {
    let mut f = Fixture::new();
    f.faults = Faults::parse(
        &["corrupt:0".to_string(), "slow:0:2".to_string()],
        &[gate()],
    )
    .unwrap();
    let mut dev = CopyFake::new(false);
    dev.up_ns = 20_000;
    dev.down_ns = 20_000;
    let g = gate();
    let r = host_copy_gate::run_host_copy(&mut dev, &g, &f.ctx(None), &gen5x16()).result;
    let why = r.reason.as_deref().unwrap();
    assert!(
        why.starts_with("1 of 3 rounds came back wrong: first in round 0 at byte 524291"),
        "{why}"
    );
    assert!(
        why.contains("host to device 26.21 GB/s"),
        "slowed 2x: {why}"
    );
}

#[test]
fn no_floor_on_a_cpu_device_or_without_one_known_link() {
    let mut cpu = CopyFake::new(true);
    let g = run(&mut cpu, &gen5x16());
    assert_eq!(g.status, GateStatus::Pass, "{:?}", g.reason);
    assert!(g.floor.is_none());
    // Why the gate has no floor, as its host-copy result says.
    let no_floor = |g: &GateResult| -> String {
        let h = g.in_run.host_copy.as_ref().unwrap();
        h.no_floor.clone().unwrap_or_default()
    };
    assert_eq!(
        no_floor(&g),
        "no floor: a CPU device's host copies are memcpy within host memory, over no link"
    );
    let mut gpu = CopyFake::new(false);
    let g = run(&mut gpu, &[]);
    assert!(g.floor.is_none());
    assert!(no_floor(&g).contains("no PCIe link"), "{}", no_floor(&g));
    let two = [gen5x16(), gen5x16()].concat();
    let g = run(&mut gpu, &two);
    assert!(no_floor(&g).contains("2 links"), "{}", no_floor(&g));
    // A backend without pinned memory skips the gate and says so.
    let mut plain = FakeDevice::new(true);
    let f = Fixture::new();
    let r = host_copy_gate::run_host_copy(&mut plain, &gate(), &f.ctx(None), &[]).result;
    assert_eq!(r.status, GateStatus::Skip);
    assert_eq!(
        r.reason.as_deref(),
        Some("this backend has no pinned host memory to copy from")
    );
}
