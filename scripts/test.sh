#!/usr/bin/env bash
# The whole test suite, from a fresh clone: prerequisites, format, lints, tests.
# Vulkan tests run on Mesa lavapipe with the validation layers on.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
export GRETA_VK_VALIDATION=1
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The HIP worker the doctor/smoke CLI tests drive (built against Debian's ROCm 5.2).
cargo build -p greta-smoke --features hip --bin greta-hip-worker --locked
cargo test --workspace --locked --no-fail-fast
# The HIP path (feature `hip`) against Debian's ROCm 5.2; there is no AMD GPU here, so the
# device tests check the "no HIP device" answer, and the kernels are compiled for gfx90a/gfx1030.
cargo clippy -p greta-runtime -p greta-smoke -p greta-kernels --features hip --all-targets --locked -- -D warnings
cargo test -p greta-runtime --features hip --locked --no-fail-fast
cargo test -p greta --bin greta --locked hip_worker -- --include-ignored
# The portable release (glibc 2.28 floor, built through zig): the tarball's
# binary alone in an empty dir and the wheel in a fresh venv each run
# `lock list`, `doctor --json` and `install --dry-run --profile cpu`.
bash scripts/release.sh
