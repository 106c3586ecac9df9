#!/usr/bin/env bash
# The Vulkan prefill path on an NVIDIA GPU, in one call:
#   1. `greta smoke --backend vulkan` (default profile): every op at its
#      small and odd shapes against its CPU reference, with the planner's
#      defaults;
#   2. `--tune --no-save` of the two Llama-2-7B attention gates (every
#      attention kernel the device runs, each checked);
#   3. the perf gates of the prefill path (attention, the projections,
#      the S512 and S2048 layers), --repeat 3;
#   4. the same layer in PyTorch (scripts/gpu/block_ref.py: eager and CUDA
#      graph), for the ratio in the same call.
# Prepare here: cargo build --release -p greta; xz -T2 -c target/release/greta
#   > .device/speed/greta.xz; scripts/gpu/prepare-loader.sh (.gl)
# Run with carry [".device/speed", ".gl"]: bash scripts/gpu/vulkan-prefill.sh
# PREFILL_STEPS picks steps by name (default "default tune perf torch").
# Results in $OUT: vulkan-prefill.log (each run's table) and
# vulkan-prefill.tgz (the JSON and stderr of each run).
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/gpu/lib.sh
begin vulkan-prefill .device/speed
greta=${GRETA:-$dir/greta}
vulkan_env
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
export GRETA_TUNING_CACHE=off
steps=" ${PREFILL_STEPS:-default tune perf torch} "
wanted() { [[ $steps == *" $1 "* ]]; }
run() {  # run NAME LIMIT_S ARGS...
  local name=$1 limit=$2; shift 2
  say "$name: greta smoke $*"
  timeout "$limit" "$greta" smoke --json --no-progress --out /tmp/greta-smoke --backend vulkan "$@" \
    > "$out/$name.json" 2> "$out/$name.err"
  say "$name: exit $?"
  grep -v '^note:' "$out/$name.err" | tail -n 45 >> "$log"
}
if wanted default; then
  run default 200 --profile default
fi
if wanted tune; then
  say "tune: scripts/gpu/tune-gates.sh (Vulkan) of the two attention gates"
  GRETA=$greta TUNE_BACKENDS=vulkan TUNE_LIMIT_S=150 OUT="$out/tune" \
    bash scripts/gpu/tune-gates.sh attn_prefill_f16.32x128.S512 attn_prefill_f16.32x128.S2048 > /dev/null
  cat "$out/tune/tune-gates.txt" >> "$log" 2>/dev/null || say "tune: no table"
fi
if wanted perf; then
  run perf 200 --profile perf --repeat 3 --gate attn_prefill_f16.32x128.S512 \
    --gate attn_prefill_f16.32x128.S2048 --gate linear_f16.2048x12288x4096 \
    --gate linear_f16.2048x4096x11008 --gate linear_f16.2048x22016x4096 \
    --gate swiglu_f16.2048x11008 \
    --gate block_prefill.S512 --gate block_prefill.S2048
fi
if wanted torch; then
  say "torch layer"
  PYTHONUNBUFFERED=1 timeout 150 python3 scripts/gpu/block_ref.py > "$out/block_ref.json" 2>> "$log" \
    || say "block_ref: exit $?"
  python3 - "$out/block_ref.json" <<'PY' | tee -a "$log"
import json, sys
try:
    r = json.load(open(sys.argv[1]))["refs"]
except Exception as e:
    print(f"torch: unreadable ({e})")
    sys.exit(0)
for k, v in r.items():
    if "prefill" in k:
        print(f"torch {k}: eager {v['eager_s'] * 1e6:.0f} us, graph {v['graph_s'] * 1e6:.0f} us")
PY
fi
tar -C "$out" -czf "$final/vulkan-prefill.tgz" .
say done
