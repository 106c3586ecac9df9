#!/usr/bin/env bash
# The fused decode layer against the unfused one and against the in-run copy
# rate, on CUDA (HIP sources) and Vulkan, with the same layer in PyTorch
# beside it, in one call on an NVIDIA GPU:
#   - torch: scripts/gpu/block_ref.py (eager and CUDA graph, its copy rate);
#   - per backend, `greta smoke --tune --gate block_decode.L512 ...`: the
#     decode graph fused (tuning fuse=1, the default) and unfused (fuse=0),
#     each checked against the f64 reference and timed on the same inputs;
#   - per backend, the perf gates block_decode.L512 / .L4096 with the tuning
#     cache off (the default plan: fused), which measure the in-run copy
#     ceiling (cuMemcpyDtoDAsync on CUDA, vkCmdCopyBuffer on Vulkan) of the
#     same footprint and report the ratio, and each step's time (a fused
#     step with its parts named).
# The summary (decode-fusion.txt) puts fused, unfused and torch side by side,
# each as ms per layer and as a fraction of the backend's copy ceiling.
# Prepare here:
#   cargo build --release -p greta && mkdir -p .device/fusion && cp target/release/greta .device/fusion/greta
#   scripts/gpu/prepare-loader.sh            (the Vulkan loader debs in .gl)
# Run with carry [".device/fusion", ".gl"]: bash scripts/gpu/decode-fusion.sh
# Results in $OUT: decode-fusion.log, decode-fusion.txt, block_ref.json,
# {cuda,vulkan}-tune.json, {cuda,vulkan}-perf.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-decode-fusion-out}
mkdir -p "$out"
log="$out/decode-fusion.log"
greta=${GRETA:-.device/fusion/greta}
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$log"
say "torch layer"
PYTHONUNBUFFERED=1 timeout 150 python3 scripts/gpu/block_ref.py > "$out/block_ref.json" 2>> "$log" || say "block_ref: exit $?"
backend() {  # backend NAME: the fused/unfused sweep, then the perf gates
  local b=$1
  say "$b: greta smoke --tune (fuse=1, fuse=0)"
  GRETA_TUNING_CACHE=/tmp/greta-tune-$b timeout 150 "$greta" smoke --tune --backend "$b" --json --no-progress \
    --gate block_decode.L512 --gate block_decode.L4096 > "$out/$b-tune.json" 2> "/tmp/$b-tune.err"
  say "$b tune: exit $?"; tail -n 20 "/tmp/$b-tune.err" >> "$log"
  say "$b: greta smoke --profile perf (fused, in-run copy ceiling)"
  GRETA_TUNING_CACHE=off timeout 150 "$greta" smoke --profile perf --repeat 3 --backend "$b" --json --no-progress \
    --out /tmp/greta-smoke --gate block_decode.L512 --gate block_decode.L4096 > "$out/$b-perf.json" 2> "/tmp/$b-perf.err"
  say "$b perf: exit $?"; tail -n 40 "/tmp/$b-perf.err" >> "$log"
}
backend cuda
if ! ldconfig -p | grep -q libvulkan.so.1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
[[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && \
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
backend vulkan
python3 - "$out" <<'PY' | tee "$out/decode-fusion.txt" | tee -a "$log"
import json, sys, os
out = sys.argv[1]
def load(n):
    try:
        with open(os.path.join(out, n)) as f: return json.load(f)
    except Exception as e:
        print(f"{n}: unreadable ({e})"); return None
ref = load("block_ref.json") or {}
print("gate | backend | fused ms | unfused ms | fused/unfused | copy ceiling GB/s | fused of copy | unfused of copy | torch eager ms | torch graph ms")
for b in ["cuda", "vulkan"]:
    tune, perf = load(f"{b}-tune.json"), load(f"{b}-perf.json")
    gates = {}
    for d in (perf or {}).get("devices", []):
        for g in d.get("gates", []):
            gates[g["id"]] = g
    for t in (tune or {}).get("gates", []):
        ms = {}
        for c in t.get("candidates", []):
            fuse = (c.get("ran") or c.get("asked") or {}).get("fuse")
            if c.get("correct") and c.get("median_ns"): ms[fuse] = c["median_ns"] / 1e6
            elif c.get("reason"): print(f"{t['gate']} {b} fuse={fuse}: {c['reason']}")
        g = gates.get(t["gate"], {})
        m = g.get("metrics") or {}
        ceil = ((g.get("in_run") or {}).get("ceiling") or {}).get("rate")
        nbytes = m.get("bytes")
        def of_copy(v):
            return f"{nbytes / (v * 1e-3) / 1e9 / ceil:.2f}" if v and ceil and nbytes else "-"
        f, u = ms.get(1), ms.get(0)
        # block_ref.py's keys: block.decode.L512 for gate block_decode.L512.
        r = ref.get("refs", {}).get("block." + t["gate"].replace("block_", ""), {})
        ms_of = lambda k: r[k] * 1e3 if isinstance(r.get(k), (int, float)) else None
        fmt = lambda v: f"{v:.3f}" if isinstance(v, (int, float)) else "-"
        print(f"{t['gate']} | {b} | {fmt(f)} | {fmt(u)} | {fmt(f / u if f and u else None)} | {fmt(ceil)} | "
              f"{of_copy(f)} | {of_copy(u)} | {fmt(ms_of('eager_s'))} | {fmt(ms_of('graph_s'))}")
        for s in ((g.get("in_run") or {}).get("block") or {}).get("steps", []):
            parts = f" ({' + '.join(s['parts'])})" if s.get("parts") else ""
            print(f"    {s['kernel']}{parts}: {s['us']:.1f} us")
PY
say done
