use super::*;

fn two_steps() -> Graph {
    let mut g = Graph::default();
    let x = g.slot("x", DType::F32, 10);
    let y = g.slot("y", DType::F32, 10);
    let z = g.slot("z", DType::F32, 10);
    g.step(Op::VecAdd { n: 10 }, &[x, y, z]);
    g.step(Op::Softmax { rows: 2, cols: 5 }, &[z, x]);
    g
}

#[test]
fn a_well_formed_graph_validates_and_counts_its_bytes() {
    let g = two_steps();
    assert_eq!(g.validate(), Ok(()));
    assert_eq!(g.bytes(), 3 * 10 * 4);
}

#[test]
fn each_binding_mistake_names_the_step_and_the_buffer() {
    let mut g = two_steps();
    g.steps[0].bind.pop();
    let e = g.validate().unwrap_err();
    assert!(
        e.starts_with("step 0 (vec_add") && e.contains("binds 2 slots, the op has 3"),
        "{e}"
    );

    let mut g = two_steps();
    g.steps[1].bind[1] = 9;
    let e = g.validate().unwrap_err();
    assert!(
        e.starts_with("step 1 (softmax") && e.contains("slot 9, which does not exist"),
        "{e}"
    );

    let mut g = two_steps();
    g.slots[2].len = 11;
    let e = g.validate().unwrap_err();
    assert!(e.contains("slot z is 11 x f32"), "{e}");

    assert_eq!(
        Graph::default().validate(),
        Err("a graph needs at least one step".to_string())
    );
}

#[test]
fn sizes_of_huge_slots_saturate_instead_of_wrapping() {
    let mut g = Graph::default();
    g.slot("a", DType::F32, usize::MAX);
    g.slot("b", DType::F32, usize::MAX);
    assert_eq!(g.bytes(), u64::MAX);
}

#[test]
fn the_reference_runs_each_step_on_what_the_previous_one_stored() {
    let mut g = Graph::default();
    let x = g.slot("x", DType::F32, 2);
    let y = g.slot("y", DType::F32, 2);
    let z = g.slot("z", DType::F32, 2);
    let p = g.slot("p", DType::F16, 2);
    g.step(Op::VecAdd { n: 2 }, &[x, y, z]);
    g.step(Op::Softmax { rows: 1, cols: 2 }, &[z, x]);
    let mut bufs = vec![
        HostBuf::F32(vec![1.0, 2.0]),
        HostBuf::F32(vec![3.0, 4.0]),
        HostBuf::poisoned(DType::F32, 2),
        HostBuf::poisoned(DType::F16, 2),
    ];
    g.reference(&mut bufs).unwrap();
    assert_eq!(bufs[2], HostBuf::F32(vec![4.0, 6.0]));
    let e2 = 2f64.exp();
    assert_eq!(
        bufs[0],
        HostBuf::F32(vec![(1.0 / (1.0 + e2)) as f32, (e2 / (1.0 + e2)) as f32])
    );
    // Untouched: no step writes it.
    assert_eq!(
        bufs[p].as_bytes(),
        HostBuf::poisoned(DType::F16, 2).as_bytes()
    );
    let e = g.reference(&mut bufs[..3]).unwrap_err();
    assert!(e.contains("4 slots, 3 buffers"), "{e}");
}

#[test]
fn a_composite_places_inputs_in_their_ranges_and_reads_outputs_from_theirs() {
    let mut g = Graph::default();
    let cache = g.slot("cache", DType::F32, 5);
    let x = g.slot("x", DType::F32, 2);
    let y = g.slot("y", DType::F32, 2);
    let b = g.slot("b", DType::F32, 2);
    g.step(Op::VecAdd { n: 2 }, &[x, b, y]);
    // Inputs: the first 3 cache rows and x; outputs: the cache's last 2 and y.
    let c = Composite {
        graph: g,
        bind: vec![(cache, 0), (x, 0), (cache, 3), (y, 0)],
        tokens: 1,
    };
    let ins = [
        HostBuf::F32(vec![1.0, 2.0, 3.0]),
        HostBuf::F32(vec![7.0, 8.0]),
    ];
    let mut slots = c.slot_buffers(&ins).unwrap();
    let s = slots[cache].as_f32().unwrap();
    assert_eq!(&s[..3], &[1.0, 2.0, 3.0]);
    assert!(
        s[3].is_nan() && s[4].is_nan(),
        "the rows no input fills are poisoned"
    );
    slots[cache] = HostBuf::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    slots[y] = HostBuf::F32(vec![9.0, 9.5]);
    let mut outs = [
        HostBuf::poisoned(DType::F32, 2),
        HostBuf::poisoned(DType::F32, 2),
    ];
    c.take_outputs(2, &slots, &mut outs).unwrap();
    assert_eq!(outs[0], HostBuf::F32(vec![4.0, 5.0]));
    assert_eq!(outs[1], HostBuf::F32(vec![9.0, 9.5]));
    assert_eq!(c.output_slots(2), vec![cache, y]);
    // A buffer that overruns its slot is an error, not a panic.
    let long = [HostBuf::F32(vec![0.0; 6]), HostBuf::F32(vec![7.0, 8.0])];
    assert!(c
        .slot_buffers(&long)
        .unwrap_err()
        .contains("does not fit slot 0"));
    let mut wrong = [
        HostBuf::poisoned(DType::F16, 2),
        HostBuf::poisoned(DType::F32, 2),
    ];
    assert!(c.take_outputs(2, &slots, &mut wrong).is_err());
}
