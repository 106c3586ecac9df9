#!/usr/bin/env bash
# Node acceptance on the GPU, one call of at most 8 minutes:
#   1. --inject slow:0:1.3 (every device time x1.3) must FAIL health and the
#      perf profile's full-size gates, on CUDA and on Vulkan (first-seen
#      floors: no baseline, no class on CUDA; the achievable rates of
#      smoke/data/specs.toml);
#   2. the acceptance profile once on CUDA (its duration printed up front,
#      the whole-memory test's coverage in the device notes);
#   3. memtest bandwidth: memtest.1g on both backends;
#   4. clean health in a row: up to 20 on CUDA and 5 on Vulkan, each must
#      pass (no flakes), within the time left (the log says how many ran).
# Prepare here: cargo build --release -p greta; mkdir -p .device/acc;
#   xz -c target/release/greta > .device/acc/greta.xz;
#   bash scripts/gpu/prepare-loader.sh (once, for .gl)
# Run from the repository root with carry [".device/acc", ".gl"] (both git-ignored):
#   bash scripts/gpu/acceptance.sh .device/acc
# Results in $OUT: acceptance.log (verdicts, one line each, and the summary)
# and acceptance.tgz (every JSON and stderr).
set -uo pipefail
. scripts/gpu/lib.sh
begin acceptance "$1"
vulkan_env
limit=${ACCEPTANCE_LIMIT_S:-470}
left() { echo $((limit - (SECONDS - start))); }
verdicts=()

# run NAME WANT LIMIT ARGS...: greta smoke ARGS; WANT is the exit code the
# step must give (0 pass, 1 a gate failed).
run() {
  local name=$1 want=$2 lim=$3; shift 3
  local l
  l=$(left)
  ((l < 15)) && { verdicts+=("$name: NOT RUN (no time left)"); say "$name: not run, ${l}s left"; return 1; }
  ((lim > l)) && lim=$l
  smoke_run "$dir" greta "$name" "$lim" "$out" "$@"
  local rc
  rc=$(python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1])); print({"pass":0,"fail":1}.get(d.get("status"),2))
except Exception: print(2)' "$out/greta-$name.json")
  gate_lines "$out/greta-$name.json" > /dev/null
  if [[ $rc == "$want" ]]; then verdicts+=("$name: ok (status exit $rc, wanted $want)"); return 0; fi
  verdicts+=("$name: WRONG (status exit $rc, wanted $want)")
  return 1
}

# The gates that fail a slow GPU, with what they were held to.
why() {
  python3 - "$out/greta-$1.json" <<'PY' | tee -a "$log"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("  (no result: %s)" % e); sys.exit(0)
for dev in d.get("devices", []):
    for g in dev.get("gates", []):
        f = g.get("floor") or {}
        if g.get("status") != "pass" or f:
            m = g.get("metrics") or {}
            print("  %-28s %-5s rate %s floor %s (%s x %s; %s)" % (
                g["id"], g["status"], m.get("rate"), f.get("limit"), f.get("fraction"),
                f.get("reference"), (f.get("source") or "")[:90]))
    for n in dev.get("notes", []):
        if "memtest" in n:
            print("  note:", n)
PY
}

full=(--gate copy.1g --gate fill.1g --gate vec_add.256m --gate stress.gemm_f16.8192)
for b in cuda vulkan; do
  run "$b-health-slow" 1 60 --backend "$b" --profile health --inject slow:0:1.3; why "$b-health-slow"
  run "$b-perf-slow" 1 90 --backend "$b" --profile perf --repeat 3 "${full[@]}" --inject slow:0:1.3
  why "$b-perf-slow"
done
# The same perf gates clean: they must pass (the floors leave room).
run cuda-perf-clean 0 90 --backend cuda --profile perf --repeat 3 "${full[@]}"; why cuda-perf-clean

run cuda-acceptance 0 200 --backend cuda --profile acceptance; why cuda-acceptance
head -n 3 "$out/greta-cuda-acceptance.err" | tee -a "$log"

for b in cuda vulkan; do
  run "$b-memtest" 0 60 --backend "$b" --profile health --gate memtest.1g --gate memtest.16m
  gate_lines "$out/greta-$b-memtest.json"
done

# Clean health in a row: 20 on CUDA, 5 on Vulkan, in the time left
# (Vulkan's 5 first get their share).
n_cuda=0
n_vk=0
for i in $(seq 1 20); do
  (($(left) < 5 * 25 + 30)) && break
  run "cuda-health-$i" 0 45 --backend cuda --profile health || { why "cuda-health-$i"; break; }
  n_cuda=$i
done
for i in $(seq 1 5); do
  run "vulkan-health-$i" 0 45 --backend vulkan --profile health || { why "vulkan-health-$i"; break; }
  n_vk=$i
done

say "summary after $((SECONDS - start)) s:"
for v in "${verdicts[@]}"; do say "  $v"; done
say "clean health in a row: cuda $n_cuda/20, vulkan $n_vk/5"
tar -C "$out" -czf "$final/acceptance.tgz" .
