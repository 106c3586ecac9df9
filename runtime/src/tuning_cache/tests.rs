//! The tuning cache: its key for every op, the file's round trip, a driver
//! update, and what may sit at its paths instead of the file (a FIFO, a
//! directory, a symlink).

use super::*;
use crate::tuning::Knob;
use greta_kernels::spirv::Shader;

fn info(driver_version: u32) -> DeviceInfo {
    let mut d = DeviceInfo::placeholder();
    d.name = "test gpu".into();
    d.uuid = Some("00112233445566778899aabbccddeeff".parse().unwrap());
    d.driver_version = driver_version;
    d
}

fn entry(bm: u32) -> TunedEntry {
    TunedEntry {
        tuning: Tuning::default().with(Knob::Bm, bm),
        kernel: Shader::GemmF32.name().into(),
        median_ns: 1234,
        measured_op: "gemm_f32(m=4000,n=4000,k=4000)".into(),
    }
}

/// The cache keys of every catalogue op and of a second, odd-sized
/// instance of each (buckets, the a4 alignment flag), pinned as the
/// files on users' machines hold them: a key that changes orphans the
/// tuning stored under it.
#[test]
fn cache_keys_of_every_op_are_pinned() {
    let odd = [
        Op::Noop,
        Op::Fill { n: 1000, value: 7 },
        Op::Copy { n: 1 << 28 },
        Op::VecAdd { n: 3 },
        Op::GemmF32 {
            m: 4096,
            n: 4096,
            k: 4096,
        },
        Op::GemmF16 { m: 33, n: 17, k: 9 },
        Op::GemvF16 {
            rows: 22016,
            cols: 4096,
        },
        Op::LinearF16 {
            tokens: 2048,
            rows: 4096,
            cols: 11008,
        },
        Op::GemvAddF16 {
            rows: 4096,
            cols: 11008,
        },
        Op::RmsGemvSwigluF16 {
            rows: 11008,
            cols: 4096,
            eps: 1e-5,
        },
        Op::RmsGemvRopeKvF16 {
            heads: 32,
            head_dim: 128,
            pos0: 511,
            max_seq: 512,
            theta: 1e4,
            eps: 1e-5,
        },
        Op::RmsNorm {
            rows: 3,
            cols: 4094,
            eps: 1e-5,
        },
        Op::LayerNorm {
            rows: 4096,
            cols: 8192,
            eps: 1e-5,
        },
        Op::Softmax {
            rows: 5,
            cols: 1023,
        },
        Op::RmsNormF16 {
            rows: 1,
            cols: 4096,
            eps: 1e-5,
        },
        Op::AddRmsNormF16 {
            rows: 2048,
            cols: 4100,
            eps: 1e-5,
        },
        Op::SwigluF16 {
            rows: 2048,
            cols: 11008,
        },
        Op::Rope {
            tokens: 7,
            heads: 32,
            head_dim: 128,
            pos0: 3,
            theta: 1e4,
        },
        Op::KvUpdate {
            layers: 32,
            max_seq: 4096,
            heads: 32,
            head_dim: 128,
            pos: 100,
            n_new: 1,
        },
        Op::RopeKvF16 {
            tokens: 1,
            heads: 32,
            head_dim: 128,
            pos0: 4095,
            max_seq: 4096,
            theta: 1e4,
        },
        Op::AttnDecodeF16 {
            heads: 32,
            head_dim: 128,
            len: 4000,
            max_seq: 4096,
        },
        Op::AttnPrefillF16 {
            tokens: 2048,
            heads: 32,
            head_dim: 128,
            pos0: 0,
            max_seq: 2048,
        },
        Op::BlockDecode {
            hidden: 4096,
            heads: 32,
            head_dim: 128,
            ffn: 11008,
            len: 512,
        },
        Op::BlockPrefill {
            hidden: 4096,
            heads: 32,
            head_dim: 128,
            ffn: 11008,
            tokens: 2048,
        },
        Op::Memtest {
            words: 1 << 30,
            patterns: 1,
            seed: 9,
            flip_word: 3,
            flip_mask: 1,
        },
        Op::TestBrokenCopy { n: 9 },
        Op::TestSlow { iters: 5 },
    ];
    let keys: Vec<String> = Op::catalogue()
        .iter()
        .chain(odd.iter())
        .map(shape_class)
        .collect();
    assert_eq!(keys, PINNED_KEYS, "{keys:#?}");
    // Every op of the catalogue has its odd twin above.
    assert_eq!(Op::catalogue().len(), odd.len());
}

const PINNED_KEYS: &[&str] = &[
    "noop:",
    "fill:n1024",
    "copy:n1024",
    "vec_add:n1024",
    "gemm_f32:m64,n32,k16",
    "gemm_f16:m32,n64,k16",
    "gemv_f16:rows64,cols128",
    "linear_f16:t32,r64,c128",
    "gemv_add_f16:rows64,cols128",
    "rms_gemv_swiglu_f16:rows64,cols128",
    "rms_gemv_rope_kv_f16:h4,d16",
    "rmsnorm:rows4,cols128",
    "layernorm:rows4,cols128",
    "softmax:rows4,cols128,a4",
    "rmsnorm_f16:rows4,cols128",
    "add_rmsnorm_f16:rows4,cols128",
    "swiglu_f16:rows4,cols128",
    "rope:t8,h4,d16",
    "kv_update:l2,new4,row16",
    "rope_kv_f16:t8,h4,d16",
    "attn_decode_f16:h4,d16,len2048",
    "attn_prefill_f16:t64,h2,d16",
    "block_decode:d64,f96,h2x32,len8",
    "block_prefill:d64,f96,h2x32,tokens8",
    "memtest:n1024",
    "test_broken_copy:n64",
    "test_slow:",
    "noop:",
    "fill:n1024",
    "copy:n268435456",
    "vec_add:n4",
    "gemm_f32:m4096,n4096,k4096",
    "gemm_f16:m64,n32,k16",
    "gemv_f16:rows32768,cols4096,a8",
    "linear_f16:t2048,r4096,c16384",
    "gemv_add_f16:rows4096,cols16384,a8",
    "rms_gemv_swiglu_f16:rows16384,cols4096,a8",
    "rms_gemv_rope_kv_f16:h32,d128,a8",
    "rmsnorm:rows4,cols4096",
    "layernorm:rows4096,cols8192,a4",
    "softmax:rows8,cols1024",
    "rmsnorm_f16:rows1,cols4096,a8",
    "add_rmsnorm_f16:rows2048,cols8192",
    "swiglu_f16:rows2048,cols16384,a8",
    "rope:t8,h32,d128",
    "kv_update:l32,new1,row4096",
    "rope_kv_f16:t1,h32,d128",
    "attn_decode_f16:h32,d128,len4096",
    "attn_prefill_f16:t2048,h32,d128",
    "block_decode:d4096,f11008,h32x128,len512",
    "block_prefill:d4096,f11008,h32x128,tokens2048",
    "memtest:n1073741824",
    "test_broken_copy:n16",
    "test_slow:",
];

/// The HIP/CUDA kernels' entries live beside Vulkan's in one file
/// without either seeing the other's, and survive a save and load.
#[test]
fn gpu_entries_have_keys_of_their_own_and_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let op = Op::GemmF16 {
        m: 8192,
        n: 8192,
        k: 8192,
    };
    assert_eq!(KeySpace::Vulkan.key(&op), "gemm_f16:m8192,n8192,k8192");
    assert_eq!(KeySpace::Gpu.key(&op), "gpu/gemm_f16:m8192,n8192,k8192");
    // No Vulkan key of any op can be a GPU key.
    for k in PINNED_KEYS {
        assert!(!k.starts_with(GPU_PREFIX), "{k}");
    }
    let gpu = TunedEntry {
        tuning: Tuning::of(&[(Knob::Bm, 128), (Knob::Bn, 256), (Knob::Stages, 3)]),
        kernel: "gemm_f16_bm128_bn256_s3".into(),
        median_ns: 2_000_000,
        measured_op: op.to_string(),
    };
    let mut c = TuningCache::open(&info(1), Some(tmp.path()));
    c.put_in(KeySpace::Gpu, &op, gpu.clone());
    assert!(c.get(&op).is_none(), "a GPU entry answered a Vulkan lookup");
    c.put(&op, entry(64));
    c.save().unwrap();
    let c = TuningCache::open(&info(1), Some(tmp.path()));
    assert!(c.ignored.is_none(), "{:?}", c.ignored);
    assert_eq!(c.get_in(KeySpace::Gpu, &op), Some(&gpu));
    assert_eq!(c.get(&op), Some(&entry(64)));
    assert_eq!(c.get_in(KeySpace::Vulkan, &op), Some(&entry(64)));
    let text = std::fs::read_to_string(c.path().unwrap()).unwrap();
    assert!(
        text.contains("\"gpu/gemm_f16:m8192,n8192,k8192\"")
            && text.contains("\"gemm_f16:m8192,n8192,k8192\""),
        "{text}"
    );
}

#[test]
fn classes_bucket_neighbouring_shapes() {
    assert_eq!(
        shape_class(&Op::GemmF32 {
            m: 4000,
            n: 4096,
            k: 3000
        }),
        "gemm_f32:m4096,n4096,k4096"
    );
    assert_eq!(
        shape_class(&Op::GemmF32 {
            m: 4000,
            n: 4096,
            k: 3000
        }),
        shape_class(&Op::GemmF32 {
            m: 4096,
            n: 4095,
            k: 4096
        })
    );
    assert_ne!(
        shape_class(&Op::Softmax {
            rows: 8,
            cols: 1024
        }),
        shape_class(&Op::Softmax {
            rows: 8,
            cols: 1023
        })
    );
}

fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_fifo_or_device_as_the_cache_is_ignored_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let path = TuningCache::open(&info(1), Some(tmp.path()))
        .path()
        .unwrap()
        .to_path_buf();
    mkfifo(&path);
    // Before: read_to_string blocked here for ever.
    let c = TuningCache::open(&info(1), Some(tmp.path()));
    assert!(c.is_empty());
    assert!(
        c.ignored.as_deref().unwrap().contains("FIFO"),
        "{:?}",
        c.ignored
    );
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let c = TuningCache::open(&info(1), Some(tmp.path()));
    assert!(
        c.ignored.as_deref().unwrap().contains("character device"),
        "{:?}",
        c.ignored
    );
}

#[test]
fn a_diagnostic_variant_never_comes_from_or_goes_to_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let op = Op::GemmF16 {
        m: 4096,
        n: 4096,
        k: 4096,
    };
    let diag = TunedEntry {
        tuning: Tuning::default()
            .with(Knob::Coopmat, 3)
            .with(Knob::Probe, 1),
        kernel: Shader::GemmF16Cmreg.name().into(),
        median_ns: 1,
        measured_op: op.to_string(),
    };
    let mut c = TuningCache::open(&info(1), Some(tmp.path()));
    c.put(&op, diag.clone());
    assert!(c.is_empty(), "put stored a diagnostic tuning");
    // A hand-edited file with the probe key.
    let path = c.path().unwrap().to_path_buf();
    let mut other = entry(64);
    other.tuning = Tuning::default()
        .with(Knob::Probe, 0)
        .with(Knob::Coopmat, 3);
    let file = serde_json::json!({
        "schema": SCHEMA, "device": "test gpu", "uuid": info(1).uuid,
        "driver_id": "", "driver_version": 1,
        "entries": { shape_class(&op): diag, "gemm_f16:m1,n1,k1": other },
    });
    std::fs::write(&path, file.to_string()).unwrap();
    let c = TuningCache::open(&info(1), Some(tmp.path()));
    assert!(c.get(&op).is_none(), "the probe entry was loaded");
    assert_eq!(c.len(), 1, "probe=0 is not diagnostic and stays");
    assert!(c.ignored.as_deref().unwrap().contains("diagnostic"));
}

#[test]
fn saved_then_loaded_and_driver_update_invalidates() {
    let tmp = tempfile::tempdir().unwrap();
    let op = Op::GemmF32 {
        m: 4000,
        n: 4000,
        k: 4000,
    };
    let mut c = TuningCache::open(&info(1), Some(tmp.path()));
    assert!(c.is_empty() && c.ignored.is_none());
    c.put(&op, entry(128));
    let path = c.save().unwrap().unwrap();
    let c = TuningCache::open(&info(1), Some(tmp.path()));
    assert_eq!(
        c.get(&Op::GemmF32 {
            m: 4096,
            n: 4096,
            k: 4096
        }),
        Some(&entry(128))
    );
    // A new driver version: a different file, nothing cached.
    let c2 = TuningCache::open(&info(2), Some(tmp.path()));
    assert!(c2.get(&op).is_none() && c2.ignored.is_none());
    // A corrupted file is ignored, never an error, and replaced on save.
    std::fs::write(&path, "{ not json").unwrap();
    let mut c = TuningCache::open(&info(1), Some(tmp.path()));
    assert!(c.get(&op).is_none());
    assert!(
        c.ignored.as_deref().unwrap().contains("unreadable"),
        "{:?}",
        c.ignored
    );
    c.put(&op, entry(64));
    c.save().unwrap();
    assert_eq!(
        TuningCache::open(&info(1), Some(tmp.path())).get(&op),
        Some(&entry(64))
    );
    // A file copied from another device is not trusted.
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("00112233", "ffffffff");
    std::fs::write(&path, text).unwrap();
    let c = TuningCache::open(&info(1), Some(tmp.path()));
    assert!(c.get(&op).is_none() && c.ignored.is_some());
    // A knob greta has no such kernel parameter for: the file does not
    // parse, so nothing in it reaches a planner.
    let mut c = TuningCache::open(&info(1), Some(tmp.path()));
    c.put(&op, entry(64));
    c.save().unwrap();
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"bm\"", "\"tile\"");
    assert!(text.contains("\"tile\""), "{text}");
    std::fs::write(&path, text).unwrap();
    let c = TuningCache::open(&info(1), Some(tmp.path()));
    assert!(
        c.get(&op).is_none(),
        "an entry with an unknown knob was loaded"
    );
    let why = c.ignored.as_deref().unwrap_or_default();
    assert!(why.contains("unreadable") && why.contains("tile"), "{why}");
}

/// What `--tune` renames its file over: before, a FIFO, a symlink (to
/// a file outside the cache, or to /dev/null), a character device or a
/// directory at the cache's name was replaced (the link's target kept
/// its old text, the node was gone). Now each is moved aside, kept as
/// it was, and the cache is a regular file holding the entries.
#[test]
fn save_moves_aside_what_is_not_a_regular_file_and_never_follows_it() {
    use std::os::unix::fs::FileTypeExt;
    let tmp = tempfile::tempdir().unwrap();
    let op = Op::GemmF32 {
        m: 4000,
        n: 4000,
        k: 4000,
    };
    let outside = tmp.path().join("outside.json");
    std::fs::write(&outside, "theirs").unwrap();
    type Plant<'a> = Box<dyn Fn(&Path) + 'a>;
    let mut kinds: Vec<(&str, Plant)> = vec![
        ("FIFO", Box::new(|p: &Path| mkfifo(p))),
        (
            "symbolic link",
            Box::new(|p: &Path| std::os::unix::fs::symlink(&outside, p).unwrap()),
        ),
        (
            "symbolic link",
            Box::new(|p: &Path| std::os::unix::fs::symlink("/dev/null", p).unwrap()),
        ),
        (
            "directory",
            Box::new(|p: &Path| std::fs::create_dir(p).unwrap()),
        ),
    ];
    // A real character device needs root (CI runs as root).
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } == 0 {
        kinds.push((
            "character device",
            Box::new(|p: &Path| {
                use std::os::unix::ffi::OsStrExt;
                let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
                // SAFETY: a valid NUL-terminated path; /dev/null's numbers.
                let rc =
                    unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 3)) };
                assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
            }),
        ));
    } else {
        eprintln!("not root: the character device case is not run (CI runs it)");
    }
    for (i, (kind, plant)) in kinds.iter().enumerate() {
        let dir = tmp.path().join(format!("case{i}"));
        let mut c = TuningCache::open(&info(1), Some(&dir));
        let path = c.path().unwrap().to_path_buf();
        std::fs::create_dir_all(&dir).unwrap();
        plant(&path);
        c.put(&op, entry(128));
        let saved = c.save().unwrap().unwrap();
        assert_eq!(saved, path);
        assert!(
            std::fs::symlink_metadata(&path).unwrap().is_file(),
            "{kind}: the cache is a regular file"
        );
        assert_eq!(
            TuningCache::open(&info(1), Some(&dir)).get(&op),
            Some(&entry(128)),
            "{kind}"
        );
        let aside: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".aside-"))
            .collect();
        assert_eq!(aside.len(), 1, "{kind}: {aside:?}");
        let t = std::fs::symlink_metadata(&aside[0]).unwrap().file_type();
        assert_eq!(greta_fsread::kind_of(t), *kind);
        assert!(!t.is_char_device() || *kind == "character device");
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "theirs");
}

/// A tuning directory that is a file (or under one) is an error that
/// names it, from `ensure_dir` (checked before a sweep) and `save`;
/// before, `save` said only "File exists (os error 17)".
#[test]
fn a_tuning_directory_that_is_a_file_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tuning");
    std::fs::write(&file, "not a directory").unwrap();
    for dir in [file.clone(), file.join("deeper")] {
        let mut c = TuningCache::open(&info(1), Some(&dir));
        c.put(&Op::Noop, entry(64));
        for e in [c.ensure_dir().unwrap_err(), c.save().unwrap_err()] {
            let m = e.to_string();
            assert!(
                m.contains(&format!(
                    "{} is a regular file, not a directory",
                    file.display()
                )),
                "{m}"
            );
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
}

/// An entry that plans on the device but is none of the tunings
/// `--tune` times (`wg 1` for a copy: the tuner tries 128 to 1024) is
/// used, with one warning naming it; a candidate gets none, and an
/// entry that does not plan is left to the caller's fallback.
#[test]
fn an_entry_outside_the_candidates_is_used_with_one_warning() {
    use crate::vulkan::plan::{candidates, plan, test_limits::lavapipe};
    let tmp = tempfile::tempdir().unwrap();
    let lim = lavapipe();
    let copy = Op::Copy { n: 1 << 24 };
    let fill = Op::Fill {
        n: 1 << 24,
        value: 1,
    };
    let softmax = Op::Softmax {
        rows: 256,
        cols: 1024,
    };

    let odd = Tuning::default().with(Knob::Wg, 1);
    assert!(plan(&copy, &odd, &lim).is_ok(), "wg 1 plans");
    let tuned = candidates(&fill, &lim)
        .into_iter()
        .find(|t| !t.0.is_empty())
        .unwrap();
    let mut c = TuningCache::open(&info(1), Some(tmp.path()));
    let with = |t: &Tuning, op: &Op| TunedEntry {
        tuning: t.clone(),
        kernel: "x".into(),
        median_ns: 1,
        measured_op: op.to_string(),
    };
    c.put(&copy, with(&odd, &copy));
    c.put(&fill, with(&tuned, &fill));
    c.put(
        &softmax,
        with(&Tuning::default().with(Knob::Wg, 3), &softmax),
    );
    c.save().unwrap();
    let c = TuningCache::open(&info(1), Some(tmp.path()));
    for _ in 0..3 {
        for op in [&copy, &fill, &softmax] {
            let e = c.get_vetted(
                KeySpace::Vulkan,
                op,
                &|t| plan(op, t, &lim).ok().map(|p| p.tuning),
                &|| candidates(op, &lim),
            );
            assert!(e.is_some(), "{op}: the entry is used");
        }
    }
    let w = c.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains(&shape_class(&copy))
            && w[0].contains(&odd.to_string())
            && w[0].contains("by hand")
            && w[0].contains("used as written"),
        "{}",
        w[0]
    );
    assert!(plan(&softmax, &Tuning::default().with(Knob::Wg, 3), &lim).is_err());
}
