//! Lockfile markers built to exhaust the parser or the marker algebra: each
//! is refused with `file:line:col`, within a bounded allocation. The
//! allocator of this test binary counts what is live and refuses to go past
//! 2 GiB, so an unbounded algebra fails the test (an allocation error)
//! instead of the machine.
use greta_lockset::{Lockfile, SourceError};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
const HARD_CAP: usize = 2 << 30;

impl Counting {
    /// Counts `grow` more bytes live, unless that passes the cap.
    fn take(grow: usize) -> bool {
        let now = LIVE.fetch_add(grow, SeqCst) + grow;
        if now > HARD_CAP {
            LIVE.fetch_sub(grow, SeqCst);
            return false;
        }
        PEAK.fetch_max(now, SeqCst);
        true
    }
}

// SAFETY: every call is passed to the system allocator unchanged; only the
// counters are added (and a null return past the cap, which callers handle).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !Counting::take(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), SeqCst);
        // SAFETY: `p` came from `System` with layout `l` (every allocation here does).
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() && !Counting::take(new - l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `dealloc`; `new` is the caller's.
        let q = unsafe { System.realloc(p, l, new) };
        if q.is_null() {
            if new > l.size() {
                LIVE.fetch_sub(new - l.size(), SeqCst);
            }
        } else if new < l.size() {
            LIVE.fetch_sub(l.size() - new, SeqCst);
        }
        q
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The tests of this binary one at a time: each measures the peak.
static ONE: Mutex<()> = Mutex::new(());

/// What reading `text` as a lockfile allocated at its peak, beyond what was
/// live before, and its result.
fn parse_measured(text: String) -> (usize, greta_lockset::Result<Lockfile>) {
    let before = LIVE.load(SeqCst);
    PEAK.store(before, SeqCst);
    let r = Lockfile::parse(Path::new("pylock.hostile.toml"), text);
    (PEAK.load(SeqCst).saturating_sub(before), r)
}

const H: &str = "abababababababababababababababababababababababababababababababab";

/// A lockfile whose packages carry `markers`; the marker of package i is on
/// line 7 + 6 i, from column 11.
fn lockfile(markers: &[String]) -> String {
    let mut t = String::from("lock-version = \"1.0\"\ncreated-by = \"test\"\n\n");
    for (i, m) in markers.iter().enumerate() {
        t.push_str(&format!(
            "[[packages]]\nname = \"p{i}\"\nversion = \"1\"\nmarker = \"{m}\"\nwheels = [{{ url = \"https://e/p{i}-1-py3-none-any.whl\", hashes = {{ sha256 = \"{H}\" }} }}]\n\n"
        ));
    }
    t
}

fn source_error(r: greta_lockset::Result<Lockfile>) -> SourceError {
    let e = r.expect_err("refused");
    e.source_error()
        .unwrap_or_else(|| panic!("not a SourceError: {e:#}"))
        .clone()
}

/// 15,000 nested parentheses overflowed uv-pep508's recursive parser and
/// aborted `greta lock show`; now the 33rd is refused where it stands.
#[test]
fn deeply_nested_parentheses_are_refused_at_their_place() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let m = format!(
        "{}'device-gfx942' in extras{}",
        "(".repeat(15_000),
        ")".repeat(15_000)
    );
    let (peak, r) = parse_measured(lockfile(&[m]));
    let e = source_error(r);
    assert_eq!((e.line, e.col), (7, 11 + 32), "{e}");
    assert!(
        e.message.contains("parentheses nested deeper than 32"),
        "{e}"
    );
    assert!(e.message.contains("package p0: marker \"(((("), "{e}");
    // The error quotes the start of the marker, not all 30 KB of it.
    assert!(e.message.len() < 400, "{} bytes: {e}", e.message.len());
    assert!(peak < 16 << 20, "{peak} bytes");
}

/// 5,000 terms `'device-gfxN' in extras` made the marker algebra allocate
/// more than 4 GB; now the 129th term is refused, having cost a few MB.
#[test]
fn a_marker_of_five_thousand_terms_is_refused_within_bounded_memory() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let terms: Vec<String> = (0..5000)
        .map(|i| format!("'device-gfx{i}' in extras"))
        .collect();
    let m = terms.join(" or ");
    let at = m.find("'device-gfx128'").unwrap();
    let (peak, r) = parse_measured(lockfile(&[m]));
    let e = source_error(r);
    assert_eq!((e.line, e.col), (7, 11 + at), "{e}");
    assert!(e.message.contains("more than 128 comparisons"), "{e}");
    assert!(peak < 64 << 20, "{peak} bytes");
}

/// Markers each within the bounds, many of them: together they would grow
/// the algebra's never-freed nodes without end; the file's budget stops
/// them, at the marker that passes it.
#[test]
fn many_costly_markers_in_one_file_are_refused_within_bounded_memory() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let markers: Vec<String> = (0..64)
        .map(|p| {
            (0..128)
                .map(|i| format!("'m{p}-{i}' in extras"))
                .collect::<Vec<_>>()
                .join(" or ")
        })
        .collect();
    let (peak, r) = parse_measured(lockfile(&markers));
    let e = source_error(r);
    assert!(
        e.message
            .contains("the markers of this file together exceed"),
        "{e}"
    );
    // 65,536 units at 8,128 a marker: the 9th runs out.
    assert_eq!(e.line, 7 + 6 * 8, "{e}");
    assert!(peak < 128 << 20, "{peak} bytes");
}
