//! indicatif bars: one overall byte count plus one bar per running file,
//! and a "fetched FILE (SIZE)" line above them as each file completes.
//! Only drawn on a terminal (stderr), so logs and `--json` stay clean
//! (`tests/install_progress.rs` runs greta under a pseudo-terminal to check
//! both sides). Every line fits the terminal's width: the overall bar
//! takes what its counts leave (`{wide_bar}`), a file's name is cut to
//! the room its bar leaves (`{wide_msg}`), a "fetched" line is wrapped.

use greta_vocab::width::{elide, stderr_width, wrap_line};
use indicatif::{HumanBytes, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A file's bar: its package, the bar, the bytes, then its file name.
const FILE_BAR: &str = "{prefix:>10} [{bar:20}] {bytes}/{total_bytes} {wide_msg}";
/// The columns of a package name on its bar.
const PREFIX_COLS: usize = 10;
/// The columns [`FILE_BAR`] takes before the file name at most: the
/// package, the bar, two sizes of up to ten columns ("1023.99 KiB") and
/// the spaces between.
const FILE_BAR_FIXED: usize = PREFIX_COLS + 1 + 22 + 1 + 10 + 1 + 10 + 1;

use super::http::Progress;
use super::PinnedWheel;

pub struct Bars {
    multi: Option<MultiProgress>,
    overall: Option<ProgressBar>,
    /// While the bars are drawn, greta's other lines on stderr (a warning,
    /// a retry) go above them.
    drawn: std::sync::Mutex<Option<greta_vocab::stderr::BarsDrawn>>,
}

pub struct FileBar {
    multi: Option<MultiProgress>,
    bar: Option<ProgressBar>,
    overall: Option<ProgressBar>,
    /// Bytes this file has added to the overall bar, so a reset can undo them.
    counted: std::cell::Cell<u64>,
    /// The file's name whole, for the line left when it is fetched.
    filename: String,
}

impl Bars {
    pub fn new(want: bool, total_bytes: u64, files: usize) -> Self {
        if !want || !std::io::stderr().is_terminal() {
            return Bars {
                multi: None,
                overall: None,
                drawn: Default::default(),
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = multi.add(ProgressBar::new(total_bytes));
        overall.set_style(
            ProgressStyle::with_template(
                "{prefix:>10} [{wide_bar}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        overall.set_prefix(match files {
            1 => "1 file".to_string(),
            n => format!("{n} files"),
        });
        let around = multi.clone();
        let drawn = greta_vocab::stderr::bars_drawn(move |print| around.suspend(print));
        Bars {
            multi: Some(multi),
            overall: Some(overall),
            drawn: std::sync::Mutex::new(Some(drawn)),
        }
    }

    pub fn file(&self, a: &PinnedWheel) -> FileBar {
        let bar = self.multi.as_ref().map(|m| {
            let b = m.add(ProgressBar::new(a.size.unwrap_or(0)));
            b.set_style(
                ProgressStyle::with_template(FILE_BAR)
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            // Names from the lockfile: shown, never acted on, cut by their
            // columns (indicatif's `{wide_msg}` cuts by bytes: a wide or
            // accented character would be split or overflow the line).
            let name = greta_vocab::visible(&a.name);
            b.set_prefix(elide(&name, PREFIX_COLS).into_owned());
            let file = greta_vocab::visible(&a.filename);
            let room = stderr_width().map_or(usize::MAX, |w| w.saturating_sub(FILE_BAR_FIXED));
            b.set_message(elide(&file, room).into_owned());
            b
        });
        FileBar {
            multi: self.multi.clone(),
            bar,
            overall: self.overall.clone(),
            counted: std::cell::Cell::new(0),
            filename: a.filename.clone(),
        }
    }

    pub fn finish(&self) {
        if let Some(o) = &self.overall {
            o.finish_and_clear();
        }
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
        self.drawn.lock().unwrap_or_else(|e| e.into_inner()).take();
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
                let line = format!(
                    "{:>10} {} ({})",
                    "fetched",
                    greta_vocab::visible(&self.filename),
                    HumanBytes(b.position())
                );
                let _ = m.println(wrap_line(&line, stderr_width(), 4));
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
