#!/usr/bin/env bash
# Session 12's call on the lent NVIDIA machine (issue 26): the refactors of
# the runtime (one tiled-GEMM planner for Vulkan, shared CUDA/HIP code) and
# the kernels must not change what runs on the device or how fast. Runs the
# baseline binary (main before the session) and the new binary side by side,
# interleaved, on the same warm GPU:
#   - the default profile on CUDA and Vulkan (every op checked against its
#     CPU reference);
#   - perf gates that exercise the touched planners and launch paths.
# Prepare here:
#   git stash/checkout the baseline, cargo build --release -p greta,
#   cp target/release/greta .s12/base-greta; then the same for .s12/greta;
#   xz .s12/*
#   scripts/gpu/prepare-loader.sh            (the Vulkan loader debs in .gl)
# Run with carry [".s12", ".gl"]: bash scripts/gpu/session12.sh [cuda|vulkan|all]
# (one backend a call keeps each call well inside the 600 s limit).
# Results in $OUT: s12.log and one JSON per (binary, backend, set).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-s12-out}
mkdir -p "$out"
log="$out/s12.log"
. scripts/gpu/lib.sh
unpack_binaries .s12
gpu_env
perf=(gemm_f16.8192 linear_f16.2048x12288x4096 gemv_f16.12288x4096 attn_prefill_f16.32x128.S2048
      block_decode.L512 block_prefill.S2048)
run() { smoke_run .s12 "$1" "$2" "$3" "$out" "${@:4}"; }  # run BIN NAME LIMIT_S ARGS...
which=${1:-all}
gates=()
for g in "${perf[@]}"; do gates+=(--gate "$g"); done
if [[ $which != vulkan ]]; then
for b in greta base-greta; do run "$b" cuda-default 60 --backend cuda; done
for b in base-greta greta; do run "$b" cuda-perf 110 --backend cuda --profile perf --repeat 3 "${gates[@]}"; done
fi
[[ $which == cuda ]] && { say done; exit 0; }
vulkan_env
for b in greta base-greta; do run "$b" vulkan-default 60 --backend vulkan; done
for b in base-greta greta; do run "$b" vulkan-perf 110 --backend vulkan --profile perf --repeat 3 "${gates[@]}"; done
# Session 11's measured binary (.s12/s11-greta, built before the session's
# last commits) on the Vulkan prefill: it measured 7.30 ms where main's
# binary at 7aa0dc7 measured 27.6 ms in this session's first call.
if [[ -x .s12/s11-greta ]]; then
  run s11-greta vulkan-prefill 90 --backend vulkan --profile perf --repeat 3 --gate block_prefill.S2048 --gate linear_f16.2048x12288x4096
  run base-greta vulkan-prefill 90 --backend vulkan --profile perf --repeat 3 --gate block_prefill.S2048 --gate linear_f16.2048x12288x4096
fi
say done
