//! uv's cache stays bounded. uv unpacks a local wheel again
//! whenever the file's times change and keeps the old copy; before greta
//! pruned after each install, every such rebuild left another unpacked copy
//! of the whole profile in uv's cache, for ever.
use crate::support::*;
use std::path::Path;

fn archives(uv_cache: &Path) -> usize {
    std::fs::read_dir(uv_cache.join("archive-v0"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn rebuilds_after_the_wheels_times_change_leave_one_unpacked_copy_per_wheel() {
    require_uv();
    let h = Harness::new(4096);
    h.write_lock();
    let uv_cache = h.dir.path().join("cache").join("uv");
    let o = h.install(&[]);
    assert!(o.status.success(), "{}", text(&o));
    let wheels = h
        .cached_wheels()
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .count();
    assert!(
        wheels >= 2,
        "the harness pins several wheels, found {wheels}"
    );
    let first = archives(&uv_cache);
    assert!(
        first >= wheels,
        "uv unpacked {first} archives for {wheels} wheels"
    );

    for round in 0..3 {
        // What a restored or copied cache does: new file times, same bytes.
        // uv then unpacks each wheel again under a new archive.
        for w in h.cached_wheels() {
            let f = std::fs::File::options().append(true).open(&w).unwrap();
            f.set_modified(
                std::time::SystemTime::now() + std::time::Duration::from_secs(60 * (round + 1)),
            )
            .unwrap();
        }
        let o = h.install(&[]);
        assert!(o.status.success(), "round {round}: {}", text(&o));
        assert_eq!(
            archives(&uv_cache),
            first,
            "round {round}: uv's cache grew by a profile (old unpacked copies kept)"
        );
    }
    // The env still works: its files are links to copies that may be gone.
    let v = h.import_in_env("cpu");
    assert!(v.is_object(), "{v}");
}
