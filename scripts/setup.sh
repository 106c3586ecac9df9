#!/usr/bin/env bash
# Installs what greta needs on a fresh Debian/Ubuntu machine (idempotent).
#   scripts/setup.sh          runtime prerequisites: Vulkan loader, Mesa (RADV + lavapipe), python3-venv
#   scripts/setup.sh --test   also what the test suite needs: validation layers, vulkaninfo,
#                             Debian's ROCm 5.2 HIP compiler/runtime, uv and pip >= 26.3 (from PyPI), slurm-wlm + munge
#                             (tests/slurm_healthcheck.rs starts a one-node Slurm), mmdebstrap
#                             (scripts/sid-chroot.sh builds the Debian sid chroot with ROCm 6.4.3),
#                             dash and zsh (greta-activate is tested by sourcing it in bash, dash and zsh)
# Rust (cargo) must already be installed; everything else comes from the distribution and PyPI.
set -euo pipefail
want_test=0
[[ "${1:-}" == "--test" ]] && want_test=1

sudo_=""
if [[ $(id -u) -ne 0 ]]; then sudo_="sudo"; fi

pkgs=(libvulkan1 mesa-vulkan-drivers vulkan-validationlayers python3-venv python3-pip ca-certificates)
if [[ $want_test -eq 1 ]]; then
  pkgs+=(vulkan-tools hipcc libamdhip64-dev rocminfo slurm-wlm munge mmdebstrap dash zsh)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup: installing ${missing[*]}" >&2
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [[ $want_test -eq 1 ]] && ! command -v uv >/dev/null 2>&1; then
  # The install tests drive real uv and real pip; uv comes from PyPI as a wheel.
  echo "setup: installing uv from PyPI" >&2
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore uv >&2 \
    || python3 -m pip install -q --disable-pip-version-check --break-system-packages uv >&2
  # pyenv only exposes a new console script after a rehash.
  if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
  hash -r
  command -v uv >/dev/null || { echo "setup: uv installed but not on PATH (python3 -m pip's script dir?)" >&2; exit 2; }
fi
if [[ $want_test -eq 1 ]] && ! python3 - <<'PY'
import sys
from importlib.metadata import version
sys.exit(0 if tuple(int(p) for p in version("pip").split(".")[:2]) >= (26, 3) else 1)
PY
then
  # installer/tests/it/lock_device_pip.rs installs a PEP 751 file with its extras
  # through real pip (`-r 'pylock.X.toml[extra]'`, pip 26.3 and later).
  echo "setup: upgrading python3's pip to >= 26.3 (PEP 751 extras)" >&2
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore 'pip>=26.3' >&2 \
    || python3 -m pip install -q --disable-pip-version-check --break-system-packages 'pip>=26.3' >&2
fi
command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (rustup) first" >&2; exit 2; }
