//! Every device of a node at once: one worker thread per device, each
//! opening its own backend and running the gate list on it, so the wall of
//! N GPUs is about one GPU's (eight `perf` runs one after the other took a
//! quarter of an hour). Backend-agnostic: the devices come from an
//! [`Opener`], the runtime's for real runs, a fake one in tests.

use crate::results::DeviceRun;
use crate::runner::{run_device, DeviceContext, Progress};
use greta_runtime::{Backend, BackendKind, DeviceSelect, RuntimeError};
use std::time::Instant;

/// Opens a device for a worker; called from the worker's own thread, so a
/// backend need not be `Send` (it never leaves that thread).
pub trait Opener: Sync {
    fn open(&self, select: &DeviceSelect) -> Result<Box<dyn Backend>, RuntimeError>;
}

/// The runtime's devices of one backend.
pub struct RuntimeOpener(pub BackendKind);

impl Opener for RuntimeOpener {
    fn open(&self, select: &DeviceSelect) -> Result<Box<dyn Backend>, RuntimeError> {
        greta_runtime::open(self.0, select)
    }
}

/// Run `ctx` on every device of `selects` concurrently. The answer is in
/// the order of `selects` (whatever order the workers finish in): each a
/// device's run, or why the device could not be opened.
pub fn run_devices(
    opener: &dyn Opener,
    selects: &[DeviceSelect],
    ctx: &DeviceContext<'_>,
    progress: &(dyn Progress + Sync),
) -> Vec<Result<DeviceRun, RuntimeError>> {
    std::thread::scope(|scope| {
        let workers: Vec<_> = selects
            .iter()
            .map(|sel| {
                std::thread::Builder::new()
                    .name(format!("greta-smoke {sel:?}"))
                    .spawn_scoped(scope, move || run_one(opener, sel, ctx, progress))
            })
            .collect();
        workers
            .into_iter()
            .zip(selects)
            .map(|(w, sel)| {
                let worker = w.map_err(|e| RuntimeError::Api {
                    call: format!("starting the worker thread for device {sel:?}"),
                    detail: e.to_string(),
                })?;
                worker.join().unwrap_or_else(|panic| {
                    let why = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "unknown panic".into());
                    Err(RuntimeError::Api {
                        call: format!("the worker for device {sel:?}"),
                        detail: format!("panicked: {why}"),
                    })
                })
            })
            .collect()
    })
}

fn run_one(
    opener: &dyn Opener,
    sel: &DeviceSelect,
    ctx: &DeviceContext<'_>,
    progress: &(dyn Progress + Sync),
) -> Result<DeviceRun, RuntimeError> {
    let t = Instant::now();
    let mut backend = opener.open(sel)?;
    let open_s = t.elapsed().as_secs_f64();
    let run = run_device(backend.as_mut(), open_s, ctx, progress);
    if backend.lost().is_some() {
        // A lost device may still be running the hung submission; tearing
        // it down could wait on it. Leak it instead: greta must return
        // promptly, and the process exits soon after.
        std::mem::forget(backend);
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deny::DenyList;
    use crate::floors::ClassFile;
    use crate::gates::{Gate, Profile};
    use crate::inject::Faults;
    use crate::results::{GateStatus, RunStatus};
    use crate::runner::tests::{fake_stats, write_reference};
    use crate::runner::Quiet;
    use greta_runtime::{Job, Op, RunStats};
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Duration;

    /// Every device's first submission waits here until all `n` devices
    /// have made theirs: it completes only when the workers run at once (a
    /// sequential runner hits the deadline and the gate fails).
    struct Rendezvous {
        n: usize,
        arrived: Mutex<usize>,
        all: Condvar,
    }

    impl Rendezvous {
        fn meet(&self) -> bool {
            let mut a = self.arrived.lock().unwrap();
            *a += 1;
            self.all.notify_all();
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while *a < self.n {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return false;
                }
                a = self.all.wait_timeout(a, left).unwrap().0;
            }
            true
        }
    }

    /// The runner's fake backend: a CPU "GPU" (the f64 reference rounded to
    /// f32) with a given speed; `TestSlow` blocks until the timeout, as a
    /// hung GPU would.
    struct Fake {
        info: greta_runtime::DeviceInfo,
        ns_per_dispatch: u64,
        /// Real time each submission takes (the slow device takes longer).
        delay: Duration,
        meet: Option<Arc<Rendezvous>>,
        lost: Option<String>,
    }

    impl greta_runtime::Backend for Fake {
        fn info(&self) -> &greta_runtime::DeviceInfo {
            &self.info
        }
        fn supports(&self, _op: &Op) -> Result<(), String> {
            Ok(())
        }
        fn run(&mut self, job: Job<'_>) -> Result<RunStats, RuntimeError> {
            let (op, inputs, outputs, opts) = (job.op, job.inputs, job.outputs, job.opts);
            if let Some(l) = &self.lost {
                return Err(RuntimeError::DeviceLost(l.clone()));
            }
            if let Some(m) = self.meet.take() {
                if !m.meet() {
                    return Err(RuntimeError::BadInput(
                        "the devices did not run at once".into(),
                    ));
                }
            }
            if let Op::TestSlow { .. } = op {
                std::thread::sleep(opts.timeout);
                self.lost = Some("timed out".into());
                return Err(RuntimeError::Timeout {
                    what: op.to_string(),
                    timeout: opts.timeout,
                    waited: opts.timeout,
                });
            }
            std::thread::sleep(self.delay);
            write_reference(op, inputs, outputs)?;
            Ok(fake_stats(
                op,
                self.ns_per_dispatch,
                opts.repeats,
                self.delay,
            ))
        }
        fn lost(&self) -> Option<&str> {
            self.lost.as_deref()
        }
    }

    /// A node of `n` fake GPUs; `slow` runs at 1/`factor` of the others' speed.
    struct FakeNode {
        n: usize,
        slow: Option<(usize, u64)>,
        meet: Arc<Rendezvous>,
        broken: Option<usize>,
    }

    impl FakeNode {
        fn new(n: usize, slow: Option<(usize, u64)>) -> Self {
            FakeNode {
                n,
                slow,
                meet: Arc::new(Rendezvous {
                    n,
                    arrived: Mutex::new(0),
                    all: Condvar::new(),
                }),
                broken: None,
            }
        }
        fn selects(&self) -> Vec<DeviceSelect> {
            (0..self.n).map(DeviceSelect::Index).collect()
        }
    }

    impl Opener for FakeNode {
        fn open(&self, select: &DeviceSelect) -> Result<Box<dyn Backend>, RuntimeError> {
            let DeviceSelect::Index(i) = *select else {
                return Err(RuntimeError::NoDevice("fake node: index only".into()));
            };
            if self.broken == Some(i) {
                return Err(RuntimeError::NoDevice(format!(
                    "fake GPU {i} fell off the bus"
                )));
            }
            let factor = match self.slow {
                Some((s, f)) if s == i => f,
                _ => 1,
            };
            let mut info = crate::runner::tests::fake_info(true);
            info.index = i;
            info.name = format!("Fake GPU {i}");
            info.uuid = Some(greta_vocab::DeviceUuid((i as u128).to_be_bytes()));
            Ok(Box::new(Fake {
                info,
                ns_per_dispatch: 50_000 * factor,
                delay: Duration::from_millis(5 * factor),
                meet: Some(self.meet.clone()),
                lost: None,
            }))
        }
    }

    fn gates() -> Vec<Gate> {
        crate::gates::test_gates(&[
            r#"{ op = "copy", n = 4096 }"#,
            r#"{ op = "gemm_f32", m = 16, n = 16, k = 16 }"#,
            r#"{ op = "softmax", rows = 4, cols = 64 }"#,
            r#"{ op = "gemm_f16", m = 16, n = 16, k = 16 }"#,
        ])
    }

    fn run(node: &FakeNode, faults: &Faults) -> Vec<Result<DeviceRun, RuntimeError>> {
        let (gates, classes, deny) = (gates(), ClassFile::default(), DenyList::default());
        // The devices share their references, as in a real run.
        let shared = crate::shared_refs::SharedRefs::new(node.selects().len());
        let ctx = DeviceContext {
            profile: Profile::Default,
            gates: &gates,
            repeat: Some(3),
            timeout: Duration::from_millis(200),
            seed: 7,
            floor_fraction: 0.75,
            baseline: None,
            classes: &classes,
            specs: &crate::spec::SpecFile::builtin(),
            deny: &deny,
            faults,
            shared: Some(&shared),
        };
        run_devices(node, &node.selects(), &ctx, &Quiet)
    }

    #[test]
    fn every_device_runs_at_once_and_the_slow_one_is_the_outlier() {
        let node = FakeNode::new(4, Some((2, 2)));
        let runs = run(&node, &Faults::default());
        let mut devs: Vec<DeviceRun> = runs.into_iter().map(|r| r.unwrap()).collect();
        // In the order asked for, though device 2 finished last.
        assert_eq!(
            devs.iter().map(|d| d.index).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        // The rendezvous passed: all four were running at once.
        for d in &devs {
            assert_eq!(d.status, RunStatus::Pass, "{:?}", d.gates);
        }
        crate::peers::compare(&mut devs, crate::peers::DEFAULT_PEER_FRACTION);
        for d in &devs {
            for g in &d.gates {
                let p = g.peer.as_ref().expect("compared");
                assert_eq!(p.devices, 4);
                assert_eq!(p.passed, d.index != 2, "device {} gate {}", d.index, g.id);
            }
        }
        assert_eq!(devs[2].status, RunStatus::Fail);
        assert!(devs[2].gates.iter().all(|g| g.status == GateStatus::Fail
            && g.reason.as_deref().unwrap().contains("peer outlier")
            && (g.peer.as_ref().unwrap().ratio - 0.5).abs() < 1e-9));
        assert!(devs
            .iter()
            .filter(|d| d.index != 2)
            .all(|d| d.status == RunStatus::Pass));
    }

    #[test]
    fn a_device_that_cannot_open_does_not_stop_the_others() {
        let mut node = FakeNode::new(3, None);
        node.broken = Some(1);
        // Only two devices reach the rendezvous.
        node.meet = Arc::new(Rendezvous {
            n: 2,
            arrived: Mutex::new(0),
            all: Condvar::new(),
        });
        let runs = run(&node, &Faults::default());
        assert!(runs[0].as_ref().unwrap().status == RunStatus::Pass);
        let e = runs[1].as_ref().unwrap_err().to_string();
        assert!(e.contains("fake GPU 1 fell off the bus"), "{e}");
        assert!(runs[2].as_ref().unwrap().status == RunStatus::Pass);
    }

    /// Each injected fault is caught by every gate it can touch: corruption
    /// by the reference check, a slow device by the peer comparison, a hang
    /// by the timeout (then the device is lost), on one device of three.
    #[test]
    fn every_gate_catches_every_injected_fault() {
        let ids: Vec<String> = gates().iter().map(|g| g.id.clone()).collect();
        let all = gates();
        for id in &ids {
            for spec in [format!("corrupt:1:{id}"), format!("hang:1:{id}")] {
                let faults = Faults::parse(std::slice::from_ref(&spec), &all).unwrap();
                let node = FakeNode::new(3, None);
                let runs = run(&node, &faults);
                let d = runs[1].as_ref().unwrap();
                let g = d.gates.iter().find(|g| &g.id == id).unwrap();
                assert_eq!(g.status, GateStatus::Fail, "{spec}: {g:?}");
                let why = g.reason.as_deref().unwrap();
                if spec.starts_with("hang") {
                    assert!(
                        why.contains("injected hang") && why.contains("timeout"),
                        "{why}"
                    );
                    assert!(d.lost.is_some(), "{spec}");
                } else {
                    assert!(why.contains("2/3 clean repeats"), "{spec}: {why}");
                }
                assert_eq!(d.status, RunStatus::Fail);
                for other in [0, 2] {
                    assert_eq!(
                        runs[other].as_ref().unwrap().status,
                        RunStatus::Pass,
                        "{spec}"
                    );
                }
            }
        }
        let faults = Faults::parse(&["slow:1:1.5".into()], &all).unwrap();
        let node = FakeNode::new(3, None);
        let mut devs: Vec<DeviceRun> = run(&node, &faults)
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        assert!(devs.iter().all(|d| d.status == RunStatus::Pass));
        crate::peers::compare(&mut devs, 0.85);
        assert_eq!(devs[1].gates.len(), ids.len());
        assert!(devs[1].gates.iter().all(|g| g.status == GateStatus::Fail));
        assert!(devs[0].status == RunStatus::Pass && devs[2].status == RunStatus::Pass);
    }
}
