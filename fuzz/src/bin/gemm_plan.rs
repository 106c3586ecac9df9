//! AFL++ harness of the `gemm_plan` target (its body: fuzz-targets/src); no
//! single allocation over 1 GiB (`greta_fuzz::Bounded`).
#[global_allocator]
static A: greta_fuzz::Bounded = greta_fuzz::Bounded;

fn main() {
    afl::fuzz!(|data: &[u8]| greta_fuzz_targets::gemm_plan(data));
}
