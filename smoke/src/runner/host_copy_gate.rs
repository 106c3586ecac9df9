//! The host-copy gate: the op's bytes from pinned host memory to the device
//! and back into other pinned memory, round after round, fresh random
//! bytes each round compared on the host with what was sent; each
//! direction's best round, the slower one the gate's rate, held to
//! [`HOST_LINK_FLOOR`] of the PCIe link's rate where the device has a link.
//!
//! The best round, not the median: the gate asks what the link can carry.
//! A link trained slower or narrower slows every round; a sound one has
//! rounds at half its rate now and then (an H200's Gen5 x16 took 3 of 5
//! host-to-device rounds at 27 GB/s, 2 at 54, in one of 8 runs on
//! 2026-11-29), which the median held against it.

use super::{describe, skipped, DeviceContext, GateRun};
use crate::gates::Gate;
use crate::inputs::{gate_seed, SplitMix64, PIECE};
use crate::results::{Floor, GateResult, GateStatus, HostCopySummary, Metrics};
use crate::telemetry::{link_gbps, LinkState, HOST_LINK_FLOOR};
use greta_kernels::{HostBuf, RateUnit};
use greta_runtime::Link;
use greta_runtime::{Backend, HostCopyData, HostCopyJob, RunStats, TimingSource};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// Rounds when the run gives no `--repeat`.
const ROUNDS: u32 = 5;

/// Each round's bytes from the seed, and what came back judged.
struct Data<'a> {
    seed: u64,
    device: usize,
    gate: &'a str,
    faults: &'a crate::inject::Faults,
    clean: Vec<bool>,
    /// The first difference seen: round, byte offset, sent, got.
    first_bad: Option<(u32, usize, u8, u8)>,
}

impl HostCopyData for Data<'_> {
    fn fill(&mut self, round: u32, up: &mut [u8], down: &mut [u8]) {
        // One draw per 8 bytes (the tail: the first bytes of the next
        // draw), in pieces on every core, each piece starting at its place
        // in the seed's stream: the serial loop's bytes.
        let s0 = self.seed.wrapping_add(u64::from(round));
        up.par_chunks_mut(8 * PIECE)
            .enumerate()
            .for_each(|(c, part)| {
                let mut rng = SplitMix64::after(s0, c * PIECE);
                let mut chunks = part.chunks_exact_mut(8);
                for w in &mut chunks {
                    w.copy_from_slice(&rng.next_u64().to_le_bytes());
                }
                let tail = chunks.into_remainder();
                let last = rng.next_u64().to_le_bytes();
                tail.copy_from_slice(&last[..tail.len()]);
            });
        // The complement of what is sent: a byte the copy back left alone
        // differs from it.
        down.par_chunks_mut(8 * PIECE)
            .zip(up.par_chunks(8 * PIECE))
            .for_each(|(d, u)| {
                for (d, u) in d.iter_mut().zip(u) {
                    *d = !*u;
                }
            });
    }

    fn check(&mut self, round: u32, sent: &[u8], back: &[u8]) {
        // TEST-ONLY `--inject corrupt`: one bit of the word in the middle
        // of the first round, flipped in what is compared.
        let mid = (sent.len() / 2) & !3;
        let mut word = None;
        if sent.len() >= 4 {
            let w = u32::from_le_bytes(back[mid..mid + 4].try_into().unwrap_or([0; 4]));
            let mut buf = [HostBuf::U32(vec![w])];
            if self.faults.corrupt(self.device, self.gate, round, &mut buf) {
                if let [HostBuf::U32(v)] = &buf {
                    word = v.first().map(|w| w.to_le_bytes());
                }
            }
        }
        let bad = match word {
            None => (!same(sent, back)).then(|| first_diff(sent, back, 0)),
            Some(w) => {
                let mut b = None;
                for (start, end, got) in [
                    (0, mid, &back[..mid]),
                    (mid, mid + 4, &w[..]),
                    (mid + 4, sent.len(), &back[mid + 4..]),
                ] {
                    if b.is_none() && &sent[start..end] != got {
                        b = Some(first_diff(&sent[start..end], got, start));
                    }
                }
                b
            }
        };
        self.clean.push(bad.is_none());
        if let (None, Some((at, s, g))) = (self.first_bad, bad) {
            self.first_bad = Some((round, at, s, g));
        }
    }
}

/// Whether two slices hold the same bytes, compared on every core.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && a.par_chunks(8 * PIECE)
            .zip(b.par_chunks(8 * PIECE))
            .all(|(x, y)| x == y)
}

/// The first differing byte of two equal-length slices, offset by `base`.
fn first_diff(a: &[u8], b: &[u8], base: usize) -> (usize, u8, u8) {
    a.par_iter()
        .zip(b)
        .position_first(|(x, y)| x != y)
        .map_or((base, 0, 0), |i| (base + i, a[i], b[i]))
}

/// The link a device's host copies are held to, and why none is, from the
/// links its telemetry shows.
pub(super) fn link_for(
    cpu: bool,
    links: &[(String, Link)],
) -> Result<(LinkState, f64, String), String> {
    if cpu {
        return Err(
            "no floor: a CPU device's host copies are memcpy within host memory, over no link"
                .into(),
        );
    }
    let (name, link) = match links {
        [] => {
            return Err(
                "no floor: no PCIe link of this device is known (no NVML, no amdgpu sysfs)".into(),
            )
        }
        [one] => one,
        many => {
            return Err(format!(
                "no floor: {} links and no PCI address to tell which is this device's",
                many.len()
            ))
        }
    };
    let max = link.max;
    let gbps = link_gbps(max).ok_or_else(|| {
        format!(
            "no floor: PCIe Gen{} x{} ({name}) is not a link greta knows the rate of",
            max.gen, max.width
        )
    })?;
    Ok((
        max,
        gbps,
        format!(
            "PCIe Gen{} x{} of {name}: {gbps:.1} GB/s each way",
            max.gen, max.width
        ),
    ))
}

/// The fastest round of `ns` as GB/s of `bytes` (see the module's doc).
fn best_gbps(bytes: u64, ns: &[u64]) -> Option<f64> {
    let best = ns.iter().copied().filter(|&n| n > 0).min()?;
    Some(bytes as f64 / best as f64)
}

pub(super) fn run_host_copy(
    backend: &mut dyn Backend,
    gate: &Gate,
    ctx: &DeviceContext<'_>,
    links: &[(String, Link)],
) -> GateRun {
    let started = Instant::now();
    let device = backend.info().index;
    let cpu = backend.info().is_cpu();
    let fail = |reason: String, lost: Option<String>| GateRun {
        result: GateResult {
            status: GateStatus::Fail,
            wall_s: started.elapsed().as_secs_f64(),
            ..skipped(gate, ctx.seed, reason)
        },
        lost,
        notes: Vec::new(),
        out_of_memory: false,
    };
    let bytes = gate.op.bytes_moved() / 2;
    let Ok(n) = usize::try_from(bytes) else {
        return fail(
            format!("{}: {bytes} bytes do not fit this host", gate.op),
            None,
        );
    };
    let rounds = ctx.repeat.unwrap_or(ROUNDS).max(1);
    let mut data = Data {
        seed: gate_seed(ctx.seed, &gate.id),
        device,
        gate: &gate.id,
        faults: ctx.faults,
        clean: Vec::new(),
        first_bad: None,
    };
    let job = HostCopyJob {
        bytes: n,
        rounds,
        timeout: ctx.timeout,
        data: &mut data,
    };
    let stats = match backend.host_copy(job) {
        None => {
            return GateRun {
                result: skipped(
                    gate,
                    ctx.seed,
                    "this backend has no pinned host memory to copy from".into(),
                ),
                lost: None,
                notes: Vec::new(),
                out_of_memory: false,
            }
        }
        Some(Err(e)) => {
            let msg = describe(&e);
            let lost = e
                .is_fatal_for_device()
                .then(|| format!("{}: {msg}", gate.id));
            return fail(msg, lost);
        }
        Some(Ok(s)) => s,
    };
    // TEST-ONLY `--inject slow`: both directions' times stretched.
    let mut up_ns = stats.up_ns.clone();
    let mut down_ns = stats.down_ns.clone();
    for times in [&mut up_ns, &mut down_ns] {
        let mut t = RunStats {
            device_ns: std::mem::take(times),
            timing: stats.timing,
            wall: Duration::ZERO,
            kernel: String::new(),
            tuning: Default::default(),
            dispatches_per_repeat: 1,
            step_ns: Vec::new(),
        };
        ctx.faults.slow(device, &mut t);
        *times = t.device_ns;
    }
    let up = best_gbps(bytes, &up_ns);
    let down = best_gbps(bytes, &down_ns);
    let rate = match (up, down) {
        (Some(u), Some(d)) => Some(u.min(d)),
        _ => None,
    };
    let clean = data.clean.iter().filter(|c| **c).count() as u32;
    let link = link_for(cpu, links);
    let mut summary = HostCopySummary {
        bytes,
        rounds,
        rounds_clean: clean,
        up_gbps: up,
        down_gbps: down,
        how: stats.how.clone(),
        link: None,
        link_gbps: None,
        no_floor: None,
    };
    let mut floor = None;
    match link {
        Ok((state, gbps, source)) => {
            summary.link = Some(state);
            summary.link_gbps = Some(gbps);
            let limit = HOST_LINK_FLOOR * gbps;
            floor = Some(Floor {
                limit,
                unit: RateUnit::GBps,
                reference: gbps,
                fraction: HOST_LINK_FLOOR,
                source,
                passed: rate.is_some_and(|r| r >= limit),
            });
        }
        Err(why) => summary.no_floor = Some(why),
    }
    let mut reasons = Vec::new();
    if let Some((round, at, s, g)) = data.first_bad {
        reasons.push(format!(
            "{} of {rounds} rounds came back wrong: first in round {round} at byte {at}: sent {s:#04x}, got {g:#04x}",
            rounds - clean
        ));
    }
    if let Some(f) = floor.as_ref().filter(|f| !f.passed) {
        let shown = |v: Option<f64>| v.map_or_else(|| "unmeasured".into(), |v| format!("{v:.2}"));
        reasons.push(format!(
            "host to device {} GB/s, device to host {} GB/s: under the floor {:.2} GB/s ({} x {:.1} GB/s, {})",
            shown(up),
            shown(down),
            f.limit,
            f.fraction,
            f.reference,
            f.source
        ));
    }
    let median_ns = |v: &[u64]| -> Option<f64> {
        let mut v = v.to_vec();
        v.sort_unstable();
        v.get(v.len() / 2).map(|&n| n as f64)
    };
    let slower = up_ns
        .iter()
        .zip(&down_ns)
        .map(|(a, b)| *a.max(b))
        .collect::<Vec<_>>();
    let metrics = Metrics {
        rate,
        unit: RateUnit::GBps,
        rel_err: None,
        max_abs_err: None,
        repeats_clean: clean,
        repeats_total: rounds,
        time_median_us: median_ns(&slower).map(|ns| ns / 1e3),
        time_min_us: slower.iter().min().map(|&ns| ns as f64 / 1e3),
        wall_median_us: None,
        bytes,
        flops: 0,
        timing: Some(
            match stats.timing {
                TimingSource::DeviceTimestamps => "device_timestamps",
                TimingSource::WallClock => "wall_clock",
            }
            .into(),
        ),
        first_call_us: None,
    };
    let mut result = GateResult {
        status: if reasons.is_empty() {
            GateStatus::Pass
        } else {
            GateStatus::Fail
        },
        reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
        metrics: Some(metrics),
        floor,
        wall_s: started.elapsed().as_secs_f64(),
        kernel: Some(stats.how),
        ..skipped(gate, ctx.seed, String::new())
    };
    result.in_run.host_copy = Some(summary);
    GateRun {
        result,
        lost: None,
        notes: Vec::new(),
        out_of_memory: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round's bytes, filled in pieces on 1, 2, 3 or 8 threads, are the
    /// serial loop's (one draw per 8 bytes, the tail from the next draw),
    /// and what comes back is compared as serially: equal passes, one
    /// flipped byte anywhere is found at its offset.
    #[test]
    fn the_link_is_judged_by_its_best_round() {
        let gib = 1u64 << 28;
        // A sound Gen5 x16 link with rounds at half rate now and then.
        let mixed = [9_900_000, 4_960_000, 9_910_000, 4_990_000, 9_880_000];
        let r = best_gbps(gib, &mixed).unwrap();
        assert!((r - gib as f64 / 4_960_000.0).abs() < 1e-9, "{r}");
        // A link at half rate in every round stays at half rate.
        let slow = [9_900_000, 9_950_000, 9_910_000];
        assert!(best_gbps(gib, &slow).unwrap() < 27.2);
        // Rounds the device did not time are no rounds.
        assert_eq!(best_gbps(gib, &[0, 0]), None);
        assert_eq!(best_gbps(gib, &[]), None);
    }

    #[test]
    fn a_round_is_the_serial_stream_for_any_thread_count() {
        let faults = crate::inject::Faults::default();
        let n = 3 * 8 * PIECE + 13;
        let serial = {
            let mut rng = SplitMix64::new(77u64.wrapping_add(2));
            let mut v = Vec::with_capacity(n + 8);
            while v.len() < n {
                v.extend_from_slice(&rng.next_u64().to_le_bytes());
            }
            v.truncate(n);
            v
        };
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let mut data = Data {
                    seed: 77,
                    device: 0,
                    gate: "copy.host.t",
                    faults: &faults,
                    clean: Vec::new(),
                    first_bad: None,
                };
                let (mut up, mut down) = (vec![0u8; n], vec![0u8; n]);
                data.fill(2, &mut up, &mut down);
                assert!(up == serial, "{threads} threads");
                assert!(down.iter().zip(&up).all(|(d, u)| *d == !*u));
                data.check(2, &up, &up.clone());
                let mut back = up.clone();
                back[n - 5] ^= 4;
                data.check(3, &up, &back);
                assert_eq!(data.clean, [true, false]);
                assert_eq!(data.first_bad, Some((3, n - 5, up[n - 5], back[n - 5])));
            });
        }
    }
}
