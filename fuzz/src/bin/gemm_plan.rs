//! AFL++ harness of the `gemm_plan` target (its body: fuzz-targets/src).
fn main() {
    afl::fuzz!(|data: &[u8]| greta_fuzz_targets::gemm_plan(data));
}
