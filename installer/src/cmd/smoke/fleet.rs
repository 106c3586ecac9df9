//! `greta smoke --oneline` and `--prom FILE`: the outputs fleets read
//! (docs/fleet.md). The line and the textfile are built by greta_smoke
//! (`oneline`, `prom`); this prints and writes them and keeps the exit
//! codes: 0 pass, 1 fail, 2 undecided, also when the textfile cannot be
//! written.

use crate::exit::Exit;
use greta_fsread::output::{self, Output, Purpose};
use greta_smoke::{oneline, prom, Outcome, Profile};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

pub struct Fleet {
    pub oneline: bool,
    pub prom: Option<PathBuf>,
    pub profile: Profile,
    pub started: Instant,
    /// The textfile could not be written: the run is then exit 2.
    pub prom_failed: std::cell::Cell<bool>,
}

impl Fleet {
    /// Before any gate runs: the textfile must be a regular file or a
    /// free name (reached by no link another user planted in a shared
    /// directory), in a directory that takes a file.
    pub fn check(&self) -> Result<(), String> {
        match &self.prom {
            Some(p) => Output::check(p)
                .map(drop)
                .map_err(|e| format!("--prom {e}")),
            None => Ok(()),
        }
    }

    /// The textfile cannot be written (`check` said why): the UNKNOWN
    /// line and exit 2, without a second try at the file.
    pub fn refused(&self, why: &str) -> Exit {
        self.say_undecided(why);
        Exit::Undecided
    }

    fn say_undecided(&self, why: &str) {
        if self.oneline {
            println!("{}", oneline::unknown(why));
        } else if self.prom.is_some() {
            crate::errln!("greta smoke: {why}");
        }
    }

    /// Nothing was decided (exit 2): the UNKNOWN line, and a textfile that
    /// says so (status 2) so a stale healthy one does not linger.
    pub fn undecided(&self, why: &str) -> Exit {
        self.say_undecided(why);
        if let Some(p) = &self.prom {
            let text =
                prom::render_undecided(self.profile.as_str(), self.started.elapsed().as_secs_f64());
            if let Err(e) = output::write(p, text.as_bytes(), Purpose::Textfile) {
                crate::errln!("greta smoke: could not write --prom {e}");
            }
        }
        Exit::Undecided
    }

    /// Write the textfile; with `--oneline`, print the table on stderr and
    /// the line on stdout and return the exit code (else `None`: the
    /// caller prints as usual).
    pub fn finish(&self, outcome: &Outcome, table: &str) -> Option<Exit> {
        if let Some(p) = &self.prom {
            let text = prom::render(&outcome.report);
            if let Err(e) = output::write(p, text.as_bytes(), Purpose::Textfile) {
                crate::errln!("greta smoke: could not write --prom {e}");
                self.prom_failed.set(true);
            }
        }
        let prom_failed = self.prom_failed.get();
        if !self.oneline {
            return None;
        }
        let code = self.exit(match outcome.exit_code() {
            0 => Exit::Pass,
            1 => Exit::Fail,
            _ => Exit::Undecided,
        });
        eprint!("{table}");
        if let Some(w) = &outcome.written {
            crate::errln!("results: {} (csv: {})", w.json.display(), w.csv.display());
        }
        if let Some(e) = &outcome.write_error {
            crate::errln!("greta smoke: could not write results: {e}");
        }
        let line = match (prom_failed, &outcome.write_error) {
            (true, _) => oneline::unknown("could not write the --prom textfile"),
            (false, Some(_)) => oneline::unknown("could not write the result files"),
            (false, None) => oneline::line(&outcome.report),
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        Some(code)
    }

    /// The run's exit code, made 2 when the textfile could not be written.
    pub fn exit(&self, code: Exit) -> Exit {
        if self.prom_failed.get() {
            Exit::Undecided
        } else {
            code
        }
    }
}
