//! Standard output for results. A reader that goes away (`greta lock show
//! cpu --json | head -c1`) ends greta quietly, as other CLIs do, instead of
//! the panic `println!` gives on a closed pipe.

use std::io::Write;

/// Writes one line to stdout; a closed stdout ends the process quietly.
pub fn line(s: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    let r = o.write_fmt(s).and_then(|_| o.write_all(b"\n"));
    check(r);
}

/// Writes `s` to stdout as is (a rendered table that ends in its own
/// newline); a closed stdout ends the process quietly.
pub fn text(s: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    let r = o.write_fmt(s);
    check(r);
}

/// Text for people on stdout (a plan, a verdict): each of its lines
/// wrapped to the terminal's width there with a hanging indent, whole to a
/// pipe or a file. Never for JSON or a machine's format.
pub fn wrapped(s: std::fmt::Arguments<'_>) {
    let width = greta_vocab::width::stdout_width();
    let text = greta_vocab::width::wrap_lines(&s.to_string(), width, 4);
    text_str(&text);
}

fn text_str(s: &str) {
    text(format_args!("{s}"));
}

/// Pretty JSON and a newline on stdout.
pub fn print_json<T: serde::Serialize + ?Sized>(v: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(v)?;
    line(format_args!("{text}"));
    Ok(())
}

fn check(r: std::io::Result<()>) {
    let r = r.and_then(|_| std::io::stdout().lock().flush());
    match r {
        Ok(()) => {}
        // Nobody reads the rest: not an error of greta's (exit 0, no text).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        // A full disk or a revoked terminal: say so on stderr, exit 2.
        Err(e) => {
            eprintln!("greta: error: writing to stdout: {e}");
            std::process::exit(2)
        }
    }
}

/// `println!` for results: `outln!("{x}")`.
#[macro_export]
macro_rules! outln {
    () => { $crate::out::line(format_args!("")) };
    ($($t:tt)*) => { $crate::out::line(format_args!($($t)*)) };
}

/// `outln!` for text people read on a terminal: `wrapln!("{x}")`, each
/// line wrapped to the terminal's width on stdout ([`wrapped`]).
#[macro_export]
macro_rules! wrapln {
    ($($t:tt)*) => { $crate::out::wrapped(format_args!("{}\n", format_args!($($t)*))) };
}

/// One line of progress or error on stderr, wrapped to the terminal's
/// width there with a hanging indent (whole to a pipe or a file).
pub fn err_line(s: std::fmt::Arguments<'_>) {
    err_text(format_args!("{s}\n"));
}

/// Text on stderr as is (a question that waits on its line, a block that
/// ends in its own newline), each line wrapped as [`err_line`] wraps.
pub fn err_text(s: std::fmt::Arguments<'_>) {
    greta_vocab::stderr::print(&s.to_string());
}

/// `eprintln!` for the lines people read on a terminal: `errln!("{x}")`,
/// wrapped to its width ([`err_line`]).
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::out::err_line(format_args!($($t)*)) };
}

/// The writer of one log event (tracing's fmt layer writes each event's
/// whole text into one writer, then drops it): on drop the text goes to
/// stderr as [`err_line`]'s does, so a warning on a terminal fits its
/// width with a hanging indent and goes above any progress bars; to a
/// pipe or a file it stays whole.
pub struct LogEvent(Vec<u8>);

/// A new [`LogEvent`]: what `tracing_subscriber::fmt().with_writer` takes.
pub fn log_event() -> LogEvent {
    LogEvent(Vec::new())
}

impl Write for LogEvent {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogEvent {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        greta_vocab::stderr::print(&String::from_utf8_lossy(&self.0));
    }
}
