//! The progress bar shown while gates run: indicatif on stderr, and only
//! when stderr is a terminal (logs and CI output stay clean).

use crate::results::{GateResult, GateStatus};
use crate::runner::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Bar {
    /// A bar over `total` gates; hidden unless `enabled` and stderr is a TTY.
    pub fn new(enabled: bool, total: usize) -> Bar {
        if !enabled || !std::io::stderr().is_terminal() {
            return Bar { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {prefix} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Bar { bar: Some(bar) }
    }

    /// The device's name as its driver gives it: shown, never acted on.
    pub fn set_device(&self, name: &str) {
        if let Some(b) = &self.bar {
            b.set_prefix(greta_vocab::visible(name).into_owned());
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Progress for Bar {
    fn gate_started(&self, _device: usize, gate: &str) {
        if let Some(b) = &self.bar {
            b.set_message(gate.to_string());
        }
    }

    fn gate_done(&self, _device: usize, r: &GateResult) {
        if let Some(b) = &self.bar {
            if r.status == GateStatus::Fail {
                b.println(format!(
                    "FAIL {}: {}",
                    r.id,
                    greta_vocab::Visible(r.reason.as_deref().unwrap_or(""))
                ));
            }
            b.inc(1);
        }
    }
}
