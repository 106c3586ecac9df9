#!/usr/bin/env bash
# The Hopper GEMM (kernels/hip/hopper_gemm.h: wgmma fed by TMA, sm_90a only) behind gemm_f16
# and linear_f16 on the CUDA backend, in one call on an NVIDIA H100/H200, beside the mma.sync
# kernels it replaces (the same binary with GRETA_CUDA_ARCH=sm_90, which builds no sm_90a code)
# and beside PyTorch/cuBLAS:
#   1. both kernel builds at once, on the CPU (sm_90a with ptxas's resource figures, and sm_90),
#      while the GPU times torch: scripts/gpu/torch_ref.py (HGEMM 4096/8192, F.linear at the
#      Llama-2-7B prefill shapes) and scripts/gpu/block_ref.py (the layer, eager and graph);
#   2. the default profile on CUDA with the new kernels (every gate against its f64
#      reference; gemm_f16.256 and .1024 run the Hopper kernel, the small linear gates the old);
#   3. injected faults in the new kernels' outputs (--inject corrupt on gemm_f16.1024 and
#      linear_f16.2048x12288x4096: one bit of one element, far larger) that must fail those
#      gates, and only them (gemm_f16.256 beside them passes);
#   4. the perf gates (gemm_f16 4096/8192, linear_f16 2048x12288x4096 and 2048x4096x11008,
#      block_prefill.S2048), each checked against its reference, with the in-run cuBLAS ratio:
#      new, old, then new and old again while the time lasts (interleaved on the warm GPU);
#   5. a summary table with PASS/FAIL per check, printed last.
# Prepare here:
#   cargo build --release -p greta && mkdir -p .device/hopper && cp target/release/greta .device/hopper/greta
# Run with carry [".device/hopper"] (timeout_s 600; the script holds itself to 450 s):
#   bash scripts/gpu/hopper-gemm.sh
# Results in $OUT: hopper-gemm.log, summary.txt and hopper-gemm.tgz (every JSON, stderr and
# the build answers).
set -uo pipefail
cd "$(dirname "$0")/../.."
final=${OUT:-hopper-gemm-out}
mkdir -p "$final"
work=$(mktemp -d)
log="$final/hopper-gemm.log"
greta=$(pwd)/${GRETA:-.device/hopper/greta}
t0=$SECONDS
budget=${BUDGET:-450}
say() { echo "== $(date -u +%H:%M:%S) (+$((SECONDS - t0)) s) $*" | tee -a "$log"; }
left() { echo $((budget - (SECONDS - t0))); }
# One kernel cache for both builds (the target is part of each object's key), XDG dirs of
# our own; NVRTC and cuBLAS from the machine's torch env.
export GRETA_KERNEL_CACHE=$work/kernels XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache
export GRETA_TUNING_CACHE=off
for v in /opt/torch/.venv; do [[ -d $v ]] && export GRETA_ENV=$v VIRTUAL_ENV=$v; done
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$log"
[[ -x $greta ]] || { say "FAIL: no greta at $greta (see the header: build and copy it first)"; exit 1; }
"$greta" --version 2>&1 | tee -a "$log"

say "1. kernel builds (CPU, background): sm_90a with resource figures, sm_90"
timeout 200 "$greta" __gpu build-kernels --backend cuda --target sm_90a --resource-usage \
  --cache-dir "$GRETA_KERNEL_CACHE" > "$work/build-sm_90a.json" 2> "$work/build-sm_90a.err" &
b1=$!
timeout 200 "$greta" __gpu build-kernels --backend cuda --target sm_90 \
  --cache-dir "$GRETA_KERNEL_CACHE" > "$work/build-sm_90.json" 2> "$work/build-sm_90.err" &
b2=$!
say "1. torch_ref.py (HGEMM, F.linear at the prefill shapes)"
PYTHONUNBUFFERED=1 timeout 90 python3 scripts/gpu/torch_ref.py --gemm > "$work/torch_ref.json" 2>> "$log"
say "torch_ref: exit $?"
say "1. block_ref.py (the layer in torch)"
PYTHONUNBUFFERED=1 timeout 100 python3 scripts/gpu/block_ref.py > "$work/block_ref.json" 2>> "$log"
say "block_ref: exit $?"
wait "$b1"; say "build sm_90a: exit $?"
wait "$b2"; say "build sm_90: exit $?"
tail -n 5 "$work"/build-*.err >> "$log" 2>/dev/null

smoke() {  # smoke NAME LIMIT_S ARGS...: greta smoke --json with the new kernels
  local name=$1 limit=$2; shift 2
  local l; l=$(left)
  (( limit > l )) && limit=$l
  if (( limit < 20 )); then say "$name: SKIPPED, $l s left"; return; fi
  say "$name: greta smoke $* (limit $limit s)"
  timeout "$limit" "$greta" smoke --json --no-progress --no-save "$@" > "$work/$name.json" 2> "$work/$name.err"
  local rc=$?
  echo "$rc" > "$work/$name.rc"
  say "$name: exit $rc"
  tail -n 6 "$work/$name.err" >> "$log"
}
say "2. default profile, new kernels"
smoke default 120 --backend cuda
say "3. an injected fault in the Hopper kernel's result"
smoke inject 70 --backend cuda --repeat 2 --gate gemm_f16.256 --gate gemm_f16.1024 \
  --gate linear_f16.2048x12288x4096 --inject corrupt:0:gemm_f16.1024 --inject corrupt:0:linear_f16.2048x12288x4096
perf=(--backend cuda --profile perf --repeat 5 --gate gemm_f16.4096 --gate gemm_f16.8192
      --gate linear_f16.2048x12288x4096 --gate linear_f16.2048x4096x11008 --gate block_prefill.S2048)
say "4. perf gates, new and old interleaved"
smoke perf-new-1 120 "${perf[@]}"
GRETA_CUDA_ARCH=sm_90 smoke perf-old-1 120 "${perf[@]}"
if (( $(left) > 200 )); then
  smoke perf-new-2 110 "${perf[@]}"
  GRETA_CUDA_ARCH=sm_90 smoke perf-old-2 110 "${perf[@]}"
fi

say "5. summary"
python3 - "$work" > "$final/summary.txt" 2>> "$log" <<'PY'
import json, os, sys
w = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(w, name)) as f:
            return json.load(f)
    except Exception:
        return None
def rc(name):
    try:
        return int(open(os.path.join(w, name + ".rc")).read())
    except Exception:
        return None
def gates(d):
    out = {}
    for dev in (d or {}).get("devices", []):
        for g in dev.get("gates", []):
            out[g["id"]] = g
    return out
checks = []
def check(ok, what):
    checks.append(("PASS" if ok else "FAIL", what))
def us(g):
    return ((g or {}).get("metrics") or {}).get("time_median_us")
def rate(g):
    return ((g or {}).get("metrics") or {}).get("rate")

# 1. builds: the sm_90a object holds the Hopper kernels, each clean.
b = load("build-sm_90a.json")
hop = []
for t in (b or {}).get("built", []):
    hop = [k for k in t.get("resources", []) if "_wgmma_" in k.get("name", "")]
check(len(hop) == 4 and all(k.get("spill_store_bytes") == 0 and k.get("spill_load_bytes") == 0
                            and k.get("scratch_bytes_per_lane") == 0 for k in hop),
      "sm_90a build on this NVRTC: 4 Hopper kernels, no stack frame, no spills (%s)" %
      ", ".join("%s %s regs" % (k["name"].replace("greta_", ""), k.get("registers")) for k in hop))
b90 = load("build-sm_90.json")
check(bool(b90) and all(t.get("error") is None for t in b90.get("built", [])), "sm_90 build")

# 2. the default profile with the new kernels.
d = gates(load("default.json"))
bad = [i for i, g in d.items() if g.get("status") not in ("pass", "skip")]
check(rc("default") == 0 and d and not bad, "default profile on CUDA, every gate against its reference (%d gates; not passed: %s)" % (len(d), bad or "none"))
for i in ("gemm_f16.256", "gemm_f16.1024"):
    g = d.get(i, {})
    check("wgmma" in (g.get("kernel") or "") and g.get("status") == "pass",
          "%s ran %s: %s, rel_err %s" % (i, g.get("kernel"), g.get("status"), (g.get("metrics") or {}).get("rel_err")))

# 3. the injected faults.
j = gates(load("inject.json"))
hit = [j.get(i, {}) for i in ("gemm_f16.1024", "linear_f16.2048x12288x4096")]
good = j.get("gemm_f16.256", {})
check(rc("inject") == 1 and all(g.get("status") == "fail" and "wgmma" in (g.get("kernel") or "") for g in hit)
      and good.get("status") == "pass",
      "--inject corrupt on two Hopper gates: exit %s; %s; gemm_f16.256 %s" %
      (rc("inject"), ", ".join("%s (%s) %s" % (g.get("id"), g.get("kernel"), g.get("status")) for g in hit),
       good.get("status")))

# 4. perf: new against old, each run's every gate checked.
runs = {n: gates(load(n + ".json")) for n in ("perf-new-1", "perf-old-1", "perf-new-2", "perf-old-2")}
for n, gs in runs.items():
    if not gs:
        continue
    bad = [i for i, g in gs.items() if g.get("status") != "pass"]
    new = n.startswith("perf-new")
    kern = {i: g.get("kernel") or "" for i, g in gs.items() if not i.startswith("block")}
    right = all(("wgmma" in k) == new for k in kern.values())
    check(rc(n) == 0 and not bad and right, "%s: every gate passes (not passed: %s), kernels %s" %
          (n, bad or "none", "all wgmma" if new else "all mma.sync") if right else
          "%s: kernels not as expected: %s" % (n, kern))
def best(prefix, gid):
    ts = [(us(gs.get(gid)), gs.get(gid)) for n, gs in runs.items() if n.startswith(prefix) and gs.get(gid)]
    ts = [t for t in ts if t[0]]
    return min(ts, key=lambda t: t[0]) if ts else (None, None)
rows = []
ids = ["gemm_f16.4096", "gemm_f16.8192", "linear_f16.2048x12288x4096", "linear_f16.2048x4096x11008", "block_prefill.S2048"]
for gid in ids:
    tn, gn = best("perf-new", gid)
    to, go = best("perf-old", gid)
    rows.append((gid, (gn or {}).get("kernel"), tn, rate(gn), (gn or {}).get("ratio"),
                 (go or {}).get("kernel"), to, rate(go), (go or {}).get("ratio"),
                 (to / tn) if tn and to else None))
def f(v, p=1):
    return "-" if v is None else ("%.*f" % (p, v) if isinstance(v, float) else str(v))
print("%-28s %-30s %10s %8s %6s | %-24s %10s %8s %6s | %6s" % ("gate", "new kernel", "new us", "TFLOP/s", "cuBLAS", "old kernel", "old us", "TFLOP/s", "cuBLAS", "speedup"))
for r in rows:
    print("%-28s %-30s %10s %8s %6s | %-24s %10s %8s %6s | %6s" % (r[0], f(r[1]), f(r[2]), f(r[3]), f(r[4], 3), f(r[5]), f(r[6]), f(r[7]), f(r[8], 3), f(r[9], 2)))
print("(best median of the runs of each kind; cuBLAS = the gate's in-run ratio to cublasGemmEx f16 -> f32)")
g8 = best("perf-new", "gemm_f16.8192")[1] or {}
check((g8.get("ratio") or 0) >= 0.6, "gemm_f16.8192 new at >= 0.6 of cuBLAS in the same run: %s" % f(g8.get("ratio"), 3))
# The layer's steps, new and old.
for label, prefix in (("new", "perf-new"), ("old", "perf-old")):
    g = best(prefix, "block_prefill.S2048")[1] or {}
    steps = ((g.get("block") or {}).get("steps")) or []
    if steps:
        print("block_prefill.S2048 %s steps: %s" % (label, "; ".join("%s %.0f us" % (s["kernel"], s["us"]) for s in steps)))
# torch.
t = (load("torch_ref.json") or {}).get("refs", {})
for k, v in sorted(t.items()):
    if k.startswith(("hgemm", "linear")):
        print("torch %-28s %9.1f us %8.1f TFLOP/s" % (k, v["s"] * 1e6, v["tflops"]))
br = (load("block_ref.json") or {}).get("refs", {}).get("block.prefill.S2048", {})
tn = best("perf-new", "block_prefill.S2048")[0]
to = best("perf-old", "block_prefill.S2048")[0]
eager = br.get("eager_s")
print("block_prefill.S2048: greta new %s ms, old %s ms; torch eager %s ms, CUDA graph %s ms" % (
    f(tn and tn / 1e3, 3), f(to and to / 1e3, 3), f(eager and eager * 1e3, 3), f(br.get("graph_s") and br["graph_s"] * 1e3, 3)))
check(bool(tn and eager) and tn / 1e3 <= eager * 1e3, "block_prefill.S2048 new <= torch eager")
print()
for s, what in checks:
    print("%s  %s" % (s, what))
print("%d of %d checks pass" % (sum(s == "PASS" for s, _ in checks), len(checks)))
PY
say "summary: exit $?"
tar -C "$work" -czf "$final/hopper-gemm.tgz" --exclude kernels --exclude data --exclude cache . 2>> "$log"
say "done"
cat "$final/summary.txt"
