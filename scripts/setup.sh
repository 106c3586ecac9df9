#!/usr/bin/env bash
# Installs what greta needs on a fresh Debian/Ubuntu machine (idempotent).
#   scripts/setup.sh          runtime prerequisites: Vulkan loader, Mesa (RADV + lavapipe), python3-venv
#   scripts/setup.sh --test   also what the test suite needs: validation layers, vulkaninfo,
#                             Debian's ROCm 5.2 HIP compiler/runtime, uv and pip >= 26.3 (from PyPI), slurm-wlm + munge
#                             (tests/slurm_healthcheck.rs starts a one-node Slurm), mmdebstrap
#                             (scripts/sid-chroot.sh builds the Debian sid chroot with ROCm 6.4.3),
#                             curl, gpgv, xz-utils and debian-archive-keyring (scripts/sid-nvrtc.sh
#                             fetches Debian sid's NVRTC and checks its signature),
#                             dash and zsh (greta-activate is tested by sourcing it in bash, dash and zsh),
#                             fish, man-db and groff-base (the completion scripts load in bash, zsh and fish;
#                             the manual page renders with man -l),
#                             promtool (Prometheus' parser of the --prom textfile, out of Debian's prometheus package),
#                             chromium (headless, opens `greta report`'s page; its absence is a warning)
# Rust (cargo) must already be installed; everything else comes from the distribution and PyPI.
set -euo pipefail
want_test=0
[[ "${1:-}" == "--test" ]] && want_test=1

sudo_=""
if [[ $(id -u) -ne 0 ]]; then sudo_="sudo"; fi

pkgs=(libvulkan1 mesa-vulkan-drivers vulkan-validationlayers python3-venv python3-pip ca-certificates)
if [[ $want_test -eq 1 ]]; then
  pkgs+=(vulkan-tools hipcc libamdhip64-dev rocminfo slurm-wlm munge mmdebstrap curl gpgv xz-utils debian-archive-keyring
         dash zsh fish man-db groff-base)
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
if [[ $want_test -eq 1 ]] && ! command -v chromium >/dev/null 2>&1; then
  # Headless Chromium opens `greta report`'s page in installer/tests/it/report_page.rs (Debian's
  # `chromium`). Installed apart from the list above so that a mirror without it costs only
  # those checks, which then print a loud SKIPPED; everything else still runs.
  echo "setup: installing chromium (report page tests)" >&2
  { $sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2; } \
    || echo "setup: WARNING: chromium could not be installed; the report page tests will be SKIPPED" >&2
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
if [[ $want_test -eq 1 ]] && ! command -v promtool >/dev/null 2>&1; then
  # smoke/tests/prom_text.rs reads the --prom textfile with Prometheus' own Go
  # parser (`promtool check metrics`). Debian ships promtool only inside the
  # `prometheus` package, whose install also sets up (and on a booted system
  # starts) a Prometheus server: take its one static binary out of the package.
  echo "setup: installing promtool (from Debian's prometheus package)" >&2
  tmp=$(mktemp -d)
  chmod 755 "$tmp"  # apt's download user must be able to write there
  if ! (cd "$tmp" && apt-get download -qq prometheus >&2); then
    $sudo_ apt-get update -qq
    (cd "$tmp" && apt-get download -qq prometheus >&2)
  fi
  dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool
  $sudo_ install -m 0755 "$tmp/usr/bin/promtool" /usr/local/bin/promtool
  rm -rf "$tmp"
  promtool --version >&2
fi
command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (rustup) first" >&2; exit 2; }
