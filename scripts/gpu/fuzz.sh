#!/usr/bin/env bash
# Long coverage-guided fuzz runs on the device machine's CPUs (16 cores there,
# 2 here); builds nothing there. The GPU is not used: the machine is where
# the cores are.
#
# Prepare here (cargo-afl set up as in docs/reliability.md):
#   scripts/gpu/fuzz.sh --pack        # builds fuzz/ with AFL++, writes .fuzzpack/
# Run there with carry [".fuzzpack"] (under 64 MiB with the tree: leave out
# the targets not run) and the command:
#   bash scripts/gpu/fuzz.sh SECONDS [TARGET=WORKERS ...]
# with SECONDS at least 60 under the call's limit (summing the stats and
# copying crashes take seconds). It runs here too, on this machine's cores
# (FUZZ_WORK and OUT set apart for each run beside another).
# (default: 520 s; sysroot=5 lock_files=3 from_text=3 data_files=1 gemm_plan=1 report=2
# lock_markers=1; naming any TARGET=WORKERS runs only the targets named). More
# workers than cores is refused.
# Each target runs WORKERS afl-fuzz instances (one main, the rest
# secondaries) on tmpfs for SECONDS. Results in $OUT: fuzz.log (a line per
# target: executions, corpus, crashes, hangs, summed over workers) and
# crashes/TARGET/ with any crashing or hanging input.
set -uo pipefail
shopt -s nullglob
cd "$(dirname "$0")/../.."
pack=.fuzzpack
targets=(from_text sysroot lock_files data_files gemm_plan report lock_markers)
# afl-fuzz limits per target (default -t 5000: 5 s an input). The bar of
# report and lock_markers: no input over 1 s, no allocation over 1 GB (every
# harness's allocator, fuzz/src/lib.rs; for report also -m, its address space).
declare -A limits=([report]="-t 1000 -m 1024" [lock_markers]="-t 1000")

if [[ ${1:-} == --pack ]]; then
  set -e
  # cargo-afl compiles for `-C target-cpu=native`: instructions of this
  # machine's CPU that the device machine may lack (the first runs here saw every
  # lock_files "crash" be a SIGILL that did not reproduce on the build
  # machine). RUSTFLAGS come after cargo-afl's own, so this wins; its own
  # target dir keeps the native build of scripts/fuzz.sh.
  (cd fuzz && RUSTFLAGS="-C target-cpu=x86-64-v3" CARGO_TARGET_DIR=target/portable \
    cargo afl build --release --quiet)
  rm -rf "$pack" && mkdir -p "$pack/bin"
  afl=$(dirname "$(find ~/.local/share/afl.rs -name afl-fuzz -type f | head -1)")
  cp "$afl/afl-fuzz" "$pack/bin/"
  # cargo-afl's AFL++ links the libpython it was built with (its Python
  # mutator hook); carry that library, the device machine has another Python.
  mkdir -p "$pack/lib"
  for l in $(ldd "$pack/bin/afl-fuzz" | awk '/libpython/ { print $3 }'); do cp -L "$l" "$pack/lib/"; done
  for t in "${targets[@]}"; do
    strip -o "$pack/bin/$t" "fuzz/target/portable/release/$t"
  done
  fuzz/target/portable/release/seeds "$pack/corpus" >/dev/null
  grep -qxs '/.fuzzpack/' .git/info/exclude || echo '/.fuzzpack/' >> .git/info/exclude
  du -sh "$pack"
  exit 0
fi

secs=${1:-520}
shift || true
declare -A workers=([sysroot]=5 [lock_files]=3 [from_text]=3 [data_files]=1 [gemm_plan]=1 [report]=2 [lock_markers]=1)
if (($# > 0)); then
  for t in "${!workers[@]}"; do workers[$t]=0; done
fi
for a in "$@"; do
  t=${a%%=*} n=${a#*=}
  if [[ -z ${workers[$t]+x} || ! $n =~ ^[0-9]+$ ]]; then
    echo "fuzz.sh: $a: expected TARGET=WORKERS with TARGET one of ${targets[*]}" >&2
    exit 2
  fi
  workers[$t]=$n
done
total=0
for t in "${!workers[@]}"; do total=$((total + workers[$t])); done
if ((total > $(nproc))); then
  echo "fuzz.sh: $total workers on $(nproc) cores would oversubscribe the machine" >&2
  exit 2
fi
out=${OUT:-fuzz-out}
mkdir -p "$out"
log="$out/fuzz.log"
# FUZZ_WORK: afl-fuzz's working directory (default on tmpfs); runs side by
# side on one machine each need their own, since it is emptied first.
work=${FUZZ_WORK:-/dev/shm/greta-fuzz}
rm -rf "$work" && mkdir -p "$work"
export LD_LIBRARY_PATH=$PWD/$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TMPDIR=$work AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
  AFL_SKIP_CRASHES=1 AFL_QUIET=1 AFL_NO_AFFINITY=1
{ echo "host: $(nproc) cores, $(uname -r)"; date -u; } | tee "$log"
pids=()
for t in "${!workers[@]}"; do
  n=${workers[$t]}
  for ((i = 0; i < n; i++)); do
    role=(-S "w$i")
    [[ $i == 0 ]] && role=(-M main)
    # afl-fuzz -V 530 once ran past a 600 s device call (2026-11-29: no
    # summary came back): `timeout` holds each instance to SECONDS and a
    # margin; the stats it wrote last are summed below either way.
    # shellcheck disable=SC2086 # the limits are words
    timeout --kill-after=5 "$((secs + 10))" \
      "$pack/bin/afl-fuzz" "${role[@]}" -V "$secs" ${limits[$t]:--t 5000} -i "$pack/corpus/$t" -o "$work/$t" \
      "$pack/bin/$t" >"$work/$t-$i.log" 2>&1 &
    pids+=($!)
  done
done
wait "${pids[@]}"
printf '%-11s %7s %12s %9s %7s %7s %6s\n' target workers execs execs/s corpus crashes hangs | tee -a "$log"
for t in "${targets[@]}"; do
  ((${workers[$t]:-0} > 0)) || continue
  stats=("$work/$t"/*/fuzzer_stats)
  if ((${#stats[@]} == 0)); then
    echo "$t: afl-fuzz did not start:" | tee -a "$log"
    tail -5 "$work/$t-0.log" | tee -a "$log"
    continue
  fi
  execs=0 rate=0 corpus=0 crashes=0 hangs=0
  for s in "${stats[@]}"; do
    get() { awk -F' *: *' -v k="$1" '$1 == k { print int($2) }' "$s"; }
    execs=$((execs + $(get execs_done))) rate=$((rate + $(get execs_per_sec)))
    crashes=$((crashes + $(get saved_crashes))) hangs=$((hangs + $(get saved_hangs)))
    c=$(get corpus_count); ((c > corpus)) && corpus=$c
  done
  printf '%-11s %7s %12s %9s %7s %7s %6s\n' "$t" "${workers[$t]}" "$execs" "$rate" "$corpus" "$crashes" "$hangs" | tee -a "$log"
  if ((crashes + hangs > 0)); then
    # AFL++'s names hold ':' and ',' (and the signal: sig:06 is an abort,
    # i.e. a Rust panic; sig:11 a segfault): numbered copies travel back,
    # names.txt maps them, and triage.txt says what each does when replayed
    # alone (exit code and the last lines of stderr). At most 8 per target.
    mkdir -p "$out/crashes/$t"
    k=0
    for f in "$work/$t"/*/crashes/id* "$work/$t"/*/hangs/id*; do
      ((k < 8)) || break
      c="$out/crashes/$t/input-$k"
      cp "$f" "$c"
      echo "input-$k ${f#"$work/"}" >> "$out/crashes/$t/names.txt"
      { echo "== input-$k"; timeout 20 "$pack/bin/$t" < "$c" 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"; } \
        >> "$out/crashes/$t/triage.txt"
      k=$((k + 1))
    done
    ls "$work/$t"/*/crashes "$work/$t"/*/hangs | sed -n 's/.*\(sig:[0-9]*\).*/\1/p' | sort | uniq -c \
      | sed "s/^/$t signals: /" | tee -a "$log"
  fi
  [[ -s $work/$t-0.log ]] && tail -3 "$work/$t-0.log" >> "$log"
done
date -u | tee -a "$log"
