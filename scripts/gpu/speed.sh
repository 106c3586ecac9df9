#!/usr/bin/env bash
# How long `health` and `perf` take on the GPU, one call of at most 560 s:
#   1. --inject slow:0:1.3 --profile health on CUDA and on Vulkan: must
#      exit 1 (a GPU at 1/1.3 of its speed fails), each run's wall printed;
#   2. --profile perf clean on CUDA: its wall (target <= 150 s) and every
#      gate's wall, device time and host share;
#   3. --profile health clean on CUDA, up to 20 times in a row, stopping
#      at the first run that does not pass: each run's wall (target <= 10 s),
#      the first run's per-gate walls, and how many passed;
#   3b. (vhealth, not in the default steps) --profile health clean on
#      Vulkan, SPEED_VHEALTH_RUNS times (default 3), each run's wall;
#   4. --profile perf clean on Vulkan, as step 2 (in the time left).
# SPEED_STEPS picks steps by name (default "slow perf health vperf") and
# SPEED_HEALTH_RUNS caps step 3's runs (default 20), for a call that shares
# its time with other scripts.
# Each step has its own timeout, and a step the time left cannot fit is
# skipped and said so; the first runs of each backend fill the kernel and
# pipeline caches (the CUDA kernels' NVRTC build, Vulkan's pipelines), so
# later runs are what a node sees on its second run.
# Prepare here: cargo build --release -p greta; mkdir -p .device/speed;
#   xz -c target/release/greta > .device/speed/greta.xz;
#   bash scripts/gpu/prepare-loader.sh (once, for .gl)
# Run from the repository root with carry [".device/speed", ".gl"]:
#   bash scripts/gpu/speed.sh .device/speed
# Results in $OUT: speed.log (every wall, the per-gate tables, the summary)
# and speed.tgz (every result JSON and stderr).
set -uo pipefail
. scripts/gpu/lib.sh
begin speed "$1"
vulkan_env
limit=${SPEED_LIMIT_S:-550}
left() { echo $((limit - (SECONDS - start))); }
verdicts=()
steps=" ${SPEED_STEPS:-slow perf health vperf} "
runs=${SPEED_HEALTH_RUNS:-20}
wanted() { [[ $steps == *" $1 "* ]]; }
# Step 3 keeps time for step 4 only where step 4 is to run.
reserve=0; wanted vperf && reserve=200

# step NAME WANT LIMIT ARGS...: greta smoke ARGS within LIMIT seconds (less
# when less is left; not run when under 15 s is left); WANT is the exit
# code it must give (0 every gate passed, 1 a gate failed). Prints the
# run's wall. Returns 0 when the exit code is WANT.
step() {
  local name=$1 want=$2 lim=$3; shift 3
  local l t0 t1 rc
  l=$(left)
  ((l < 15)) && { verdicts+=("$name: NOT RUN (${l}s left)"); say "$name: not run, ${l}s left"; return 2; }
  ((lim > l)) && lim=$l
  t0=$(date +%s.%N)
  smoke_run "$dir" greta "$name" "$lim" "$out" "$@"
  rc=$(python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1])); print({"pass":0,"fail":1}.get(d.get("status"),2))
except Exception: print(2)' "$out/greta-$name.json")
  t1=$(date +%s.%N)
  wall=$(python3 -c "print('%.2f' % ($t1 - $t0))")
  say "$name: wall ${wall} s (exit $rc, wanted $want)"
  if [[ $rc == "$want" ]]; then
    verdicts+=("$name: ok, ${wall} s (exit $rc)")
    return 0
  fi
  verdicts+=("$name: WRONG, ${wall} s (exit $rc, wanted $want)")
  return 1
}

# Per gate of a result, largest wall first: status, wall (inputs,
# references, comparisons, transfers, warm-up and the timed work), the
# median device time of one dispatch and the rate.
gates() {
  python3 - "$out/greta-$1.json" <<'PY' | tee -a "$log"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("  (no result: %s)" % e); sys.exit(0)
print("  profile wall_s %.2f (device open %s s)" % (
    d.get("wall_s", 0), [dv.get("open_s") for dv in d.get("devices", [])]))
for dv in d.get("devices", []):
    rows = []
    for g in dv.get("gates", []):
        m = g.get("metrics") or {}
        rows.append((g.get("wall_s") or 0, g.get("id"), g.get("status"),
                     m.get("time_median_us"), m.get("time_min_us"), m.get("rate"),
                     m.get("unit"), (g.get("reason") or "")[:100]))
    rows.sort(key=lambda r: -r[0])
    print("  %-36s %-5s %8s %12s %12s %12s" % ("gate", "st", "wall s", "median us", "min us", "rate"))
    for w, gid, st, med, mn, rate, unit, why in rows:
        f = lambda v: "-" if v is None else "%.4g" % v
        print("  %-36s %-5s %8.2f %12s %12s %12s %s %s" % (
            gid, st, w, f(med), f(mn), f(rate), unit or "", why))
    print("  sum of gate walls %.2f s over %d gates" % (sum(r[0] for r in rows), len(rows)))
PY
}

# 1. A slow GPU must fail health on both backends (these runs also build
#    the kernel and pipeline caches the later runs use).
wanted slow && for b in cuda vulkan; do
  step "$b-health-slow" 1 60 --backend "$b" --profile health --inject slow:0:1.3
  gates "$b-health-slow" > /dev/null
done

# 2. perf on CUDA.
wanted perf && { step cuda-perf 0 240 --backend cuda --profile perf; gates cuda-perf; }

# 3. Clean health on CUDA in a row, keeping time for Vulkan's perf.
n=0
walls=()
wanted health && for i in $(seq 1 "$runs"); do
  (($(left) < reserve + 15)) && { say "health loop: stopping after $n runs, $(left)s left for the rest"; break; }
  t0=$(date +%s.%N)
  step "cuda-health-$i" 0 45 --backend cuda --profile health
  r=$?
  walls+=("$(python3 -c "print('%.2f' % ($(date +%s.%N) - $t0))")")
  ((i == 1)) && gates cuda-health-1
  if ((r != 0)); then gates "cuda-health-$i"; break; fi
  n=$i
done
say "clean health on CUDA in a row: $n of $runs; walls: ${walls[*]}"

# 3b. Clean health on Vulkan (SPEED_VHEALTH_RUNS runs, default 3): its
#     walls beside CUDA's (the first run also fills the pipeline cache
#     where step 1 did not).
vwalls=()
wanted vhealth && for i in $(seq 1 "${SPEED_VHEALTH_RUNS:-3}"); do
  t0=$(date +%s.%N)
  step "vulkan-health-$i" 0 45 --backend vulkan --profile health || { gates "vulkan-health-$i"; break; }
  vwalls+=("$(python3 -c "print('%.2f' % ($(date +%s.%N) - $t0))")")
  ((i == 1)) && gates vulkan-health-1
done
wanted vhealth && say "clean health on Vulkan: walls ${vwalls[*]}"

# 4. perf on Vulkan.
wanted vperf && { step vulkan-perf 0 240 --backend vulkan --profile perf; gates vulkan-perf; }

say "summary after $((SECONDS - start)) s:"
for v in "${verdicts[@]}"; do say "  $v"; done
say "clean health on CUDA in a row: $n of $runs (walls ${walls[*]})"
tar -C "$out" -czf "$final/speed.tgz" .
