#!/usr/bin/env bash
# NVIDIA's run-time compiler, NVRTC, from Debian sid's non-free packages (libnvrtc12 and
# libnvrtc-builtins12.4, CUDA 12.4), unpacked under target/: it compiles greta's CUDA kernels
# for every NVIDIA architecture up to sm_90a with no GPU and no driver, and runs on Debian 12's
# glibc (docs/hip.md, "Every CUDA architecture, compiled"). No chroot and no root: the two
# packages are fetched from the Debian mirror this machine's apt uses and unpacked with dpkg-deb.
# Trust: sid's InRelease is checked with gpgv against the host's Debian archive keyring; the
# SHA256 of Packages.xz comes from it, and each .deb's SHA256 from Packages.xz.
#
#   scripts/sid-nvrtc.sh [--cache DIR] fetch
#       Unpacks the packages into DIR/root (default target/sid-nvrtc) once and writes DIR/stamp
#       (the package list) and DIR/versions.txt (what was unpacked, from which mirror). A second
#       call with the same package list does nothing and needs no network. The new tree is
#       built beside (DIR/.building-PID) and renamed into place, the stamp written last, so an
#       interrupted fetch leaves the previous tree or none. Concurrent calls wait on DIR/.lock.
#       Exit 0: ready. Exit 3: the mirror could not be reached (nothing changed); the tests that
#       need NVRTC then skip, unless told they are required. Exit 2: any other failure.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=target/sid-nvrtc
if [[ "${1:-}" == "--cache" ]]; then
  cache=${2:?--cache needs a directory}
  shift 2
fi

suite=sid
component=non-free
arch=amd64
# What the tree holds. Changing this list rebuilds it.
packages=(
  libnvrtc12             # libnvrtc.so.12, what greta compiles with (GRETA_NVRTC_LIB)
  libnvrtc-builtins12.4  # the built-in headers NVRTC opens at compile time
)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "sid-nvrtc: $*" >&2; exit 2; }
# apt_mirror: the Debian mirror this machine's apt uses.
source scripts/debian-mirror.sh

want_stamp() {
  printf 'suite=%s\ncomponent=%s\narch=%s\n' "$suite" "$component" "$arch"
  printf 'package=%s\n' "${packages[@]}"
}

# get URL FILE: downloads, exit 3 when the mirror cannot be reached at all (no name, no
# connection, a timeout), 2 on any other failure (an HTTP error, a short file).
get() {
  local rc=0
  curl -fsSL --retry 2 --connect-timeout 20 --max-time 600 -o "$2" "$1" || rc=$?
  case $rc in
    0) ;;
    5|6|7|28) echo "sid-nvrtc: the mirror cannot be reached: $1 (curl exit $rc)" >&2; exit 3 ;;
    *) die "downloading $1 failed (curl exit $rc)" ;;
  esac
}

# sha256_in_release FILE NAME: NAME's SHA256 from the `SHA256:` part of a Release file.
sha256_in_release() {
  awk -v name="$2" '
    /^[^ ]/ { in_sha = ($1 == "SHA256:") }
    in_sha && $3 == name { print $1; exit }
  ' "$1"
}

# field PACKAGES PACKAGE KEY: KEY of PACKAGE's stanza in a Packages file.
field() {
  awk -v pkg="$2" -v key="$3:" '
    /^Package: / { this = ($2 == pkg) }
    this && $1 == key { print $2; exit }
  ' "$1"
}

verify() {
  local file=$1 want=$2 have
  [[ "$want" =~ ^[0-9a-f]{64}$ ]] || die "no SHA256 for $(basename "$file") in the index"
  have=$(sha256sum "$file" | cut -d' ' -f1)
  [[ "$have" == "$want" ]] || die "$(basename "$file"): SHA256 $have, the index says $want"
}

fetch() {
  local want
  want=$(want_stamp)
  mkdir -p "$cache"
  cache=$(cd "$cache" && pwd)
  exec 9>"$cache/.lock"
  flock 9
  if [[ -f "$cache/stamp" && "$(cat "$cache/stamp")" == "$want" && -f "$cache/root/usr/lib/x86_64-linux-gnu/libnvrtc.so.12" ]]; then
    echo "sid-nvrtc: $cache/root is up to date" >&2
    return 0
  fi
  for cmd in curl gpgv xz dpkg-deb sha256sum; do
    command -v "$cmd" >/dev/null || die "$cmd not found (scripts/setup.sh --test installs what this needs)"
  done
  [[ -r "$keyring" ]] || die "no Debian archive keyring at $keyring (package debian-archive-keyring)"
  rm -rf "$cache"/.building-* "$cache"/.old-*
  tmp="$cache/.building-$$"
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/root"
  local mirror t0=$SECONDS
  mirror=$(apt_mirror)
  echo "sid-nvrtc: fetching ${packages[*]} ($suite $component $arch) from $mirror" >&2
  get "$mirror/dists/$suite/InRelease" "$tmp/InRelease"
  gpgv --keyring "$keyring" --output "$tmp/Release" "$tmp/InRelease" 2>"$tmp/gpgv.log" \
    || die "$mirror/dists/$suite/InRelease: bad signature: $(cat "$tmp/gpgv.log")"
  local index="$component/binary-$arch/Packages.xz"
  get "$mirror/dists/$suite/$index" "$tmp/Packages.xz"
  verify "$tmp/Packages.xz" "$(sha256_in_release "$tmp/Release" "$index")"
  xz -dc "$tmp/Packages.xz" >"$tmp/Packages"
  local p file sum version
  : >"$tmp/versions.txt"
  for p in "${packages[@]}"; do
    file=$(field "$tmp/Packages" "$p" Filename)
    sum=$(field "$tmp/Packages" "$p" SHA256)
    version=$(field "$tmp/Packages" "$p" Version)
    [[ -n "$file" ]] || die "$p is not in $suite $component ($arch)"
    get "$mirror/$file" "$tmp/$p.deb"
    verify "$tmp/$p.deb" "$sum"
    dpkg-deb -x "$tmp/$p.deb" "$tmp/root"
    echo "$p $version" >>"$tmp/versions.txt"
  done
  printf 'mirror %s\nfetched %s\n' "$mirror" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$tmp/versions.txt"
  [[ -f "$tmp/root/usr/lib/x86_64-linux-gnu/libnvrtc.so.12" ]] || die "the packages hold no usr/lib/x86_64-linux-gnu/libnvrtc.so.12"
  # Into place: the stamp goes first (a half-swapped cache must not look current) and comes
  # back last.
  rm -f "$cache/stamp"
  [[ -d "$cache/root" ]] && mv "$cache/root" "$cache/.old-$$"
  mv "$tmp/root" "$cache/root"
  mv "$tmp/versions.txt" "$cache/versions.txt"
  printf '%s\n' "$want" >"$cache/stamp.tmp"
  mv "$cache/stamp.tmp" "$cache/stamp"
  rm -rf "$cache/.old-$$" "$tmp"
  trap - EXIT
  echo "sid-nvrtc: unpacked in $((SECONDS - t0)) s ($(du -sh "$cache/root" | cut -f1)):" >&2
  cat "$cache/versions.txt" >&2
}

case "${1:-}" in
  fetch) fetch ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
