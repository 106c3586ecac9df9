#!/usr/bin/env bash
# Runs ON the NVIDIA GPU machine (builds nothing there): greta's library search (libamdhip64,
# libcuda, libnvrtc, libvulkan found without loading them, checked against /proc/self/maps), then
# the CUDA and Vulkan backends opened from that search, each of which must have mapped the search's
# first find; then `greta smoke --profile ultrasafe` on CUDA and on Vulkan through the same loaders.
# Prepare here first:
#   cargo build --release -p greta-runtime --example library_search
#   cargo build --release -p greta
#   mkdir -p .device/libsearch && cp target/release/examples/library_search target/release/greta .device/libsearch/
#   strip .device/libsearch/* && xz -T0 .device/libsearch/greta   (the call carries at most 64 MiB)
#   bash scripts/gpu/prepare-loader.sh   (once: .gl/, the Vulkan loader NVIDIA's ICD needs)
# Then run through the device tool with carry [".device/libsearch", ".gl"] and the command
#   bash scripts/gpu/library-search.sh
# Output lands in $OUT (or ./libsearch-out): search.txt (the example: PASS on its last line),
# smoke-cuda.json, smoke-vulkan.json and their logs.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-libsearch-out}
mkdir -p "$out"
dir=.device/libsearch
log="$out/gpu.txt"
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh
unpack_binaries "$dir"
chmod +x "$dir/library_search" "$dir/greta"
gpu_env       # the nvidia-smi line; GRETA_ENV=/opt/torch/.venv where it is (NVRTC, cuBLAS)
vulkan_env    # the .gl Vulkan loader installed and in ld.so.cache; NVIDIA's ICD only
echo "== library search ==" | tee "$out/search.txt"
timeout 120 "$dir/library_search" 2>&1 | tee -a "$out/search.txt"
echo "exit ${PIPESTATUS[0]}" | tee -a "$out/search.txt"
for b in cuda vulkan; do
  echo "== greta smoke --backend $b --profile ultrasafe ==" | tee "$out/smoke-$b.log"
  timeout 240 "$dir/greta" smoke --backend "$b" --profile ultrasafe --json > "$out/smoke-$b.json" \
    2>> "$out/smoke-$b.log"
  echo "exit $?" | tee -a "$out/smoke-$b.log"
  # Which library the run loaded and why (the device's notes).
  { grep -oE '"[^"]*(libcuda|libvulkan)[^"]*"' "$out/smoke-$b.json" | head -5; } | tee -a "$out/smoke-$b.log"
done
exit 0
