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
