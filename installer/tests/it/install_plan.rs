//! What `greta install` says before it fetches anything, against the real
//! loopback server: `--dry-run` on an env that is already up to date says
//! so and lists nothing to fetch; a ROCm profile on a machine with no AMD
//! GPU asks before its device gates are run (and needs `--yes` when
//! nobody can answer), but never when its env is already up to date; a server that cannot be reached fails the install
//! before a single wheel is fetched from the others, and says what to do.

use crate::support;
use crate::support::{stderr, text, Harness};

#[test]
fn dry_run_on_an_up_to_date_env_says_so_and_lists_nothing_to_fetch() {
    support::require_uv();
    let h = Harness::new(20_000);
    // No env yet: the wheels to fetch, each named.
    let o = h.install_plain(&["--installer", "uv", "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&h.wheel("torch").filename), "{out}");
    assert!(out.contains("(env would be cpu)"), "{out}");

    let o = h.install_plain(&["--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    h.server.clear_log();
    let o = h.install_plain(&["--installer", "uv", "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("dry run: env cpu is up to date (3 wheels, ")
            && out.contains("nothing to fetch or build (--reinstall rebuilds it)"),
        "{out}"
    );
    let activate = format!(
        "activate with: . {}/greta-activate",
        h.env_dir("cpu").display()
    );
    assert!(out.contains(&activate), "{out}");
    for w in &h.wheels {
        assert!(!out.contains(&w.filename), "{} listed: {out}", w.filename);
    }
    assert!(!out.contains("KiB"), "a download size: {out}");
    assert!(h.server.log().is_empty(), "{:?}", h.server.log());

    // A lockfile that changed under the env: it would be rebuilt, and why.
    let torch2 = support::wheel::torch("2.5.2", None, None, 20_000);
    h.server
        .add_wheel("torch", &torch2.filename, torch2.bytes.clone());
    std::fs::write(
        h.lock_dir().join("pylock.cpu.toml"),
        h.pylock_for(&[&torch2, h.wheel("triton"), h.wheel("jax")]),
    )
    .unwrap();
    let o = h.install_plain(&["--installer", "uv", "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(env cpu would be rebuilt: "), "{out}");
    assert!(out.contains(&torch2.filename), "{out}");
}

/// `--dry-run --offline` says whether the install could run from the
/// cache alone (the flag was once accepted by the dry run and ignored),
/// naming what is not there, and writes nothing.
#[test]
fn dry_run_offline_says_what_the_cache_lacks() {
    support::require_uv();
    let h = Harness::new(20_000);
    let o = h.install_plain(&["--dry-run", "--offline"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let said = out
        .split_once("--offline: 3 of 3 wheels are not in the cache")
        .unwrap_or_else(|| panic!("{out}"))
        .1;
    for w in &h.wheels {
        assert!(
            said.contains(&w.filename),
            "{} not named: {out}",
            w.filename
        );
    }
    assert!(h.cached_wheels().is_empty(), "{:?}", h.cached_wheels());
    assert!(h.server.log().is_empty(), "{:?}", h.server.log());

    let o = h.install_plain(&[]);
    assert!(o.status.success(), "{}", text(&o));
    let cached = h.cached_wheels();
    h.server.clear_log();
    // Another env of the same wheels: everything is in the cache.
    let o = h.install_plain(&["--dry-run", "--offline", "--name", "other"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("--offline: every wheel is in the cache"),
        "{out}"
    );
    assert_eq!(h.cached_wheels(), cached);
    assert!(!h.env_dir("other").exists());
    assert!(h.server.log().is_empty(), "{:?}", h.server.log());
}

/// `greta install --reinstall --profile rocm6.4` here (no AMD GPU), the
/// device gates on.
fn rocm_install(h: &Harness, extra: &[&str]) -> std::process::Output {
    rocm_command(h, &[&["--reinstall"], extra].concat())
        .output()
        .unwrap()
}

/// `greta install --profile rocm6.4 --name rocm ARGS`, not yet run.
fn rocm_command(h: &Harness, extra: &[&str]) -> std::process::Command {
    let py = support::python();
    let mut args = vec![
        "install",
        "--profile",
        "rocm6.4",
        "--name",
        "rocm",
        "--python",
        py.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    h.cmd(&args)
}

/// `s` with every run of whitespace one space: a wrapped line read whole.
fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A ROCm env that is already up to date, on this machine (no AMD GPU):
/// `greta install` builds nothing and changes nothing, so it asks nothing,
/// exits 0 and says how to activate the env, with standard input a
/// terminal or not; its dry run says no question would come. An env to be
/// built is asked about on the terminal as before: "n" changes nothing.
#[test]
fn an_up_to_date_rocm_env_is_not_asked_about_and_a_build_is() {
    let h = crate::install_hip::rocm_harness();
    let triton = h.wheel("triton").filename.clone();
    // Built for another machine: imports only, so nothing was asked.
    let o = rocm_command(&h, &["--framework-check", "imports"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let receipt = h.receipt_bytes("rocm");
    let activate = format!(
        "activate with: . {}/greta-activate",
        h.env_dir("rocm").display()
    );
    h.server.clear_log();

    // The device gates on, no --yes, standard input not a terminal.
    let o = rocm_command(&h, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let e = stderr(&o);
    assert!(
        e.contains("✓ env rocm is up to date") && e.contains(&activate),
        "{e}"
    );
    assert!(!e.contains("give --yes") && !e.contains("[y/N]"), "{e}");
    let o = rocm_command(&h, &["--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["result"], "up-to-date", "{j}");
    // The dry run: up to date, and no word of a question.
    let o = rocm_command(&h, &["--dry-run"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("dry run: env rocm is up to date"), "{out}");
    assert!(!out.contains("asks first"), "{out}");

    // On a terminal: the same, and no question.
    let seen = support::pty::converse(
        rocm_command(&h, &[]),
        &[],
        "greta-activate",
        std::time::Duration::from_secs(120),
    );
    assert!(flat(&seen).contains(&activate), "{seen}");
    assert!(!seen.contains("[y/N]"), "{seen}");
    assert!(h.server.log().is_empty(), "{:?}", h.server.log());
    assert_eq!(h.receipt_bytes("rocm"), receipt);

    // An env to build (--reinstall): the question, on the terminal, and
    // "n" changes nothing.
    let seen = support::pty::converse(
        rocm_command(&h, &["--reinstall"]),
        &["n\n"],
        "nothing was changed",
        std::time::Duration::from_secs(120),
    );
    let said = flat(&seen);
    assert!(
        said.contains("profile rocm6.4 is for AMD GPUs")
            && said.contains("Install it and run them anyway? [y/N]"),
        "{seen}"
    );
    assert!(
        said.contains("greta install: nothing was changed"),
        "{seen}"
    );
    assert!(h.server.hits(&triton).is_empty(), "fetched:\n{seen}");
    assert_eq!(h.receipt_bytes("rocm"), receipt);
}

#[test]
fn a_rocm_profile_without_an_amd_gpu_needs_yes_when_nobody_can_answer() {
    let h = crate::install_hip::rocm_harness();
    // A wheel of the rocm6.4 lock, served by the loopback server.
    let triton = h.wheel("triton").filename.clone();
    // stdin is not a terminal: exit 2 before anything is fetched, saying
    // why and which flag answers.
    for extra in [&[][..], &["--json"]] {
        let o = rocm_install(&h, extra);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let e = stderr(&o);
        assert!(
            e.contains("profile rocm6.4 is for AMD GPUs and this machine has none")
                && e.contains("cannot pass here")
                && e.contains("give --yes"),
            "{e}"
        );
        assert!(h.server.hits(&triton).is_empty(), "fetched: {e}");
        assert!(!h.env_dir("rocm").exists());
        if !extra.is_empty() {
            let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert!(
                j["error"].as_str().unwrap_or("").contains("give --yes"),
                "{j}"
            );
        }
    }
    // The dry run says it too, and asks nothing.
    let o = rocm_install(&h, &["--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("! profile rocm6.4 is for AMD GPUs"),
        "{}",
        text(&o)
    );
    // Without the device gates there is nothing to ask: the env is for
    // another machine (the install goes on to fetch).
    let o = rocm_install(&h, &["--no-smoke", "--json"]);
    assert!(!stderr(&o).contains("give --yes"), "{}", text(&o));
    assert!(!h.server.hits(&triton).is_empty(), "{}", text(&o));
}

/// The lock's torch lives on a server that refuses connections, the rest
/// on the live one: the install fails before any wheel is fetched from
/// the live one, names the dead server and suggests `--index-url` and a
/// bundle; nothing is left in the cache.
#[test]
fn an_unreachable_server_fails_before_any_wheel_is_fetched() {
    let h = Harness::new(20_000);
    // A port nothing listens on: bound, then closed.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let torch = h.wheel("torch");
    let live = h.server.file_url(&torch.filename);
    let lock = h
        .pylock_text()
        .replace(&live, &live.replace(&h.server.base(), &dead));
    assert_ne!(lock, h.pylock_text());
    std::fs::write(h.lock_dir().join("pylock.cpu.toml"), lock).unwrap();
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{dead} cannot be reached"))
            && e.contains("1 wheel to fetch comes from it")
            && e.contains("--index-url URL")
            && e.contains("greta bundle")
            && e.contains("--bundle DIR"),
        "{e}"
    );
    for w in &h.wheels {
        assert!(
            h.server.hits(&w.filename).is_empty(),
            "{} fetched",
            w.filename
        );
    }
    assert!(h.cached_wheels().is_empty(), "{:?}", h.cached_wheels());

    // A dead --index-url fails as early, and says what to do.
    let o = h.install(&["--index-url", &format!("{dead}/simple")]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let e = stderr(&o);
    assert!(
        e.contains("the index cannot be reached") && e.contains("greta bundle"),
        "{e}"
    );
    for w in &h.wheels {
        assert!(
            h.server.hits(&w.filename).is_empty(),
            "{} fetched",
            w.filename
        );
    }
}
