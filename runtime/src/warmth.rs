//! How warm a GPU's clocks are when work is about to be timed.
//!
//! An idle GPU clocks down (H200: 345 MHz SM clock at rest) and its driver
//! clocks it up only after sustained work, so timed work starts after
//! untimed passes: about a second of them before large work, 30 ms before
//! small (`vulkan/warmup.rs` has the measurements). Every run did its whole
//! warm-up, also straight after another run had kept the GPU busy: a
//! gate's three repeats warmed up three times, so `memtest.1g`'s three
//! seconds in `health` on an H200 were its warm-ups.
//!
//! Work the GPU has just done counts instead. [`Warmth`] keeps how much
//! sustained work the GPU has behind it: each run adds the time the device
//! itself was busy with it (its kernels' time by the device's clock, never
//! the host's wall time around them), each idle moment drains the same
//! amount, inside a run (the gaps between small launches) as between runs
//! (a GPU idle as long as it was busy is taken to be back at rest), and it
//! never holds more than [`MOST`] (the longest warm-up asked). A run then
//! warms up for what its target still lacks: none after a run that ended
//! moments ago having warmed up itself, all of it after a second of idle.
//!
//! Counting the host's wall time instead (a first version) let runs of
//! microsecond kernels, each a few milliseconds of mostly idle device,
//! vouch for one another: on an H200 (2026-11-29, `greta smoke --backend
//! cuda`) the default profile's small gates were then all timed at idle
//! clocks, 2.6-3.8 times their warm times (copy.16m 30.4 µs for 8.1).

use greta_kernels::Op;
use std::time::{Duration, Instant};

/// GPU time of warm-up before the timed work of large ops (a pass moves at
/// least [`LARGE_BYTES`] or does at least [`LARGE_FLOPS`]). An idle GPU
/// clocks down (H200: 345 MHz SM clock at rest) and the driver clocks it
/// up only after sustained work: timed straight after the seconds a gate
/// spends checking results on the CPU, fill 1 GiB ran at 1255 GB/s after
/// 30 ms of warm-up and at 4359 GB/s after 1 s (H200, driver 580.159.04,
/// 2026-11-22; copy 1691 -> 4085, rmsnorm 4096x8192 1492 -> 3826 GB/s,
/// gemm_f16 4096 13 -> 65 TFLOP/s).
const LARGE: Duration = Duration::from_secs(1);
/// ... and of small ops (launch-bound or cache-resident: quick profiles
/// stay quick).
const SMALL: Duration = Duration::from_millis(30);
const LARGE_BYTES: u64 = 64 << 20;
/// Warm-up a graph's replays ask for, on both backends: a layer's replay is
/// a fraction of a millisecond, so its warm-up is sized in replays of it.
pub(crate) const GRAPH_NS: u64 = 300_000_000;
const LARGE_FLOPS: u64 = 8_000_000_000;

/// Nanoseconds of warm-up work of `bytes` and `flops` a pass asks for
/// before it is timed, on both backends (less what [`Warmth`] spares).
pub(crate) fn target_ns(bytes: u64, flops: u64) -> u64 {
    let t = if bytes >= LARGE_BYTES || flops >= LARGE_FLOPS {
        LARGE
    } else {
        SMALL
    };
    t.as_nanos() as u64
}

/// [`target_ns`] of `op`'s work. None for the test-only ops. A memory
/// test asks for the small ops' warm-up whatever it moves: its rate is
/// reported, never held to a floor, and what it is for (every word
/// written and read back) is the same at any clock; the second of
/// warm-up its gigabytes asked for was most of `health`'s memory-test
/// time (H200, 2026-11-29: 0.34 s of 0.30 s-long repeats of memtest.16m).
pub(crate) fn op_target_ns(op: &Op) -> u64 {
    match op {
        _ if op.is_test_only() => 0,
        Op::Memtest { .. } => SMALL.as_nanos() as u64,
        _ => target_ns(op.bytes_moved(), op.flops()),
    }
}

/// The most warmth kept: the longest warm-up any run asks for, so a GPU
/// idle for that long is cold again whatever it did before.
pub(crate) const MOST: Duration = LARGE;

/// The warm-up a run does right before its timed work when the work
/// before was other work (another op or shape), whatever its warmth: the
/// small ops' whole target. On an H200 (2026-11-29, the default profile
/// on CUDA beside a build that warmed every run up in full), small gates
/// timed straight after a second of large work, with no warm-up of their
/// own, took 1.5-3.3 times as long as warmed-up ones: a GPU busy moments
/// ago with other work still needs some of this work right before a
/// microsecond kernel is timed.
pub(crate) const FLOOR: Duration = Duration::from_millis(30);

/// The warm-up a run of the same work as the run before does right before
/// its timed work, however warm the GPU is: the gap between two repeats
/// (an upload, a read-back, about a millisecond) leaves it idle long
/// enough to run the next microsecond kernel slow. On the same H200 a
/// build that spared such repeats all warm-up timed the default profile's
/// f16 gates (repeats 2-10 after one warmed-up first) at 1.5-3.3 times
/// the base's; a few hundred back-to-back passes right before cost a
/// gate's repeat 2 ms instead of [`FLOOR`]'s 30.
pub(crate) const WAKE: Duration = Duration::from_millis(2);

/// A device's clocks: the sustained work behind it when it went idle.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Warmth {
    /// Busy time behind the GPU at `idle_since`, at most [`MOST`].
    busy: Duration,
    /// When its last work ended (`None`: no work yet, cold).
    idle_since: Option<Instant>,
    /// A fingerprint of the work last announced ([`Warmth::next`]).
    last: Option<u64>,
    /// The work announced is the one before it too: no [`FLOOR`].
    same: bool,
}

impl Warmth {
    /// The warmth left at `now` (drained by the idle time since).
    fn left_at(&self, now: Instant) -> Duration {
        match self.idle_since {
            Some(t) => self.busy.saturating_sub(now.saturating_duration_since(t)),
            None => Duration::ZERO,
        }
    }

    /// Says what work runs next (an op and its shape, as the runner names
    /// it): a run of the same work as the last one announced owes
    /// [`WAKE`] instead of [`FLOOR`]. A runner that announces nothing
    /// always owes the floor.
    pub(crate) fn next(&mut self, work: &str) {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        work.hash(&mut h);
        let h = h.finish();
        self.same = self.last == Some(h);
        self.last = Some(h);
    }

    /// Nanoseconds of warm-up still owed before timed work that asks for
    /// `target_ns` of it, starting now.
    pub(crate) fn owed(&self, target_ns: u64) -> u64 {
        self.owed_at(target_ns, Instant::now())
    }

    pub(crate) fn owed_at(&self, target_ns: u64, now: Instant) -> u64 {
        let left = u64::try_from(self.left_at(now).as_nanos()).unwrap_or(u64::MAX);
        let floor = if self.same { WAKE } else { FLOOR };
        let floor = target_ns.min(floor.as_nanos() as u64);
        target_ns.saturating_sub(left).max(floor)
    }

    /// Work ran from `began` (after the upload) until `ended` (the wait
    /// that saw it complete), keeping the device busy for `busy` of that
    /// time (its own clock); the rest of the span was idle.
    pub(crate) fn worked(&mut self, began: Instant, ended: Instant, busy: Duration) {
        let span = ended.saturating_duration_since(began);
        let busy = busy.min(span);
        let idle = span - busy;
        self.busy = (self.left_at(began) + busy).saturating_sub(idle).min(MOST);
        self.idle_since = Some(ended);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_cold_gpu_owes_the_whole_warm_up() {
        let w = Warmth::default();
        assert_eq!(w.owed(1000 * MS), 1000 * MS);
        assert_eq!(w.owed(30 * MS), 30 * MS);
    }

    /// Straight after a second of work nothing is owed; idle time drains
    /// the warmth at the rate it was built, so the warm-up owed is the
    /// idle time (up to the target), and a second of idle is cold.
    #[test]
    fn idle_time_drains_what_work_built() {
        let t0 = Instant::now();
        let mut w = Warmth::default();
        w.worked(
            t0,
            t0 + Duration::from_millis(1200),
            Duration::from_millis(1200),
        );
        let end = t0 + Duration::from_millis(1200);
        assert_eq!(w.owed_at(1000 * MS, end), 30 * MS);
        assert_eq!(
            w.owed_at(1000 * MS, end + Duration::from_millis(300)),
            300 * MS
        );
        // Small work always warms up in full, right before it is timed.
        assert_eq!(
            w.owed_at(30 * MS, end + Duration::from_millis(300)),
            30 * MS
        );
        assert_eq!(w.owed_at(10 * MS, end), 10 * MS);
        assert_eq!(
            w.owed_at(1000 * MS, end + Duration::from_secs(1)),
            1000 * MS
        );
        assert_eq!(
            w.owed_at(1000 * MS, end + Duration::from_secs(9)),
            1000 * MS
        );
    }

    /// Short runs with long gaps never add up: 5 ms of work after 50 ms
    /// of idle, over and over, leaves the GPU cold.
    #[test]
    fn a_low_duty_cycle_stays_cold() {
        let mut t = Instant::now();
        let mut w = Warmth::default();
        for _ in 0..1000 {
            w.worked(t, t + Duration::from_millis(5), Duration::from_millis(5));
            t += Duration::from_millis(55);
        }
        assert_eq!(w.owed_at(1000 * MS, t), 1000 * MS);
        assert_eq!(w.owed_at(30 * MS, t), 30 * MS);
    }

    /// Back-to-back runs (gaps shorter than their work) keep it warm: a
    /// run after a warmed-up one owes only the gap.
    #[test]
    fn back_to_back_runs_owe_only_their_gaps() {
        let t0 = Instant::now();
        let mut w = Warmth::default();
        // The first run's warm-up and timed work: a second and a bit.
        w.worked(
            t0,
            t0 + Duration::from_millis(1010),
            Duration::from_millis(1010),
        );
        let mut t = t0 + Duration::from_millis(1010);
        for _ in 0..5 {
            let start = t + Duration::from_millis(80);
            let owed = w.owed_at(1000 * MS, start);
            assert_eq!(owed, 80 * MS);
            // It warms up for what it owes, then times 10 ms.
            let end = start + Duration::from_millis(90);
            w.worked(start, end, end - start);
            t = end;
        }
    }

    /// A gate's repeats: the first run of a work after other work owes the
    /// floor however warm the GPU is; the runs of the same work after it
    /// owe their gaps, and at least the wake-up; other work owes the
    /// floor again.
    #[test]
    fn the_floor_is_owed_by_the_first_run_of_a_work() {
        let mut t = Instant::now();
        let mut w = Warmth::default();
        w.next("rmsnorm 64x1024");
        assert_eq!(w.owed_at(30 * MS, t), 30 * MS);
        w.worked(t, t + Duration::from_millis(30), Duration::from_millis(30));
        t += Duration::from_millis(30);
        // 1 ms later its repeat: 1 ms owed by the warmth, the wake-up's 2 ms
        // by the floor of a repeat.
        let start = t + Duration::from_millis(1);
        w.next("rmsnorm 64x1024");
        assert_eq!(w.owed_at(30 * MS, start), 2 * MS);
        w.worked(
            start,
            start + Duration::from_millis(2),
            Duration::from_millis(2),
        );
        t = start + Duration::from_millis(2);
        // 10 ms later the next: 31 ms of warmth less 10 of idle, 9 owed.
        let start = t + Duration::from_millis(10);
        w.next("rmsnorm 64x1024");
        assert_eq!(w.owed_at(30 * MS, start), 9 * MS);
        w.worked(
            start,
            start + Duration::from_millis(9),
            Duration::from_millis(9),
        );
        t = start + Duration::from_millis(9);
        // A second of other work: the next small gate owes its floor.
        w.next("memtest.1g");
        w.worked(t, t + Duration::from_secs(1), Duration::from_secs(1));
        t += Duration::from_secs(1);
        w.next("rmsnorm 64x1024");
        assert_eq!(w.owed_at(30 * MS, t), 30 * MS);
        w.worked(t, t + Duration::from_millis(30), Duration::from_millis(30));
        t += Duration::from_millis(30);
        // Its repeat, straight after: the GPU is warm, only the wake-up
        // right before the timed work is owed.
        w.next("rmsnorm 64x1024");
        assert_eq!(w.owed_at(30 * MS, t), 2 * MS);
        // Never more than the target asks.
        w.next("noop");
        assert_eq!(w.owed_at(MS, t), MS);
    }

    /// Runs of microsecond kernels whose span is mostly host time vouch for
    /// nothing: a thousand of them back to back, each 2 ms of span with
    /// 20 µs of device work, leave the GPU cold, where counting their span
    /// would have called it warm.
    #[test]
    fn only_the_devices_own_busy_time_counts() {
        let mut t = Instant::now();
        let mut w = Warmth::default();
        for _ in 0..1000 {
            let end = t + Duration::from_millis(2);
            w.worked(t, end, Duration::from_micros(20));
            t = end + Duration::from_micros(100);
        }
        assert_eq!(w.owed_at(30 * MS, t), 30 * MS);
        // A real warm-up in between is kept, less the idle inside its span.
        w.worked(t, t + Duration::from_millis(40), Duration::from_millis(35));
        let end = t + Duration::from_millis(40);
        assert_eq!(w.owed_at(100 * MS, end), 70 * MS);
        assert_eq!(w.owed_at(1000 * MS, end), 970 * MS);
        // Busy time beyond the span (clock skew) counts as the span.
        let mut x = Warmth::default();
        x.worked(t, t + Duration::from_millis(10), Duration::from_secs(5));
        assert_eq!(
            x.owed_at(1000 * MS, t + Duration::from_millis(10)),
            990 * MS
        );
    }
}
