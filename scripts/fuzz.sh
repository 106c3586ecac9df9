#!/usr/bin/env bash
# Coverage-guided fuzzing of greta's input parsers and planner (cargo-afl).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Builds fuzz/ with AFL++ instrumentation (fuzz/target, outside the
# workspace build), writes each target's seed corpus from the repository's
# real fixtures and saved regressions (fuzz/corpus/TARGET), runs afl-fuzz for SECONDS per target
# (default 30) and prints one line per target: executions, paths, crashes,
# hangs. Exit 0 when no target found a crash or hang, 1 when one did (the
# inputs are under fuzz/out/TARGET/default/{crashes,hangs}), 2 when the
# tools are missing. Needs: cargo install cargo-afl && cargo afl config --build.
# docs/reliability.md: running longer, and what each target found.
#
#   scripts/fuzz.sh --replay TARGET FILE...
#
# Runs TARGET on saved inputs (an AFL++ crash or hang, a regression) with
# the harness built by plain cargo, without AFL++'s instrumentation
# (fuzz/target/plain), each in a fresh process: its wall and CPU time and
# peak memory. This is how an AFL++ "hang" is judged against the 1 s bar
# (exit 1 when an input took longer; --limit-ms N after --replay moves it).
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."

if [[ ${1:-} == --replay ]]; then
  shift
  (cd fuzz && RUSTFLAGS="--cfg no_fuzzing" CARGO_TARGET_DIR=target/plain \
    cargo build --release --quiet --bin replay)
  exec fuzz/target/plain/release/replay "$@"
fi
SECS="${1:-30}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(from_text sysroot lock_files data_files gemm_plan cache_paths report lock_markers)
# afl-fuzz limits per target (default -t 5000: 5 s an input). The bar of
# report and lock_markers: no input over 1 s (an AFL++ "hang" is then judged
# uninstrumented: --replay above), no allocation over 1 GB (every harness's
# allocator, fuzz/src/lib.rs; for report also -m, its address space).
declare -A LIMITS=([report]="-t 1000 -m 1024" [lock_markers]="-t 1000")

if ! cargo afl --version >/dev/null 2>&1; then
  echo "fuzz.sh: cargo-afl missing: cargo install cargo-afl && cargo afl config --build" >&2
  exit 2
fi

(cd fuzz && cargo afl build --release --quiet)

# Each target's seed corpus (the repository's real fixtures and
# fuzz/regressions/TARGET), from the list the CI replay test uses too
# (fuzz-targets/src/seeds.rs).
fuzz/target/release/seeds fuzz/corpus "${TARGETS[@]}" >/dev/null

status=0
printf '%-11s %8s %12s %9s %8s %7s %6s\n' target seconds execs execs/s paths crashes hangs
for t in "${TARGETS[@]}"; do
  out="fuzz/out/$t"
  mkdir -p fuzz/out
  rm -rf "$out"
  # (No comment may sit inside this command: after a line continuation it
  # ends the command there, and the AFL_* settings never reached afl-fuzz.)
  # shellcheck disable=SC2086 # the limits are words
  AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
    AFL_SKIP_CRASHES=1 AFL_QUIET=1 \
    cargo afl fuzz -V "$SECS" ${LIMITS[$t]:--t 5000} -i "fuzz/corpus/$t" -o "$out" "fuzz/target/release/$t" \
    >"fuzz/out/$t.log" 2>&1 || { echo "fuzz.sh: afl-fuzz failed for $t (fuzz/out/$t.log)" >&2; tail -20 "fuzz/out/$t.log" >&2; status=1; continue; }
  stats="$out/default/fuzzer_stats"
  get() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
  crashes=$(get saved_crashes) hangs=$(get saved_hangs)
  printf '%-11s %8s %12s %9s %8s %7s %6s\n' "$t" "$(get run_time)" "$(get execs_done)" \
    "$(get execs_per_sec)" "$(get corpus_count)" "$crashes" "$hangs"
  if [ "${crashes:-0}" != 0 ] || [ "${hangs:-0}" != 0 ]; then status=1; fi
done
exit $status
