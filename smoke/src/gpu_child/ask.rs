//! The parent's side: start the child, hand it a [`Request`], read its
//! [`Reply`].

use super::{ErrorKind, Reply, Request};
use crate::dispatch::{Finished, Undecided};
use crate::gates::Catalog;
use crate::results;
use crate::session::{check_options, results_dir, DeviceChoice, Options, Outcome, SmokeError};
use greta_vocab::child::{self, Exited};
use std::time::Duration;

/// Why the child gave no answer at all.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// No helper is registered (the `greta` binary registers itself).
    #[error("greta cannot find its own executable")]
    NoHelper,
    /// It could not be started, or overran its limit and was killed.
    #[error(transparent)]
    Run(#[from] child::ChildError),
}

/// What the child did with a request: how it ended and what it printed.
pub type Asked = Exited;

/// Runs the registered helper (`greta __gpu serve`) with `req` on its
/// stdin, killing its process group after `limit`. `what` names the child
/// in errors ("the hip smoke child").
pub fn ask(req: &Request, what: &str, limit: Duration) -> Result<Asked, AskError> {
    ask_with_env(req, what, limit, &[])
}

/// [`ask`], with `env` set in the child's environment (`GRETA_ENV`: the
/// staged env whose HIP runtime the child must load).
pub fn ask_with_env(
    req: &Request,
    what: &str,
    limit: Duration,
    env: &[(&str, &std::ffi::OsStr)],
) -> Result<Asked, AskError> {
    let helper = child::helper().ok_or(AskError::NoHelper)?;
    // A request is plain data (strings, numbers, paths as text): it always
    // serialises; an empty stdin would be refused by the child, not hang it.
    let input = serde_json::to_vec(req).unwrap_or_default();
    Ok(helper
        .child("serve", what, env)
        .stdin_bytes(input)
        .output(Some(limit))?)
}

/// Longest a runtime query may take: opening a library and finding its
/// compiler (hipcc's start-up included), never a device.
const RUNTIME_LIMIT: Duration = Duration::from_secs(120);

/// Which runtime library `backend` would load (looking in `env_roots`
/// first), asked of the child: opening one runs its initialisers, which
/// must not run in greta's parent. `Err` says why there is no answer.
pub fn runtime(
    backend: super::GpuBackend,
    env_roots: &[std::path::PathBuf],
) -> Result<super::RuntimeAnswer, String> {
    let req = Request::Runtime(super::RuntimeRequest {
        backend,
        env_roots: env_roots.to_vec(),
    });
    let what = format!("the {} runtime query", backend.as_str());
    let out = ask(&req, &what, RUNTIME_LIMIT).map_err(|e| e.to_string())?;
    match Reply::parse(&out.stdout) {
        Ok(Reply::Runtime(a)) => Ok(*a),
        Ok(Reply::Error(e)) => Err(e.message),
        Ok(_) => Err(format!("{what} answered with another kind of reply")),
        Err(e) => Err(format!("{what} ({}) gave no answer: {e}", out.how())),
    }
}

/// How long a whole smoke child may take: every submission at its limit,
/// plus start-up (driver init, kernel compile on first use). Only a
/// backstop against a child that hangs outside a submission (the child
/// enforces each submission's limit itself).
pub fn run_limit(opts: &Options) -> Duration {
    let gates = Catalog::builtin()
        .plan(
            opts.request.profile,
            &opts.request.gates,
            opts.request.include_test_gates,
        )
        .map_or(1, |p| p.len().max(1)) as f64;
    let repeats = opts
        .request
        .repeat
        .unwrap_or_else(|| opts.request.profile.repeats()) as f64;
    let devices = if matches!(opts.request.device, DeviceChoice::All) {
        8.0
    } else {
        1.0
    };
    let s = 300.0 + opts.request.timeout_s * gates * (repeats + 2.0) * devices;
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

/// How long a whole tune child may take: every candidate of every gate at
/// its limit (at most 12 candidates and a pilot run per gate), plus
/// start-up. Only a backstop, as [`run_limit`].
pub fn tune_limit(opts: &crate::tune::TuneOptions) -> Duration {
    let gates = Catalog::builtin()
        .plan(opts.request.profile, &opts.request.gates, false)
        .map_or(1, |p| p.len().max(1)) as f64;
    let s = 300.0 + opts.timeout.as_secs_f64() * gates * 13.0;
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

/// `greta smoke --tune` on a HIP/CUDA device, in the child: its report.
/// The child's stderr passes through.
pub fn run_tune(opts: &crate::tune::TuneOptions) -> Result<crate::tune::TuneReport, SmokeError> {
    let backend = opts.request.backend.as_str();
    let req = Request::Tune(opts.request.clone());
    let what = format!("the {backend} tune child");
    let out =
        ask(&req, &what, tune_limit(opts)).map_err(|e| SmokeError::NoDevice(e.to_string()))?;
    pass_stderr(&out.stderr);
    match Reply::parse(&out.stdout) {
        Ok(Reply::Tune(r)) => Ok(*r),
        Ok(Reply::Error(e)) => Err(match e.kind {
            ErrorKind::Usage => SmokeError::Usage(e.message),
            ErrorKind::Input | ErrorKind::CouldNotRun => SmokeError::NoDevice(e.message),
        }),
        Ok(_) => Err(SmokeError::NoDevice(format!(
            "the {backend} tune child ended with {} and answered no tune report",
            out.how()
        ))),
        Err(why) => Err(SmokeError::NoDevice(format!(
            "the {backend} tune child ended with {} without a report ({why})",
            out.how()
        ))),
    }
}

/// `opts` run in the child (`greta smoke` sends HIP and CUDA runs there;
/// `greta install` any backend): its report, written here as an in-process
/// run's is, and the exit code. The child's stderr (progress of driver and
/// compiler, its warnings) passes through.
pub fn run_smoke(opts: &Options) -> Result<Finished, Undecided> {
    run_smoke_with_env(opts, &[])
}

/// [`run_smoke`], with `env` set in the child (see [`ask_with_env`]).
pub fn run_smoke_with_env(
    opts: &Options,
    env: &[(&str, &std::ffi::OsStr)],
) -> Result<Finished, Undecided> {
    // The checks a Vulkan run makes first, before the child starts: bad
    // options or an unwritable results directory are exit 2 in a moment.
    check_options(opts)?;
    let dir = results_dir(opts)?;
    let backend = opts.request.backend.as_str();
    let req = Request::Smoke(opts.request.clone());
    let what = format!("the {backend} smoke child");
    let out = ask_with_env(&req, &what, run_limit(opts), env).map_err(|e| Undecided {
        kind: ErrorKind::CouldNotRun,
        message: e.to_string(),
    })?;
    pass_stderr(&out.stderr);
    let no_report = |why: String| Undecided {
        kind: ErrorKind::CouldNotRun,
        message: format!(
            "the {backend} child ended with {} without a report ({why})",
            out.how()
        ),
    };
    let report = match Reply::parse(&out.stdout) {
        Ok(Reply::Report(r)) => r,
        Ok(Reply::Error(e)) => {
            return Err(Undecided {
                kind: e.kind,
                message: e.message,
            })
        }
        Ok(Reply::Devices(_)) => {
            return Err(no_report(format!(
                "its reply is a {} listing",
                super::DEVICES_SCHEMA
            )))
        }
        Ok(Reply::Tune(_)) => {
            return Err(no_report(format!(
                "its reply is a {} report",
                crate::tune::SCHEMA
            )))
        }
        Ok(Reply::Runtime(_)) => {
            return Err(no_report(format!(
                "its reply is a {} answer",
                super::RUNTIME_SCHEMA
            )))
        }
        Err(why) => return Err(no_report(why)),
    };
    let (written, write_error) = match dir.map(|d| results::write_report(&report, &d)) {
        Some(Ok(w)) => (Some(w), None),
        Some(Err(e)) => (None, Some(format!("{e:#}"))),
        None => (None, None),
    };
    // The child's code decides; it agrees with the report's status (the
    // same greta_smoke computed both), and anything else (a crash after
    // the report was printed) is undecided.
    let exit_code = match (out.status.code(), write_error.is_none()) {
        (Some(0), true) => 0,
        (Some(1), true) => 1,
        _ => 2,
    };
    Ok(Finished {
        outcome: Outcome {
            report: *report,
            written,
            write_error,
        },
        exit_code,
    })
}

/// The child's stderr (its warnings, its driver's and compiler's lines) on
/// ours: the child wrote to a pipe, so its lines are whole; on a terminal
/// they are wrapped to its width here, as greta's own are.
fn pass_stderr(text: &str) {
    greta_vocab::stderr::print(text);
}
