# Sourced by scripts/test.sh: the suite as named steps, each one's start and wall seconds, and
# a table of every step at the end, also when one fails (the script still exits with that
# step's status). Steps bound by the network or the disk (apt, mmdebstrap, downloads) run in the
# background beside the compile; each one's output goes to its log and is printed when it is
# awaited, and a background step that failed ends the run at the next step with its own status.
#
#   step NAME CMD [ARG...]              CMD in the foreground
#   tests NAME CMD [ARG...]             the same, for `cargo test`: its output is also kept, and
#                                       the table gets libtest's time of each test binary
#   spawn NAME [--after NAME2] CMD [ARG...]
#                                       CMD in the background, in its own session (so that it
#                                       can be stopped with everything it started), output in
#                                       $steps_dir/NAME.log; --after: once NAME2 has passed
#   await NAME                          waits for NAME; its output; its failure is the run's
#   steps_cleanup CMD                   run CMD (a string) when the script exits
# CMD must be a program (a script, cargo, env ...), not a function of the calling script: the
# background ones run in a separate bash.

steps_dir=target/test-steps
rm -rf "$steps_dir"
mkdir -p "$steps_dir"
steps_dir=$(cd "$steps_dir" && pwd)
# Now, as seconds since the epoch (EPOCHREALTIME with a point whatever the locale).
_steps_t() { local t=$EPOCHREALTIME; echo "${t/,/.}"; }
_steps_t0=$(_steps_t)
_steps_rows=()    # "name|started|seconds|status", in the order they ended
_steps_now=""     # the foreground step under way
_steps_now_t0=""
_steps_now_out=""  # its kept output (tests)
_steps_cleanup=()
declare -A _steps_pid=()

# Seconds from the EPOCHREALTIME $1 to $2 (default: now), one decimal.
_steps_secs() { awk -v a="$1" -v b="${2:-$(_steps_t)}" 'BEGIN { printf "%.1f", b - a }'; }
# The wall clock (UTC) of an EPOCHREALTIME.
_steps_clock() { date -u -d "@${1%.*}" +%H:%M:%S; }
_steps_say() { echo "test.sh: ── $*" >&2; }

step() {
  local name=$1
  shift
  _steps_check_background
  _steps_now=$name
  _steps_now_t0=$(_steps_t)
  _steps_say "$name: started $(_steps_clock "$_steps_now_t0")"
  rm -f "$steps_dir/$name.cpu"
  # In a bash of its own, whose `times` after CMD is the CPU time of everything CMD ran (its
  # second line: the children's; not in a pipeline, whose subshell would have none).
  bash -c 'rc=0; "$@" || rc=$?; times >"$0"; exit "$rc"' "$steps_dir/$name.cpu" "$@"
  _steps_rows+=("$name|$(_steps_clock "$_steps_now_t0")|$(_steps_secs "$_steps_now_t0")|$(_steps_cpu "$name")|ok")
  _steps_now=""
  _steps_now_out=""
}

tests() {
  local name=$1
  shift
  # stdout and stderr together, in order: cargo says which binary runs (stderr) before the
  # binary's own lines (stdout).
  _steps_now_out=$steps_dir/$name.out
  step "$name" bash -c 'set -o pipefail; "$@" 2>&1 | tee "$0"' "$_steps_now_out" "$@"
  _steps_binaries "$steps_dir/$name.out"
}

# CPU seconds (user + system) a step's processes used, from the second line of `times`
# ("0m1.5s 0m0.2s"); "-" when it did not finish.
_steps_cpu() {
  if [[ ! -s "$steps_dir/$1.cpu" ]]; then
    echo -
    return 0
  fi
  awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }; printf "%.1f", s }' \
    "$steps_dir/$1.cpu"
}

# One row per test binary of a `cargo test` output: libtest's own "finished in" figure.
_steps_binaries() {
  local row
  while IFS= read -r row; do
    _steps_rows+=("$row")
  done < <(awk '
    # "Running unittests src/lib.rs (target/debug/deps/greta_probe-0123abcd)": the crate is
    # the binary name less its hash; an integration test binary (tests/it/main.rs, its name
    # "it") belongs to the crate whose unit tests ran just before it.
    /^ +Running / {
      bin = $NF; gsub(/[()]/, "", bin); sub(/.*\//, "", bin); sub(/-[0-9a-f]+$/, "", bin)
      if ($2 == "unittests") { crate = bin; what = crate " " $3 } else { what = crate " " $2 }
      next
    }
    /^ +Doc-tests / { what = $2 " doc-tests"; next }
    # "Finished `test` profile [...] target(s) in 2m 16s": the compile, as cargo counts it.
    /^ +Finished / && match($0, / in [0-9hms. ]+$/) {
      t = substr($0, RSTART + 4); secs = 0
      n = split(t, parts, " ")
      for (i = 1; i <= n; i++) {
        v = parts[i] + 0; u = substr(parts[i], length(parts[i]))
        secs += (u == "h") ? v * 3600 : (u == "m") ? v * 60 : v
      }
      if (secs >= 0.5) printf "  compile (cargo)||%.1f||cargo, %s\n", secs, t
    }
    /^test result: / && match($0, /finished in [0-9.]+s/) {
      secs = substr($0, RSTART + 12, RLENGTH - 13)
      if (secs + 0 >= 0.5) printf "  %s||%.1f||libtest, this binary\n", what, secs
    }
  ' "$1")
}

spawn() {
  local name=$1 after=""
  shift
  if [[ "${1:-}" == "--after" ]]; then
    after=$2
    shift 2
  fi
  _steps_say "$name: started in the background $(_steps_clock "$(_steps_t)")${after:+, once $after has passed} (log: $steps_dir/$name.log)"
  setsid bash -c '
    d=$1 name=$2 after=$3
    shift 3
    if [[ -n $after ]]; then
      while [[ ! -e $d/$after.rc ]]; do sleep 1; done
      if [[ $(cat "$d/$after.rc") != 0 ]]; then
        echo "not started: $after failed"
        echo 125 >"$d/$name.rc"
        exit 125
      fi
    fi
    t=$EPOCHREALTIME; echo "${t/,/.}" >"$d/$name.start"
    rc=0
    "$@" || rc=$?
    t=$EPOCHREALTIME; echo "${t/,/.}" >"$d/$name.end"
    times >"$d/$name.cpu"
    echo "$rc" >"$d/$name.rc.tmp"
    mv "$d/$name.rc.tmp" "$d/$name.rc"
    exit "$rc"
  ' _ "$steps_dir" "$name" "$after" "$@" >"$steps_dir/$name.log" 2>&1 </dev/null &
  _steps_pid[$name]=$!
}

await() {
  local name=$1 rc=0 t
  t=$(_steps_t)
  local pid=${_steps_pid[$name]:?await: $name was not spawned}
  _steps_say "$name: waiting for the background step"
  wait "$pid" || rc=$?
  unset "_steps_pid[$name]"
  local waited
  waited=$(_steps_secs "$t")
  {
    echo "test.sh: ┌ $name (background), its output:"
    sed 's/^/test.sh: │ /' "$steps_dir/$name.log"
    echo "test.sh: └ $name: exit $rc"
  } >&2
  local started="-" secs="-"
  if [[ -f "$steps_dir/$name.start" ]]; then
    started=$(_steps_clock "$(cat "$steps_dir/$name.start")")
    secs=$(_steps_secs "$(cat "$steps_dir/$name.start")" "$(cat "$steps_dir/$name.end" 2>/dev/null || _steps_t)")
  fi
  local status="ok"
  ((rc == 0)) || status="FAILED (exit $rc)"
  _steps_rows+=("$name (background)|$started|$secs|$(_steps_cpu "$name")|$status, waited for it ${waited} s")
  if ((rc != 0)); then
    _steps_say "$name failed (exit $rc): its output is above and in $steps_dir/$name.log"
    exit "$rc"
  fi
}

# A background step that already failed ends the run now rather than at its await.
_steps_check_background() {
  local n
  for n in "${!_steps_pid[@]}"; do
    if [[ -f "$steps_dir/$n.rc" && "$(cat "$steps_dir/$n.rc")" != 0 ]]; then
      await "$n"
    fi
  done
}

steps_cleanup() { _steps_cleanup+=("$1"); }

_steps_finish() {
  local rc=$? n c name started secs cpu status
  set +e  # the table is printed whatever fails while it is made
  if [[ -n "$_steps_now" ]]; then
    _steps_rows+=("$_steps_now|$(_steps_clock "$_steps_now_t0")|$(_steps_secs "$_steps_now_t0")|$(_steps_cpu "$_steps_now")|FAILED (exit $rc)")
    if [[ -n "$_steps_now_out" && -f "$_steps_now_out" ]]; then
      _steps_binaries "$_steps_now_out"
    fi
  fi
  # Background steps still running when the run ends: stopped with what they started.
  for n in "${!_steps_pid[@]}"; do
    kill -TERM -- "-${_steps_pid[$n]}" 2>/dev/null || true
    wait "${_steps_pid[$n]}" 2>/dev/null || true
    _steps_rows+=("$n (background)|-|-|-|stopped unfinished (log: $steps_dir/$n.log)")
  done
  for c in "${_steps_cleanup[@]}"; do
    eval "$c" || true
  done
  {
    echo
    echo "test.sh: steps (wall and CPU seconds; background steps ran beside the foreground ones):"
    for c in "step|started (UTC)|wall s|CPU s|status" "${_steps_rows[@]}" \
      "total|$(_steps_clock "$_steps_t0")|$(_steps_secs "$_steps_t0")||exit $rc"; do
      IFS='|' read -r name started secs cpu status <<<"$c"
      printf '  %-46s %-13s %8s %7s  %s\n' "$name" "$started" "$secs" "$cpu" "$status"
    done
  } >&2
  exit "$rc"
}
trap _steps_finish EXIT
# Stopped from outside (a CI timeout, Ctrl-C): the table still comes, and the status says so.
trap 'exit 143' TERM
trap 'exit 130' INT
