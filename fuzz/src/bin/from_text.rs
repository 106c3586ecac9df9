//! AFL++ harness of the `from_text` target (its body: fuzz-targets/src).
fn main() {
    afl::fuzz!(|data: &[u8]| greta_fuzz_targets::from_text(data));
}
