#!/usr/bin/env bash
# Runs ON an NVIDIA GPU machine through the device tool: the framework gates against the torch, triton and jax
# installed there, once as the machine is and once with CUDA_VISIBLE_DEVICES= (every gate must
# then fail, saying the frameworks ran on the CPU). Builds nothing there.
# Prepare here:  cargo build --release -p greta
# Run through the device tool with carry ["target/release/greta"] and the command
#   bash scripts/gpu/frameworks.sh
# Results land in $OUT (or ./frameworks-out): frameworks.log (everything printed),
# gpu.json / cpu.json (greta.smoke/v1) and the dated result files under results/.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-frameworks-out}
mkdir -p "$out/results"
log="$out/frameworks.log"
greta=${GRETA:-target/release/greta}
py=$(command -v python3)
{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  "$py" -c 'import sys, torch, triton, jax; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__, "jax", jax.__version__)'
  echo "== greta smoke --profile frameworks --python $py"
} >> "$log" 2>&1
start=$(date +%s.%N)
"$greta" smoke --profile frameworks --python "$py" --seed 1 --json --out "$out/results" > "$out/gpu.json" 2>> "$log"
echo "exit $? in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s" >> "$log"
echo "== CUDA_VISIBLE_DEVICES= greta smoke --profile frameworks --python $py" >> "$log"
start=$(date +%s.%N)
CUDA_VISIBLE_DEVICES= "$greta" smoke --profile frameworks --python "$py" --seed 1 --json --out "$out/results" > "$out/cpu.json" 2>> "$log"
echo "exit $? in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s" >> "$log"
cat "$log"
