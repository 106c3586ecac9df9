#!/usr/bin/env bash
# Assembles greta's CUDA translation unit and, on an NVIDIA GPU machine,
# builds scripts/gpu/hip_variants.cu once per variant (compile-time knobs
# given with -D) and times each kernel family. Two steps:
#   here:  bash scripts/gpu/hip_variants.sh tu DIR   (writes DIR/tu.cu; needs a
#          built greta-kernels for the generated matrix_lanes.h)
#   there: bash scripts/gpu/hip_variants.sh run DIR  (DIR holds tu.cu; prints one
#          line per variant and op; logs to $OUT/variants.log)
# VARIANTS (there): lines "family tag -Dknob=v ..."; default: the list below.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cmd=${1:-}; dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || { echo "usage: $0 tu|run DIR" >&2; exit 2; }
if [[ "$cmd" == tu ]]; then
  lanes=$(ls -t "$top"/target/*/build/greta-kernels-*/out/matrix_lanes.h 2>/dev/null | head -1)
  [[ -n "$lanes" ]] || { echo "no generated matrix_lanes.h: build greta-kernels first" >&2; exit 2; }
  mkdir -p "$dir"
  # Same order as greta's translation unit: prelude, common.h, matrix_lanes.h, the kernels.
  { cat "$top/kernels/hip/prelude_cuda.h" "$top/kernels/hip/common.h" "$lanes"
    for f in "$top"/kernels/hip/*.hip; do cat "$f"; done; } | grep -v -e '^#include "common.h"' -e '^#pragma once' > "$dir/tu.cu"
  cp "$top/scripts/gpu/hip_variants.cu" "$dir/"
  echo "wrote $dir/tu.cu"
  exit 0
fi
out=${OUT:-$dir/out}
mkdir -p "$out" "$dir/bin"
log="$out/variants.log"
: "${VARIANTS:=stream vec4 -DGRETA_VEC_UNROLL=4
stream vec2 -DGRETA_VEC_UNROLL=2
stream vec4-bpc8 -DGRETA_VEC_UNROLL=4 -DBLOCKS_PER_CU=8
norm rows8
gemm32 default
gemm16 bk32-2x4
gemm16 bk64-2x4 -DGRETA_F16_BK=64
gemm16 bk32-4x2 -DGRETA_MMA_SYNC_WAVES_M=4 -DGRETA_MMA_SYNC_WAVES_N=2
gemm16 bk16-2x4 -DGRETA_F16_BK=16}"
# Build every variant in parallel (16 cores), then run them one at a time.
i=0
while read -r fam tag knobs; do
  [[ -z "$fam" ]] && continue
  i=$((i + 1))
  ( nvcc -O3 -std=c++17 -arch=sm_90 -w -I"$dir" -DTAG="\"$fam/$tag\"" $knobs -o "$dir/bin/v$i" "$dir/hip_variants.cu" \
      > "$dir/bin/v$i.build" 2>&1 || echo "BUILD FAILED $fam/$tag" >> "$dir/bin/v$i.build" ) &
  echo "$i $fam $tag" >> "$dir/bin/list"
done <<< "$VARIANTS"
wait
while read -r i fam tag; do
  if grep -q "BUILD FAILED" "$dir/bin/v$i.build"; then
    echo "== $fam/$tag: build failed" | tee -a "$log"; head -20 "$dir/bin/v$i.build" | tee -a "$log"; continue
  fi
  timeout 120 "$dir/bin/v$i" "$fam" 2>&1 | tee -a "$log"
done < "$dir/bin/list"
