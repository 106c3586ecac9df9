//! AFL++ harness of the `lock_markers` target (its body: fuzz-targets/src).
//!
//! Memory, as the target's acceptance asks: a single allocation over 1 GiB
//! aborts (`greta_fuzz::Bounded`), and so does one input growing what is
//! live by more than 512 MiB (AFL++ records a crash).
//!
//! AFL++'s persistent mode runs input after input in one process, and two
//! things outlive each input: uv-pep508 interns marker nodes for the life
//! of the process and never frees them, and greta bounds the marker work of
//! the whole process (`greta_lockset::marker_bounds::PROCESS_WORK`), so an
//! input read after others had used that up was refused for their cost,
//! not its own (and the algebra was no longer fuzzed at all). So the
//! process exits cleanly after an input once less than one lockfile's share
//! of that work is left, or past 768 MiB live, and AFL++ starts a fresh one
//! from its fork server: every input is judged as greta judges one file.
const MAX_INPUT_GROWTH: usize = 512 << 20;
const RESTART_AT: usize = 768 << 20;

#[global_allocator]
static A: greta_fuzz::Bounded = greta_fuzz::Bounded;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let before = greta_fuzz::live();
        greta_fuzz_targets::lock_markers(data);
        let after = greta_fuzz::live();
        if after.saturating_sub(before) > MAX_INPUT_GROWTH {
            eprintln!(
                "one input grew live memory by {} MiB",
                (after - before) >> 20
            );
            std::process::abort();
        }
        if after > RESTART_AT || greta_fuzz_targets::lock_markers_process_spent() {
            std::process::exit(0);
        }
    });
}
