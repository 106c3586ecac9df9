#!/usr/bin/env bash
# Runs ON the NVIDIA GPU machine (builds nothing there): greta's telemetry readers (NVML loaded
# at run time, amdgpu sysfs, PCI-bus/KFD GPU counts, the 100 ms sampler) beside `nvidia-smi -q`
# in the same call, so the two can be compared field by field (power, limit, temperature, SM/mem
# clocks, clocks event reasons, ECC, remapped rows, PCIe generation/width).
# Prepare here first:  cargo build -p greta-runtime --example telemetry
#   && strip -o target/telemetry-example target/debug/examples/telemetry
# Then run through the device tool with carry ["target/telemetry-example"] and the command
#   bash scripts/gpu/telemetry.sh
# Output lands in $OUT (or ./telemetry-out): greta.txt, nvidia-smi.txt, and both on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-telemetry-out}
mkdir -p "$out"
bin=${TELEMETRY_BIN:-target/telemetry-example}
echo "== greta telemetry ($bin) ==" | tee "$out/greta.txt"
"$bin" 2>&1 | tee -a "$out/greta.txt"
echo "== nvidia-smi -q ==" | tee "$out/nvidia-smi.txt"
nvidia-smi -q -d POWER,TEMPERATURE,CLOCK,PERFORMANCE,ECC,ROW_REMAPPER 2>&1 | tee -a "$out/nvidia-smi.txt"
nvidia-smi -q 2>&1 | grep -A12 -i "GPU Link Info" | tee -a "$out/nvidia-smi.txt"
