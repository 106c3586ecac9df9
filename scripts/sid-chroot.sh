#!/usr/bin/env bash
# A Debian sid chroot holding ROCm 6.4.3's run-time compiler (hiprtc, comgr, the device
# libraries), rocminfo, amd-smi and LLVM's objdump/readelf: compile truth for every AMD target
# greta claims, on a machine with no AMD GPU (docs/hip.md, "Every target, compiled").
# Debian 12's ROCm is 5.2 (no gfx942/gfx950/gfx12); sid's needs a newer glibc than Debian 12's,
# hence a chroot rather than packages on the host. Debian packages only, from the mirror this
# machine's apt uses. Needs root (CI is root), mmdebstrap (scripts/setup.sh --test), unshare.
#
# A second profile, `--profile radv` (before the command; cache target/sid-radv), holds sid's
# Mesa instead: RADV, lavapipe, the Vulkan loader and Mesa's amdgpu drm-shim, which makes RADV
# believe an AMD GPU is present (LD_PRELOAD=libamdgpu_noop_drm_shim.so AMDGPU_GPU_ID=phoenix):
# it reports that GPU's properties and compiles with ACO for it, and never executes anything
# (docs/radeon.md). About 400 MB.
#
#   scripts/sid-chroot.sh [--profile rocm|radv] [--cache DIR] build
#       Builds the chroot once into DIR/root (default target/sid-PROFILE) and writes DIR/stamp
#       (the package list it was built from) and DIR/versions.txt (what got installed).
#       A second call with the same package list does nothing; another list rebuilds. The new
#       tree is built beside (DIR/.building-PID) and renamed into place, the stamp written
#       last, so an interrupted build leaves the previous chroot or none, never half of one.
#   scripts/sid-chroot.sh [--cache DIR] exec [--dir HOSTDIR] -- COMMAND [ARG...]
#       Runs COMMAND inside, in a private mount namespace (nothing mounted outlives it):
#       /proc, and this machine's /sys and /dev, so the tools see the real machine;
#       HOSTDIR (read-write) at /mnt/host. A clean environment (PATH, HOME, LANG only).
#   scripts/sid-chroot.sh [--cache DIR] capture OUTDIR
#       Runs the chroot's rocminfo and amd-smi on this machine and writes each one's stdout,
#       stderr, their interleaving (2>&1) and exit status, verbatim, under OUTDIR.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=rocm
if [[ "${1:-}" == "--profile" ]]; then
  profile=${2:?--profile needs rocm or radv}
  shift 2
fi
cache=target/sid-$profile
if [[ "${1:-}" == "--cache" ]]; then
  cache=${2:?--cache needs a directory}
  shift 2
fi

# What the chroot holds. Changing this list (or the suite or variant) rebuilds it.
suite=sid
variant=essential
rocm_packages=(
  libamdhip64-6        # the HIP runtime greta opens (6.4.3)
  libhiprtc6           # hiprtc, beside it, what greta compiles with
  libhiprtc-builtins6  # hiprtc's built-in headers
  libamd-comgr3        # the code object manager hiprtc compiles through (LLVM 21)
  rocm-device-libs-21  # the device bitcode libraries comgr links
  rocminfo
  amd-smi
  llvm-21              # llvm-objdump / llvm-readelf / llvm-mc of the same LLVM as comgr
)
radv_packages=(
  libvulkan1           # the Vulkan loader greta opens
  mesa-vulkan-drivers  # RADV (and lavapipe) with ACO, Mesa 26.x
  mesa-drm-shim        # libamdgpu_noop_drm_shim.so: a fake amdgpu device for RADV
)
case "$profile" in
  rocm) packages=("${rocm_packages[@]}") ;;
  radv) packages=("${radv_packages[@]}") ;;
  *) echo "sid-chroot: unknown profile '$profile' (rocm or radv)" >&2; exit 2 ;;
esac
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

die() { echo "sid-chroot: $*" >&2; exit 2; }

need_root() {
  [[ $(id -u) -eq 0 ]] || die "$1 needs root (mmdebstrap's root mode, chroot, mount namespaces); run it as root, as CI does"
}

# apt_mirror: the Debian mirror this machine's apt uses.
source scripts/debian-mirror.sh

want_stamp() {
  printf 'suite=%s\nvariant=%s\n' "$suite" "$variant"
  printf 'package=%s\n' "${packages[@]}"
}

# Refuses to delete a tree something is mounted under (a bind of /dev, say): rm -rf would
# reach through it. exec mounts only in a private namespace, so this is a guard, not a step.
assert_unmounted() {
  local t=$1
  if awk -v t="$t" '$5 == t || index($5, t "/") == 1 {found=1} END {exit !found}' /proc/self/mountinfo; then
    die "something is mounted under $t; unmount it first (findmnt -R $t)"
  fi
}

build() {
  need_root build
  local want
  want=$(want_stamp)
  if [[ -d "$cache/root" && -f "$cache/stamp" && "$(cat "$cache/stamp")" == "$want" ]]; then
    echo "sid-chroot: $cache/root ($profile) is up to date" >&2
    return 0
  fi
  command -v mmdebstrap >/dev/null || die "mmdebstrap not found (scripts/setup.sh --test installs it)"
  # Leftovers of interrupted builds (their process is gone).
  local d pid
  for d in "$cache"/.building-* "$cache"/.old-*; do
    [[ -e "$d" ]] || continue
    pid=${d##*-}
    if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && [[ "$pid" != $$ ]]; then
      die "another build (pid $pid) is running in $cache"
    fi
    assert_unmounted "$d"
    rm -rf "$d"
  done
  tmp="$cache/.building-$$"
  # mmdebstrap mounts /proc and /sys in the tree while it installs: never rm -rf through a
  # mount left by an interrupted run (the next build retries once it is gone).
  trap 'if awk -v t="$tmp" '"'"'index($5, t) == 1 {f=1} END {exit !f}'"'"' /proc/self/mountinfo; then
          echo "sid-chroot: left $tmp in place: something is still mounted under it" >&2
        else rm -rf "$tmp"; fi' EXIT
  mkdir -p "$tmp"
  local mirror
  mirror=$(apt_mirror)
  local list
  list=$(IFS=,; echo "${packages[*]}")
  echo "sid-chroot: building $suite ($variant + ${packages[*]}) from $mirror into $cache/root" >&2
  local t0=$SECONDS
  # Acquire::Check-Valid-Until=false: a mirror that serves a frozen copy of sid (as this
  # project's build machines do) has a Release past its Valid-Until date; the archive
  # signature is still checked against the host's Debian keyring.
  mmdebstrap --mode=root --variant="$variant" \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --include="$list" \
    --customize-hook='mkdir -p "$1/mnt/host"' \
    "$suite" "$tmp/root" "$mirror" >&2
  chroot "$tmp/root" dpkg-query -W -f='${Package} ${Version}\n' "${packages[@]}" libc6 >"$tmp/versions.txt"
  printf 'mirror %s\nbuilt %s\n' "$mirror" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$tmp/versions.txt"
  # Into place: the stamp goes first (a half-swapped cache must not look current) and
  # comes back last.
  rm -f "$cache/stamp"
  if [[ -d "$cache/root" ]]; then
    assert_unmounted "$cache/root"
    mv "$cache/root" "$cache/.old-$$"
  fi
  mv "$tmp/root" "$cache/root"
  mv "$tmp/versions.txt" "$cache/versions.txt"
  printf '%s\n' "$want" >"$cache/stamp.tmp"
  mv "$cache/stamp.tmp" "$cache/stamp"
  rm -rf "$cache/.old-$$" "$tmp"
  trap - EXIT
  echo "sid-chroot: built in $((SECONDS - t0)) s ($(du -sh "$cache/root" | cut -f1)):" >&2
  cat "$cache/versions.txt" >&2
}

chroot_exec() {
  need_root exec
  local host=""
  if [[ "${1:-}" == "--dir" ]]; then
    host=$(cd "${2:?--dir needs a directory}" && pwd)
    shift 2
  fi
  [[ "${1:-}" == "--" ]] && shift
  [[ $# -gt 0 ]] || die "exec: no command"
  [[ -f "$cache/stamp" && -d "$cache/root" ]] || die "no chroot in $cache (run: scripts/sid-chroot.sh build)"
  unshare --mount --propagation private -- bash -euc '
    root=$1 host=$2; shift 2
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    if [[ -n "$host" ]]; then mount --bind "$host" "$root/mnt/host"; fi
    exec chroot "$root" /usr/bin/env -i \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/lib/llvm-21/bin \
      HOME=/root LANG=C.UTF-8 "$@"
  ' _ "$cache/root" "$host" "$@"
}

capture() {
  local out=${1:?capture needs an output directory}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  local name cmd rc
  # name|command (run by sh inside the chroot)
  local cmds=(
    "rocminfo|rocminfo"
    "rocminfo-support|rocminfo --support"
    "amd-smi|amd-smi"
    "amd-smi-version|amd-smi version"
    "amd-smi-list|amd-smi list"
    "amd-smi-static|amd-smi static"
    "amd-smi-static-json|amd-smi static --json"
  )
  for entry in "${cmds[@]}"; do
    name=${entry%%|*}
    cmd=${entry#*|}
    rc=0
    chroot_exec --dir "$out" -- sh -c "cd /mnt/host && $cmd >$name.stdout 2>$name.stderr" || rc=$?
    echo "$rc" >"$out/$name.exit"
    chroot_exec --dir "$out" -- sh -c "cd /mnt/host && $cmd >$name.txt 2>&1" || true
    echo "sid-chroot: $cmd: exit $rc" >&2
  done
  cp "$cache/versions.txt" "$out/versions.txt"
}

case "${1:-}" in
  build) build ;;
  capture) [[ "$profile" == rocm ]] || die "capture runs the rocm profile's tools" ;;&
  exec) shift; chroot_exec "$@" ;;
  capture) shift; need_root capture; capture "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
