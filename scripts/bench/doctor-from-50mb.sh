#!/bin/sh
# How long `greta doctor --from` takes on a 50 MB paste (the target is under
# 2 s with a release build). The paste is unrelated English and Rust source
# from this machine (licence texts, the cargo registry) with a few launcher
# system-information lines mixed in, so every reader and the format-agnostic
# scan run over every line. (Only the first 16 MiB of a file are read; the
# rest is counted, not parsed.)
#
# usage: scripts/bench/doctor-from-50mb.sh [MB [REPEAT]]
#   Builds the probe's bench_from example in release mode and prints the
#   best and median wall and CPU time of the doctor's own --from call over
#   REPEAT runs (default 50 MB, 3 runs). On a shared machine the wall time
#   follows the load; the CPU time is what the code costs.
# usage: scripts/bench/doctor-from-50mb.sh --greta BIN
#   Times `BIN doctor --json --from` on the same paste once, end to end.
set -eu
cd "$(dirname "$0")/../.."
if [ "${1:-}" = "--greta" ]; then
    bin=${2:?usage: --greta BIN}
    [ -x "$bin" ] || { echo "no greta binary at $bin (cargo build --release -p greta)" >&2; exit 2; }
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    src="$tmp/src.txt"
    cat /usr/share/common-licenses/* > "$src"
    find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -name '*.rs' 2>/dev/null | sort | head -2000 | xargs cat >> "$src" 2>/dev/null || true
    printf 'Vulkan Drivers:  AMD Radeon RX 7800 XT (RADV NAVI32) (1.3.246)\nGPU: Radeon Pro W7900\n' >> "$src"
    paste="$tmp/paste.txt"
    : > "$paste"
    while [ "$(wc -c < "$paste")" -lt 52428800 ]; do cat "$src" >> "$paste"; done
    head -c 52428800 "$paste" > "$tmp/p50" && mv "$tmp/p50" "$paste"
    start=$(date +%s.%N)
    "$bin" doctor --json --from "$paste" > "$tmp/out.json" || true
    end=$(date +%s.%N)
    echo "greta doctor --from of $(wc -c < "$paste") bytes: $(echo "$end - $start" | bc) s"
    exit 0
fi
cargo run --release -q -p greta-probe --example bench_from -- "${1:-50}" "${2:-3}"
