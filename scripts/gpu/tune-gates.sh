#!/usr/bin/env bash
# `greta smoke --tune --no-save` of the gates named, on each backend of
# TUNE_BACKENDS (default "vulkan cuda"): every candidate's median device
# time beside the built-in plan's, each checked against its reference.
# What a planner's default should be is read from this table.
# Prepare here: cargo build --release -p greta, the binary at
#   .device/fusion/greta (GRETA overrides), scripts/gpu/prepare-loader.sh (.gl)
# Run with carry [".device/fusion", ".gl"] (or beside others, batch.sh):
#   bash scripts/gpu/tune-gates.sh GATE...
# TUNE_LIMIT_S bounds each backend's sweep (default 120 s).
# Results in $OUT: tune-gates.log, BACKEND-tune.json, tune-gates.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-tune-gates-out}
mkdir -p "$out"
log="$out/tune-gates.log"
. scripts/gpu/lib.sh
greta=${GRETA:-.device/fusion/greta}
gpu_env
vulkan_env
export GRETA_KERNEL_CACHE=/tmp/greta-kernels XDG_DATA_HOME=/tmp/greta-data XDG_CACHE_HOME=/tmp/greta-cache
gates=()
for g in "$@"; do gates+=(--gate "$g"); done
for b in ${TUNE_BACKENDS:-vulkan cuda}; do
  say "$b: greta smoke --tune --no-save ${gates[*]}"
  GRETA_TUNING_CACHE=/tmp/greta-tune-$b timeout "${TUNE_LIMIT_S:-120}" "$greta" smoke --tune --no-save \
    --json --no-progress --backend "$b" "${gates[@]}" > "$out/$b-tune.json" 2> "/tmp/$b-tune.err"
  say "$b: exit $?"
  tail -n 8 "/tmp/$b-tune.err" >> "$log"
done
python3 - "$out" ${TUNE_BACKENDS:-vulkan cuda} <<'PY' 2>&1 | tee "$out/tune-gates.txt" | tee -a "$log"
import json, os, sys
out, backends = sys.argv[1], sys.argv[2:]
print("gate | backend | candidate | kernel | median | vs built-in | check")
for b in backends:
    try:
        d = json.load(open(os.path.join(out, f"{b}-tune.json")))
    except Exception as e:
        print(f"{b}: unreadable ({e})")
        continue
    for t in d.get("gates", []):
        if t.get("skipped"):
            print(f"{t['gate']} | {b} | skipped: {t['skipped']}")
            continue
        cands = t.get("candidates", [])
        base = cands[0].get("median_ns") if cands else None
        for i, c in enumerate(cands):
            ran = c.get("ran") or c.get("asked") or {}
            knobs = " ".join(f"{k}={v}" for k, v in sorted(ran.items())) or "-"
            ns = c.get("median_ns")
            rel = f"{ns / base:.3f}" if ns and base else "-"
            ok = "ok" if c.get("correct") else f"WRONG/ERROR: {c.get('reason')}"
            what = "built-in" if i == 0 else "asked"
            t_us = f"{ns / 1e3:.1f} us" if ns else "-"
            print(f"{t['gate']} | {b} | {what} {knobs} | {c.get('kernel')} | {t_us} | {rel} | {ok}")
PY
say done
