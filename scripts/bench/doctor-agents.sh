#!/usr/bin/env bash
# Doctor benchmark (not a test): `greta doctor --from` and `--sysroot` on one
# rocminfo dump of N GPU agents (both took time quadratic in N before). Builds
# the probe's bench_agents example in release mode and prints, per N, the
# dump size and the seconds each path took (the doctor's own calls: the
# --from report, and a sysroot replay with the dump as captured rocminfo).
# usage: scripts/bench/doctor-agents.sh [N...]   (default 10000 20000 40000 95000)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || set -- 10000 20000 40000 95000
cargo run --release -q -p greta-probe --example bench_agents -- "$@"
