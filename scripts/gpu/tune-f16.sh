#!/usr/bin/env bash
# `greta smoke --tune` of the HIP/CUDA GEMM kernels (gemm_f16's tensor-core variants) in one
# call on an NVIDIA GPU, and ncu on the winning kernel. Prepare here:
#   cargo build --release -p greta && mkdir -p .device/tune-f16 && cp target/release/greta .device/tune-f16/greta
# Run with carry [".device/tune-f16"]: bash scripts/gpu/tune-f16.sh   (timeout 300 s; every step has its own limit)
# Steps: 1. the GEMM perf gates with the built-in kernels (empty tuning cache);
#        2. `greta smoke --tune` of the gemm_f16 gates, a gemm_f32 gate and copy.1g;
#        3. the same gates without --tune: the cached winners run (`kernel` in the JSON);
#        4. ncu on greta's gemm_f16 launch at 8192 (one launch: SpeedOfLight, Occupancy,
#           WarpStateStats, LaunchStats, tensor-pipe and stall metrics).
# Results in $OUT: run.log, before.json, tune.json, tune.txt, after.json, tuning-cache.json, ncu.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench-out}
mkdir -p "$out"
greta=${GRETA:-.device/tune-f16/greta}
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_CACHE_HOME=/tmp/greta-cache XDG_DATA_HOME=/tmp/greta-data
export GRETA_TUNING_CACHE=/tmp/greta-tuning
# cuBLAS for the in-run ceilings from torch's wheels (the machine's torch env).
[[ -d /opt/torch/.venv ]] && export VIRTUAL_ENV=/opt/torch/.venv
command -v ncu > /dev/null || export PATH="$PATH:/usr/local/cuda/bin"
log="$out/run.log"
t0=$(date +%s)
say() { echo "== $(date -u +%T) (+$(( $(date +%s) - t0 )) s) $*" | tee -a "$log"; }
left() { local l=$(( 288 - ($(date +%s) - t0) )); (( l < 5 )) && l=5; echo "$l"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee -a "$log"
f16=(--gate gemm_f16.4096 --gate gemm_f16.8192)
say "1. perf gates, built-in kernels"
timeout 85 "$greta" smoke --backend cuda --profile perf "${f16[@]}" --gate gemm_f32.4096 --gate gemm_f32.8192 \
  --repeat 3 --no-save --no-progress --json > "$out/before.json" 2>> "$log"
say "exit $?"
say "2. --tune"
timeout 95 "$greta" smoke --tune --backend cuda --profile perf "${f16[@]}" --gate gemm_f32.4096 --gate copy.1g \
  --json > "$out/tune.json" 2> "$out/tune.txt"
say "exit $?"
cat "$out/tune.txt" >> "$log"
cat "$GRETA_TUNING_CACHE"/*.json > "$out/tuning-cache.json" 2>> "$log"
say "3. the same gates without --tune (the cached winners)"
timeout 65 "$greta" smoke --backend cuda --profile perf "${f16[@]}" --gate copy.1g \
  --repeat 3 --no-save --no-progress --json > "$out/after.json" 2>> "$log"
say "exit $?"
say "4. ncu, gemm_f16.8192 (the kernel the cache picks)"
sections=(--section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats)
metrics=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio
run_ncu() {
  timeout "$(left)" ncu --clock-control none -k regex:^greta_gemm_f16 -c 1 "${sections[@]}" "$@" \
    "$greta" smoke --backend cuda --gate gemm_f16.8192 --repeat 1 --timeout 60 --no-save --no-progress
}
run_ncu --metrics "$metrics" > "$out/ncu.txt" 2>&1
rc=$?
say "exit $rc"
if (( rc != 0 && $(left) > 40 )); then
  say "4b. ncu again, sections only"
  run_ncu > "$out/ncu-sections.txt" 2>&1
  say "exit $?"
fi
