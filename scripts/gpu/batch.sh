#!/usr/bin/env bash
# Several scripts of this folder in one device call, under one deadline: a
# machine's start costs a minute or more and a call may run 600 s, so the
# measurements that need the same binaries go together. Each entry is a
# script of this folder with its arguments; it runs with its own $OUT (a
# scratch folder), under `timeout` of what is left of the budget, and what
# it wrote comes back packed as NAME.tgz (a call returns at most 8 files).
# An entry that the time left cannot fit (under 30 s) is skipped and said
# so; one that overruns is killed at the deadline, and the rest still get
# their log lines. NAME is the entry's number and script, e.g. 2-host-copy.
# usage: [BUDGET_S=560] bash scripts/gpu/batch.sh 'decode-fusion.sh' 'host-copy.sh .device/hc' ...
# Results in $OUT: batch.log (each entry's limit, exit status, wall seconds
# and the last lines it printed) and one NAME.tgz per entry that ran.
set -uo pipefail
budget=${BUDGET_S:-560}
final=${OUT:-batch-out}
mkdir -p "$final"
log="$final/batch.log"
start=$SECONDS
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee -a "$log"
i=0
for entry in "$@"; do
  i=$(( i + 1 ))
  name=${entry%% *}
  # The entry's number keeps two runs of one script (one per backend) apart.
  name="$i-${name%.sh}"
  left=$(( budget - (SECONDS - start) ))
  if (( left < 30 )); then
    say "$entry: skipped, ${left} s of the budget left"
    continue
  fi
  sub=$(mktemp -d)
  t0=$SECONDS
  say "$entry: start, limit ${left} s"
  OUT=$sub timeout --kill-after=10 "$left" bash -c "bash scripts/gpu/$entry" > "$sub/stdout.txt" 2>&1
  rc=$?
  say "$entry: exit $rc after $(( SECONDS - t0 )) s"
  tail -n 40 "$sub/stdout.txt" >> "$log"
  tar -C "$sub" -czf "$final/$name.tgz" .
done
say "batch: $(( SECONDS - start )) s of ${budget} s"
