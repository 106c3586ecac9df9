#!/usr/bin/env bash
# The Vulkan linear_f16 on the matrix units (linear_f16_cm) across a fix: an
# older measured binary (older-greta; 4fa97b0 when first run), the binary
# before the fix (base-greta) and the fix (greta), interleaved on the same
# warm GPU:
#   - perf gates of linear_f16 (both Llama-2-7B prefill shapes), the
#     prefill block and the f16 GEMM (which shares the planner);
#   - the fix's default profile on Vulkan (every op checked against its
#     CPU reference);
#   - then, with the time left, the fix's --tune sweep of linear_f16, which
#     times both epilogues (epilogue=0 direct f16 store, epilogue=1 the
#     shared tile of bb0ef56) at several tiles in one binary.
# Prepare here (the folder travels, not this checkout):
#   cargo build --release -p greta; xz -c target/release/greta > DIR/greta.xz
#   cp base-greta.xz older-greta.xz DIR/; cp scripts/gpu/linear-f16-epilogues.sh DIR/
#   scripts/gpu/prepare-loader.sh            (the Vulkan loader debs in .gl)
# Run from the repository root with carry [DIR, ".gl"]:
#   bash DIR/linear-f16-epilogues.sh         (DIR is this script's folder)
# Results in $OUT: linear-f16.tgz (linear-f16.log, one JSON and stderr per
# (binary, set), doctor.json): one archive, as the device tool returns at
# most 8 files (a call that wrote 13 lost five of them).
set -uo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
final=${OUT:-linear-f16-out}
out=$(mktemp -d)
mkdir -p "$final"
log="$out/linear-f16.log"
start=$SECONDS
. scripts/gpu/lib.sh
unpack_binaries "$dir"
gpu_env
vulkan_env
run() { smoke_run "$dir" "$1" "$2" "$3" "$out" "${@:4}"; }  # run BIN NAME LIMIT_S ARGS...
# Which cooperative-matrix shapes the driver lists (the fix keys on a
# 16x16x16 f16 x f16 -> f16 one).
GRETA_KERNEL_CACHE=/tmp/k-greta XDG_DATA_HOME=/tmp/d-greta XDG_CACHE_HOME=/tmp/c-greta \
  timeout 60 "$dir/greta" doctor --json > "$out/doctor.json" 2> "$out/doctor.err"
say "doctor: exit $?"
gates=(--gate linear_f16.2048x12288x4096 --gate linear_f16.2048x4096x11008
       --gate block_prefill.S2048 --gate gemm_f16.8192)
for b in older-greta base-greta greta; do
  run "$b" vulkan-perf 110 --backend vulkan --profile perf --repeat 3 "${gates[@]}"
done
run greta vulkan-default 60 --backend vulkan
left=$((400 - (SECONDS - start)))
if (( left > 30 )); then
  run greta vulkan-tune "$left" --backend vulkan --tune --gate linear_f16.2048x12288x4096
fi
say done
tar -C "$out" -czf "$final/linear-f16.tgz" .
