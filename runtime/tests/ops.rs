//! Every op against its f64 CPU reference on lavapipe, validation on,
//! fresh random inputs, sizes that are not multiples of any tile.

mod common;
use common::*;
use greta_kernels::Op;

#[test]
fn fill_and_copy() {
    let mut dev = device();
    let s = seed();
    for n in [1, 3, 4, 5, 1000, 4099, 70_001] {
        assert_op(
            &mut dev,
            &Op::Fill {
                n,
                value: 0x5a5a_0000 ^ n as u32,
            },
            s,
        );
        assert_op(&mut dev, &Op::Copy { n }, s);
    }
}
