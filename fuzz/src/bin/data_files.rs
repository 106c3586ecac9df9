//! The other files greta is handed: `--baseline` (a smoke result), the
//! f16 deny list, the device-class floors, an env receipt and a tuning
//! cache. The first byte picks the parser; the rest is the text.
use greta_runtime::tuning_cache::TuningCache;
use greta_runtime::{DeviceInfo, Op};
use std::path::Path;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut info = DeviceInfo::placeholder();
    // lavapipe's identity, as in the seed fuzz/seeds/tuning-lavapipe-*.json
    // (a cache of another device is ignored before its entries are read).
    info.uuid = "6d65736132322e332e36000000000000".into();
    info.driver_version = 1;
    afl::fuzz!(|data: &[u8]| {
        let Some((&which, rest)) = data.split_first() else {
            return;
        };
        let Ok(text) = std::str::from_utf8(rest) else {
            return;
        };
        match which % 5 {
            0 => {
                let _ = greta_smoke::floors::Baseline::parse(Path::new("base.json"), text);
            }
            1 => {
                let _ = greta_smoke::deny::DenyList::parse("deny.toml", text);
            }
            2 => {
                let _ = greta_smoke::floors::ClassFile::parse("floors.toml", text);
            }
            3 => {
                let _ = serde_json::from_str::<greta::envs::receipt::Receipt>(text);
            }
            _ => {
                let path = TuningCache::open(&info, Some(dir.path()))
                    .path()
                    .unwrap()
                    .to_path_buf();
                std::fs::write(&path, text).unwrap();
                let c = TuningCache::open(&info, Some(dir.path()));
                for op in [
                    Op::GemmF32 {
                        m: 4096,
                        n: 4096,
                        k: 4096,
                    },
                    Op::GemmF16 {
                        m: 256,
                        n: 256,
                        k: 256,
                    },
                ] {
                    if let Some(e) = c.get(&op) {
                        assert!(
                            !greta_runtime::tuning_cache::is_diagnostic(&e.tuning),
                            "a diagnostic tuning came from the cache"
                        );
                    }
                }
            }
        }
    });
}
