//! CPU references the devices of one run share. With `--device all` every
//! device runs the same gates with the same seeds, so a repeat's inputs
//! are the same on each, and so is the reference of a check that depends
//! on the inputs alone (the f64 reference of every op but the sampled and
//! streaming checks): the first device to ask computes it (on every core),
//! the others wait for it instead of computing it again beside it. Eight
//! GPUs of a node computed `attn_prefill_f16.32x128.S2048`'s 17 G
//! multiply-adds eight times over, on the same cores, each repeat.
//!
//! In memory only, and only for the run: the seed changes with every run
//! (the clock's, unless `--seed`), so a reference kept on disk would serve
//! no later run but one with the same `--seed`, at the price of trusting a
//! file. An entry is dropped once every device has taken it; entries
//! larger than [`CAP`] are not kept, and the oldest go first when the
//! entries held would pass it (a device far behind then computes its own).

use greta_kernels::HostBuf;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Bytes of references held at once, at most.
pub const CAP: usize = 1 << 30;

/// A check's f64 reference (one vector per output), or why there is none.
pub type Reference = Result<Vec<Vec<f64>>, String>;

struct Entry {
    key: String,
    value: OnceLock<Arc<Reference>>,
    taken: AtomicUsize,
}

/// The references of one run's devices.
pub struct SharedRefs {
    devices: usize,
    /// Bytes held at most ([`CAP`]).
    cap: usize,
    entries: Mutex<VecDeque<Arc<Entry>>>,
}

fn bytes(r: &Reference) -> usize {
    r.as_ref()
        .map_or(0, |v| v.iter().map(|o| o.len() * 8).sum())
}

impl SharedRefs {
    /// For a run on `devices` devices (sharing needs two or more).
    pub fn new(devices: usize) -> SharedRefs {
        SharedRefs::with_cap(devices, CAP)
    }

    fn with_cap(devices: usize, cap: usize) -> SharedRefs {
        SharedRefs {
            devices,
            cap,
            entries: Mutex::new(VecDeque::new()),
        }
    }

    /// The reference named `key`: computed by `make` for the first device
    /// that asks, taken by the others (who wait while it is computed).
    pub fn get(&self, key: String, make: impl FnOnce() -> Reference) -> Arc<Reference> {
        let entry = {
            let mut list = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            match list.iter().find(|e| e.key == key) {
                Some(e) => Arc::clone(e),
                None => {
                    let e = Arc::new(Entry {
                        key,
                        value: OnceLock::new(),
                        taken: AtomicUsize::new(0),
                    });
                    list.push_back(Arc::clone(&e));
                    e
                }
            }
        };
        let value = Arc::clone(entry.value.get_or_init(|| Arc::new(make())));
        let taken = entry.taken.fetch_add(1, Ordering::AcqRel) + 1;
        let mut list = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if taken >= self.devices || bytes(&value) > self.cap {
            list.retain(|e| !Arc::ptr_eq(e, &entry));
        }
        // The oldest computed entries go while the held ones pass the cap.
        let held = |l: &VecDeque<Arc<Entry>>| -> usize {
            l.iter()
                .filter_map(|e| e.value.get())
                .map(|v| bytes(v))
                .sum()
        };
        while held(&list) > self.cap {
            match list.iter().position(|e| e.value.get().is_some()) {
                Some(i) => {
                    list.remove(i);
                }
                None => break,
            }
        }
        value
    }

    /// Entries held now (tests).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

/// What identifies a repeat's reference: the op as prepared (its shape and
/// any value drawn for it), the repeat's seed, and a fingerprint of its
/// buffers (lengths, types and first and last bytes: two repeats that were
/// to collide on op and seed would also have to agree there).
pub fn key(op: &greta_kernels::Op, seed: u64, buffers: &[&HostBuf]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for b in buffers {
        let raw = b.as_bytes();
        eat(&(raw.len() as u64).to_le_bytes());
        eat(b.dtype().to_string().as_bytes());
        eat(&raw[..raw.len().min(256)]);
        eat(&raw[raw.len().saturating_sub(256)..]);
    }
    format!("{op:?}|{seed}|{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    /// Four devices asking at once: computed once, the same value for
    /// each, and dropped once all four have taken it.
    #[test]
    fn one_device_computes_the_others_take_it() {
        let refs = SharedRefs::new(4);
        let made = AtomicUsize::new(0);
        let start = Barrier::new(4);
        let got: Vec<Arc<Reference>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        refs.get("k".into(), || {
                            made.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            Ok(vec![vec![1.5, 2.5]])
                        })
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(made.load(Ordering::SeqCst), 1);
        for g in &got {
            assert_eq!(**g, Ok(vec![vec![1.5, 2.5]]));
        }
        assert_eq!(refs.held(), 0, "taken by every device: dropped");
    }

    /// Different keys are different references; what is held stays under
    /// the cap, the oldest going first; one larger than the cap is never kept.
    #[test]
    fn keys_are_distinct_and_the_cap_holds() {
        let refs = SharedRefs::with_cap(2, 1024);
        let a = refs.get("a".into(), || Ok(vec![vec![1.0]]));
        let b = refs.get("b".into(), || Ok(vec![vec![2.0]]));
        assert_ne!(a, b);
        assert_eq!(refs.held(), 2);
        let big = 1024 / 8 / 2 + 1;
        refs.get("c".into(), || Ok(vec![vec![0.0; big]]));
        refs.get("d".into(), || Ok(vec![vec![0.0; big]]));
        // c and d together pass the cap: the oldest computed ones went.
        let held = refs
            .entries
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.key.clone())
            .collect::<Vec<_>>();
        assert_eq!(held, ["d"], "{held:?}");
        refs.get("e".into(), || Ok(vec![vec![0.0; 1024 / 8 + 1]]));
        assert!(!refs.entries.lock().unwrap().iter().any(|e| e.key == "e"));
    }

    /// The key follows the op, the seed and the buffers' content.
    #[test]
    fn keys_tell_ops_seeds_and_buffers_apart() {
        let op = greta_kernels::Op::VecAdd { n: 4 };
        let x = HostBuf::F32(vec![1.0, 2.0, 3.0, 4.0]);
        let y = HostBuf::F32(vec![1.0, 2.0, 3.0, 5.0]);
        let k = key(&op, 7, &[&x]);
        assert_eq!(k, key(&op, 7, &[&x]));
        assert_ne!(k, key(&op, 8, &[&x]));
        assert_ne!(k, key(&op, 7, &[&y]));
        assert_ne!(k, key(&greta_kernels::Op::VecAdd { n: 5 }, 7, &[&x]));
    }
}
