#!/usr/bin/env bash
# Doctor benchmark (not a test): the wall time of a full live `greta doctor`
# (every check, the HIP child included) of two greta binaries, run in turn
# (A B A B ...) so both meet the same machine load; prints each one's
# median, min and max and the median of the per-pair ratios B/A.
# usage: scripts/bench/doctor-live.sh BEFORE AFTER [RUNS]   (default 30 runs after 3 warm-ups)
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BEFORE_GRETA AFTER_GRETA [RUNS]" >&2; exit 2; }
exec python3 - "$@" <<'PY'
import statistics, subprocess, sys, time
a, b = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 30
def once(exe):
    t = time.perf_counter()
    subprocess.run([exe, "doctor"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t) * 1000
for _ in range(3):
    once(a); once(b)
ta, tb = [], []
for _ in range(runs):
    ta.append(once(a)); tb.append(once(b))
for name, t in (("before", ta), ("after", tb)):
    print(f"{name}: median {statistics.median(t):.1f} ms (min {min(t):.1f}, max {max(t):.1f}) over {runs} runs")
print(f"after/before, median of pairs: {statistics.median(y / x for x, y in zip(ta, tb)):.3f}")
PY
