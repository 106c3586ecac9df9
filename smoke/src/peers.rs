//! Peer comparison: after `--device all`, each gate's rate on each device
//! is held against the node's median for that gate. Identical GPUs of one
//! node should measure alike; one that falls under a fraction of its
//! siblings' median (heat, clocks, a degraded PCIe link, memory faults) is
//! an outlier and fails the gate, even when it cleared its fixed floor —
//! the comparison DCGM's and RVS's multi-GPU diagnostics make.

use crate::results::{DeviceRun, GateStatus, Peer, RateUnit, Report};
use std::collections::BTreeMap;

/// Default `--peer-fraction`: a gate must reach 0.85 of the node's median.
/// Identical GPUs measured back to back agree within a few percent; 0.85
/// leaves room for that noise and still flags a card running 15% slow.
pub const DEFAULT_PEER_FRACTION: f64 = 0.85;

/// Gates whose node-median device time per dispatch is shorter than this
/// are not compared: at a few microseconds, launch overhead and timer
/// resolution, not the GPU's health, decide the rate (noop, tiny fills).
pub const PEER_MIN_TIME_US: f64 = 20.0;

/// Compare every gate across `devices` and fail the outliers. Needs at
/// least two devices that measured the gate; a gate that already failed
/// still gets its `peer` record (its rate counts toward the median) but is
/// not failed twice. Device statuses are summarized again afterwards.
pub fn compare(devices: &mut [DeviceRun], fraction: f64) {
    // gate id -> (unit, rates, device times) over the devices that measured it.
    let mut by_gate: BTreeMap<String, (RateUnit, Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for d in devices.iter() {
        for g in &d.gates {
            let Some(m) = &g.metrics else { continue };
            let (Some(rate), Some(t)) = (m.rate, m.time_median_us) else {
                continue;
            };
            if !(rate.is_finite() && rate > 0.0) {
                continue;
            }
            let e = by_gate
                .entry(g.id.clone())
                .or_insert_with(|| (m.unit, Vec::new(), Vec::new()));
            if e.0 == m.unit {
                e.1.push(rate);
                e.2.push(t);
            }
        }
    }
    for d in devices.iter_mut() {
        for g in &mut d.gates {
            let Some(rate) = g.metrics.as_ref().and_then(|m| m.rate) else {
                continue;
            };
            let Some((unit, rates, times)) = by_gate.get(&g.id) else {
                continue;
            };
            if rates.len() < 2 || median(times) < PEER_MIN_TIME_US {
                continue;
            }
            let med = median(rates);
            let (limit, ratio, passed) = if unit.higher_is_better() {
                (fraction * med, rate / med, rate >= fraction * med)
            } else {
                (med / fraction, med / rate, rate <= med / fraction)
            };
            if !passed && g.status == GateStatus::Pass {
                g.status = GateStatus::Fail;
                g.reason = Some(format!(
                    "peer outlier: {rate:.4} {u} is {ratio:.2}x the node's median {med:.4} {u} over {n} devices (limit {limit:.4} {u}, --peer-fraction {fraction})",
                    u = unit.as_str(),
                    n = rates.len(),
                ));
            }
            g.peer = Some(Peer {
                median: med,
                unit: *unit,
                devices: rates.len(),
                fraction,
                limit,
                ratio,
                passed,
            });
        }
        d.status = Report::summarize(std::slice::from_ref(d));
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::sample_report;
    use crate::results::RunStatus;

    /// `n` copies of the sample device, gate 0 (`copy.bw`, GB/s, 80 µs) at
    /// the given rates, gate 1 made a passing noop-like us/dispatch gate.
    fn node(rates: &[f64], us: &[f64]) -> Vec<DeviceRun> {
        let base = sample_report().devices[0].clone();
        rates
            .iter()
            .zip(us)
            .enumerate()
            .map(|(i, (&r, &u))| {
                let mut d = base.clone();
                d.index = i;
                d.gates.truncate(2);
                d.gates[0].metrics.as_mut().unwrap().rate = Some(r);
                let g1 = &mut d.gates[1];
                g1.status = GateStatus::Pass;
                g1.reason = None;
                let m = g1.metrics.as_mut().unwrap();
                m.unit = RateUnit::UsPerDispatch;
                m.rate = Some(u);
                m.time_median_us = Some(u);
                d.status = Report::summarize(std::slice::from_ref(&d));
                d
            })
            .collect()
    }

    #[test]
    fn a_slow_device_is_an_outlier_even_above_its_floor() {
        // Device 2 passed its floor (7.5 GB/s) but runs at 0.8 of its peers.
        let mut devs = node(&[10.0, 10.2, 8.0, 9.9], &[30.0; 4]);
        assert!(devs[2].gates[0].floor.as_ref().unwrap().passed);
        compare(&mut devs, DEFAULT_PEER_FRACTION);
        let p = devs[2].gates[0].peer.as_ref().unwrap();
        // median of 8.0, 9.9, 10.0, 10.2 is 9.95.
        assert_eq!((p.median, p.devices, p.passed), (9.95, 4, false));
        assert!((p.limit - 0.85 * 9.95).abs() < 1e-12);
        assert_eq!(devs[2].gates[0].status, GateStatus::Fail);
        let why = devs[2].gates[0].reason.as_deref().unwrap();
        assert!(
            why.starts_with("peer outlier: 8.0000 GB/s is 0.80x"),
            "{why}"
        );
        assert_eq!(devs[2].status, RunStatus::Fail);
        for i in [0, 1, 3] {
            assert_eq!(devs[i].gates[0].status, GateStatus::Pass, "device {i}");
            assert!(devs[i].gates[0].peer.as_ref().unwrap().passed);
            assert_eq!(devs[i].status, RunStatus::Pass);
        }
    }

    #[test]
    fn two_devices_flag_the_slower_when_far_enough_apart() {
        let mut devs = node(&[10.0, 5.0], &[30.0, 30.0]);
        compare(&mut devs, 0.85);
        assert_eq!(devs[1].gates[0].status, GateStatus::Fail);
        assert_eq!(devs[0].gates[0].status, GateStatus::Pass);
        // 10% apart: within the fraction.
        let mut devs = node(&[10.0, 9.0], &[30.0, 30.0]);
        compare(&mut devs, 0.85);
        assert!(devs.iter().all(|d| d.status == RunStatus::Pass));
        // A stricter fraction catches it.
        compare(&mut devs, 0.99);
        assert_eq!(devs[1].gates[0].status, GateStatus::Fail);
    }

    #[test]
    fn lower_is_better_units_and_the_short_gate_rule() {
        // us/dispatch: device 1 takes twice the median time -> outlier.
        let mut devs = node(&[10.0, 10.0, 10.0], &[30.0, 60.0, 31.0]);
        compare(&mut devs, 0.85);
        let g = &devs[1].gates[1];
        assert_eq!(g.status, GateStatus::Fail);
        let p = g.peer.as_ref().unwrap();
        assert_eq!(p.median, 31.0);
        assert!((p.ratio - 31.0 / 60.0).abs() < 1e-12 && !p.passed);
        assert!((p.limit - 31.0 / 0.85).abs() < 1e-12);
        // The same spread under PEER_MIN_TIME_US is noise: not compared.
        let mut devs = node(&[10.0, 10.0, 10.0], &[3.0, 6.0, 3.1]);
        compare(&mut devs, 0.85);
        assert!(devs[1].gates[1].peer.is_none());
        assert_eq!(devs[1].gates[1].status, GateStatus::Pass);
    }

    #[test]
    fn one_device_or_unmeasured_gates_are_not_compared() {
        let mut devs = node(&[1.0], &[30.0]);
        compare(&mut devs, 0.85);
        assert!(devs[0].gates.iter().all(|g| g.peer.is_none()));
        assert_eq!(devs[0].status, RunStatus::Pass);
        let mut devs = node(&[10.0, 1.0], &[30.0, 30.0]);
        devs[1].gates[0].metrics.as_mut().unwrap().rate = None;
        compare(&mut devs, 0.85);
        assert!(devs[0].gates[0].peer.is_none());
    }
}
