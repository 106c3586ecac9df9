//! What can go wrong in the lock set, as a type: a caller matches on the
//! kind (a refusal to print with its fix, a file:line:col to point at)
//! instead of searching an error chain for one.

use crate::read::ReadError;
use crate::{Refusal, SourceError};

/// The lock set's error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// This machine cannot use that (an unlocked profile, a GPU the wheels
    /// do not cover, an unsupported Python), with the fix.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// A lock file is wrong at a place: `file:line:col: message`.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A file could not be read (missing, too large, a FIFO or a device,
    /// not UTF-8): the path is the message, an OS error its source.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Anything else (a file that cannot be read, a tool such as uv or
    /// Python that failed), with its context chain kept for the message.
    #[error(transparent)]
    Failed(anyhow::Error),
}

/// The lock set's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<anyhow::Error> for Error {
    /// The modules build their messages with `anyhow` context; a refusal or
    /// a source error they raise keeps its kind here, at the crate's door,
    /// the one place the chain is looked into.
    fn from(e: anyhow::Error) -> Self {
        // A read error that reached anyhow may carry a caller's context,
        // which taking the inner error back out would drop.
        if let Some(Error::Read(_)) = e.downcast_ref::<Error>() {
            return Error::Failed(e);
        }
        let e = match e.downcast::<Error>() {
            Ok(inner) => return inner,
            Err(e) => e,
        };
        let e = match e.downcast::<Refusal>() {
            Ok(r) => return Error::Refused(r),
            Err(e) => e,
        };
        match e.downcast::<SourceError>() {
            Ok(s) => Error::Source(s),
            Err(e) => Error::Failed(e),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Failed(e.into())
    }
}

impl Error {
    /// The refusal, where this is one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Error::Refused(r) => Some(r),
            _ => None,
        }
    }

    /// The place in a lock file, where this is a source error.
    pub fn source_error(&self) -> Option<&SourceError> {
        match self {
            Error::Source(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn a_refusal_raised_inside_keeps_its_kind_at_the_door() {
        let r = Refusal {
            message: "no".into(),
            fix: "yes".into(),
        };
        let e: Error = anyhow::Error::new(r.clone()).into();
        assert_eq!(e.refusal(), Some(&r));
        assert_eq!(e.to_string(), "no\n  fix: yes");
    }

    #[test]
    fn a_source_error_keeps_its_place() {
        let s = SourceError {
            file: "m.toml".into(),
            line: 3,
            col: 4,
            message: "bad".into(),
        };
        let e: Error = anyhow::Error::new(s.clone()).into();
        assert_eq!(e.source_error(), Some(&s));
    }

    #[test]
    fn other_failures_keep_their_context_chain() {
        let inner: std::result::Result<(), std::io::Error> =
            Err(std::io::Error::other("disk on fire"));
        let e: Error = inner
            .context("cannot read lock/matrix.toml")
            .unwrap_err()
            .into();
        assert!(matches!(e, Error::Failed(_)));
        assert_eq!(
            format!("{e:#}"),
            "cannot read lock/matrix.toml: disk on fire"
        );
        // Wrapped again by a caller's anyhow, the chain reads the same.
        let outer = anyhow::Error::new(e);
        assert_eq!(
            format!("{outer:#}"),
            "cannot read lock/matrix.toml: disk on fire"
        );
    }

    /// A read error a module wrapped in context keeps that context at the
    /// door (taking the typed error back out would drop it).
    #[test]
    fn a_read_error_with_context_keeps_it() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("matrix.toml");
        let e: Error = crate::read::text_capped(&missing, 10)
            .context("reading the lock set")
            .unwrap_err()
            .into();
        assert!(matches!(e, Error::Failed(_)), "{e:?}");
        assert_eq!(
            format!("{e:#}"),
            format!(
                "reading the lock set: {}: No such file or directory (os error 2)",
                missing.display()
            )
        );
    }
}
