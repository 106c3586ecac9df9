#!/usr/bin/env bash
# Install benchmarks (not a test): greta vs the tools it is measured against.
#   1. cold fetch: `greta bundle` with an empty cache vs curl (same files,
#      same loopback server, same parallelism)
#   2. warm reinstall: `greta install` with a warm cache vs `uv venv` +
#      `uv pip install --no-index --no-deps` of the same files (uv cache warm)
# Synthetic wheels shaped like torch/triton/jax (scripts/bench/make_wheels.py).
# usage: scripts/bench/install.sh [SCALE] [RUNS]     (SCALE 1.0 = ~330 MiB)
# Prints a markdown table; needs python3, uv, curl; builds greta --release.
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=${1:-1.0}
runs=${2:-3}
work=$(mktemp -d /tmp/greta-bench.XXXXXX)
trap 'kill ${srv_pid:-0} 2>/dev/null || true; rm -rf "$work"' EXIT
command -v uv >/dev/null || { echo "bench: uv not on PATH" >&2; exit 2; }
cargo build --release -p greta -q
greta=$PWD/target/release/greta
py=$(command -v python3)

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

cold_greta=(); cold_curl=(); warm_greta=(); warm_uv=()
for r in $(seq "$runs"); do
  rm -rf "$work/cache/greta" "$work/bundle" "$work/curl"; mkdir -p "$work/curl"
  t0=$(now); "$greta" bundle --profile cpu -o "$work/bundle" --json >/dev/null; t1=$(now)
  cold_greta+=("$(echo "$t1 - $t0" | bc)")
  t0=$(now)
  ls "$work/srv/files" | sed "s|^|http://127.0.0.1:$port/files/|" | xargs -P 4 -n 1 sh -c 'curl -fsS -o "$0/$(basename "$1")" "$1"' "$work/curl"
  t1=$(now); cold_curl+=("$(echo "$t1 - $t0" | bc)")
done
"$greta" install --profile cpu --python "$py" --no-smoke --installer uv --json >/dev/null   # warm everything
wheels=$(ls "$work"/srv/files/*.whl)
for r in $(seq "$runs"); do
  t0=$(now); "$greta" install --profile cpu --python "$py" --no-smoke --installer uv --json >/dev/null; t1=$(now)
  warm_greta+=("$(echo "$t1 - $t0" | bc)")
  rm -rf "$work/uvenv"
  t0=$(now)
  uv venv -q --python "$py" "$work/uvenv"
  # shellcheck disable=SC2086
  uv pip install -q --python "$work/uvenv/bin/python" --no-index --no-deps $wheels
  t1=$(now); warm_uv+=("$(echo "$t1 - $t0" | bc)")
done
cg=$(printf '%s\n' "${cold_greta[@]}" | median); cc=$(printf '%s\n' "${cold_curl[@]}" | median)
wg=$(printf '%s\n' "${warm_greta[@]}" | median); wu=$(printf '%s\n' "${warm_uv[@]}" | median)
echo "| measurement (median of $runs, $mib MiB in 3 wheels, $(nproc) cores) | greta | reference | ratio |"
echo "| --- | --- | --- | --- |"
printf '| cold fetch from loopback (greta bundle vs curl -P4) | %.2f s (%.0f MiB/s) | %.2f s (%.0f MiB/s) | %.0f%% of curl throughput |\n' \
  "$cg" "$(echo "$mib / $cg" | bc -l)" "$cc" "$(echo "$mib / $cc" | bc -l)" "$(echo "100 * $cc / $cg" | bc -l)"
printf '| warm reinstall (greta install vs uv venv + uv pip install) | %.2f s | %.2f s | %.2fx |\n' "$wg" "$wu" "$(echo "$wg / $wu" | bc -l)"
