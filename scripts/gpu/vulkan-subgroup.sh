#!/usr/bin/env bash
# Vulkan perf gates before and after per-pipeline subgroup sizes (requiredSubgroupSize, the
# `wave` tuning key): two greta release binaries, the same call, interleaved on the same warm
# GPU (old, new, old, new), then the per-gate median time of each and new/old.
# On NVIDIA (one subgroup size, 32) the planner requires no size and plans as before, so every
# gate must come out within noise; the check here is that nothing got slower.
# Prepare here (the folder travels, not this checkout):
#   git stash / checkout the old commit; cargo build --release -p greta; xz -c target/release/greta > DIR/old.xz
#   the new commit:                       cargo build --release -p greta; xz -c target/release/greta > DIR/new.xz
#   cp scripts/gpu/vulkan-subgroup.sh DIR/; scripts/gpu/prepare-loader.sh   (the Vulkan loader debs in .gl)
# Run from the repository root with carry [DIR, ".gl"]:
#   bash DIR/vulkan-subgroup.sh DIR            (ROUNDS=1 for one pair when time is short)
# Results in $OUT: subgroup.tgz (the log, each run's JSON and stderr) and subgroup.log (the log
# with the per-gate comparison).
set -uo pipefail
. scripts/gpu/lib.sh
begin subgroup "${1:?usage: vulkan-subgroup.sh DIR (holding old[.xz] and new[.xz])}"
vulkan_env
for b in old new; do
  [[ -x "$dir/$b" ]] || { say "missing $dir/$b (or $b.xz)"; exit 2; }
done
"$dir/new" doctor --json > "$out/doctor.json" 2> "$out/doctor.err"
say "doctor: exit $?"
# The perf profile without its 30 s stress gate (a soak, not a rate that the subgroup size
# changes); 3 clean repeats each.
# GATES="id id ..." runs only those (a shorter call); else every perf gate but the stress soak.
gates=()
for g in ${GATES:-}; do gates+=(--gate "$g"); done
(( ${#gates[@]} )) || while read -r g; do
  [[ -n "$g" && "$g" != stress.* ]] && gates+=(--gate "$g")
done < <("$dir/new" smoke --list-gates --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("\n".join(next(p["gates"] for p in d["profiles"] if p["name"] == "perf")))')
say "${#gates[@]} gate arguments"
rounds=${ROUNDS:-2}
for r in $(seq 1 "$rounds"); do
  for b in old new; do
    left=$((560 - (SECONDS - start)))
    if (( left < 60 )); then say "$b round $r: skipped, $left s left"; continue; fi
    smoke_run "$dir" "$b" "perf$r" "$(( left < 240 ? left : 240 ))" "$out" \
      --backend vulkan --profile perf --repeat 3 "${gates[@]}"
    gate_lines "$out/$b-perf$r.json"
  done
done
python3 - "$out" <<'PY' | tee -a "$log"
import glob, json, os, statistics, sys
out = sys.argv[1]
times = {}  # (bin, gate) -> [median_us per round]
kernels = {}
for f in sorted(glob.glob(os.path.join(out, "*-perf*.json"))):
    b = os.path.basename(f).split("-")[0]
    try:
        d = json.load(open(f))
    except Exception as e:
        print("%s: no result (%s)" % (f, e)); continue
    for dev in d.get("devices", []):
        for g in dev.get("gates", []):
            t = (g.get("metrics") or {}).get("time_median_us")
            if t is None or g.get("status") != "pass":
                continue
            times.setdefault((b, g["id"]), []).append(t)
            kernels[(b, g["id"])] = g.get("kernel")
ids = sorted({i for (_, i) in times})
worst = 0.0
print("%-34s %-24s %-24s %12s %12s %7s" % ("gate", "old kernel", "new kernel", "old us", "new us", "new/old"))
for i in ids:
    o, n = times.get(("old", i)), times.get(("new", i))
    if not o or not n:
        print("%-34s missing in %s" % (i, "old" if not o else "new")); continue
    mo, mn = min(o), min(n)
    r = mn / mo
    worst = max(worst, r)
    print("%-34s %-24s %-24s %12.1f %12.1f %7.3f" % (i, kernels.get(("old", i)), kernels.get(("new", i)), mo, mn, r))
print("slowest new/old: %.3f (best of each binary's rounds)" % worst)
PY
say "done after $((SECONDS - start)) s"
tar -C "$out" -czf "$final/subgroup.tgz" .
