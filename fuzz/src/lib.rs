//! What the AFL++ harnesses in `src/bin/` share: the allocator that holds
//! every target to the memory bar of docs/reliability.md (no single
//! allocation over 1 GiB) and counts the bytes live, so a harness can tell
//! how much one input grew the process.
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The largest single allocation a target may ask for.
pub const MAX_ONE: usize = 1 << 30;

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Bytes allocated and not yet freed, in this process.
pub fn live() -> usize {
    LIVE.load(Relaxed)
}

/// The system allocator, counting what is live; a request over
/// [`MAX_ONE`] aborts before it is made (AFL++ records a crash).
pub struct Bounded;

/// Says why on stderr (a static message: nothing is allocated) and aborts.
fn over() -> ! {
    let _ = std::io::stderr().write_all(b"greta-fuzz: an allocation over 1 GiB was asked for\n");
    std::process::abort();
}

// SAFETY: every call is the system allocator's with the caller's layout;
// only a counter is kept, and a request past the cap aborts before it is made.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.size() > MAX_ONE {
            over();
        }
        LIVE.fetch_add(l.size(), Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(l) }
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if l.size() > MAX_ONE {
            over();
        }
        LIVE.fetch_add(l.size(), Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc_zeroed(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        // SAFETY: `p` came from `System` with layout `l`.
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > MAX_ONE {
            over();
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
