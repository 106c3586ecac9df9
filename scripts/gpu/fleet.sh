#!/usr/bin/env bash
# Runs ON a machine with two or more NVIDIA GPUs (kind nvidia-h200-x2), builds nothing there.
# Prepare here:  scripts/gpu/prepare-loader.sh && cargo build --release -p greta
# Run with carry [".gl", "target/release/greta"] and the command:  bash scripts/gpu/fleet.sh
# Or, with no Vulkan loader to carry: BACKEND=cuda GRETA=<a greta binary> bash scripts/gpu/fleet.sh
# Measures (docs/fleet.md, docs/performance.md):
#   1. `--device 0` alone, `health` and `perf` (the single-GPU wall);
#   2. `--device all`, same profiles (wall should be about one GPU's);
#   3. `--device all --profile health --inject slow:1:1.5` (device 1 must be the peer outlier).
# Results in $OUT: fleet.log, one JSON per run.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-fleet-out}
mkdir -p "$out"
log="$out/fleet.log"
backend=${BACKEND:-vulkan}
if [[ $backend == vulkan ]] && ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [[ -z "${VK_DRIVER_FILES:-}" && -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
greta=${GRETA:-target/release/greta}
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
run() { # name, args...
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  "$greta" smoke --backend "$backend" --json --no-progress --no-save "$@" > "$out/$name.json" 2>> "$log"
  local rc=$?
  end=$(date +%s.%N)
  echo "$name: exit $rc, wall $(python3 -c "print(f'{$end-$start:.2f}')") s: greta smoke $*" | tee -a "$log"
}
run health-dev0 --device 0 --profile health
run health-all --device all --profile health --prom "$out/health-all.prom"
run health-slow1 --device all --profile health --include-test-gates --inject slow:1:1.5
run perf-dev0 --device 0 --profile perf
run perf-all --device all --profile perf
python3 - "$out" <<'PY' | tee -a "$log"
import json, sys, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    r = json.loads(p.read_text())
    print(f"{p.stem}: status {r['status']}, wall {r['wall_s']:.2f} s")
    for d in r["devices"]:
        bad = [f"{g['id']} ({(g.get('peer') or {}).get('ratio', 0):.2f}x)" for g in d["gates"] if g["status"] == "fail"]
        print(f"  device {d['index']} {d['device']['name']}: {d['status']}, open {d['open_s']:.2f} s; failed: {', '.join(bad) or '-'}")
PY
