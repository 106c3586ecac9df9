#!/usr/bin/env bash
# Runs ON an NVIDIA GPU machine through the device tool with the portable release binary (the one
# scripts/release.sh puts in dist/, glibc 2.28, zig-linked): one batched check of the
# merged tree. Carry ["dist"] and run: bash scripts/gpu/final.sh
#   1. the tarball's greta, unpacked alone: doctor --json, lock list
#   2. smoke --backend cuda --profile default (HIP backend code through its CUDA twin)
#   3. smoke --backend cuda --device all --profile health --oneline --prom (fleet path)
#   4. smoke --profile frameworks --python python3, then with CUDA_VISIBLE_DEVICES=
#   5. an injected hang (test.slow, --timeout 2): ends within limit + 1 s, nothing left
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-final-out}
mkdir -p "$out"
log="$out/final.log"
work=$(mktemp -d)
tar -C "$work" -xzf dist/greta-*-x86_64-unknown-linux-gnu.tar.gz
G=$(ls "$work"/greta-*/greta)
export XDG_DATA_HOME="$work/data" XDG_CACHE_HOME="$work/cache" GRETA_KERNEL_CACHE="$work/kernels"
say() { echo "== $*" | tee -a "$log" >&2; }
timed() { local s e rc; s=$(date +%s.%N); "$@"; rc=$?; e=$(date +%s.%N); say "exit $rc in $(python3 -c "print(f'{$e-$s:.2f}')") s"; return 0; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee -a "$log"
say "ldd (no GPU library may be linked)"; ldd "$G" 2>&1 | tee -a "$log"
say "doctor --json (summary)"
timed "$G" doctor --json > "$out/doctor.json" 2>> "$log"
python3 -c "import json;r=json.load(open('$out/doctor.json'));print([ (g.get('vendor'),g.get('name')) for g in r['facts']['gpus']]);print([f['id'] for f in r['findings']])" 2>&1 | tee -a "$log"
"$G" lock list 2>&1 | head -2 | tee -a "$log"
say "smoke --backend cuda --profile default"
timed "$G" smoke --backend cuda --profile default --json > "$out/cuda-default.json" 2> "$out/cuda-default.txt"
tail -n 16 "$out/cuda-default.txt" | tee -a "$log"
say "smoke --backend cuda --device all --profile health --oneline --no-save --prom"
timed "$G" smoke --backend cuda --device all --profile health --oneline --no-save --prom "$out/greta.prom" > "$out/health.line" 2> "$out/health.txt"
cat "$out/health.line" | tee -a "$log"; head -n 12 "$out/greta.prom" | tee -a "$log"
py=$(command -v python3)
say "smoke --profile frameworks --python $py"
timed "$G" smoke --profile frameworks --python "$py" --seed 1 --json > "$out/fw-gpu.json" 2> "$out/fw-gpu.txt"
tail -n 22 "$out/fw-gpu.txt" | tee -a "$log"
say "CUDA_VISIBLE_DEVICES= smoke --profile frameworks --python $py"
timed env CUDA_VISIBLE_DEVICES= "$G" smoke --profile frameworks --python "$py" --seed 1 --json > "$out/fw-cpu.json" 2> "$out/fw-cpu.txt"
tail -n 8 "$out/fw-cpu.txt" | tee -a "$log"
say "injected hang: --backend cuda --gate test.slow --timeout 2"
timed env GRETA_SMOKE_TEST_GATES=1 "$G" smoke --backend cuda --gate test.slow --timeout 2 --no-save > "$out/hang.txt" 2>&1
tail -n 6 "$out/hang.txt" | tee -a "$log"
left=$(pgrep -a -f "$G" || true)
if [[ -n "$left" ]]; then say "FAIL: greta processes left: $left"; else say "no greta process left"; fi
