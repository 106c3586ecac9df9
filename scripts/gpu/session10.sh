#!/usr/bin/env bash
# Session 10 (issue 22 parts 2 and 5, issue 27): one call on the lent NVIDIA machine.
# Prepare here:
#   cargo build --release -p greta && mkdir -p .s10 && cp target/release/greta .s10/greta
#   scripts/gpu/prepare-loader.sh        (only for STEPS containing vulkan; fills .gl)
# and run with carry [".s10", ".gl"]:
#   STEPS="torch default perf vulkan" bash scripts/gpu/session10.sh
# Everything lands in $OUT: s10.log, torch_ref.json, cuda-default.json, cuda-perf.json,
# vulkan-perf.json, ratio.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-s10-out}
mkdir -p "$out"
log="$out/s10.log"
steps=" ${STEPS:-torch default perf vulkan} "
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
has() { [[ "$steps" == *" $1 "* ]]; }
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv 2>&1 | tee -a "$log"
run() {  # run NAME LIMIT ARGS...
  local name=$1 limit=$2; shift 2
  say "$name: greta smoke $*"
  local s e; s=$(date +%s.%N)
  timeout "$limit" .s10/greta smoke --json --no-progress --out /tmp/greta-smoke "$@" \
    > "$out/$name.json" 2> "$out/$name.err"
  local rc=$?; e=$(date +%s.%N)
  say "$name: exit $rc in $(python3 -c "print(f'{$e-$s:.1f}')") s"
  tail -n 40 "$out/$name.err" >> "$log"
}
if has torch; then
  say "torch_ref.py"
  PYTHONUNBUFFERED=1 timeout 150 python3 scripts/gpu/torch_ref.py > "$out/torch_ref.json" 2>> "$log" || say "torch_ref failed"
fi
has default && run cuda-default 120 --backend cuda
has perf && run cuda-perf 240 --profile perf --backend cuda
if has vulkan; then
  if ! ldconfig -p | grep -q libvulkan.so.1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && \
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  GRETA_TUNING_CACHE=/tmp/greta-tuning run vulkan-perf 200 --profile perf --backend vulkan
fi
if [[ -s "$out/torch_ref.json" ]]; then
  for f in cuda-perf vulkan-perf; do
    [[ -s "$out/$f.json" ]] && { echo "# $f"; python3 scripts/gpu/ratio.py "$out/torch_ref.json" "$out/$f.json"; }
  done > "$out/ratio.txt" 2>&1
  cat "$out/ratio.txt"
fi
say "done"
