#!/usr/bin/env bash
# The Llama-2-7B decode layer against the in-run copy rate, on CUDA (HIP
# sources through NVRTC) and Vulkan, in one call on an NVIDIA GPU, within
# 200 s (each step its own `timeout`, all under one deadline):
#   1. per backend, the perf gates block_decode.L512 / .L4096 (--repeat 3,
#      tuning cache off: the default plan, fused): each checked against the
#      f64 layer, timed, and read against the in-run copy ceiling of the same
#      footprint (cuMemcpyDtoDAsync on CUDA; on Vulkan the faster of
#      vkCmdCopyBuffer and greta's copy shader, the source naming which and
#      what the other reached), with each step's time (a fused step with its
#      parts named);
#   2. per backend, `--tune --no-save` of attn_decode_f16 at L512 and L4096:
#      the planner's split (chunks of 64 positions per block; the built-in
#      launch, first) beside the other splits, each checked and timed;
#   3. per backend, `--tune --no-save` of block_decode.L512: the fused graph
#      (fuse=1) beside the unfused one (fuse=0), each checked (on CUDA this
#      is also the check that the CUDA backend takes `fuse`).
# The summary (decode-fusion.txt): per backend and gate the layer's time,
# the ceiling and its source, the ratio against the 0.85 target, the steps;
# the attention splits; fused against unfused.
# Prepare here:
#   cargo build --release -p greta && mkdir -p .device/fusion && cp target/release/greta .device/fusion/greta
#   scripts/gpu/prepare-loader.sh            (the Vulkan loader debs in .gl)
# Run with carry [".device/fusion", ".gl"]: bash scripts/gpu/decode-fusion.sh
# Results in $OUT (8 files): decode-fusion.log, decode-fusion.txt,
# {cuda,vulkan}-perf.json, {cuda,vulkan}-attn.json, {cuda,vulkan}-fuse.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-decode-fusion-out}
mkdir -p "$out"
log="$out/decode-fusion.log"
greta=${GRETA:-.device/fusion/greta}
budget=${DECODE_BUDGET_S:-200}
deadline=$(( $(date +%s) + budget - 8 ))
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 | tee -a "$log"
# NVRTC (and cuBLAS, unused here) from the machine's torch env, where there is one.
for v in /opt/torch/.venv; do [[ -d $v ]] && export GRETA_ENV=$v; done
# step NAME CAP_S ARGS...: greta smoke ARGS, at most CAP_S and never past
# the deadline; $out/NAME.json, stderr's tail in the log.
step() {
  local name=$1 cap=$2 left; shift 2
  left=$(( deadline - $(date +%s) ))
  (( left < cap )) && cap=$left
  if (( cap < 5 )); then say "$name: skipped, the ${budget} s budget is spent"; return; fi
  say "$name (at most ${cap} s): greta smoke $*"
  timeout "$cap" "$greta" smoke --json --no-progress "$@" > "$out/$name.json" 2> "/tmp/$name.err"
  say "$name: exit $?"
  tail -n 12 "/tmp/$name.err" >> "$log"
}
vulkan_env() {
  if ! ldconfig -p | grep -q libvulkan.so.1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && \
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  return 0
}
vulkan_env
perf=(--profile perf --repeat 3 --out /tmp/greta-smoke --gate block_decode.L512 --gate block_decode.L4096)
attn=(--tune --no-save --gate attn_decode_f16.32x128.L512 --gate attn_decode_f16.32x128.L4096)
fuse=(--tune --no-save --gate block_decode.L512)
# The perf gates first (the kernels compile in the first CUDA call), then
# the attention splits, then fused against unfused.
GRETA_TUNING_CACHE=off step cuda-perf 70 --backend cuda "${perf[@]}"
GRETA_TUNING_CACHE=off step vulkan-perf 50 --backend vulkan "${perf[@]}"
GRETA_TUNING_CACHE=/tmp/greta-tune-cuda step cuda-attn 25 --backend cuda "${attn[@]}"
GRETA_TUNING_CACHE=/tmp/greta-tune-vulkan step vulkan-attn 25 --backend vulkan "${attn[@]}"
GRETA_TUNING_CACHE=/tmp/greta-tune-cuda step cuda-fuse 25 --backend cuda "${fuse[@]}"
GRETA_TUNING_CACHE=/tmp/greta-tune-vulkan step vulkan-fuse 25 --backend vulkan "${fuse[@]}"
python3 - "$out" <<'PY' 2>&1 | tee "$out/decode-fusion.txt" | tee -a "$log"
import json, sys, os
out = sys.argv[1]
TARGET = 0.85
def load(n):
    try:
        with open(os.path.join(out, n)) as f: return json.load(f)
    except Exception as e:
        print(f"{n}: unreadable ({e})"); return None
def us(ns): return f"{ns / 1e3:.1f} us" if isinstance(ns, (int, float)) else "-"
print("gate | backend | status | layer time | GB/s | in-run copy ceiling GB/s | ratio | >= 0.85")
steps = []
for b in ["cuda", "vulkan"]:
    for d in (load(f"{b}-perf.json") or {}).get("devices", []):
        for g in d.get("gates", []):
            # The in-run fields (ceiling, ratio, block) sit on the gate itself.
            m, inr = g.get("metrics") or {}, g
            c = inr.get("ceiling") or {}
            ratio = inr.get("ratio")
            t, rate, crate = m.get("time_median_us"), m.get("rate"), c.get("rate")
            f1 = lambda v, unit="": "-" if v is None else f"{v:.1f}{unit}"
            print(f"{g['id']} | {b} | {g['status']}{' (' + g['reason'] + ')' if g.get('reason') else ''} | "
                  f"{f1(t, ' us')} | {f1(rate)} | {f1(crate)} | "
                  f"{'-' if ratio is None else f'{ratio:.3f}'} | {'-' if ratio is None else ('yes' if ratio >= TARGET else 'NO')}")
            if c: print(f"    ceiling source: {c.get('source')}")
            if inr.get("ceiling_unavailable"): print(f"    no ceiling: {inr['ceiling_unavailable']}")
            for s in (inr.get("block") or {}).get("steps", []):
                parts = f" ({' + '.join(s['parts'])})" if s.get("parts") else ""
                print(f"    {s['kernel']}{parts}: {s['us']:.1f} us")
print()
print("attention split (attn_decode_f16, --tune; the built-in launch first, `chunks` = 64-position chunks per block)")
for b in ["cuda", "vulkan"]:
    for t in (load(f"{b}-attn.json") or {}).get("gates", []):
        if t.get("skipped"): print(f"{t['gate']} {b}: skipped: {t['skipped']}"); continue
        for i, c in enumerate(t.get("candidates", [])):
            ran = (c.get("ran") or c.get("asked") or {})
            what = "built-in" if i == 0 else "asked"
            ok = "ok" if c.get("correct") else f"WRONG/ERROR: {c.get('reason')}"
            print(f"{t['gate']} | {b} | {what} chunks={ran.get('chunks', '?')} | {us(c.get('median_ns'))} | {ok}")
print()
print("fused (fuse=1, the default) against unfused (fuse=0)")
for b in ["cuda", "vulkan"]:
    for t in (load(f"{b}-fuse.json") or {}).get("gates", []):
        if t.get("skipped"): print(f"{t['gate']} {b}: skipped: {t['skipped']}"); continue
        for c in t.get("candidates", []):
            ran = (c.get("ran") or c.get("asked") or {})
            ok = "ok" if c.get("correct") else f"WRONG/ERROR: {c.get('reason')}"
            print(f"{t['gate']} | {b} | fuse={ran.get('fuse', '?')} | {us(c.get('median_ns'))} | {ok}")
PY
say done
