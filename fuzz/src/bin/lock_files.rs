//! AFL++ harness of the `lock_files` target (its body: fuzz-targets/src); no
//! single allocation over 1 GiB (`greta_fuzz::Bounded`).
#[global_allocator]
static A: greta_fuzz::Bounded = greta_fuzz::Bounded;

fn main() {
    let scratch = greta_fuzz_targets::Scratch::new().expect("scratch directory");
    afl::fuzz!(|data: &[u8]| greta_fuzz_targets::lock_files(&scratch, data));
}
