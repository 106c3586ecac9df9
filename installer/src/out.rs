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

/// One line of progress or error on stderr, wrapped to the terminal's
/// width there with a hanging indent (whole to a pipe or a file).
pub fn err_line(s: std::fmt::Arguments<'_>) {
    let text = s.to_string();
    let width = greta_vocab::width::stderr_width();
    eprintln!("{}", greta_vocab::width::wrap_lines(&text, width, 4));
}

/// `eprintln!` for the lines people read on a terminal: `errln!("{x}")`,
/// wrapped to its width ([`err_line`]).
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::out::err_line(format_args!($($t)*)) };
}
