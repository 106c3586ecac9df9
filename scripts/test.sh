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
# The HIP path is always built: runtime/tests/hip_*.rs and installer/tests/hip_cli.rs run
# against Debian's ROCm 5.2 (libamdhip64.so.5, hiprtc inside it) with no AMD GPU; the release
# binary must link no HIP or CUDA library.
cargo build --release -p greta --locked
if ldd target/release/greta | grep -i -E 'amdhip|hiprtc|libcuda|nvrtc|cublas'; then
  echo "target/release/greta links a HIP/CUDA library" >&2
  exit 1
fi
