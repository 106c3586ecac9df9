//! Text for people on stderr (greta's own lines, its log's warnings, what
//! a child of greta said), one way: wrapped to the terminal there with a
//! hanging indent ([`crate::width`]; whole to a pipe or a file), and,
//! while progress bars are drawn, printed above them: the bars are taken
//! off the screen first and drawn again after. Printed past them, a line
//! would leave a stale copy of the bars above it and be drawn over itself.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Runs a print with the bars off the screen (indicatif's `suspend`).
type Suspend = Arc<dyn Fn(&mut dyn FnMut()) + Send + Sync>;

/// The bars drawn now, if any: how to print around them.
static BARS: Mutex<Option<Suspend>> = Mutex::new(None);

/// `text` on stderr as is (a question that waits on its line, a block that
/// ends in its own newline), each of its lines wrapped to the terminal.
pub fn print(text: &str) {
    let wrapped = crate::width::wrap_lines(text, crate::width::stderr_width(), 4);
    let write = &mut || {
        // A line that cannot be written has nowhere else to go.
        let _ = std::io::stderr().lock().write_all(wrapped.as_bytes());
    };
    let bars = BARS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match bars {
        Some(suspend) => suspend(write),
        None => write(),
    }
}

/// Bars are drawn on stderr until the returned guard is dropped: every
/// [`print`] meanwhile goes through `suspend`, which must take them off
/// the screen, run the print and draw them again.
pub fn bars_drawn(suspend: impl Fn(&mut dyn FnMut()) + Send + Sync + 'static) -> BarsDrawn {
    *BARS.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(suspend));
    BarsDrawn(())
}

/// While it lives, [`print`] goes around the bars (see [`bars_drawn`]).
pub struct BarsDrawn(());

impl Drop for BarsDrawn {
    fn drop(&mut self) {
        *BARS.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_print_goes_around_the_bars_while_they_are_drawn_and_only_then() {
        static AROUND: AtomicUsize = AtomicUsize::new(0);
        {
            let _drawn = bars_drawn(|print| {
                AROUND.fetch_add(1, Ordering::SeqCst);
                print();
            });
            print("");
            print("");
            assert_eq!(AROUND.load(Ordering::SeqCst), 2);
        }
        print("");
        assert_eq!(AROUND.load(Ordering::SeqCst), 2);
    }
}
