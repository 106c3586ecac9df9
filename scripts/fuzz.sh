#!/usr/bin/env bash
# Coverage-guided fuzzing of greta's input parsers and planner (cargo-afl).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Builds fuzz/ with AFL++ instrumentation (fuzz/target, outside the
# workspace build), writes each target's seed corpus from the repository's
# real fixtures (fuzz/corpus/TARGET), runs afl-fuzz for SECONDS per target
# (default 30) and prints one line per target: executions, paths, crashes,
# hangs. Exit 0 when no target found a crash or hang, 1 when one did (the
# inputs are under fuzz/out/TARGET/default/{crashes,hangs}), 2 when the
# tools are missing. Needs: cargo install cargo-afl && cargo afl config --build.
# docs/reliability.md: running longer, and what each target found.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
SECS="${1:-30}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(from_text sysroot lock_files data_files gemm_plan)

if ! cargo afl --version >/dev/null 2>&1; then
  echo "fuzz.sh: cargo-afl missing: cargo install cargo-afl && cargo afl config --build" >&2
  exit 2
fi

(cd fuzz && cargo afl build --release --quiet)

SEP=$'\n--8<--\n'
corpus() { # TARGET: (re)write the seed corpus from real fixtures
  local t="$1" d="fuzz/corpus/$1" i=0
  rm -rf "$d" && mkdir -p "$d"
  case "$t" in
  from_text)
    # Every captured paste under 256 KiB (AFL++ wants small seeds).
    find probe/tests/fixtures -type f ! -name '*.md' ! -name 'expect.toml' -size -256k |
      sort | while read -r f; do cp "$f" "$d/$(printf %04d $i)"; i=$((i + 1)); done ;;
  sysroot)
    # The synthetic machines, as the harness lays them out (keep in step
    # with FILES in fuzz/src/bin/sysroot.rs).
    local files=(.greta/env .greta/id .greta/dev-nodes .greta/cmd/rocminfo.txt
      .greta/cmd/vulkaninfo.txt .greta/cmd/hipconfig.txt
      sys/class/kfd/kfd/topology/nodes/1/properties
      sys/bus/pci/devices/0000:03:00.0/class sys/bus/pci/devices/0000:03:00.0/vendor
      sys/bus/pci/devices/0000:03:00.0/device etc/group
      etc/vulkan/icd.d/radeon_icd.x86_64.json opt/rocm/.info/version proc/version)
    for m in probe/tests/sysroots/*/; do
      {
        local first=1
        for f in "${files[@]}"; do
          [ $first = 1 ] || printf '%s' "$SEP"
          first=0
          head -c 65536 "$m/$f" 2>/dev/null || true
        done
      } >"$d/$(basename "$m")"
    done ;;
  lock_files)
    { printf '\x00'; cat lock/matrix.toml; } >"$d/matrix"
    for f in lock/pylock.*.toml; do { printf '\x01'; cat "$f"; } >"$d/$(basename "$f")"; done
    { printf '\x02'; cat lock/tools.toml; } >"$d/tools" ;;
  data_files)
    for f in fuzz/seeds/baseline-*.json; do { printf '\x00'; cat "$f"; } >"$d/$(basename "$f")"; done
    { printf '\x01'; cat smoke/data/deny.toml; } >"$d/deny"
    { printf '\x02'; cat smoke/data/floors.toml; } >"$d/floors"
    for f in fuzz/seeds/receipt-*.json; do { printf '\x03'; cat "$f"; } >"$d/$(basename "$f")"; done
    for f in fuzz/seeds/tuning-*.json; do { printf '\x04'; cat "$f"; } >"$d/$(basename "$f")"; done ;;
  gemm_plan)
    cp fuzz/seeds/plan-*.bin "$d/" ;;
  esac
}

status=0
printf '%-11s %8s %12s %9s %8s %7s %6s\n' target seconds execs execs/s paths crashes hangs
for t in "${TARGETS[@]}"; do
  corpus "$t"
  out="fuzz/out/$t"
  mkdir -p fuzz/out
  rm -rf "$out"
  AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
    AFL_SKIP_CRASHES=1 AFL_QUIET=1 \
    cargo afl fuzz -V "$SECS" -t 5000 -i "fuzz/corpus/$t" -o "$out" "fuzz/target/release/$t" \
    >"fuzz/out/$t.log" 2>&1 || { echo "fuzz.sh: afl-fuzz failed for $t (fuzz/out/$t.log)" >&2; tail -20 "fuzz/out/$t.log" >&2; status=1; continue; }
  stats="$out/default/fuzzer_stats"
  get() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
  crashes=$(get saved_crashes) hangs=$(get saved_hangs)
  printf '%-11s %8s %12s %9s %8s %7s %6s\n' "$t" "$(get run_time)" "$(get execs_done)" \
    "$(get execs_per_sec)" "$(get corpus_count)" "$crashes" "$hangs"
  if [ "${crashes:-0}" != 0 ] || [ "${hangs:-0}" != 0 ]; then status=1; fi
done
exit $status
