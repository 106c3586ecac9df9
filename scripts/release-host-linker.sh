#!/usr/bin/env bash
# Host linker for scripts/release.sh. The release target (x86_64-unknown-linux-gnu
# through zig, glibc 2.28) is also the host triple, so the C++ of build-time
# dependencies (glslang, behind greta-kernels' build script) is compiled by zig's
# c++ (libc++) for the host too; the system `cc` cannot link that (no libc++).
# Host artifacts (build scripts, proc macros) are therefore linked by the same
# zig wrapper cargo-zigbuild made for the target, whose path maturin puts in the
# environment cargo and rustc pass down to the linker.
set -euo pipefail
w="${CC_x86_64_unknown_linux_gnu:-}"
if [[ -z "$w" || ! -x "$w" ]]; then
  echo "release-host-linker: CC_x86_64_unknown_linux_gnu is not a zig wrapper (run through scripts/release.sh)" >&2
  exit 2
fi
exec "$w" "$@"
