//! `greta install` end to end against a loopback index, with real uv and real
//! pip into real venvs: happy path, warm reinstall, --offline, bundles,
//! --index-url, env list/remove, framework mismatch, malformed locks.

use crate::support;
use crate::support::{finding_ids, text, Harness};

#[test]
fn happy_path_with_uv_then_warm_reinstall_from_cache() {
    support::require_uv();
    let h = Harness::new(200_000);
    let o = h.install(&["--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    let got = h.import_in_env("cpu");
    assert_eq!(got["torch"], "2.5.1");
    assert_eq!(got["hip"], serde_json::Value::Null);
    assert_eq!(got["triton"], "3.1.0");
    assert_eq!(got["jax"], "0.4.35");
    assert!(
        got["file"]
            .as_str()
            .unwrap()
            .starts_with(h.env_dir("cpu").to_str().unwrap()),
        "{got}"
    );

    // Receipt: profile, lock hash, every wheel hash.
    let r = h.receipt("cpu");
    assert_eq!(r["schema"], "greta.env/v1");
    assert_eq!(r["profile"], "cpu");
    let lock_sha = support::sha256_hex(h.pylock_text().as_bytes());
    assert_eq!(r["lockfile"]["sha256"], lock_sha.as_str());
    let hashes = support::sorted_strings(&r["wheels"], "sha256");
    let mut want: Vec<String> = h.wheels.iter().map(|w| w.sha256.clone()).collect();
    want.sort();
    assert_eq!(hashes, want);
    assert!(r["installer"].as_str().unwrap().starts_with("uv"), "{r}");
    // The import check ran in staging; the receipt names the final place.
    let checked = r["checks"]["torch"]["file"].as_str().unwrap();
    assert!(
        checked.starts_with(h.env_dir("cpu").to_str().unwrap()),
        "{r}"
    );
    // Activation script works from a fresh shell and points at the final path.
    let act = h.env_dir("cpu").join("greta-activate");
    let sh = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            ". '{}' && python -c 'import sys, torch; print(sys.prefix)' && echo $GRETA_PROFILE",
            act.display()
        ))
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap();
    assert!(sh.status.success(), "{}", text(&sh));
    let out = String::from_utf8_lossy(&sh.stdout);
    assert!(
        out.contains(h.env_dir("cpu").to_str().unwrap()) && out.contains("cpu"),
        "{out}"
    );
    // Nothing left over next to the env.
    assert_eq!(
        h.envs_entries(),
        vec![".cpu.lock".to_string(), "cpu".to_string()]
    );
    assert_eq!(h.cached_wheels().len(), 3);

    // Installing again: the env is up to date (verified), nothing happens.
    h.server.clear_log();
    let created_before = r["created"].as_str().unwrap().to_string();
    let o = h.install_plain(&["--installer", "uv", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["result"], "up-to-date");
    assert_eq!(h.receipt("cpu")["created"], created_before.as_str());

    // Warm reinstall: no wheel is downloaded again, the env is rebuilt.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let o = h.install(&["--installer", "uv", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["result"], "installed");
    for w in j["report"]["wheels"].as_array().unwrap() {
        assert_eq!(w["source"], "cache", "{w}");
    }
    assert!(
        h.server.log().is_empty(),
        "warm reinstall hit the server: {:?}",
        h.server.log()
    );
    assert_ne!(
        h.receipt("cpu")["created"].as_str().unwrap(),
        created_before
    );
    h.import_in_env("cpu");
}

#[test]
fn happy_path_with_pip_and_offline_reinstall() {
    let h = Harness::new(150_000);
    // Offline before anything is cached: clear list of what is missing.
    let o = h.install(&["--installer", "pip", "--offline"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let e = support::stderr(&o);
    assert!(
        e.contains("--offline: 3 of 3 wheels are not in the cache"),
        "{e}"
    );
    for w in &h.wheels {
        assert!(e.contains(&w.filename), "{e}");
    }
    assert!(h.server.log().is_empty(), "offline touched the network");
    assert!(!h.env_dir("pip-env").exists());

    let o = h.install(&["--installer", "pip", "--name", "pip-env"]);
    assert!(o.status.success(), "{}", text(&o));
    // The default run says which profile and why, then one line for the
    // wheels; the per-wheel marker/tag reasoning is for -v. The plan is on
    // stdout, the logs on stderr.
    let e = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(e.contains("profile cpu (cpu):"), "{e}");
    assert!(
        e.contains("3 wheels, ") && e.contains("(each wheel and why: --dry-run or -v)"),
        "{e}"
    );
    assert!(!e.contains("no marker") && !e.contains("(rank "), "{e}");
    assert!(
        !support::stderr(&o).contains("profile cpu (cpu):"),
        "{}",
        text(&o)
    );
    let got = h.import_in_env("pip-env");
    assert_eq!(got["jax"], "0.4.35");
    assert!(h.receipt("pip-env")["installer"]
        .as_str()
        .unwrap()
        .starts_with("pip"));

    // Offline with a warm cache, the server gone entirely.
    drop(h.server.log());
    h.server.clear_log();
    let o = h.install(&["--installer", "pip", "--name", "pip-env", "--offline", "-v"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(h.server.log().is_empty());
    let e = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(e.contains("3 wheels, ") && e.contains("(rank "), "{e}");
    h.import_in_env("pip-env");
}

#[test]
fn bundle_round_trip_installs_offline_on_a_fresh_home() {
    support::require_uv();
    let h = Harness::new(120_000);
    let bundle = h.dir.path().join("bundle");
    let o = h.bundle_command(&bundle, &[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("greta-bundle.json")).unwrap())
            .unwrap();
    assert_eq!(m["profile"], "cpu");
    assert_eq!(m["wheels"].as_array().unwrap().len(), 3);
    for w in &h.wheels {
        let b = std::fs::read(bundle.join("wheels").join(&w.filename)).unwrap();
        assert_eq!(support::sha256_hex(&b), w.sha256);
    }

    // A second machine: empty cache, no lock dir of its own, no network.
    let node = Harness::with_wheels(vec![]);
    drop(node.server.log());
    let o = node
        .bundle_install_command(&bundle, &support::python(), &["--installer", "uv"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let got = node.import_in_env("cpu");
    assert_eq!(got["torch"], "2.5.1");
    assert!(
        h.server.hits(&h.wheel("torch").filename).len() == 1,
        "bundle fetched torch once"
    );

    // A tampered bundle is refused before anything is installed.
    let t = bundle.join("wheels").join(&h.wheel("jax").filename);
    let mut b = std::fs::read(&t).unwrap();
    let n = b.len() / 2;
    b[n] ^= 1;
    std::fs::remove_file(&t).unwrap();
    std::fs::write(&t, b).unwrap();
    let fresh = Harness::with_wheels(vec![]);
    let o = fresh
        .bundle_install_command(&bundle, &support::python(), &[])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        support::stderr(&o).contains("does not match the lock"),
        "{}",
        text(&o)
    );
    assert!(!fresh.env_dir("cpu").exists());
}

#[test]
fn index_url_json_and_lying_index() {
    support::require_uv();
    let h = Harness::new(50_000);
    // Lock URLs point at a dead port; only the index knows where files are.
    let mut text_lock = h.pylock_text();
    text_lock = text_lock.replace(&h.server.base(), "http://127.0.0.1:9");
    std::fs::write(h.lock_dir().join("pylock.cpu.toml"), &text_lock).unwrap();
    let idx = h.server.index_url();
    let o = h.install(&["--index-url", &idx, "--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    let pages: Vec<_> = h
        .server
        .log()
        .into_iter()
        .filter(|l| l.path.starts_with("/simple/"))
        .collect();
    assert!(pages.iter().all(|p| p
        .accept
        .as_deref()
        .unwrap_or("")
        .contains("application/vnd.pypi.simple.v1+json")));
    h.import_in_env("cpu");

    // An HTML-only (PEP 503) index works the same.
    h.server.set_json_index(false);
    std::fs::remove_dir_all(h.cache_dir()).unwrap();
    h.server.clear_log();
    let o = h.install(&["--index-url", &idx, "--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(h.server.hits(&h.wheel("torch").filename).len(), 1);
    h.server.set_json_index(true);
    let before = h.receipt_bytes("cpu");

    // The index now lists another hash for jax: refused, env untouched.
    h.server
        .lie_about_hash(&h.wheel("jax").filename, &"ab".repeat(32));
    std::fs::remove_dir_all(h.cache_dir()).unwrap();
    let o = h.install(&["--index-url", &idx, "--installer", "uv"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let e = support::stderr(&o);
    assert!(
        e.contains("lists") && e.contains(&"ab".repeat(32)) && e.contains(&h.wheel("jax").sha256),
        "{e}"
    );
    assert_eq!(h.receipt_bytes("cpu"), before);
    h.import_in_env("cpu");
}

#[test]
fn framework_mismatch_keeps_the_previous_env() {
    support::require_uv();
    let h = Harness::new(30_000);
    let o = h.install(&["--installer", "uv"]);
    assert!(o.status.success(), "{}", text(&o));
    let before = h.receipt_bytes("cpu");
    let py = support::python();
    let rocm_install = |h: &Harness| {
        h.cmd(&[
            "install",
            "--reinstall",
            "--profile",
            "rocm6.4",
            "--name",
            "cpu",
            "--python",
            py.to_str().unwrap(),
            "--no-smoke",
            "--json",
        ])
        .output()
        .unwrap()
    };

    // A rocm6.4 profile whose lock pins the CPU torch: the check refuses it.
    h.add_rocm_profile(&[h.wheel("torch"), h.wheel("triton")]);
    let o = rocm_install(&h);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["result"], "failed");
    let f = &j["report"]["findings"];
    assert_eq!(f.as_array().unwrap().len(), 1, "{j}");
    assert_eq!(f[0]["id"], "framework.mismatch");
    assert!(
        f[0]["message"].as_str().unwrap().contains("CPU only"),
        "{j}"
    );
    assert_eq!(h.receipt_bytes("cpu"), before);
    assert_eq!(h.import_in_env("cpu")["torch"], "2.5.1");
    assert_eq!(
        h.envs_entries(),
        vec![".cpu.lock".to_string(), "cpu".to_string()]
    );

    // A torch built for another ROCm (6.3) is refused too.
    let rocm63 = support::wheel::torch("2.5.1+rocm6.3", Some("6.3.42131"), None, 30_000);
    h.server
        .add_wheel("torch", &rocm63.filename, rocm63.bytes.clone());
    h.add_rocm_profile(&[&rocm63, h.wheel("triton")]);
    let o = rocm_install(&h);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ROCm/HIP 6.3.42131"),
        "{}",
        text(&o)
    );
    assert_eq!(h.receipt_bytes("cpu"), before);

    // The right build passes and replaces the env; the receipt says rocm6.4.
    let rocm64 = support::wheel::torch("2.5.1+rocm6.4", Some("6.4.43484"), None, 30_000);
    h.server
        .add_wheel("torch", &rocm64.filename, rocm64.bytes.clone());
    h.add_rocm_profile(&[&rocm64, h.wheel("triton")]);
    let o = rocm_install(&h);
    assert!(o.status.success(), "{}", text(&o));
    let r = h.receipt("cpu");
    assert_eq!(r["profile"], "rocm6.4");
    assert_eq!(r["checks"]["torch"]["hip"], "6.4.43484");
}

#[test]
fn env_list_and_remove() {
    support::require_uv();
    let h = Harness::new(10_000);
    assert!(h.install(&["--name", "a"]).status.success());
    assert!(h.install(&["--name", "b"]).status.success());
    let o = h.cmd(&["env", "list", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names = support::env_names(&j);
    assert_eq!(names, vec!["a", "b"]);
    assert_eq!(j["envs"][0]["profile"], "cpu");
    // The listing for people: the directory once, a header, aligned columns,
    // the date to the minute and the env the shell has active marked.
    let o = h
        .cmd(&["env", "list"])
        .env("VIRTUAL_ENV", h.env_dir("b"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(
        lines[0],
        format!("greta envs in {}:", h.envs_dir().display())
    );
    assert!(
        lines[1].starts_with("NAME") && lines[1].contains("CREATED (UTC)"),
        "{out}"
    );
    assert_eq!(
        out.matches(h.envs_dir().to_str().unwrap()).count(),
        1,
        "{out}"
    );
    let col = |l: &str, w: &str| l.find(w).unwrap_or_else(|| panic!("{w:?} in {l:?}"));
    assert_eq!(col(lines[1], "PROFILE"), col(lines[2], "cpu"), "{out}");
    assert_eq!(col(lines[1], "PROFILE"), col(lines[3], "cpu"), "{out}");
    assert!(
        lines[3].starts_with("b ") && lines[3].ends_with("(active)"),
        "{out}"
    );
    assert!(!lines[2].contains("(active)"), "{out}");
    let created = j["envs"][0]["created"].as_str().unwrap();
    let minute = format!("{} {}", &created[..10], &created[11..16]);
    assert!(
        lines[2].contains(&minute) && !lines[2].contains(created),
        "{out}"
    );
    let o = h.cmd(&["env", "remove", "a"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(!h.env_dir("a").exists());
    let o = h.cmd(&["env", "remove", "a"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(support::stderr(&o).contains("no greta env named \"a\""));
    h.import_in_env("b");
}

#[test]
fn dry_run_explains_and_writes_nothing() {
    let h = Harness::new(1_000);
    let o = h.install(&["--dry-run", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["result"], "planned");
    assert_eq!(j["plan"]["profile"], "cpu");
    assert_eq!(j["plan"]["wheels"].as_array().unwrap().len(), 3);
    assert!(j["plan"]["reasons"][0]
        .as_str()
        .unwrap()
        .contains("--profile cpu"));
    assert!(h.server.log().is_empty());
    assert!(!h.cache_dir().exists() && !h.envs_dir().exists());
}

#[test]
fn malformed_lock_files_point_at_line_and_column_and_write_nothing() {
    let h = Harness::new(1_000);
    // A bad value in the matrix.
    let bad = h
        .matrix_text()
        .replace("backend = \"cpu\"", "backend = \"tpu\"");
    std::fs::write(h.lock_dir().join("matrix.toml"), &bad).unwrap();
    let line = bad.lines().position(|l| l.starts_with("backend")).unwrap() + 1;
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = support::stderr(&o);
    assert!(e.contains(&format!("matrix.toml:{line}:11")), "{e}");

    // TOML syntax error in the lockfile.
    h.write_lock();
    let mut lock = h.pylock_text();
    lock.push_str("\n[[packages]\nname = \"x\"\n");
    std::fs::write(h.lock_dir().join("pylock.cpu.toml"), &lock).unwrap();
    let line = lock.lines().position(|l| l == "[[packages]").unwrap() + 1;
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = support::stderr(&o);
    assert!(e.contains(&format!("pylock.cpu.toml:{line}:")), "{e}");

    // An sdist pinned instead of a wheel.
    let lock = h
        .pylock_text()
        .replace(&h.wheel("jax").filename, "jax-0.4.35.tar.gz");
    std::fs::write(h.lock_dir().join("pylock.cpu.toml"), &lock).unwrap();
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(h.server.log().is_empty());
    assert!(!h.cache_dir().exists(), "cache written on bad input");
    assert!(!h.envs_dir().exists(), "envs written on bad input");
}

#[test]
fn smoke_gate_runs_after_the_import_check() {
    support::require_uv();
    let h = Harness::new(5_000);
    let py = support::python();
    let o = h.install_with(&py, &["--json"]).output().unwrap();
    let j: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    // Without --no-smoke the framework gates run first, in the staged env:
    // the stand-in torch imports but cannot compute (and the env has no
    // numpy for the reference), so the install stops before the swap and
    // the ultrasafe gate is not reached. (The real cpu profile passing
    // both: tests/frameworks_gates.rs.)
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(j["result"], "failed", "{j}");
    let ids = finding_ids(&j["report"]);
    assert!(ids.contains(&"framework.gate-failed"), "{j}");
    let torch_gates = j["report"]["checks"]["torch"]["gates"].as_array().unwrap();
    assert!(
        torch_gates
            .iter()
            .any(|g| g["status"] == "fail" && g["reason"].as_str().unwrap().contains("numpy")),
        "{j}"
    );
    assert_eq!(j["report"]["smoke"]["status"], "skipped", "{j}");
    assert!(!h.env_dir("cpu").exists());
}

/// `greta bundle` hard-linked cached wheels into the bundle,
/// changing their ctime (uv then re-unpacked the whole profile into its own
/// cache on every rebuild), and a killed run left `.OUT.partial-PID` beside
/// the output for ever.
#[test]
fn bundle_copies_out_of_the_cache_and_sweeps_dead_partials() {
    use std::os::unix::fs::MetadataExt;
    let h = Harness::new(50_000);
    let bundle = h.dir.path().join("bundle");
    // A partial of a process that has exited (its PID observed gone).
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let stale = h.dir.path().join(format!(".bundle.partial-{dead_pid}"));
    std::fs::create_dir_all(stale.join("wheels")).unwrap();
    // And one of a live process (this test): not touched.
    let live = h
        .dir
        .path()
        .join(format!(".bundle.partial-{}", std::process::id()));
    std::fs::create_dir_all(&live).unwrap();
    // First run fills the cache; record each cached wheel's inode state.
    let o = h.bundle_command(&bundle, &[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let cached: Vec<(std::path::PathBuf, i64, u64)> = h
        .wheels
        .iter()
        .map(|w| {
            let p = walk_find(&h.cache_dir(), &w.filename).expect("wheel cached");
            let m = std::fs::metadata(&p).unwrap();
            (p, m.ctime_nsec() + m.ctime() * 1_000_000_000, m.nlink())
        })
        .collect();
    std::fs::remove_dir_all(&bundle).unwrap();
    let o = h.bundle_command(&bundle, &[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for (p, ctime, nlink) in &cached {
        let m = std::fs::metadata(p).unwrap();
        assert_eq!(m.nlink(), 1, "{} is hard-linked", p.display());
        assert_eq!(
            *nlink,
            1,
            "{} was hard-linked by the first run",
            p.display()
        );
        assert_eq!(
            m.ctime_nsec() + m.ctime() * 1_000_000_000,
            *ctime,
            "{} changed by bundling",
            p.display()
        );
    }
    assert!(!stale.exists(), "dead run's partial left behind");
    assert!(live.exists(), "a live run's partial was removed");
}

fn walk_find(dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = walk_find(&p, name) {
                return Some(f);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}
