#!/usr/bin/env bash
# Session 10's one call on the lent NVIDIA machine, through bench.sh: torch/cuBLAS references,
# `--backend cuda` default and perf (in-run ceilings, stress gate), then `--backend vulkan` perf
# beside the same references. Prepare here:
#   cargo build --release -p greta && mkdir -p .s10 && cp target/release/greta .s10/greta
#   scripts/gpu/prepare-loader.sh
# Run with carry [".s10", ".gl"]: bash scripts/gpu/session10.sh
# Results: $OUT/cuda/{bench.log,torch_ref.json,smoke-default.json,smoke-perf.json,ratio.txt},
#          $OUT/vulkan/{bench.log,smoke-perf.json,ratio.txt}
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench-out}
export GRETA=${GRETA:-.s10/greta}
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_CACHE_HOME=/tmp/greta-cache XDG_DATA_HOME=/tmp/greta-data
GRETA_SMOKE_ARGS="--backend cuda" OUT="$out/cuda" bash scripts/gpu/bench.sh default perf
SKIP_TORCH=1 GRETA_SMOKE_ARGS="--backend vulkan" OUT="$out/vulkan" bash scripts/gpu/bench.sh perf
if [[ -s "$out/cuda/torch_ref.json" && -s "$out/vulkan/smoke-perf.json" ]]; then
  python3 scripts/gpu/ratio.py "$out/cuda/torch_ref.json" "$out/vulkan/smoke-perf.json" | tee "$out/vulkan/ratio.txt"
fi
