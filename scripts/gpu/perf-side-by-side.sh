#!/usr/bin/env bash
# A change to the runtime or the kernels (a refactor, a new planner) must not
# change what runs on the device or how fast. Runs the baseline binary (the
# commit before the change) and the new binary side by side, interleaved, on
# the same warm NVIDIA GPU:
#   - the default profile on CUDA and Vulkan (every op checked against its
#     CPU reference);
#   - perf gates that exercise the touched planners and launch paths.
# Prepare here:
#   git stash/checkout the baseline, cargo build --release -p greta,
#   cp target/release/greta .device/side-by-side/base-greta; then the same
#   for .device/side-by-side/greta; xz .device/side-by-side/*;
#   optionally an older measured binary as .device/side-by-side/older-greta.xz
#   scripts/gpu/prepare-loader.sh            (the Vulkan loader debs in .gl)
# Run with carry [".device/side-by-side", ".gl"]:
#   bash scripts/gpu/perf-side-by-side.sh [cuda|cuda-default|vulkan|all]
# (one backend a call keeps each call well inside the 600 s limit;
# cuda-default runs the default profile only: every small gate's time, in
# under a minute).
# Results in $OUT: side-by-side.log and one JSON per (binary, backend, set).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-side-by-side-out}
mkdir -p "$out"
log="$out/side-by-side.log"
. scripts/gpu/lib.sh
unpack_binaries .device/side-by-side
gpu_env
perf=(gemm_f16.8192 linear_f16.2048x12288x4096 gemv_f16.12288x4096 attn_prefill_f16.32x128.S2048
      block_decode.L512 block_prefill.S2048)
run() { smoke_run .device/side-by-side "$1" "$2" "$3" "$out" "${@:4}"; }  # run BIN NAME LIMIT_S ARGS...
which=${1:-all}
gates=()
for g in "${perf[@]}"; do gates+=(--gate "$g"); done
if [[ $which != vulkan ]]; then
for b in greta base-greta; do run "$b" cuda-default 60 --backend cuda; done
[[ $which == cuda-default ]] && { say done; exit 0; }
for b in base-greta greta; do run "$b" cuda-perf 110 --backend cuda --profile perf --repeat 3 "${gates[@]}"; done
fi
[[ $which == cuda ]] && { say done; exit 0; }
vulkan_env
for b in greta base-greta; do run "$b" vulkan-default 60 --backend vulkan; done
for b in base-greta greta; do run "$b" vulkan-perf 110 --backend vulkan --profile perf --repeat 3 "${gates[@]}"; done
# An older measured binary, where given, on the Vulkan prefill beside the
# baseline: the one of 4fa97b0 measured 7.30 ms where main at 7aa0dc7
# measured 27.6 ms (NVIDIA H200, 2026-11-26, this script's first call).
if [[ -x .device/side-by-side/older-greta ]]; then
  run older-greta vulkan-prefill 90 --backend vulkan --profile perf --repeat 3 --gate block_prefill.S2048 --gate linear_f16.2048x12288x4096
  run base-greta vulkan-prefill 90 --backend vulkan --profile perf --repeat 3 --gate block_prefill.S2048 --gate linear_f16.2048x12288x4096
fi
say done
