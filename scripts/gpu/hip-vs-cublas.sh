#!/usr/bin/env bash
# greta's HIP kernels through their CUDA twin beside torch/cuBLAS, in one call on an NVIDIA
# GPU: torch's reference rates, the perf profile on --backend cuda, the kernels' compile-time
# variants built with nvcc (hip_variants.sh), ncu on the GEMM kernels, and optionally a
# baseline binary and the Vulkan backend. Prepare here:
#   cargo build --release -p greta && mkdir -p .device/hip-vs-cublas && cp target/release/greta .device/hip-vs-cublas/greta
#   (optionally the previous binary as .device/hip-vs-cublas/greta-base)
#   bash scripts/gpu/hip_variants.sh tu .device/hip-vs-cublas
#   scripts/gpu/prepare-loader.sh        (only for STEPS containing vulkan)
# and run with carry [".device/hip-vs-cublas"] (plus ".gl" for vulkan):
#   STEPS="torch cuda variants base ncu vulkan" bash scripts/gpu/hip-vs-cublas.sh
# Everything lands in $OUT (at most 8 files): hip-vs-cublas.log, torch_ref.json, cuda-perf.json,
# base-perf.json, vulkan-perf.json, variants.log, ncu.txt, ratio.txt.
set -uo pipefail
dir=.device/hip-vs-cublas
cd "$(dirname "$0")/../.."
out=${OUT:-hip-vs-cublas-out}
mkdir -p "$out"
log="$out/hip-vs-cublas.log"
steps=" ${STEPS:-torch cuda variants ncu base} "
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
has() { [[ "$steps" == *" $1 "* ]]; }
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv 2>&1 | tee -a "$log"
perf() {  # perf NAME BINARY ARGS...
  local name=$1 bin=$2; shift 2
  say "$name: $bin smoke --profile perf $*"
  local s e; s=$(date +%s.%N)
  timeout 200 "$bin" smoke --profile perf --json --no-progress --out /tmp/greta-smoke "$@" \
    > "$out/$name.json" 2> /tmp/$name.err
  local rc=$?; e=$(date +%s.%N)
  say "$name: exit $rc in $(python3 -c "print(f'{$e-$s:.1f}')") s"
  tail -n 25 /tmp/$name.err >> "$log"
}
if has torch; then
  say "torch_ref.py"
  PYTHONUNBUFFERED=1 timeout 150 python3 scripts/gpu/torch_ref.py > "$out/torch_ref.json" 2>> "$log" || say "torch_ref failed"
fi
has cuda && perf cuda-perf $dir/greta --backend cuda
if has variants; then
  say "variants (nvcc, same sources)"
  OUT="$out" timeout 240 bash scripts/gpu/hip_variants.sh run $dir > /dev/null 2>&1 || say "variants: exit $?"
fi
if has ncu && [[ -x $dir/bin/v1 ]]; then
  say "ncu: gemm_f16 / gemm_f32 4096 (one launch each)"
  g16=$(awk '$2=="gemm16"{print $1; exit}' $dir/bin/list); g32=$(awk '$2=="gemm32"{print $1; exit}' $dir/bin/list)
  for v in "$g16 gemm16 greta_gemm_f16" "$g32 gemm32 greta_gemm_f32"; do
    set -- $v
    [[ $# -eq 3 ]] || continue
    timeout 120 ncu --clock-control none -k "$3" -c 1 -s 3 --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats \
      $dir/bin/v$1 $2 >> "$out/ncu.txt" 2>&1 || say "ncu $3: exit $?"
  done
fi
has base && [[ -x $dir/greta-base ]] && perf base-perf $dir/greta-base --backend cuda
if has vulkan; then
  if ! ldconfig -p | grep -q libvulkan.so.1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && \
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  GRETA_TUNING_CACHE=/tmp/greta-tuning perf vulkan-perf $dir/greta --backend vulkan
fi
files=()
for f in cuda-perf base-perf vulkan-perf; do [[ -s "$out/$f.json" ]] && files+=("$out/$f.json"); done
if [[ -s "$out/torch_ref.json" && ${#files[@]} -gt 0 ]]; then
  for f in "${files[@]}"; do echo "# $(basename "$f")"; python3 scripts/gpu/ratio.py "$out/torch_ref.json" "$f"; done \
    > "$out/ratio.txt" 2>&1
  cat "$out/ratio.txt"
fi
[[ -s "$out/variants.log" ]] && cat "$out/variants.log"
say "done"
