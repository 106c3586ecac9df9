#!/usr/bin/env bash
# Runs ON an NVIDIA GPU machine through the device tool (builds nothing there): measures the
# ceiling of gemm_f16_cmreg's multiply loop with the `probe=1` diagnostic
# (no loads after the first k slice: the output is wrong and the gate fails
# by design; only its time matters), next to the same tiles with loads.
# Prepare and carry as for scripts/gpu/bench.sh; then run
#   bash scripts/gpu/gemm_probe.sh
# Prints one line per (tiles, probe, size) with the median device time and TFLOP/s.
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
export GRETA_TUNING_CACHE=$(mktemp -d /tmp/greta-probe.XXXXXX)
# A tuning run of a cheap gate creates the device's cache file (name = UUID + driver).
"$greta" smoke --tune --gate noop.dispatch --json > /dev/null 2>&1
cache=$(ls "$GRETA_TUNING_CACHE"/vulkan-*.json 2>/dev/null | head -1)
[[ -n "$cache" ]] || { echo "gemm_probe: no tuning cache was written" >&2; exit 2; }
for tiles in "bk=64,stages=1,direct=1" "bk=32,stages=2,direct=0"; do
  for probe in 0 1; do
    python3 - "$cache" "$tiles" "$probe" <<'EOF'
import json, sys
path, tiles, probe = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = json.load(open(path))
t = {"coopmat": 3, "bm": 128, "bn": 128, "wg": 128, "sgn": 2}
t.update({k: int(v) for k, v in (kv.split("=") for kv in tiles.split(","))})
if probe:
    t["probe"] = 1
for n in (4096, 8192):
    c["entries"][f"gemm_f16:m{n},n{n},k{n}"] = {
        "tuning": t, "kernel": "gemm_f16_cmreg", "median_ns": 1,
        "measured_op": f"gemm_f16(m={n},n={n},k={n})"}
json.dump(c, open(path, "w"))
EOF
    "$greta" smoke --gate gemm_f16.4096 --gate gemm_f16.8192 --repeat 3 --json --no-progress \
      --out /tmp/greta-probe-out > "$out/probe-$probe-${tiles//[=,]/_}.json" 2>/dev/null
    python3 - "$out/probe-$probe-${tiles//[=,]/_}.json" "$tiles" "$probe" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for g in r["devices"][0]["gates"]:
    m = g.get("metrics") or {}
    t = m.get("time_median_us")
    n = int(g["id"].split(".")[1])
    tf = 2 * n**3 / (t * 1e-6) / 1e12 if t else float("nan")
    print(f"{sys.argv[2]:28s} probe={sys.argv[3]} {g['id']:14s} {g['status']:5s} "
          f"{t if t else float('nan'):10.1f} us {tf:7.1f} TFLOP/s  kernel={g.get('kernel')} {g.get('tuning')}")
EOF
  done
done
