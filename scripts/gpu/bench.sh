#!/usr/bin/env bash
# Runs ON the lent NVIDIA GPU machine (builds nothing there): greta's smoke profiles and the
# PyTorch/cuBLAS references in one call, then prints the ratio table (docs/performance.md).
# Prepare here first:  scripts/gpu/prepare-loader.sh && cargo build --release -p greta
# Then run through the device tool with carry [".gl", "target/release/greta"] and the command
#   bash scripts/gpu/bench.sh [PROFILE...]      (default: default perf)
# Results land in $OUT (or ./bench-out when OUT is unset).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench-out}
mkdir -p "$out"
if ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [[ -z "${VK_DRIVER_FILES:-}" && -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
greta=${GRETA:-target/release/greta}
profiles=("$@")
[[ ${#profiles[@]} -eq 0 ]] && profiles=(default perf)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
"$greta" doctor --json > "$out/doctor.json" 2> "$out/doctor.err"; echo "doctor exit $?"
results=()
for p in "${profiles[@]}"; do
  start=$(date +%s.%N)
  "$greta" smoke --profile "$p" --json --no-progress --out "${SMOKE_OUT:-/tmp/greta-smoke}" ${GRETA_SMOKE_ARGS:-} \
    > "$out/smoke-$p.json" 2> "$out/smoke-$p.err"
  rc=$?
  end=$(date +%s.%N)
  echo "smoke $p: exit $rc, wall $(python3 -c "print(f'{$end-$start:.2f}')") s"
  tail -n 40 "$out/smoke-$p.err"
  [[ -s "$out/smoke-$p.json" ]] && results+=("$out/smoke-$p.json")
done
PYTHONUNBUFFERED=1 python3 scripts/gpu/torch_ref.py > "$out/torch_ref.json" || echo "torch_ref failed"
python3 scripts/gpu/ratio.py "$out/torch_ref.json" "${results[@]}" | tee "$out/ratio.txt"
