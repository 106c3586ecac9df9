#!/usr/bin/env bash
# The Llama-2-7B layer side by side with PyTorch in one call on an NVIDIA
# GPU, as docs/performance.md's table shows it:
#   1. PyTorch eager and CUDA graph (scripts/gpu/block_ref.py);
#   2. greta's perf gates on CUDA and on Vulkan: block_decode.L512 (against
#      the in-run copy rate), block_prefill.S2048, gemm_f16.8192 (against
#      cuBLAS on CUDA) and the QKV projection, --repeat 3;
#   3. PyTorch through torch.compile(mode=max-autotune) (block_ref.py
#      --compile), last, under what is left of LAYER_LIMIT_S (default 540):
#      its kernel search takes minutes.
# Then one markdown table (layer-vs-torch.md) and the ratios the issue's bars
# are written against.
# Prepare here: cargo build --release -p greta; xz -T2 -c target/release/greta
#   > .device/speed/greta.xz; scripts/gpu/prepare-loader.sh (.gl)
# Run with carry [".device/speed", ".gl"]: bash scripts/gpu/layer-vs-torch.sh
# Results in $OUT: layer-vs-torch.log, layer-vs-torch.md and
# layer-vs-torch.tgz (every JSON and stderr).
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/gpu/lib.sh
begin layer-vs-torch .device/speed
greta=${GRETA:-$dir/greta}
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
export GRETA_TUNING_CACHE=off
gates=(block_decode.L512 block_prefill.S2048 gemm_f16.8192 linear_f16.2048x12288x4096)

say "torch: eager and CUDA graph"
PYTHONUNBUFFERED=1 timeout 150 python3 scripts/gpu/block_ref.py > "$out/torch.json" 2> "$out/torch.err"
say "torch: exit $?"
for b in cuda vulkan; do
  [[ $b == vulkan ]] && vulkan_env
  args=()
  for g in "${gates[@]}"; do args+=(--gate "$g"); done
  say "$b: greta smoke --profile perf --repeat 3 ${gates[*]}"
  timeout 150 "$greta" smoke --profile perf --repeat 3 --json --no-progress --out /tmp/greta-smoke \
    --backend "$b" "${args[@]}" > "$out/$b.json" 2> "$out/$b.err"
  say "$b: exit $?"
  grep -v '^note:\|^check' "$out/$b.err" | tail -n 12 >> "$log"
done
left=$(( ${LAYER_LIMIT_S:-540} - (SECONDS - start) - 15 ))
say "torch.compile max-autotune: limit ${left} s"
PYTHONUNBUFFERED=1 timeout "$left" python3 scripts/gpu/block_ref.py --compile max-autotune \
  > "$out/compiled.json" 2> "$out/compiled.err"
say "torch.compile: exit $?"
grep -v Warning "$out/compiled.err" | tail -n 4 >> "$log"

python3 - "$out" "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" <<'PY' \
  | tee "$final/layer-vs-torch.md" | tee -a "$log"
import json, os, sys
work, gpu = sys.argv[1], sys.argv[2]
def load(name):
    try:
        return json.load(open(os.path.join(work, name)))
    except Exception:
        return None
torch, comp = load("torch.json"), load("compiled.json")
gates = {}
for b in ("cuda", "vulkan"):
    d = load(f"{b}.json")
    for g in (d or {}).get("devices", [{}])[0].get("gates", []):
        gates[(b, g["id"])] = g
def us(b, gid):
    g = gates.get((b, gid))
    if not g or g.get("status") != "pass":
        return None
    return g["metrics"]["time_median_us"]
def ratio(b, gid):
    g = gates.get((b, gid))
    return g.get("ratio") if g and g.get("status") == "pass" else None
def ref(doc, key, field):
    try:
        return doc["refs"][key][field] * 1e6
    except Exception:
        return None
f = lambda v, fmt="{:.0f} us": fmt.format(v) if v is not None else "-"
r = lambda v: f"{v:.2f}" if v is not None else "-"
print(f"{gpu}, torch {torch.get('torch') if torch else '-'}")
print()
print("| | greta CUDA (HIP sources) | greta Vulkan | torch eager | torch CUDA graph | torch.compile (max-autotune) |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
rows = [("decode L512", "block_decode.L512", "block.decode.L512"),
        ("prefill S2048", "block_prefill.S2048", "block.prefill.S2048")]
for label, gid, key in rows:
    extra = {b: (f" ({r(ratio(b, gid))} of copy)" if "decode" in gid and ratio(b, gid) else "") for b in ("cuda", "vulkan")}
    print(f"| {label} | {f(us('cuda', gid))}{extra['cuda']} | {f(us('vulkan', gid))}{extra['vulkan']} | "
          f"{f(ref(torch, key, 'eager_s'))} | {f(ref(torch, key, 'graph_s'))} | {f(ref(comp, key, 'compiled_s'))} |")
print(f"| gemm_f16 8192 / cuBLAS | {r(ratio('cuda', 'gemm_f16.8192'))} | {r(ratio('vulkan', 'gemm_f16.8192'))} | | | |")
print(f"| linear_f16 QKV, 2048 tokens | {f(us('cuda', 'linear_f16.2048x12288x4096'))} | {f(us('vulkan', 'linear_f16.2048x12288x4096'))} | | | |")
eager = ref(torch, "block.prefill.S2048", "eager_s")
print()
for b in ("cuda", "vulkan"):
    p = us(b, "block_prefill.S2048")
    if p and eager:
        print(f"{b}: prefill S2048 / torch eager = {p / eager:.2f}")
    print(f"{b}: decode L512 / in-run copy = {r(ratio(b, 'block_decode.L512'))}")
PY
tar -C "$out" -czf "$final/layer-vs-torch.tgz" .
say done
