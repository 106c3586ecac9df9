use super::*;

#[test]
fn the_median_of_nothing_is_zero() {
    assert_eq!(median(&[]), 0);
    assert_eq!(median(&[5, 1, 3]), 3);
}
