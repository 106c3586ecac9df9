//! The progress bar shown while gates run: indicatif on stderr, and only
//! when stderr is a terminal (logs and CI output stay clean). It fits the
//! terminal's width: the gate's name takes what the bar leaves
//! (`{wide_msg}`, cut with a `…`); a failed gate's line and every other
//! line greta prints on stderr meanwhile go above it, wrapped.

use crate::results::{GateResult, GateStatus};
use crate::runner::Progress;
use greta_vocab::width;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;

/// The bar's line: spinner, time, bar, count, then the devices and the
/// gate running (cut to the room left).
const TEMPLATE: &str = "{spinner} [{elapsed_precise}] {bar:24} {pos}/{len} {wide_msg}";
/// Columns [`TEMPLATE`] takes before its message, the count aside.
const FIXED: usize = 1 + 1 + 10 + 1 + 24 + 1 + 1 + 1;

pub struct Bar {
    bar: Option<ProgressBar>,
    /// While the bar is drawn, greta's other lines on stderr go above it.
    drawn: Mutex<Option<greta_vocab::stderr::BarsDrawn>>,
}

impl Bar {
    /// A bar over `total` gates; hidden unless `enabled` and stderr is a TTY.
    pub fn new(enabled: bool, total: usize) -> Bar {
        if !enabled || !std::io::stderr().is_terminal() {
            return Bar {
                bar: None,
                drawn: Mutex::new(None),
            };
        }
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(TEMPLATE).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        let around = bar.clone();
        let drawn = greta_vocab::stderr::bars_drawn(move |print| around.suspend(print));
        Bar {
            bar: Some(bar),
            drawn: Mutex::new(Some(drawn)),
        }
    }

    /// What the bar says before the gate's name ("8 devices", or nothing
    /// for one), as a device's driver gives it: shown, never acted on. Kept
    /// as the bar's prefix, which its template does not draw: each gate's
    /// message starts with it ([`Progress::gate_started`]).
    pub fn set_device(&self, name: &str) {
        if let Some(b) = &self.bar {
            let name = greta_vocab::visible(name);
            b.set_prefix(if name.is_empty() {
                String::new()
            } else {
                format!("{name}: ")
            });
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        self.drawn.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

impl Progress for Bar {
    fn gate_started(&self, _device: usize, gate: &str) {
        if let Some(b) = &self.bar {
            let msg = format!("{}{gate}", b.prefix());
            // The count's columns ("12/33") vary; the rest is fixed.
            let count = 2 * b.length().unwrap_or(0).to_string().len() + 1;
            let room =
                width::stderr_width().map_or(usize::MAX, |w| w.saturating_sub(FIXED + count));
            b.set_message(width::elide(&msg, room).into_owned());
        }
    }

    fn gate_done(&self, _device: usize, r: &GateResult) {
        if let Some(b) = &self.bar {
            if r.status == GateStatus::Fail {
                // Above the bar, wrapped to the terminal.
                greta_vocab::stderr::print(&format!(
                    "FAIL {}: {}\n",
                    r.id,
                    greta_vocab::Visible(r.reason.as_deref().unwrap_or(""))
                ));
            }
            b.inc(1);
        }
    }
}
