//! greta as its own child. A hung GPU can block a driver call forever, and
//! ROCm 5.2's hiprtc asked for a target it does not know aborts its whole
//! process (SIGABRT, "munmap_chunk(): invalid pointer"). So compiles and
//! device work run in a child that is the same `greta` binary, through a
//! hidden subcommand the binary registers here at start; the layers that
//! start such a child (the runtime's compiles, smoke's device child) ask
//! for it, and without one (library tests) they work in their own process.

use super::Child;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// How to start a helper child: `exe args... <verb>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Helper {
    pub exe: PathBuf,
    pub args: Vec<String>,
}

/// At most this much of a helper's stdout (or stderr) is read back: a
/// device child's report of every gate, a compile's answer and log.
pub const HELPER_CAP: usize = 256 << 20;

static HELPER: OnceLock<Helper> = OnceLock::new();

/// Registers the helper (the `greta` binary does, at start; the first
/// registration stays).
pub fn set_helper(h: Helper) {
    let _ = HELPER.set(h);
}

/// The registered helper; `None` in a process that registered none.
pub fn helper() -> Option<&'static Helper> {
    HELPER.get()
}

impl Helper {
    /// `exe args... verb`.
    pub fn command(&self, verb: &str) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(&self.args).arg(verb);
        c
    }

    /// The child for `verb`, with `env` added to its environment, bounded
    /// as every helper is: the leader of its own process group (a
    /// compiler's grandchildren die with it at the limit or at its exit),
    /// output kept up to [`HELPER_CAP`], named `what` in errors.
    pub fn child(&self, verb: &str, what: &str, env: &[(&str, &OsStr)]) -> Child {
        let mut cmd = self.command(verb);
        cmd.envs(env.iter().copied());
        Child::new(cmd).named(what).own_group().cap(HELPER_CAP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A helper that is `sh -c SCRIPT`: the verb is the script's `$0`.
    fn sh(script: &str) -> Helper {
        Helper {
            exe: "sh".into(),
            args: vec!["-c".into(), script.into()],
        }
    }

    #[test]
    fn the_verb_follows_the_registered_arguments_and_env_reaches_the_child() {
        let h = sh("printf '%s %s' \"$0\" \"$HELPER_TEST_VALUE\"; cat");
        let e = h
            .child(
                "serve",
                "a helper",
                &[("HELPER_TEST_VALUE", OsStr::new("set"))],
            )
            .stdin_bytes(b"+input".to_vec())
            .output(Some(Duration::from_secs(60)))
            .unwrap();
        assert_eq!(e.stdout, b"serve set+input");
        assert!(e.status.success(), "{}", e.how());
    }

    /// The limit becomes an error naming the work and the limit, and the
    /// helper's whole group (a grandchild too) is gone by then.
    #[test]
    fn a_helper_past_its_limit_is_a_timeout_naming_it() {
        let t = Instant::now();
        let e = sh("sleep 300 & exec sleep 300")
            .child("compile", "hiprtc compiling for gfx942", &[])
            .output(Some(Duration::from_millis(400)))
            .unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
        assert!(
            matches!(e, super::super::ChildError::TimedOut { .. }),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "hiprtc compiling for gfx942 did not finish within 400ms and was killed"
        );
    }

    #[test]
    fn exit_codes_signals_and_bytes_come_back() {
        let e = sh("printf '\\377\\000'; echo oops >&2; exit 3")
            .child("x", "x", &[])
            .output(Some(Duration::from_secs(60)))
            .unwrap();
        assert_eq!(
            (e.how().as_str(), e.stdout.as_slice(), e.stderr.trim()),
            ("exit status 3", b"\xff\x00".as_slice(), "oops")
        );
        let e = sh("kill -ABRT $$")
            .child("x", "x", &[])
            .output(Some(Duration::from_secs(60)))
            .unwrap();
        assert_eq!(e.how(), "killed by signal 6 (SIGABRT)");
    }

    #[test]
    fn a_helper_that_cannot_start_is_named() {
        let h = Helper {
            exe: "/nonexistent/greta".into(),
            args: vec!["__gpu".into()],
        };
        let e = h
            .child("serve", "the hip smoke child", &[])
            .output(None)
            .unwrap_err();
        assert!(
            e.to_string().starts_with("starting the hip smoke child: "),
            "{e}"
        );
    }
}
