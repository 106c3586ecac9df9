#!/usr/bin/env bash
# The transformer block's f16 projection, norm and SwiGLU ops (gemv_f16, linear_f16,
# rmsnorm_f16, add_rmsnorm_f16, swiglu_f16) in one call on an NVIDIA GPU. Their perf gates (Llama-2-7B shapes) with
# the in-run ceilings (copy for the GB/s gates, cuBLAS f16 GEMM for linear_f16) beside copy.1g,
# and their small and odd default gates (correctness of every kernel path), first through
# `--backend cuda`, then `--backend vulkan`, then a Vulkan `--tune` of one GEMV and one linear.
# Prepare here:
#   cargo build --release -p greta && mkdir -p .device/f16-ops
#   cp target/release/greta .device/f16-ops/greta
#   scripts/gpu/prepare-loader.sh            (the Vulkan loader debs in .gl)
# Run from the repository root with carry [".device/f16-ops", ".gl"]: bash scripts/gpu/f16-ops.sh
# Results in $OUT: f16-ops.log (tables, errors), {cuda,vulkan}-{perf,default}.json, tune.txt.
set -uo pipefail
out=${OUT:-f16-ops-out}
mkdir -p "$out"
log="$out/f16-ops.log"
bin=${GRETA:-.device/f16-ops/greta}
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
perf_gates="copy.1g gemv_f16.12288x4096 gemv_f16.22016x4096 gemv_f16.4096x11008
  linear_f16.2048x12288x4096 linear_f16.2048x4096x11008 rmsnorm_f16.2048x4096
  add_rmsnorm_f16.2048x4096 swiglu_f16.2048x11008"
small_gates="gemv_f16.256x1024 linear_f16.64x256x512 rmsnorm_f16.64x1024 add_rmsnorm_f16.64x1024
  swiglu_f16.64x1024 gemv_f16.100x1001 linear_f16.67x45x33 rmsnorm_f16.7x1001
  add_rmsnorm_f16.7x1001 swiglu_f16.7x1001"
args() { for g in $1; do printf -- '--gate\n%s\n' "$g"; done; }
smoke() {  # smoke NAME LIMIT PROFILE GATES BACKEND
  say "$1: --profile $3 --backend $5"
  mapfile -t ga < <(args "$4")
  timeout "$2" "$bin" smoke --profile "$3" --backend "$5" --json --no-progress --out /tmp/greta-smoke \
    "${ga[@]}" > "$out/$1.json" 2> "/tmp/$1.err"
  say "$1: exit $?"
  tail -n 30 "/tmp/$1.err" >> "$log"
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv 2>&1 | tee -a "$log"
smoke cuda-default 25 default "$small_gates" cuda
smoke cuda-perf 75 perf "$perf_gates" cuda
if ! ldconfig -p | grep -q libvulkan.so.1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
[[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] &&
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export GRETA_TUNING_CACHE=/tmp/greta-tuning
smoke vulkan-default 20 default "$small_gates" vulkan
smoke vulkan-perf 65 perf "$perf_gates" vulkan
say "vulkan tune: gemv_f16.22016x4096, linear_f16.2048x4096x11008"
timeout 40 "$bin" smoke --tune --profile perf --backend vulkan --no-progress --out /tmp/greta-smoke \
  --gate gemv_f16.22016x4096 --gate linear_f16.2048x4096x11008 > "$out/tune.txt" 2>&1
say "tune: exit $?"
say "done"
