#!/usr/bin/env bash
# The whole test suite, from a fresh clone: prerequisites, format, lints, tests.
# Vulkan tests run on Mesa lavapipe with the validation layers on.
# Each step's start, wall and CPU seconds are printed, and a table of them at the end, also when a
# step fails (scripts/steps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
source scripts/steps.sh
step setup bash scripts/setup.sh --test
# Headless Chromium opens `greta report`'s page in installer/tests/it/report_page.rs (Debian's
# `chromium`). Installed here rather than in setup.sh's list so that a mirror without it costs
# only those checks, which then print a loud SKIPPED; everything else still runs.
install_chromium() {
  command -v chromium >/dev/null 2>&1 && return 0
  sudo_=""; [[ $(id -u) -ne 0 ]] && sudo_="sudo"
  echo "test.sh: installing chromium (report page tests)" >&2
  { $sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2; } \
    || echo "test.sh: WARNING: chromium could not be installed; the report page tests will be SKIPPED" >&2
}
export -f install_chromium
step chromium install_chromium
# Disk: the test build, the cpu profile's wheels (unpacked by uv) and the release take about
# 14 GB under target/ at the peak (docs/performance.md, "Test suite footprint"). Say so up
# front, so that a full disk reads as that and not as a compiler's "No space left on device".
need_gb=15
free_gb=$(( $(df -Pk target | awk 'NR==2 {print $4}') / 1024 / 1024 ))
if (( free_gb < need_gb )); then
  echo "test.sh: WARNING: ${free_gb} GB free for target/ ($(pwd)/target); the suite needs about ${need_gb} GB and will likely fail with ENOSPC:" >&2
  df -h target "${TMPDIR:-/tmp}" >&2
fi
export GRETA_VK_VALIDATION=1
step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets --locked -- -D warnings
tests workspace-tests cargo test --workspace --locked --no-fail-fast
# The framework gates on the real cpu profile (~3 GB of wheels from PyPI, cached under
# target/test-cache): greta install builds it and torch and jax must compute.
tests frameworks-cpu-profile env GRETA_TEST_CPU_PROFILE=1 cargo test -p greta --locked --test it -- frameworks_gates::
# The HIP path is always built: runtime/tests/it/hip_*.rs and installer/tests/it/hip_cli.rs run
# against Debian's ROCm 5.2 (libamdhip64.so.5, hiprtc inside it) with no AMD GPU.
# The portable release (glibc 2.28 floor, built through zig): the tarball's binary alone in
# an empty dir and the wheel in a fresh venv each run `lock list`, `doctor --json` and
# `install --dry-run --profile cpu`; its ELF needs no GLIBC_ newer than 2.28 and links no
# Vulkan, HIP or CUDA library (installer/tests/it/self_contained.rs).
step release bash scripts/release.sh
# Every AMD target greta claims, compiled by Debian sid's ROCm 6.4.3 (hiprtc) with the portable
# release binary, in a sid chroot built once and cached in target/sid-rocm (rebuilt when its
# package list changes); each code object's target, metadata and instructions are checked
# (installer/tests/it/hip_targets.rs, docs/hip.md "Every target, compiled"). Root, no GPU.
step sid-rocm-chroot bash scripts/sid-chroot.sh build
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
portable=$(mktemp -d)
steps_cleanup 'rm -rf "$portable"'
tar -C "$portable" -xzf "dist/greta-$version-x86_64-unknown-linux-gnu.tar.gz"
tests hip-targets env GRETA_SID_ROCM="$PWD/target/sid-rocm" \
  GRETA_STANDALONE_BIN="$portable/greta-$version-x86_64-unknown-linux-gnu/greta" \
  cargo test -p greta --locked --test it -- hip_targets::
# Every NVIDIA architecture greta claims (sm_75 to sm_90a), compiled by Debian sid's NVRTC 12.4
# (libnvrtc12 from the non-free archive, signature and checksums checked, unpacked once under
# target/sid-nvrtc: no chroot, no root) with the portable release binary; registers, shared
# memory and spills per kernel checked (installer/tests/it/cuda_targets.rs, docs/hip.md "Every
# CUDA architecture, compiled"). No GPU, no driver. The workspace run above fetched it already
# unless the mirror could not be reached; here it is required.
step sid-nvrtc bash scripts/sid-nvrtc.sh fetch
tests cuda-targets env GRETA_SID_NVRTC="$PWD/target/sid-nvrtc" \
  GRETA_STANDALONE_BIN="$portable/greta-$version-x86_64-unknown-linux-gnu/greta" \
  cargo test -p greta --locked --test it -- cuda_targets::
# Every Vulkan pipeline of every gate through the real RADV compiler (Debian sid's Mesa over its
# amdgpu drm-shim, nothing executed) for phoenix, navi31, navi33, strix1, gfx1201 and navi21, with
# the portable release binary; invariants asserted (created, no spills or scratch, LDS in limit,
# v_wmma in every cooperative-matrix pipeline on RDNA3/4, WMMA kernels planned for the Llama-2-7B
# prefill) and the live doctor as a Radeon (installer/tests/it/radv_targets.rs, docs/radeon.md).
# A second sid chroot, built once into target/sid-radv (about 420 MB). Root, no GPU.
step sid-radv-chroot bash scripts/sid-chroot.sh --profile radv build
tests radv-targets env GRETA_SID_RADV="$PWD/target/sid-radv" \
  GRETA_STANDALONE_BIN="$portable/greta-$version-x86_64-unknown-linux-gnu/greta" \
  cargo test -p greta --locked --test it -- radv_targets::
