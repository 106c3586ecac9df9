//! A gate's repeats as a pipeline: while the device runs repeat `r`, one
//! worker thread checks repeat `r - 1` against its CPU reference and then
//! prepares repeat `r + 1` in `r - 1`'s buffers. The host's share of a
//! repeat (the reference, the comparison, the next inputs: seconds for the
//! large gates, on every core) then sits beside the device's run instead
//! of between two runs, where the GPU waits for it.
//!
//! What a gate records does not change: verdicts are handed over in repeat
//! order, and repeat `r - 1`'s before repeat `r`'s run outcome, as the
//! serial loop made them; inputs depend on the repeat's seed only. A run
//! that fails (a timeout, a lost device) ends the repeats as before, after
//! the worker has finished what it was doing (host work, bounded).
//!
//! Within a gate only: whether a later gate runs depends on this one's
//! verdict (f16 gates run after the f32 ones pass; nothing more after a
//! lost device), so a gate ends with its last repeat checked, and its wall
//! time is its own. Two repeats' buffers are held at once instead of one,
//! so the pipeline is used only where twice a repeat's buffers fit well
//! within the memory available ([`fits`]); otherwise the loop is serial.

use greta_kernels::Op;

/// Whether two repeats' buffers of `op` at once fit: together at most a
/// quarter of the memory available now (the CPU reference's f64 copies
/// come on top).
pub(super) fn fits(op: &Op) -> bool {
    let bytes: u64 = op
        .inputs()
        .iter()
        .chain(&op.outputs())
        .map(|s| (s.len as u64).saturating_mul(s.dtype.size() as u64))
        .fold(0, u64::saturating_add);
    let mut sys = sysinfo::System::new();
    sys.refresh_memory();
    bytes.saturating_mul(2) <= sys.available_memory() / 4
}

/// Runs `repeats` repeats: `prepare(r, spare)` makes repeat `r`'s host
/// state (in a checked repeat's, where one is spare), `run(r, state)`
/// runs it on the device (on this thread), `check(r, state)` judges what
/// came back, and `verdict(r, v)` takes each judgement in repeat order.
/// With `overlap`, checking the last repeat and preparing the next happen
/// on a worker while the device runs. Returns the repeat whose run failed,
/// and its error; repeats before it were all checked.
pub(super) fn repeats<S: Send, V: Send, E>(
    repeats: u32,
    overlap: bool,
    prepare: impl Fn(u32, Option<S>) -> S + Sync,
    check: impl Fn(u32, &S) -> V + Sync,
    mut run: impl FnMut(u32, &mut S) -> Result<(), E>,
    mut verdict: impl FnMut(u32, V),
) -> Option<(u32, E)> {
    let mut ready: Option<S> = None;
    let mut spare: Option<S> = None;
    // The repeat that ran and is not yet checked.
    let mut pending: Option<(u32, S)> = None;
    for r in 0..repeats {
        let mut state = match ready.take() {
            Some(s) => s,
            None => prepare(r, spare.take()),
        };
        if !overlap {
            if let Err(e) = run(r, &mut state) {
                return Some((r, e));
            }
            verdict(r, check(r, &state));
            spare = Some(state);
            continue;
        }
        let last = pending.take();
        let next = (r + 1 < repeats).then_some(r + 1);
        let (outcome, behind) = std::thread::scope(|s| {
            let (prepare, check) = (&prepare, &check);
            let worker = s.spawn(move || {
                let (judged, spare) = match last {
                    Some((q, st)) => {
                        let v = check(q, &st);
                        (Some((q, v)), Some(st))
                    }
                    None => (None, None),
                };
                (judged, next.map(|n| prepare(n, spare)))
            });
            let outcome = run(r, &mut state);
            (outcome, worker.join())
        });
        let (judged, prepared) = match behind {
            Ok(b) => b,
            // A panic in the reference is the serial loop's panic.
            Err(panic) => std::panic::resume_unwind(panic),
        };
        if let Some((q, v)) = judged {
            verdict(q, v);
        }
        ready = prepared;
        match outcome {
            Err(e) => return Some((r, e)),
            Ok(()) => pending = Some((r, state)),
        }
    }
    if let Some((q, st)) = pending {
        verdict(q, check(q, &st));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// Everything that happened, in order, as the serial loop's words.
    fn trace(overlap: bool, fail_at: Option<u32>) -> (Vec<String>, Option<(u32, String)>) {
        let verdicts = Mutex::new(Vec::new());
        let failed = repeats(
            4,
            overlap,
            |r, spare: Option<Vec<u32>>| {
                let mut v = spare.unwrap_or_default();
                v.clear();
                v.push(r);
                v
            },
            |r, s: &Vec<u32>| {
                assert_eq!(s, &[r], "repeat {r} checked with its own buffers");
                format!("ok {r}")
            },
            |r, s: &mut Vec<u32>| {
                assert_eq!(s, &[r]);
                if Some(r) == fail_at {
                    Err(format!("lost in {r}"))
                } else {
                    Ok(())
                }
            },
            |r, v| verdicts.lock().unwrap().push((r, v)),
        );
        let v: Vec<String> = verdicts
            .into_inner()
            .unwrap()
            .into_iter()
            .map(|(r, v)| format!("{r}: {v}"))
            .collect();
        (v, failed)
    }

    /// The pipeline hands over the serial loop's verdicts, in order, and
    /// stops where it stops: every repeat before a failed run checked,
    /// none after.
    #[test]
    fn verdicts_and_failures_are_the_serial_loops() {
        for fail_at in [None, Some(0), Some(2), Some(3)] {
            let serial = trace(false, fail_at);
            let piped = trace(true, fail_at);
            assert_eq!(piped, serial, "failing at {fail_at:?}");
        }
        let (v, failed) = trace(true, Some(2));
        assert_eq!(v, ["0: ok 0", "1: ok 1"]);
        assert_eq!(failed, Some((2, "lost in 2".into())));
        assert_eq!(trace(true, None).0.len(), 4);
    }

    /// With overlap the check of the last repeat runs while the device
    /// runs this one: a run that waits for the check to have started
    /// completes, where the serial loop would have waited in vain.
    #[test]
    fn the_check_runs_beside_the_device() {
        let checking = Mutex::new(Vec::new());
        let waited = Mutex::new(Vec::new());
        repeats(
            3,
            true,
            |r, _: Option<u32>| r,
            |r, _: &u32| {
                checking.lock().unwrap().push(r);
                std::thread::sleep(Duration::from_millis(50));
            },
            |r, _: &mut u32| -> Result<(), ()> {
                if r > 0 {
                    let t = Instant::now();
                    while !checking.lock().unwrap().contains(&(r - 1)) {
                        assert!(
                            t.elapsed() < Duration::from_secs(30),
                            "check {} never ran",
                            r - 1
                        );
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    waited.lock().unwrap().push(r);
                }
                Ok(())
            },
            |_, _| {},
        );
        assert_eq!(*waited.lock().unwrap(), [1, 2]);
        assert_eq!(*checking.lock().unwrap(), [0, 1, 2]);
    }

    /// A repeat's buffers serve again two repeats later (the pipeline holds
    /// two repeats' at most).
    #[test]
    fn a_checked_repeats_buffers_are_reused() {
        let fresh = Mutex::new(0);
        repeats(
            5,
            true,
            |r, spare: Option<Vec<u8>>| match spare {
                Some(v) => v,
                None => {
                    *fresh.lock().unwrap() += 1;
                    vec![r as u8; 4]
                }
            },
            |_, _: &Vec<u8>| (),
            |_, _: &mut Vec<u8>| -> Result<(), ()> { Ok(()) },
            |_, _| {},
        );
        assert_eq!(*fresh.lock().unwrap(), 2);
    }
}
