#!/usr/bin/env bash
# The in-run ceilings (cuBLAS found through the machine's torch env) and the stress gate, in one
# call on an NVIDIA GPU, beside torch's HGEMM/SGEMM. Put a release greta at
# .device/ceilings/greta; carry [".device/ceilings"], run: bash scripts/gpu/ceilings.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/ceilings-out}
mkdir -p "$out"
log="$out/run.log"
T0=$(date +%s)
say() { echo "== $(date -u +%H:%M:%S) (+$(( $(date +%s) - T0 )) s) $*" | tee -a "$log"; }
left() { echo $(( 290 - ($(date +%s) - T0) )); }
export GRETA_KERNEL_CACHE=/tmp/k XDG_DATA_HOME=/tmp/d XDG_CACHE_HOME=/tmp/c
G=.device/ceilings/greta
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >> "$log" 2>&1
say "ldd $G"; ldd "$G" >> "$log" 2>&1
SP=$(python3 -c "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))" 2>>"$log")
say "torch site-packages: $SP"
ls -la "$SP"/nvidia/*/lib/libcublas* >> "$log" 2>&1
case "$SP" in
  */lib/python3*/site-packages) ROOT=${SP%/lib/python3*};;
  *) ROOT=/tmp/genv; mkdir -p $ROOT/lib/python3; ln -sfn "$SP" $ROOT/lib/python3/site-packages;;
esac
say "greta env root for the search: $ROOT"
say "torch HGEMM/SGEMM reference"
timeout 40 python3 - > "$out/torch.json" 2>> "$log" <<'PY'
import json, torch
def bench(fn, warm=20, reps=20):
    for _ in range(warm): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1e-3)
    ts.sort(); return ts[len(ts) // 2]
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
r = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda}
for s in (4096, 8192):
    a = torch.randn(s, s, device="cuda", dtype=torch.half); b = torch.randn(s, s, device="cuda", dtype=torch.half)
    r[f"hgemm_f16out_{s}"] = 2 * s**3 / bench(lambda: a @ b) / 1e12
    try:
        r[f"hgemm_f32out_{s}"] = 2 * s**3 / bench(lambda: torch.mm(a, b, out_dtype=torch.float32)) / 1e12
    except Exception as e:
        r[f"hgemm_f32out_{s}"] = str(e)[:200]
    a32, b32 = a.float(), b.float()
    r[f"sgemm_{s}"] = 2 * s**3 / bench(lambda: a32 @ b32, warm=3, reps=5) / 1e12
    del a, b, a32, b32
n = (1 << 30) // 4; x = torch.rand(n, device="cuda"); z = torch.empty_like(x)
r["copy_gbps"] = 2 * n * 4 / bench(lambda: z.copy_(x)) / 1e9
print(json.dumps(r))
PY
cat "$out/torch.json" >> "$log"
say "perf, cuBLAS from the torch env (VIRTUAL_ENV=$ROOT)"
t=$(left); [ "$t" -gt 230 ] && t=230
VIRTUAL_ENV=$ROOT timeout "$t" "$G" smoke --profile perf --backend cuda --json --no-progress --out /tmp/smoke \
  > "$out/perf.json" 2> /tmp/perf.err; say "perf: exit $?"
tail -n 60 /tmp/perf.err >> "$log"
if [ "$(left)" -gt 30 ]; then
  say "gemm ceilings with no env: the system CUDA's cuBLAS"
  env -u VIRTUAL_ENV -u GRETA_ENV timeout 28 "$G" smoke --profile perf --backend cuda --gate gemm_f16.4096 --gate gemm_f32.4096 \
    --json --no-progress --no-save > "$out/toolkit.json" 2> /tmp/tk.err; say "toolkit: exit $?"
  tail -n 30 /tmp/tk.err >> "$log"
fi
if [ "$(left)" -gt 15 ]; then
  say "health short stress"
  VIRTUAL_ENV=$ROOT timeout 14 "$G" smoke --profile health --backend cuda --gate stress.gemm_f16.512 --json --no-progress --no-save \
    > "$out/health.json" 2> /tmp/h.err; say "health: exit $?"
  tail -n 20 /tmp/h.err >> "$log"
fi
say done
