#!/usr/bin/env bash
# Builds the portable release of greta and checks it:
#   dist/greta-<version>-py3-none-manylinux_2_28_x86_64.whl   (pip / uv tool / pipx)
#   dist/greta-<version>-x86_64-unknown-linux-gnu.tar.gz      (the same binary, alone)
# Linked through zig against glibc 2.28 (Ubuntu 20.04+, RHEL 8+, ROCm cloud images).
# Everything the binary reads (lock set, rules, kernels) is inside it.
#
#   bash scripts/release.sh            build + check
#   bash scripts/release.sh --no-check build only
# Needs cargo and python3 (with venv); maturin and zig come from PyPI, pinned by hash.
set -euo pipefail
cd "$(dirname "$0")/.."
check=1
[[ "${1:-}" == "--no-check" ]] && check=0

tools=target/release-tools
if ! "$tools/bin/maturin" --version >/dev/null 2>&1; then
  echo "release: installing maturin + zig (scripts/release-tools.txt) into $tools" >&2
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check --require-hashes -r scripts/release-tools.txt >&2
fi
export PATH="$PWD/$tools/bin:$PATH"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
triple=x86_64-unknown-linux-gnu
[[ $(uname -m) == x86_64 ]] || { echo "release: builds for $triple on x86_64 only" >&2; exit 2; }

rm -rf target/wheels
# Host artifacts (build scripts, proc macros) link through zig as well: see
# scripts/release-host-linker.sh (cargo's host-config, enabled the way
# cargo-zigbuild enables target-applies-to-host).
echo "release: building the wheel (maturin --zig, manylinux_2_28)" >&2
__CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS=nightly \
CARGO_UNSTABLE_TARGET_APPLIES_TO_HOST=true \
CARGO_TARGET_APPLIES_TO_HOST=false \
CARGO_UNSTABLE_HOST_CONFIG=true \
CARGO_HOST_LINKER="$PWD/scripts/release-host-linker.sh" \
  maturin build --release --locked --zig --compatibility manylinux_2_28 \
  -m installer/Cargo.toml --target "$triple" --out target/wheels >&2
wheel=$(ls target/wheels/greta-"$version"-*.whl)
mkdir -p dist
cp "$wheel" dist/

# The tarball carries the very binary the wheel carries.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
name="greta-$version-$triple"
mkdir "$stage/$name"
python3 - "$wheel" "$stage/$name/greta" <<'PY'
import sys, zipfile, os
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    [member] = [n for n in z.namelist() if n.endswith(".data/scripts/greta")]
    with z.open(member) as src, open(dest, "wb") as out:
        out.write(src.read())
os.chmod(dest, 0o755)
PY
cp README.md "$stage/$name/"
tar -C "$stage" -czf "dist/$name.tar.gz" "$name"
echo "release: dist/$(basename "$wheel")" >&2
echo "release: dist/$name.tar.gz" >&2
[[ $check -eq 1 ]] || exit 0

# Checks: the tarball's binary unpacked alone, and the wheel in a fresh venv,
# each through the same standalone tests (installer/tests/it/self_contained.rs).
run_checks() {
  GRETA_STANDALONE_BIN="$1" cargo test -q -p greta --locked --test it -- \
    --include-ignored self_contained::binary_alone self_contained::release_ >&2
}
mkdir "$stage/unpacked"
tar -C "$stage/unpacked" -xzf "dist/$name.tar.gz"
echo "release: checking the tarball's binary alone" >&2
run_checks "$stage/unpacked/$name/greta"
echo "release: checking the wheel in a fresh venv" >&2
python3 -m venv "$stage/venv"
"$stage/venv/bin/pip" install -q --disable-pip-version-check --no-index "dist/$(basename "$wheel")" >&2
run_checks "$stage/venv/bin/greta"
echo "release: ok ($version)" >&2
