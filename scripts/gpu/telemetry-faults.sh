#!/usr/bin/env bash
# The telemetry faults laid over a real GPU's readings (NVML on CUDA, and
# on Vulkan for an NVIDIA device; amdgpu sysfs on an AMD one), one call of
# a few minutes: each must FAIL with its verdict, the same gates clean must
# pass, on CUDA and on Vulkan.
#   throttle:0 (thermal)  the stress gate and memtest.1g fail: "thermal throttling on nvml:0"
#   throttle:0:power      passes (a power cap is reported, not failed)
#   link:0:3x8            pcie_link fails against the card's own maximum
#   ecc:0                 error_counters fails: "umc error counter rose on nvml:0"
#   vanish:0:memtest.1g   the gate loses the device; gpu_count_stable fails
# Prepare here: cargo build --release -p greta; mkdir -p .device/acc;
#   xz -c target/release/greta > .device/acc/greta.xz;
#   bash scripts/gpu/prepare-loader.sh (once, for .gl)
# Run from the repository root with carry [".device/acc", ".gl"]:
#   bash scripts/gpu/telemetry-faults.sh .device/acc
# Results in $OUT: telemetry-faults.log and telemetry-faults.tgz (every JSON).
set -uo pipefail
. scripts/gpu/lib.sh
begin telemetry-faults "$1"
vulkan_env
verdicts=()

# run NAME WANT ARGS...: greta smoke ARGS; WANT the exit code it must give.
run() {
  local name=$1 want=$2; shift 2
  smoke_run "$dir" greta "$name" 90 "$out" "$@"
  local rc
  rc=$(python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1])); print({"pass":0,"fail":1}.get(d.get("status"),2))
except Exception: print(2)' "$out/greta-$name.json")
  python3 - "$out/greta-$name.json" <<'PY' | tee -a "$log"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("  (no result: %s)" % e); sys.exit(0)
for c in d.get("checks", []):
    print("  run check %s %s: %s" % (c["check"], c["pass"], c["detail"]))
for dev in d.get("devices", []):
    for c in dev.get("checks", []):
        print("  check %s %s: %s" % (c["check"], c["pass"], c["detail"]))
    for g in dev.get("gates", []):
        t = ["%s thermal %.2f power %.2f" % (s["device"], s["thermal"], s["power_capped"])
             for s in g.get("in_run", {}).get("telemetry", [])]
        print("  %-28s %-5s %s %s" % (g["id"], g["status"], (g.get("reason") or "")[:120], t))
PY
  if [[ $rc == "$want" ]]; then verdicts+=("$name: ok (exit $rc)"); else verdicts+=("$name: WRONG (exit $rc, wanted $want)"); fi
}

gates=(--profile health --gate stress.gemm_f16.512 --gate memtest.1g --repeat 1)
for b in cuda vulkan; do
  run "$b-clean" 0 --backend "$b" "${gates[@]}"
  run "$b-throttle" 1 --backend "$b" "${gates[@]}" --inject throttle:0
  run "$b-power" 0 --backend "$b" "${gates[@]}" --inject throttle:0:power
  run "$b-link" 1 --backend "$b" "${gates[@]}" --inject link:0:3x8
  run "$b-ecc" 1 --backend "$b" "${gates[@]}" --inject ecc:0
  run "$b-vanish" 1 --backend "$b" "${gates[@]}" --inject vanish:0:memtest.1g
done
say "summary after $((SECONDS - start)) s:"
for v in "${verdicts[@]}"; do say "  $v"; done
tar -C "$out" -czf "$final/telemetry-faults.tgz" .
