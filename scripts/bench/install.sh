#!/usr/bin/env bash
# Install benchmarks (not a test): greta vs the tools it is measured against.
#   1. cold fetch: `greta bundle` with an empty cache vs curl (same files,
#      same loopback server, same parallelism)
#   2. warm rebuild: `greta install --reinstall` with a warm cache (plan,
#      verification, venv, uv, import check, receipt, swap) vs `uv venv` +
#      `uv pip install --no-index --no-deps` of the same files into a new
#      venv (uv cache warm)
#   3. warm no-op: `greta install` when the env is up to date (plan +
#      verification of receipt, interpreter, dist-infos and RECORD sizes) vs
#      `uv pip install --no-index --no-deps` of the same files into the
#      existing venv (uv's audit); also `greta install` with the profile
#      chosen by the probe (no --profile)
# Runs of greta and uv alternate (scripts/bench/warm.py); medians of RUNS.
# Synthetic wheels shaped like torch/triton/jax (scripts/bench/make_wheels.py).
# usage: scripts/bench/install.sh [SCALE] [RUNS]     (SCALE 1.0 = ~330 MiB)
# Prints a markdown table; needs python3, uv, curl, awk; builds greta --release
# (into $CARGO_TARGET_DIR when set).
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=${1:-1.0}
runs=${2:-3}
work=$(mktemp -d /tmp/greta-bench.XXXXXX)
trap 'kill ${srv_pid:-0} 2>/dev/null || true; rm -rf "$work"' EXIT
command -v uv >/dev/null || { echo "bench: uv not on PATH" >&2; exit 2; }
# The real uv binary, not a pyenv shim script, for both sides.
uv_bin=$(python3 -c "import uv; print(uv.find_uv_bin())" 2>/dev/null || command -v uv)
export PATH="$(dirname "$uv_bin"):$PATH"
cargo build --release -p greta -q
greta=${CARGO_TARGET_DIR:-$PWD/target}/release/greta
# The real interpreter, not a pyenv shim: both sides then start the same binary.
py=$(python3 -c "import sys; print(sys.executable)")

port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$py scripts/bench/make_wheels.py "$work/srv" "http://127.0.0.1:$port" "$scale" >/dev/null
(cd "$work/srv" && exec $py -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
srv_pid=$!
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done
bytes=$(du -cb "$work"/srv/files/*.whl | tail -1 | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN{printf "%.0f", b/1048576}')

export GRETA_LOCK_DIR=$work/srv/lock HOME=$work/home XDG_CACHE_HOME=$work/cache XDG_DATA_HOME=$work/data UV_CACHE_DIR=$work/uvcache
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

xy=$($py -c 'import sys; print("%d.%d" % sys.version_info[:2])')
calc() { awk "BEGIN{print $1}"; }
cold_greta=(); cold_greta_wall=(); cold_curl=()
for r in $(seq "$runs"); do
  rm -rf "$work/cache/greta" "$work/bundle" "$work/curl"; mkdir -p "$work/curl"
  t0=$(now); "$greta" bundle --profile cpu --python "$xy" -o "$work/bundle" --json >"$work/bundle.json"; t1=$(now)
  cold_greta+=("$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifest"]["fetch_ms"]/1000)' "$work/bundle.json")")
  cold_greta_wall+=("$(calc "$t1 - $t0")")
  t0=$(now)
  ls "$work/srv/files" | sed "s|^|http://127.0.0.1:$port/files/|" | xargs -P 4 -n 1 sh -c 'curl -fsS -o "$0/$(basename "$1")" "$1"' "$work/curl"
  t1=$(now); cold_curl+=("$(calc "$t1 - $t0")")
done
wheels=$(ls "$work"/srv/files/*.whl)
# shellcheck disable=SC2086
warm=$($py scripts/bench/warm.py "$work" "$runs" "$greta" "$py" $wheels)
cg=$(printf '%s\n' "${cold_greta[@]}" | median); cgw=$(printf '%s\n' "${cold_greta_wall[@]}" | median)
cc=$(printf '%s\n' "${cold_curl[@]}" | median)
echo "| measurement (median of $runs; $mib MiB in 3 wheels, 4000 files; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)) | greta | reference | ratio |"
echo "| --- | --- | --- | --- |"
awk -v g="$cg" -v w="$cgw" -v c="$cc" -v m="$mib" 'BEGIN{printf "| cold fetch from loopback: greta fetch step (whole `greta bundle`: %.2f s) vs curl, 4 parallel | %.2f s (%.0f MiB/s) | %.2f s (%.0f MiB/s) | %.0f%% of curl throughput |\n", w, g, m/g, c, m/c, 100*c/g}'
$py - "$warm" <<'PY'
import json, sys
w = json.loads(sys.argv[1])
def row(what, g, u):
    a, b = w[g], w[u]
    print(f"| {what} | {a['median']:.0f} ms ({a['min']:.0f}-{a['max']:.0f}) | {b['median']:.0f} ms ({b['min']:.0f}-{b['max']:.0f}) | {a['median'] / b['median']:.2f}x |")
steps = ", ".join(f"{k} {v:.0f}" for k, v in w["rebuild_steps_ms"].items())
row(f"warm rebuild: `greta install --reinstall` (plan, venv, uv, import check, receipt, swap; median ms of its steps: {steps}) vs `uv venv` + `uv pip install --no-index --no-deps` into a new venv", "rebuild_greta", "rebuild_uv")
row("warm no-op: `greta install` on the up-to-date env (plan + verification) vs `uv pip install --no-index --no-deps` into the existing venv (audit)", "noop_greta", "noop_uv")
row("warm no-op without --profile (the probe chooses the profile) vs the same uv audit", "noop_auto", "noop_uv")
print(f"(load average after the warm runs: {' '.join(w['load_average'])}; greta and uv runs alternate; times are median (min-max))")
PY
