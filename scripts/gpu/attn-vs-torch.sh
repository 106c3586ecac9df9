#!/usr/bin/env bash
# The transformer block's attention ops beside torch, in one call on an NVIDIA
# GPU: greta's attention gates (rope_kv_f16, attn_decode_f16, attn_prefill_f16:
# the perf shapes and the small default ones) through CUDA and Vulkan, and
# torch SDPA at the same shapes (attn_ref.py). Prepare here (the folder travels):
#   mkdir -p .device/attn && cargo build --release -p greta && cp target/release/greta .device/attn/greta
#   cp scripts/gpu/attn-vs-torch.sh scripts/gpu/attn_ref.py scripts/gpu/torch_ref.py .device/attn/
#   scripts/gpu/prepare-loader.sh            (the Vulkan loader debs in .gl)
# and run with carry [".device/attn", ".gl"]: bash .device/attn/attn-vs-torch.sh
# Results in $OUT: attn-vs-torch.log, torch.json, cuda.json, vulkan.json.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
out=${OUT:-attn-vs-torch-out}
mkdir -p "$out"
log="$out/attn-vs-torch.log"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$log"
gates=()
for g in rope_kv_f16.1x32x128 rope_kv_f16.2048x32x128 attn_decode_f16.32x128.L512 attn_decode_f16.32x128.L4096 \
         attn_prefill_f16.32x128.S512 attn_prefill_f16.32x128.S2048 \
         rope_kv_f16.100x4x64 attn_decode_f16.4x64.L300 attn_prefill_f16.4x64.S100P13; do
  gates+=(--gate "$g")
done
run() {  # run NAME LIMIT_S ARGS...
  local name=$1 limit=$2; shift 2
  say "$name: greta smoke --profile perf $*"
  timeout "$limit" "$here/greta" smoke --profile perf --json --no-progress --out /tmp/greta-smoke \
    "${gates[@]}" "$@" > "$out/$name.json" 2> "/tmp/$name.err"
  say "$name: exit $?"
  tail -n 30 "/tmp/$name.err" >> "$log"
}
say "torch SDPA"
PYTHONUNBUFFERED=1 timeout 45 python3 "$here/attn_ref.py" > "$out/torch.json" 2>> "$log" || say "torch: exit $?"
run cuda 100 --backend cuda
if ! ldconfig -p | grep -q libvulkan.so.1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
[[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && \
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
run vulkan 70 --backend vulkan
cat "$out/torch.json" >> "$log"
say "done"
