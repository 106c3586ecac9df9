//! `greta lock show PROFILE` failed for every profile
//! with the lock set built into greta: it read the pseudo-path
//! `<built-in>/lock/pylock.*.toml` from disk ("No such file or directory").

use crate::support::{self, Harness};

#[test]
fn lock_show_works_for_every_locked_profile_of_the_built_in_set() {
    let h = Harness::new(1_000);
    let builtin = |args: &[&str]| {
        let mut c = h.cmd(args);
        c.env_remove("GRETA_LOCK_DIR");
        c.output().unwrap()
    };
    let o = builtin(&["lock", "list", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list["lock_set"]["origin"], "built-in");
    let locked: Vec<&str> = list["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"]["state"] == "locked")
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(locked.contains(&"cpu"), "{locked:?}");
    for name in locked {
        for json in [true, false] {
            let mut args = vec!["lock", "show", name, "--python", "3.12"];
            if json {
                args.push("--json");
            }
            let o = builtin(&args);
            let all = support::text(&o);
            assert_eq!(o.status.code(), Some(0), "{name} json={json}: {all}");
            assert!(!all.contains("No such file"), "{name}: {all}");
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains("torch"), "{name} json={json}: {all}");
            if json {
                let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                assert_eq!(v["schema"], "greta.lock-show/v1", "{name}");
            }
        }
    }
}
