#!/usr/bin/env bash
# The Vulkan Llama-2-7B prefill layer (block_prefill.S2048) once per tile
# set of its projections' kernel: for each TILES entry (bm,bn,bk,wg,uk of
# linear_f16_cm2), the device's tuning cache gets that tuning for the
# layer's four projection shapes (QKV, O, gate/up, down), and the layer runs
# as `greta smoke --profile perf` runs it, timing each step. A sixth number
# is group_m (the block order). What the
# planner's default should be for each shape is read from this table.
# First, `greta smoke --tune` of the two linear gates with the SM clock
# sampled every 100 ms (clocks.csv), which also writes the cache file the
# later runs edit (it names the device and driver).
# Prepare here: cargo build --release -p greta; xz -T2 -c target/release/greta
#   > .device/speed/greta.xz; scripts/gpu/prepare-loader.sh (.gl)
# Run with carry [".device/speed", ".gl"]: bash scripts/gpu/linear-tiles.sh
# TILES (words bm,bn,bk,wg,uk[,group_m]) replaces the tile sets; TUNE_GATES
# the tuned gates (one small gate, e.g. linear_f16.64x256x512, when only
# the file is wanted).
# Results in $OUT: linear-tiles.log, linear-tiles.txt and linear-tiles.tgz
# (clocks.csv, vulkan-tune.json, one block-BM-BN-BK-WG-UK.json per tile
# set: a call brings back at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/gpu/lib.sh
begin linear-tiles .device/speed
greta=${GRETA:-$dir/greta}
vulkan_env
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
tc=/tmp/greta-tiles-cache
rm -rf "$tc" && mkdir -p "$tc"
export GRETA_TUNING_CACHE=$tc

nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu --format=csv,noheader -lms 100 \
  > "$final/clocks.csv" 2>&1 &
smi=$!
tune=()
for g in ${TUNE_GATES:-linear_f16.2048x4096x11008 linear_f16.2048x12288x4096}; do tune+=(--gate "$g"); done
say "tune: ${tune[*]}"
timeout "${TUNE_LIMIT_S:-150}" "$greta" smoke --tune --json --no-progress --backend vulkan "${tune[@]}" \
  > "$final/vulkan-tune.json" 2> "$final/vulkan-tune.err"
say "tune: exit $?"
kill "$smi" 2>/dev/null
file=$(ls "$tc"/*.json 2>/dev/null | head -n 1)
if [[ -z $file ]]; then
  say "no tuning cache file was written; stopping"
  exit 1
fi

# shellcheck disable=SC2206 # the tile sets are words
tiles=(${TILES:-128,128,64,128,2 128,128,64,128,4 128,128,64,128,1 128,128,32,128,8 128,256,64,256,2
       128,256,32,256,8 256,128,64,256,2 128,128,64,256,2 128,128,128,128,1 64,128,64,128,2})
for t in "${tiles[@]}"; do
  python3 - "$file" "$t" <<'PY'
import json, sys
path, tiles = sys.argv[1], [int(v) for v in sys.argv[2].split(",")]
d = json.load(open(path))
tuning = dict(zip(["bm", "bn", "bk", "wg", "uk", "group_m"], tiles), coopmat=3)
if not tuning.get("group_m"):
    tuning.pop("group_m", None)
# The layer's projections: QKV, O, gate/up, down (their shape classes).
for rows, cols in [(16384, 4096), (4096, 4096), (32768, 4096), (4096, 16384)]:
    d["entries"][f"linear_f16:t2048,r{rows},c{cols}"] = {
        "tuning": tuning, "kernel": "linear_f16_cm2", "median_ns": 1,
        "measured_op": "set by scripts/gpu/linear-tiles.sh"}
json.dump(d, open(path, "w"), indent=1)
PY
  name=block-${t//,/-}
  say "$name: greta smoke --profile perf --gate block_prefill.S2048 --backend vulkan"
  timeout 60 "$greta" smoke --profile perf --repeat 3 --json --no-progress --out /tmp/greta-smoke \
    --backend vulkan --gate block_prefill.S2048 > "$final/$name.json" 2> "/tmp/$name.err"
  say "$name: exit $?"
  grep -i "tuning cache\|warn" "/tmp/$name.err" | head -n 3 >> "$log"
done

python3 - "$final" <<'PY' 2>&1 | tee "$final/linear-tiles.txt" | tee -a "$log"
import glob, json, os, sys
out = sys.argv[1]
print("tiles bm,bn,bk,wg,uk[,group_m] | QKV us | O us | gate/up us | down us | layer median us | layer min us | check")
for f in sorted(glob.glob(os.path.join(out, "block-*.json"))):
    t = os.path.basename(f)[6:-5].replace("-", ",")
    try:
        g = json.load(open(f))["devices"][0]["gates"][0]
    except Exception as e:
        print(f"{t} | unreadable ({e})")
        continue
    steps = [s for s in (g.get("block") or {}).get("steps", []) if s["kernel"].startswith("linear")]
    us = [f"{s['us']:.0f}" for s in steps]
    m = g.get("metrics") or {}
    print(f"{t} | {' | '.join(us)} | {m.get('time_median_us', 0):.0f} | {m.get('time_min_us', 0):.0f} | {g.get('status')}")
PY
tar -C "$final" -czf /tmp/linear-tiles.tgz --exclude linear-tiles.log . && mv /tmp/linear-tiles.tgz "$final/"
find "$final" -name '*.json' -o -name '*.csv' -o -name '*.err' | xargs rm -f
say done
