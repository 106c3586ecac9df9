//! SIGTERM or SIGINT during `greta smoke`: the temporaries of the outputs
//! being written are removed and greta dies of the signal
//! ([`crate::stop`]); with `--prom FILE`, the textfile first says the run
//! was undecided (`greta_smoke_status 2`, the time of the signal). Without
//! it a node whose health check was stopped (the Slurm wrapper's
//! `timeout`, a drain, Ctrl-C) keeps the previous run's healthy file, and
//! its timestamp, until the next run. After a SIGKILL, which cannot be
//! caught, the file's `greta_smoke_last_run_timestamp_seconds` grows old
//! (docs/fleet.md's alert on it covers that).

use greta_fsread::output::Purpose;
use greta_smoke::{prom, Profile};
use std::path::PathBuf;
use std::time::Instant;

/// From now on a SIGTERM or SIGINT cleans up, marks `prom` (if any)
/// undecided and ends greta by the signal. Call once, before the run
/// starts its work.
pub fn on_stop(prom: Option<PathBuf>, profile: Profile, started: Instant) {
    crate::stop::on_stop("smoke", move |name| {
        let Some(path) = prom else {
            return;
        };
        let text = prom::render_undecided(profile.as_str(), started.elapsed().as_secs_f64());
        match greta_fsread::output::write(&path, text.as_bytes(), Purpose::Textfile) {
            Ok(()) => crate::errln!(
                "greta smoke: stopped by {name}; {} now says undecided (greta_smoke_status 2)",
                path.display()
            ),
            Err(e) => crate::errln!(
                "greta smoke: stopped by {name}; could not mark {} undecided: {e}",
                path.display()
            ),
        }
    });
}
