#!/usr/bin/env bash
# The whole test suite, from a fresh clone: prerequisites, format, lints, tests.
# Vulkan tests run on Mesa lavapipe with the validation layers on.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
export GRETA_VK_VALIDATION=1
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked --no-fail-fast
