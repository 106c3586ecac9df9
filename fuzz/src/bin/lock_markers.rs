//! AFL++ harness of the `lock_markers` target (its body: fuzz-targets/src).
//!
//! Its allocator bounds memory as the target's acceptance asks: a single
//! allocation over 1 GiB, or one input growing what is live by more than
//! 512 MiB, aborts (AFL++ records a crash). uv-pep508 interns marker nodes
//! for the life of the process and never frees them, so what is live only
//! grows over a persistent-mode loop of distinct markers; past 768 MiB live
//! the process exits cleanly after the input and AFL++ starts a fresh one.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

const MAX_ONE: usize = 1 << 30;
const MAX_INPUT_GROWTH: usize = 512 << 20;
const RESTART_AT: usize = 768 << 20;

static LIVE: AtomicUsize = AtomicUsize::new(0);

struct Bounded;

// SAFETY: every call is the system allocator's; only a counter is kept, and
// an allocation past the limit aborts before it is made.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.size() > MAX_ONE {
            std::process::abort();
        }
        LIVE.fetch_add(l.size(), Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        // SAFETY: `p` came from `System` with layout `l`.
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > MAX_ONE {
            std::process::abort();
        }
        // SAFETY: as for `dealloc`; `new` is the caller's.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_add(new, Relaxed);
            LIVE.fetch_sub(l.size(), Relaxed);
        }
        q
    }
}

#[global_allocator]
static A: Bounded = Bounded;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let before = LIVE.load(Relaxed);
        greta_fuzz_targets::lock_markers(data);
        let after = LIVE.load(Relaxed);
        if after.saturating_sub(before) > MAX_INPUT_GROWTH {
            eprintln!("one input grew live memory by {} MiB", (after - before) >> 20);
            std::process::abort();
        }
        if after > RESTART_AT {
            std::process::exit(0);
        }
    });
}
