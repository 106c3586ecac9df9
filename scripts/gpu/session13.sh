#!/usr/bin/env bash
# Session 13's check of the merged tree on the GPU (one binary):
#   - the Vulkan --tune of both Llama-2-7B prefill attention gates: the
#     sweep times both attention kernels again, and the scalar one, timed
#     after the matrix one, must no longer overrun the submission limit
#     (its warm-up is now sized from its own plan's time, run.rs time_key);
#   - the default profile on Vulkan and on CUDA (every op against its CPU
#     reference);
#   - the Vulkan perf gates of prefill attention and the prefill block,
#     the second timing of the matrix kernel that vk-attn's call lacked.
# Prepare here: cargo build --release -p greta; xz -c target/release/greta > .s13/greta.xz;
# run from the repository root with carry [".s13", ".gl"]: bash scripts/gpu/session13.sh .s13
# Results in $OUT: s13.log and s13.tgz (every JSON and stderr).
set -uo pipefail
. scripts/gpu/lib.sh
begin s13 "$1"
vulkan_env

run() {
  local name=$1 limit=$2; shift 2
  smoke_run "$dir" greta "$name" "$limit" "$out" "$@"
  gate_lines "$out/greta-$name.json"
}

attn=(--gate attn_prefill_f16.32x128.S512 --gate attn_prefill_f16.32x128.S2048)
say "tune: greta smoke --backend vulkan --tune ${attn[*]}"
XDG_CACHE_HOME=/tmp/c-tune XDG_DATA_HOME=/tmp/d-tune GRETA_KERNEL_CACHE=/tmp/k-tune \
  timeout 150 "$dir/greta" smoke --backend vulkan --tune --no-progress "${attn[@]}" \
  > "$out/tune.out" 2> "$out/tune.err"
say "tune: exit $?"
cat "$out/tune.out" >> "$log"; tail -n 30 "$out/tune.err" >> "$log"

run vk-default 90 --backend vulkan
run cuda-default 90 --backend cuda
run vk-perf 120 --backend vulkan --profile perf --repeat 3 "${attn[@]}" \
  --gate block_prefill.S512 --gate block_prefill.S2048
say "done after $((SECONDS - start)) s"
tar -C "$out" -czf "$final/s13.tgz" .
