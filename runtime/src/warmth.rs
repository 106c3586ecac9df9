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

use std::time::{Duration, Instant};

/// The most warmth kept: the longest warm-up any run asks for, so a GPU
/// idle for that long is cold again whatever it did before.
pub(crate) const MOST: Duration = Duration::from_secs(1);

/// The warm-up every run does right before its timed work, whatever came
/// before: the small ops' whole target. On an H200 (2026-11-29, the
/// default profile on CUDA beside a build that warmed every run up in
/// full), small gates timed straight after a second of large work, with
/// no warm-up of their own, took 1.5-3.3 times as long as warmed-up ones:
/// a GPU busy moments ago still needs work right before a microsecond
/// kernel is timed. What [`Warmth`] spares is the rest of the large ops'
/// second.
pub(crate) const FLOOR: Duration = Duration::from_millis(30);

/// A device's clocks: the sustained work behind it when it went idle.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Warmth {
    /// Busy time behind the GPU at `idle_since`, at most [`MOST`].
    busy: Duration,
    /// When its last work ended (`None`: no work yet, cold).
    idle_since: Option<Instant>,
}

impl Warmth {
    /// The warmth left at `now` (drained by the idle time since).
    fn left_at(&self, now: Instant) -> Duration {
        match self.idle_since {
            Some(t) => self.busy.saturating_sub(now.saturating_duration_since(t)),
            None => Duration::ZERO,
        }
    }

    /// Nanoseconds of warm-up still owed before timed work that asks for
    /// `target_ns` of it, starting now.
    pub(crate) fn owed(&self, target_ns: u64) -> u64 {
        self.owed_at(target_ns, Instant::now())
    }

    pub(crate) fn owed_at(&self, target_ns: u64, now: Instant) -> u64 {
        let left = u64::try_from(self.left_at(now).as_nanos()).unwrap_or(u64::MAX);
        target_ns
            .saturating_sub(left)
            .max(target_ns.min(FLOOR.as_nanos() as u64))
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
