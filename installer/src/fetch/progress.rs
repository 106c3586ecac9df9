//! indicatif bars: one overall byte count plus one bar per running file,
//! and a "fetched FILE (SIZE)" line above them as each file completes.
//! Only drawn on a terminal (stderr), so logs and `--json` stay clean
//! (`tests/install_progress.rs` runs greta under a pseudo-terminal to check
//! both sides).

use indicatif::{HumanBytes, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

use super::http::Progress;
use super::PinnedWheel;

pub struct Bars {
    multi: Option<MultiProgress>,
    overall: Option<ProgressBar>,
}

pub struct FileBar {
    multi: Option<MultiProgress>,
    bar: Option<ProgressBar>,
    overall: Option<ProgressBar>,
    /// Bytes this file has added to the overall bar, so a reset can undo them.
    counted: std::cell::Cell<u64>,
}

impl Bars {
    pub fn new(want: bool, total_bytes: u64, files: usize) -> Self {
        if !want || !std::io::stderr().is_terminal() {
            return Bars {
                multi: None,
                overall: None,
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = multi.add(ProgressBar::new(total_bytes));
        overall.set_style(
            ProgressStyle::with_template(
                "{prefix:>10} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        overall.set_prefix(format!("{files} files"));
        Bars {
            multi: Some(multi),
            overall: Some(overall),
        }
    }

    pub fn file(&self, a: &PinnedWheel) -> FileBar {
        let bar = self.multi.as_ref().map(|m| {
            let b = m.add(ProgressBar::new(a.size.unwrap_or(0)));
            b.set_style(
                ProgressStyle::with_template("{prefix:>10} [{bar:30}] {bytes}/{total_bytes} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            // Names from the lockfile: shown, never acted on.
            let name = greta_vocab::visible(&a.name);
            b.set_prefix(name.chars().take(10).collect::<String>());
            b.set_message(greta_vocab::visible(&a.filename).into_owned());
            b
        });
        FileBar {
            multi: self.multi.clone(),
            bar,
            overall: self.overall.clone(),
            counted: std::cell::Cell::new(0),
        }
    }

    pub fn finish(&self) {
        if let Some(o) = &self.overall {
            o.finish_and_clear();
        }
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
    }
}

impl FileBar {
    pub fn update(&self, p: Progress) {
        match p {
            Progress::Advance(n) => {
                self.counted.set(self.counted.get() + n);
                if let Some(b) = &self.bar {
                    b.inc(n);
                }
                if let Some(o) = &self.overall {
                    o.inc(n);
                }
            }
            Progress::Reset => {
                let c = self.counted.replace(0);
                if let Some(b) = &self.bar {
                    b.set_position(0);
                }
                if let Some(o) = &self.overall {
                    o.set_position(o.position().saturating_sub(c));
                }
            }
        }
    }

    /// Leaves a line for the file above the bars. Printing draws the bars
    /// too, unthrottled, so every file's bar is seen at its full size at
    /// least once however fast the download was.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            if let Some(m) = &self.multi {
                // A tick brings the bars' drawn state up to their position
                // (`inc` updates it only at indicatif's rate).
                b.tick();
                if let Some(o) = &self.overall {
                    o.tick();
                }
                let _ = m.println(format!(
                    "{:>10} {} ({})",
                    "fetched",
                    b.message(),
                    HumanBytes(b.position())
                ));
            }
            b.finish_and_clear();
        }
    }

    pub fn fail(&self) {
        if let Some(b) = &self.bar {
            b.abandon_with_message("failed");
        }
    }
}
