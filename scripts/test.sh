#!/usr/bin/env bash
# The whole test suite, from a fresh clone: prerequisites, format, lints, tests.
# Vulkan tests run on Mesa lavapipe with the validation layers on.
#
# Named steps (scripts/steps.sh): each one's start, wall and CPU seconds are printed, and a table
# of them at the end, also when one fails (the run exits with that step's status). What waits on
# the network or the disk (apt, the sid chroots, NVRTC, the cpu profile's wheels) runs in the
# background beside the compile and the tests; so does the portable release's build, at a lower
# priority, so that it takes the cores the test build and the tests leave idle. Each background
# step is awaited before the tests that need it, and its output printed then.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
source scripts/steps.sh

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
# One build from nothing: the incremental state would only cost time and disk (gigabytes).
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

# What the tests need from the distribution and PyPI (scripts/setup.sh --test lists it); the
# compile needs none of it.
spawn setup bash scripts/setup.sh --test
# Every AMD target greta claims, compiled by Debian sid's ROCm 6.4.3 (hiprtc) in a sid chroot
# built once and cached in target/sid-rocm (rebuilt when its package list changes). Root, no GPU.
spawn sid-rocm-chroot --after setup bash scripts/sid-chroot.sh build
# Every Vulkan pipeline through the real RADV compiler: a second sid chroot with sid's Mesa and
# its amdgpu drm-shim, built once into target/sid-radv (about 420 MB). Root, no GPU.
spawn sid-radv-chroot --after setup bash scripts/sid-chroot.sh --profile radv build
# Every NVIDIA architecture: Debian sid's NVRTC 12.4 (libnvrtc12 from the non-free archive,
# signature and checksums checked, unpacked once under target/sid-nvrtc: no chroot, no root).
spawn sid-nvrtc --after setup bash scripts/sid-nvrtc.sh fetch
# The portable release (glibc 2.28 floor, built through zig; maturin and zig from PyPI): a
# second full build of greta in the release profile, checked further down.
spawn release-build --after setup nice -n 10 bash scripts/release.sh --no-check

step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets --locked -- -D warnings
step test-build cargo test --workspace --locked --no-run
await setup
# The framework gates on the real cpu profile (~3 GB of wheels from PyPI, cached under
# target/test-cache): greta install builds it and torch and jax must compute. Mostly a
# download, so it runs beside the workspace's tests.
# This run and the every-target one below (`--test it`, a filter) name the whole workspace, as
# the test build does: with `-p greta` alone, cargo resolves the dependencies' features for greta
# only (getrandom without `std`, which the workspace's rand turns on) and compiles greta, part
# of its dependencies and its test binary a second time.
spawn frameworks-cpu-profile env GRETA_TEST_CPU_PROFILE=1 \
  cargo test --workspace --locked --test it -- frameworks_gates::
# The HIP path is always built: runtime/tests/it/hip_*.rs and installer/tests/it/hip_cli.rs run
# against Debian's ROCm 5.2 (libamdhip64.so.5, hiprtc inside it) with no AMD GPU.
# The every-target checks run once, further down, with the portable release binary (the chroots
# and NVRTC arrive in the background, and would otherwise make this run's set depend on timing).
tests workspace-tests cargo test --workspace --locked --no-fail-fast -- \
  --skip hip_targets:: --skip cuda_targets:: --skip radv_targets::
# The portable release: the tarball's binary alone in an empty dir and the wheel in a fresh
# venv each run `lock list`, `doctor --json` and `install --dry-run --profile cpu`; its ELF
# needs no GLIBC_ newer than 2.28 and links no Vulkan, HIP or CUDA library
# (installer/tests/it/self_contained.rs).
await release-build
step release-check bash scripts/release.sh --check-only
# With the portable release binary, in one test run:
# - hip_targets: every AMD target, in the sid ROCm chroot; each code object's target, metadata
#   and instructions are checked (docs/hip.md "Every target, compiled").
# - cuda_targets: every NVIDIA architecture greta claims (sm_75 to sm_90a) through sid's NVRTC;
#   registers, shared memory and spills per kernel checked (docs/hip.md "Every CUDA
#   architecture, compiled"). No GPU, no driver.
# - radv_targets: every Vulkan pipeline of every gate through sid's RADV over its amdgpu
#   drm-shim (nothing executed) for phoenix, navi31, navi33, strix1, gfx1201 and navi21:
#   created, no spills or scratch, LDS in limit, v_wmma in every cooperative-matrix pipeline on
#   RDNA3/4, WMMA kernels planned for the Llama-2-7B prefill, and the live doctor as a Radeon
#   (docs/radeon.md).
# Each variable makes its check required: a missing chroot or NVRTC fails it.
await sid-rocm-chroot
await sid-nvrtc
await sid-radv-chroot
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
portable=$(mktemp -d)
steps_cleanup 'rm -rf "$portable"'
tar -C "$portable" -xzf "dist/greta-$version-x86_64-unknown-linux-gnu.tar.gz"
tests every-target env GRETA_SID_ROCM="$PWD/target/sid-rocm" \
  GRETA_SID_NVRTC="$PWD/target/sid-nvrtc" \
  GRETA_SID_RADV="$PWD/target/sid-radv" \
  GRETA_STANDALONE_BIN="$portable/greta-$version-x86_64-unknown-linux-gnu/greta" \
  cargo test --workspace --locked --test it -- hip_targets:: cuda_targets:: radv_targets::
await frameworks-cpu-profile
