#!/usr/bin/env bash
# The transformer-block gates beside the same layer in PyTorch, in one call on
# an NVIDIA GPU: the block gates (Llama-2-7B decode L512/L4096, prefill
# S128/S512/S2048, and the small layers) through CUDA and Vulkan, the f16
# ops they are made of, and the same layer in PyTorch (scripts/gpu/block_ref.py:
# eager and CUDA graph, with the in-run copy rate for the roofline).
# Prepare here:
#   cargo build --release -p greta && mkdir -p .device/block && cp target/release/greta .device/block/greta
#   scripts/gpu/prepare-loader.sh            (the Vulkan loader debs in .gl)
# Run with carry [".device/block", ".gl"]: bash scripts/gpu/block-vs-torch.sh
# Results in $OUT: block-vs-torch.log, block_ref.json, cuda-block.json, cuda-ops.json, vulkan-block.json.
# BLOCK_GATES (words) replaces the block gates, BLOCK_STEPS picks steps by
# name (default "torch cuda-block cuda-ops vulkan-block"), for a call that
# shares its time with other scripts.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-block-vs-torch-out}
mkdir -p "$out"
log="$out/block-vs-torch.log"
greta=${GRETA:-.device/block/greta}
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$log"
block=(block_decode.L512 block_decode.L4096 block_prefill.S128 block_prefill.S512 block_prefill.S2048
       block_decode.small block_prefill.small)
# shellcheck disable=SC2206 # the gates are words
[[ -n ${BLOCK_GATES:-} ]] && block=($BLOCK_GATES)
steps=" ${BLOCK_STEPS:-torch cuda-block cuda-ops vulkan-block} "
wanted() { [[ $steps == *" $1 "* ]]; }
ops=(gemv_f16.12288x4096 gemv_f16.22016x4096 gemv_f16.4096x11008 linear_f16.2048x12288x4096
     linear_f16.2048x4096x11008 rmsnorm_f16.2048x4096 add_rmsnorm_f16.2048x4096 swiglu_f16.2048x11008
     rope_kv_f16.1x32x128 rope_kv_f16.2048x32x128 attn_decode_f16.32x128.L512 attn_decode_f16.32x128.L4096
     attn_prefill_f16.32x128.S512 attn_prefill_f16.32x128.S2048 copy.1g)
run() {  # run NAME LIMIT_S GATES_VAR ARGS...
  local name=$1 limit=$2; local -n list=$3; shift 3
  wanted "$name" || return 0
  local args=()
  for g in "${list[@]}"; do args+=(--gate "$g"); done
  say "$name: greta smoke --profile perf $*"
  timeout "$limit" "$greta" smoke --profile perf --repeat 3 --json --no-progress --out /tmp/greta-smoke \
    "${args[@]}" "$@" > "$out/$name.json" 2> "/tmp/$name.err"
  say "$name: exit $?"
  tail -n 40 "/tmp/$name.err" >> "$log"
}
if wanted torch; then
  say "torch layer"
  PYTHONUNBUFFERED=1 timeout 150 python3 scripts/gpu/block_ref.py > "$out/block_ref.json" 2>> "$log" || say "block_ref: exit $?"
fi
run cuda-block 170 block --backend cuda
run cuda-ops 90 ops --backend cuda
if ! ldconfig -p | grep -q libvulkan.so.1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
[[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && \
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
run vulkan-block 150 block --backend vulkan
say done
