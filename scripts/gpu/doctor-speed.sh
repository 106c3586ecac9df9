#!/usr/bin/env bash
# On a GPU machine: a full live `greta doctor` of two release binaries
# (before and after a change), and `nvidia-smi -q` beside them, each as
# the median wall time of 30 runs after 3 warm-ups (scripts/bench/doctor-live.sh).
# usage: scripts/gpu/doctor-speed.sh BEFORE_GRETA AFTER_GRETA
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/bench/doctor-live.sh "$1" "$2" 30
if command -v nvidia-smi >/dev/null; then
  python3 - <<'PY'
import statistics, subprocess, time
def once():
    t = time.perf_counter()
    subprocess.run(["nvidia-smi", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000
for _ in range(3):
    once()
t = [once() for _ in range(30)]
print(f"nvidia-smi -q: median {statistics.median(t):.1f} ms (min {min(t):.1f}, max {max(t):.1f}) over 30 runs")
PY
fi
