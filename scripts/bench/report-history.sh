#!/usr/bin/env bash
# Benchmark (not a test): `greta report --history DIR` on a results directory
# of N greta.smoke/v1 results of mixed greta and driver versions (a node of
# 8 GPUs checked again and again), plus a few files it must name and skip
# (another schema, a truncated file). Target: under 1 s for N=500 on the
# 2-core development VM; docs/performance.md has the figures.
# The results are copies of a real lavapipe run (report/tests/data), given
# 8 devices, a time, a greta version, a driver and rates that move.
# usage: scripts/bench/report-history.sh [N] [GRETA]   (default 500, a release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-500}
greta=${2:-}
if [[ -z "$greta" ]]; then
  cargo build --release -q -p greta
  greta=target/release/greta
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" "$n" <<'PY'
import copy, json, random, sys
out, n = sys.argv[1], int(sys.argv[2])
seed = json.load(open("report/tests/data/lavapipe-default.json"))
rng = random.Random(27)
one = seed["devices"][0]
for k in range(n):
    r = copy.deepcopy(seed)
    day, minute = divmod(k * 37, 1440)
    r["started_at"] = "2026-%02d-%02dT%02d:%02d:00Z" % (1 + day // 28 % 12, 1 + day % 28, minute // 60, minute % 60)
    r["greta_version"] = ["0.1.0", "0.2.0", "0.3.0"][min(k * 3 // n, 2)]
    devs = []
    for i in range(8):
        d = copy.deepcopy(one)
        d["index"] = i
        d["device"]["uuid"] = "6d657361-3232-2e33-2e36-0000000000%02d" % i
        d["device"]["driver_info"] = "Mesa 22.3.6" if k < n // 2 else "Mesa 24.2.8"
        for g in d["gates"]:
            m = g.get("metrics")
            if m and m.get("rate"):
                m["rate"] *= rng.uniform(0.9, 1.1) * (0.5 if (i == 5 and k % 50 == 0) else 1.0)
        devs.append(d)
    r["devices"] = devs
    json.dump(r, open("%s/smoke-%05d.json" % (out, k), "w"), indent=2)
for k in range(3):
    json.dump({"schema": "greta.tune/v1", "k": k}, open("%s/tune-%d.json" % (out, k), "w"))
open("%s/truncated.json" % out, "w").write(json.dumps(seed)[:5000])
PY
echo "results: $n runs x 8 devices x $(python3 -c 'import json;print(len(json.load(open("report/tests/data/lavapipe-default.json"))["devices"][0]["gates"]))') gates, $(du -sh "$dir" | cut -f1) in $dir"
"$greta" --version
for i in 1 2 3 4 5; do
  s=$(date +%s.%N)
  "$greta" report --history "$dir" --out "$dir/history.html" 2>/dev/null || true
  e=$(date +%s.%N)
  python3 -c "print('run $i: %.3f s' % ($e - $s))"
done
echo "page: $(du -h "$dir/history.html" | cut -f1)"
