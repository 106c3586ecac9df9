#!/usr/bin/env bash
# Runs ON an NVIDIA GPU machine through the device tool: greta's HIP backend code through its CUDA twin.
# Carry a folder holding this script and a release `greta` (built here:
# cargo build --release -p greta), then: bash <folder>/cuda.sh
# Proves: `greta smoke --backend cuda --profile default` and `--profile perf` against the CPU
# reference; an injected hang (test.slow, --timeout 2) ends within limit + 1 s with no greta
# process left; torch's rates (scripts/gpu/torch_ref.py, when the repo is there) beside.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
log="$out/cuda.log"
G="$here/greta"
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data
say() { echo "== $*" | tee -a "$log"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv 2>&1 | tee -a "$log"
say "ldd greta (must name no CUDA/HIP library)"
ldd "$G" 2>&1 | tee -a "$log" | grep -i -E "cuda|nvrtc|hip|amd" && say "FAIL: ldd names a GPU library"
for p in default perf; do
  say "smoke --backend cuda --profile $p"
  s=$(date +%s.%N)
  "$G" -v smoke --backend cuda --profile "$p" --json --out /tmp/greta-results > "$out/$p.json" 2> "$out/$p.txt"
  rc=$?
  e=$(date +%s.%N)
  say "profile $p: exit $rc in $(python3 -c "print(f'{$e-$s:.2f}')") s"
  tail -n 30 "$out/$p.txt" | tee -a "$log"
done
say "injected hang: --gate test.slow --timeout 2"
s=$(date +%s.%N)
GRETA_SMOKE_TEST_GATES=1 "$G" smoke --backend cuda --gate test.slow --timeout 2 --json \
  --out /tmp/greta-results > "$out/hang.json" 2> "$out/hang.txt"
rc=$?
e=$(date +%s.%N)
say "hang: exit $rc, wall $(python3 -c "print(f'{$e-$s:.2f}')") s"
tail -n 12 "$out/hang.txt" | tee -a "$log"
left=$(pgrep -a -f "$G" || true)
if [[ -n "$left" ]]; then say "FAIL: greta processes left: $left"; else say "no greta process left"; fi
if [[ -f scripts/gpu/torch_ref.py ]]; then
  say "torch reference"
  PYTHONUNBUFFERED=1 timeout 240 python3 scripts/gpu/torch_ref.py > "$out/torch_ref.json" 2>> "$log" \
    || say "torch_ref failed"
fi
python3 - "$out" <<'PY' | tee -a "$log"
import json, sys, os
out = sys.argv[1]
for p in ("default", "perf"):
    try:
        r = json.load(open(os.path.join(out, f"{p}.json")))
    except Exception as e:
        print(p, "no report:", e); continue
    print(f"{p}: status {r['status']}")
    for d in r["devices"]:
        print("  device", d["device"]["name"], "backend", d["backend"], "lost", d.get("lost"))
        for n in d.get("notes", [])[:4]:
            print("   note:", n)
        for g in d["gates"]:
            m = g.get("metrics") or {}
            rate = m.get("gbps") or m.get("tflops") or m.get("rate")
            print(f"   {g['id']:<22} {g['status']:<5} {g.get('kernel') or '':<16} "
                  f"err={m.get('rel_err')} rate={rate} {g.get('reason') or ''}")
PY
