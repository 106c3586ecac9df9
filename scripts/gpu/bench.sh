#!/usr/bin/env bash
# Runs ON an NVIDIA GPU machine through the device tool (builds nothing there): optionally `greta smoke --tune`,
# then greta's smoke profiles and the PyTorch/cuBLAS references in one call, then prints the
# ratio table (docs/performance.md).
# Prepare here first:  scripts/gpu/prepare-loader.sh && cargo build --release -p greta
# Then run through the device tool with carry [".gl", "target/release/greta"] and the command
#   [TUNE_GATES="fill.1g ..."] bash scripts/gpu/bench.sh [PROFILE...]   (default: default perf)
# TUNE_GATES: gate ids to tune first (`greta smoke --tune`); the smoke runs then use the cache.
# GRETA_SMOKE_ARGS: extra arguments for every smoke run (e.g. --gate ID).
# Results land in $OUT (or ./bench-out when OUT is unset), at most 8 files: bench.log (every
# step's output), tune.json, smoke-PROFILE.json, torch_ref.json, ratio.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench-out}
mkdir -p "$out"
log="$out/bench.log"
if ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [[ -z "${VK_DRIVER_FILES:-}" && -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export GRETA_TUNING_CACHE=${GRETA_TUNING_CACHE:-/tmp/greta-tuning}
greta=${GRETA:-target/release/greta}
profiles=("$@")
[[ ${#profiles[@]} -eq 0 ]] && profiles=(default perf)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv 2>&1 | tee -a "$log"
# References first: a run cut short by the time limit still has its ceilings.
if [[ "${SKIP_TORCH:-0}" != 1 ]]; then
  PYTHONUNBUFFERED=1 python3 scripts/gpu/torch_ref.py > "$out/torch_ref.json" 2>> "$log" || echo "torch_ref failed" | tee -a "$log"
fi
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }
if [[ -n "${TUNE_GATES:-}" ]]; then
  args=()
  for g in $TUNE_GATES; do args+=(--gate "$g"); done
  start=$(date +%s.%N)
  "$greta" smoke --tune --json "${args[@]}" > "$out/tune.json" 2> "$out/tune.txt"
  rc=$?
  end=$(date +%s.%N)
  cat "$out/tune.txt" >> "$log"; rm -f "$out/tune.txt"
  echo "tune: exit $rc, wall $(secs "$start" "$end") s" | tee -a "$log"
fi
results=()
for p in "${profiles[@]}"; do
  start=$(date +%s.%N)
  "$greta" smoke --profile "$p" --json --no-progress --out "${SMOKE_OUT:-/tmp/greta-smoke}" ${GRETA_SMOKE_ARGS:-} \
    > "$out/smoke-$p.json" 2> "$out/smoke-$p.err"
  rc=$?
  end=$(date +%s.%N)
  echo "smoke $p: exit $rc, wall $(secs "$start" "$end") s" | tee -a "$log"
  tail -n 40 "$out/smoke-$p.err" >> "$log"; rm -f "$out/smoke-$p.err"
  [[ -s "$out/smoke-$p.json" ]] && results+=("$out/smoke-$p.json")
done
[[ -s "$out/torch_ref.json" ]] && python3 scripts/gpu/ratio.py "$out/torch_ref.json" "${results[@]}" | tee "$out/ratio.txt"
grep -E "^(tuning|  \*|    best)|^[a-z_0-9]+\.[0-9a-z]+ \[" "$log" | head -80
