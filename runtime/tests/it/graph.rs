//! Graphs of ops replayed on lavapipe (validation on): every step's output
//! against its op's f64 reference applied to what the device fed it, the
//! replays' timings, and bad graphs refused before the device is touched.

use crate::common::*;
use greta_kernels::check::check_buf;
use greta_kernels::{reference, DType, HostBuf, Op};
use greta_runtime::{Backend, Graph, GraphJob, Replay, RunOpts, RuntimeError, TimingSource};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// vec_add -> rmsnorm -> softmax, each reading the previous step's output.
fn chain(rows: usize, cols: usize) -> Graph {
    let n = rows * cols;
    let mut g = Graph::default();
    let a = g.slot("a", DType::F32, n);
    let b = g.slot("b", DType::F32, n);
    let sum = g.slot("sum", DType::F32, n);
    let w = g.slot("w", DType::F32, cols);
    let normed = g.slot("normed", DType::F32, n);
    let probs = g.slot("probs", DType::F32, n);
    g.step(Op::VecAdd { n }, &[a, b, sum]);
    g.step(
        Op::RmsNorm {
            rows,
            cols,
            eps: 1e-5,
        },
        &[sum, w, normed],
    );
    g.step(Op::Softmax { rows, cols }, &[normed, probs]);
    g
}

/// Inputs random, every slot a step writes poisoned (an unwritten element fails).
fn buffers(g: &Graph, seed: u64) -> Vec<HostBuf> {
    let mut rng = StdRng::seed_from_u64(seed);
    let written: Vec<usize> = g
        .steps
        .iter()
        .flat_map(|s| s.bind[s.op.inputs().len()..].to_vec())
        .collect();
    g.slots
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if written.contains(&i) {
                HostBuf::poisoned(s.dtype, s.len)
            } else {
                random(&mut rng, s.dtype, s.len)
            }
        })
        .collect()
}

#[test]
fn each_step_matches_its_reference_and_replays_are_timed() {
    let mut dev = device();
    let g = chain(7, 333);
    let mut bufs = buffers(&g, seed());
    let all: Vec<usize> = (0..g.slots.len()).collect();
    let opts = RunOpts {
        repeats: 3,
        ..RunOpts::default()
    };
    let stats = dev
        .run_graph(GraphJob {
            graph: &g,
            buffers: &mut bufs,
            read_back: &all,
            opts: &opts,
            tunings: &[],
        })
        .unwrap_or_else(|e| panic!("graph: {e}"));
    for (i, st) in g.steps.iter().enumerate() {
        let n_in = st.op.inputs().len();
        let ins: Vec<HostBuf> = st.bind[..n_in].iter().map(|&s| bufs[s].clone()).collect();
        let outs: Vec<HostBuf> = st.bind[n_in..].iter().map(|&s| bufs[s].clone()).collect();
        let want = reference(&st.op, &ins, &outs).expect("reference");
        for (got, w) in outs.iter().zip(&want) {
            let c = check_buf(got, w, st.op.tolerance());
            assert!(c.pass, "step {i} ({}): {c:?}", st.op);
        }
    }
    assert_eq!(stats.replay, Replay::CommandBuffer);
    assert_eq!(stats.device_ns.len(), 3);
    assert_eq!(stats.kernels.len(), 3);
    if stats.timing == TimingSource::DeviceTimestamps {
        assert_eq!(stats.step_ns.len(), 3);
        // Steps are timed in passes of their own (a timestamp between
        // steps), the replays with timestamps at their ends only: each a
        // later timestamp than the one before it, so none is zero (a
        // query read out of order saturates to 0).
        assert!(
            stats.step_ns.iter().all(|&ns| ns > 0),
            "{:?}",
            stats.step_ns
        );
        assert!(
            stats.device_ns.iter().all(|&ns| ns > 0),
            "{:?}",
            stats.device_ns
        );
    }
    assert_clean(&dev);
}

#[test]
fn only_the_slots_asked_for_are_read_back() {
    let mut dev = device();
    let g = chain(2, 64);
    let mut bufs = buffers(&g, seed());
    let before = bufs.clone();
    dev.run_graph(GraphJob {
        graph: &g,
        buffers: &mut bufs,
        read_back: &[5],
        opts: &RunOpts::default(),
        tunings: &[],
    })
    .unwrap_or_else(|e| panic!("graph: {e}"));
    // Bytes, not values: the poisoned slots hold NaNs.
    for i in 0..5 {
        assert_eq!(
            bufs[i].as_bytes(),
            before[i].as_bytes(),
            "slot {i} was not read back"
        );
    }
    assert_ne!(
        bufs[5].as_bytes(),
        before[5].as_bytes(),
        "the read-back slot holds the result"
    );
    assert_clean(&dev);
}

#[test]
fn bad_graphs_are_refused_before_the_device_runs_anything() {
    let mut dev = device();
    let g = chain(2, 64);
    let run =
        |dev: &mut greta_runtime::VulkanDevice, g: &Graph, bufs: &mut [HostBuf], rb: &[usize]| {
            dev.run_graph(GraphJob {
                graph: g,
                buffers: bufs,
                read_back: rb,
                opts: &RunOpts::default(),
                tunings: &[],
            })
        };
    let mut bufs = buffers(&g, 1);
    // One buffer short.
    let e = run(&mut dev, &g, &mut bufs[..5], &[]).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::BadInput(m) if m.contains("6 slots, 5 buffers")),
        "{e}"
    );
    // A read-back slot that does not exist.
    let e = run(&mut dev, &g, &mut bufs, &[6]).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::BadInput(m) if m.contains("slot 6")),
        "{e}"
    );
    // A buffer of the wrong type for its slot.
    let mut wrong = bufs.clone();
    wrong[1] = HostBuf::U32(vec![0; 128]);
    let e = run(&mut dev, &g, &mut wrong, &[]).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::BadInput(m) if m.contains("slot b")),
        "{e}"
    );
    // A step that writes the slot it reads.
    let mut aliased = g.clone();
    aliased.steps[2].bind = vec![4, 4];
    let e = run(&mut dev, &aliased, &mut bufs, &[]).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::BadInput(m) if m.contains("bound twice")),
        "{e}"
    );
    assert_clean(&dev);
    // The device is still usable.
    run(&mut dev, &g, &mut bufs, &[5]).unwrap();
}
