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
# Runs of greta and uv alternate; medians of RUNS.
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
gi=("$greta" install --profile cpu --python "$py" --no-smoke --installer uv --json)
"${gi[@]}" --reinstall >/dev/null; "${gi[@]}" --reinstall >/dev/null   # warm everything
wheels=$(ls "$work"/srv/files/*.whl)
uv_install() {
  # shellcheck disable=SC2086
  uv pip install -q --python "$work/uvenv/bin/python" --no-index --no-deps $wheels
}
rm -rf "$work/uvenv"; uv venv -q --python "$py" "$work/uvenv"; uv_install   # warm uv too
rebuild_greta=(); rebuild_uv=(); noop_greta=(); noop_uv=(); noop_auto=()
for r in $(seq "$runs"); do
  t0=$(now); "${gi[@]}" --reinstall >"$work/rebuild-$r.json"; t1=$(now)
  rebuild_greta+=("$(calc "$t1 - $t0")")
  # greta hands the replaced env to a detached `rm -rf`; let it finish so
  # it does not slow down the uv run that follows.
  while compgen -G "$work/data/greta/envs/.trash-*" >/dev/null; do sleep 0.01; done
  rm -rf "$work/uvenv"
  t0=$(now); uv venv -q --python "$py" "$work/uvenv"; uv_install; t1=$(now)
  rebuild_uv+=("$(calc "$t1 - $t0")")
  t0=$(now); "${gi[@]}" >"$work/noop.json"; t1=$(now)
  noop_greta+=("$(calc "$t1 - $t0")")
  grep -q '"result": "up-to-date"' "$work/noop.json" || { echo "bench: the no-op install did not report up-to-date" >&2; exit 1; }
  t0=$(now); uv_install; t1=$(now)
  noop_uv+=("$(calc "$t1 - $t0")")
  t0=$(now); "$greta" install --python "$py" --no-smoke --installer uv --json >"$work/auto.json"; t1=$(now)
  noop_auto+=("$(calc "$t1 - $t0")")
  grep -q '"result": "up-to-date"' "$work/auto.json" || { echo "bench: the auto-profile install did not report up-to-date" >&2; exit 1; }
done
# Median of each step of the rebuilds (timings_ms of `greta install --json`).
steps=$($py - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
t = [json.load(open(f"{work}/rebuild-{r}.json"))["report"]["timings_ms"] for r in range(1, runs + 1)]
keys = ["venv", "install", "import_check", "receipt", "swap", "total"]
print(", ".join(f"{k} {statistics.median(x[k] for x in t):.0f}" for k in keys if all(k in x for x in t)))
PY
)
cg=$(printf '%s\n' "${cold_greta[@]}" | median); cgw=$(printf '%s\n' "${cold_greta_wall[@]}" | median)
cc=$(printf '%s\n' "${cold_curl[@]}" | median)
rg=$(printf '%s\n' "${rebuild_greta[@]}" | median); ru=$(printf '%s\n' "${rebuild_uv[@]}" | median)
ng=$(printf '%s\n' "${noop_greta[@]}" | median); nu=$(printf '%s\n' "${noop_uv[@]}" | median)
na=$(printf '%s\n' "${noop_auto[@]}" | median)
echo "| measurement (median of $runs; $mib MiB in 3 wheels, 4000 files; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)) | greta | reference | ratio |"
echo "| --- | --- | --- | --- |"
awk -v g="$cg" -v w="$cgw" -v c="$cc" -v m="$mib" 'BEGIN{printf "| cold fetch from loopback: greta fetch step (whole `greta bundle`: %.2f s) vs curl, 4 parallel | %.2f s (%.0f MiB/s) | %.2f s (%.0f MiB/s) | %.0f%% of curl throughput |\n", w, g, m/g, c, m/c, 100*c/g}'
awk -v g="$rg" -v u="$ru" -v s="$steps" 'BEGIN{printf "| warm rebuild: `greta install --reinstall` (plan, venv, uv, import check, receipt, swap; median ms: %s) vs `uv venv` + `uv pip install --no-index --no-deps` into a new venv | %.0f ms | %.0f ms | %.2fx |\n", s, 1000*g, 1000*u, g/u}'
awk -v g="$ng" -v u="$nu" 'BEGIN{printf "| warm no-op: `greta install` on the up-to-date env (plan + verification) vs `uv pip install --no-index --no-deps` into the existing venv (audit) | %.0f ms | %.0f ms | %.2fx |\n", 1000*g, 1000*u, g/u}'
awk -v g="$na" -v u="$nu" 'BEGIN{printf "| warm no-op without --profile (the probe chooses the profile) vs the same uv audit | %.0f ms | %.0f ms | %.2fx |\n", 1000*g, 1000*u, g/u}'
