//! AFL++ harness of the `report` target (its body: fuzz-targets/src).
fn main() {
    afl::fuzz!(|data: &[u8]| greta_fuzz_targets::report(data));
}
