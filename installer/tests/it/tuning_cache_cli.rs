//! The tuning cache end to end on lavapipe, with the validation layers on:
//! what `greta smoke --tune` does with a FIFO, a symlink or a directory at
//! its file (moves it aside, never renames over it), with a tuning
//! directory that is a file (exit 2 before any gate, naming it), and what
//! a later `greta smoke` says of an entry the tuner would never have
//! written (`wg=1` for a copy: used, with a warning naming it).

use crate::support::run::Run;
use std::path::{Path, PathBuf};

fn greta(args: &[&str], tuning: &Path, home: &Path) -> Run {
    let mut cmd = crate::support::greta();
    cmd.arg("smoke")
        .args(["--device", "cpu", "--profile", "ultrasafe", "--no-progress"])
        .args(args)
        .env("GRETA_VK_VALIDATION", "1")
        .env("GRETA_TUNING_CACHE", tuning)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"));
    Run::of(cmd)
}

fn tune(tuning: &Path, home: &Path) -> Run {
    greta(&["--tune"], tuning, home)
}

/// The one cache file in `dir` (lavapipe's), and what else is there.
fn files(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    all.sort();
    let (cache, rest): (Vec<PathBuf>, Vec<PathBuf>) = all
        .into_iter()
        .partition(|p| p.extension().is_some_and(|e| e == "json"));
    assert_eq!(cache.len(), 1, "{cache:?}");
    (cache[0].clone(), rest)
}

#[test]
fn tune_moves_aside_what_is_not_a_regular_file_and_a_hand_edited_entry_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let dir = home.join("tuning");
    let r = tune(&dir, home);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (cache, rest) = files(&dir);
    assert!(rest.is_empty(), "{rest:?}");
    let tuned = std::fs::read_to_string(&cache).unwrap();
    assert!(tuned.contains("\"copy:n4096\""), "{tuned}");

    // A run that reads the tuner's own entries says nothing of them.
    let r = greta(&["--no-save"], &dir, home);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("tuning cache"), "{}", r.stderr);

    // Edited by hand: wg 1 plans on lavapipe, but the tuner tries 128 to
    // 1024. Used as written, and said once.
    let mut v: serde_json::Value = serde_json::from_str(&tuned).unwrap();
    v["entries"]["copy:n4096"]["tuning"] = serde_json::json!({ "wg": 1 });
    std::fs::write(&cache, v.to_string()).unwrap();
    let r = greta(&["--no-save"], &dir, home);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let said: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("tuning cache entry"))
        .collect();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    assert!(
        said[0].contains("copy:n4096 (wg=1)")
            && said[0].contains("used as written")
            && said[0].contains(&cache.display().to_string()),
        "{}",
        said[0]
    );

    // A FIFO, a symlink to a file outside the cache, and a directory at
    // the cache's name: each moved aside as it was, the cache rewritten.
    let outside = home.join("outside.json");
    std::fs::write(&outside, "theirs").unwrap();
    type Plant<'a> = &'a dyn Fn(&Path);
    let plants: [(&str, Plant); 3] = [
        ("FIFO", &|p: &Path| {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }),
        ("symbolic link", &|p: &Path| {
            std::os::unix::fs::symlink(&outside, p).unwrap()
        }),
        ("directory", &|p: &Path| std::fs::create_dir(p).unwrap()),
    ];
    for (n, (kind, plant)) in plants.iter().enumerate() {
        let (cache, _) = files(&dir);
        std::fs::remove_file(&cache).unwrap();
        plant(&cache);
        let r = tune(&dir, home);
        assert_eq!(r.code, 0, "{kind}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!(
                "was a {kind}, not a regular file: moved it aside to"
            )),
            "{kind}: {}",
            r.stderr
        );
        assert!(
            std::fs::symlink_metadata(&cache).unwrap().is_file(),
            "{kind}"
        );
        let (_, rest) = files(&dir);
        assert_eq!(rest.len(), n + 1, "{kind}: {rest:?}");
        let aside = rest
            .iter()
            .find(|p| {
                greta_fsread::kind_of(std::fs::symlink_metadata(p).unwrap().file_type()) == *kind
            })
            .unwrap_or_else(|| panic!("{kind} kept aside: {rest:?}"));
        assert!(
            aside.to_string_lossy().contains(".json.aside-"),
            "{aside:?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "theirs");
}

/// A tuning directory that is a file: exit 2 before any gate is timed,
/// naming the path (it said only "File exists (os error 17)").
#[test]
fn a_tuning_directory_that_is_a_file_is_named_before_any_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tuning");
    std::fs::write(&file, "a file").unwrap();
    let r = tune(&file, tmp.path());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "{} is a regular file, not a directory",
            file.display()
        )),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "nothing was timed: {}", r.stdout);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a file");
}

/// A `GRETA_TUNING_CACHE` holding a control character or bytes that are
/// not UTF-8 is refused, named with its value escaped: the run's tuning is
/// kept in memory, and no directory of that name is made (one holding a
/// line feed was made and named in the results).
#[test]
fn a_tuning_cache_variable_with_a_control_character_or_bad_bytes_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    for (raw, shown, why) in [
        (&b"/a\nb"[..], "/a\\nb", "holds a control character"),
        (&b"/a\xffb"[..], "/a\\xffb", "not UTF-8"),
    ] {
        let mut bad = home.as_os_str().as_bytes().to_vec();
        bad.extend_from_slice(raw);
        let bad = Path::new(std::ffi::OsStr::from_bytes(&bad));
        let r = tune(bad, home);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let said = format!("GRETA_TUNING_CACHE=\"{}{shown}\": {why}", home.display());
        assert!(r.stderr.contains(&said), "{said}\n{}", r.stderr);
        assert!(!bad.exists(), "{} was made", bad.display());
    }
}
