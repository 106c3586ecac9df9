//! The one way greta asks before it acts (`doctor --fix`, `install` of a
//! profile the machine cannot run): on the terminal, `[y/N]`, no default
//! yes; never when standard input is not a terminal, where the caller
//! says which flag answers instead.

use anyhow::Result;
use std::io::{BufRead, IsTerminal, Write};

/// `question` on stderr and the answer from stdin (`y`/`yes`: true);
/// `None` without asking when stdin is not a terminal.
pub fn yes_no(question: &str) -> Result<Option<bool>> {
    if !std::io::stdin().is_terminal() {
        return Ok(None);
    }
    crate::out::err_text(format_args!("{question} [y/N] "));
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(Some(matches!(line.trim(), "y" | "Y" | "yes" | "Yes")))
}
