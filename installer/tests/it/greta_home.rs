//! `GRETA_HOME` was documented ("where greta keeps its envs:
//! `$GRETA_HOME/envs`") and never read. It is now the first rule of where
//! envs go, for every command that finds them. A directory each env's
//! activation script cannot hold as one quoted word (a line feed in it
//! ended the script's comment and ran what followed) is refused by name.

use crate::support::{self, Harness};

#[test]
fn greta_home_places_the_envs_for_install_list_and_remove() {
    let h = Harness::new(1_000);
    let home = h.dir.path().join("greta-home");
    let with_home = |mut c: std::process::Command| {
        c.env("GRETA_HOME", &home);
        c.output().unwrap()
    };
    let o = with_home(h.install_command(&[]));
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    let env = home.join("envs").join("cpu");
    assert!(
        env.join("greta-env.json").is_file(),
        "no env under GRETA_HOME: {}",
        support::text(&o)
    );
    assert!(!h.env_dir("cpu").exists(), "the env went to XDG_DATA_HOME");

    let o = with_home(h.cmd(&["env", "list", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(support::env_names(&v), vec!["cpu"], "{}", support::text(&o));
    // Without it, the same machine has no env (the rule is one rule).
    let o = h.cmd(&["env", "list", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(support::env_names(&v).is_empty(), "{}", support::text(&o));

    let o = with_home(h.cmd(&["env", "remove", "cpu"]));
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(!env.exists());
}

/// A relative GRETA_HOME would put envs wherever greta happens to run: it
/// is refused by name.
#[test]
fn a_relative_greta_home_is_refused_by_name() {
    let h = Harness::new(1_000);
    let o = h
        .cmd(&["env", "list"])
        .env("GRETA_HOME", "relative/dir")
        .output()
        .unwrap();
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}", support::text(&o));
    assert!(
        err.contains("GRETA_HOME") && err.contains("absolute"),
        "{err}"
    );
}

/// A line feed in the envs' directory (from `GRETA_HOME` or
/// `XDG_DATA_HOME`) made the next line of the env's `greta-activate` a
/// command (`touch PWNED` here, run by every shell that sourced it): the
/// install refuses the directory by name before anything is fetched or
/// built, and says what to fix, not to rerun.
#[test]
fn an_envs_directory_with_a_control_character_is_refused_before_fetching() {
    let h = Harness::new(1_000);
    let bad = h.dir.path().join("x\ntouch PWNED\n#");
    let cwd = h.dir.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    for var in ["GRETA_HOME", "XDG_DATA_HOME"] {
        let mut c = h.install_command(&[]);
        c.env(var, &bad).current_dir(&cwd);
        let o = c.output().unwrap();
        let err = support::stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{var}: {}", support::text(&o));
        assert!(
            err.contains(&format!("the envs directory (from {var})"))
                && err.contains("holds a control character ('\\n')"),
            "{var}: {err}"
        );
        assert!(
            err.contains(&format!("set {var} to another directory")),
            "{err}"
        );
        let last = err.lines().last().unwrap_or_default();
        assert!(last.contains("fix the setting above, then rerun"), "{err}");
        assert!(
            h.server.log().is_empty(),
            "{var}: fetched {:?}",
            h.server.log()
        );
        assert!(!bad.exists(), "{var}: made {}", bad.display());
        assert!(std::fs::read_dir(&cwd).unwrap().next().is_none());
    }
}
