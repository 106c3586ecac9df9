# Shared by the side-by-side GPU scripts (session12.sh, session12-linear.sh);
# source it from the repository root after setting `log` (the log file).
#   unpack_binaries DIR      xz-compressed release binaries in DIR -> DIR/NAME
#   say TEXT...              a timestamped line on stdout and in $log
#   gpu_env                  nvidia-smi's line; GRETA_ENV = the machine's torch env
#   vulkan_env               the Vulkan loader from .gl, the NVIDIA ICD only
#   smoke_run DIR BIN NAME LIMIT_S OUTDIR ARGS...
#                            DIR/BIN smoke --json ARGS with its own kernel cache
#                            and XDG dirs; OUTDIR/BIN-NAME.json and .err
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }

# The binaries travel xz-compressed: three release binaries exceed the
# 64 MiB a call may carry. python's lzma where xz is missing.
unpack_binaries() {
  local x b
  for x in "$1"/*.xz; do
    b=${x%.xz}
    [[ -e $b ]] && continue
    if command -v xz >/dev/null; then xz -dkc "$x" > "$b"
    else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$x" "$b"; fi
    chmod +x "$b"
  done
}

gpu_env() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$log"
  # cuBLAS (the in-run ceiling) and NVRTC from the machine's torch env.
  local v
  for v in /opt/torch/.venv; do [[ -d $v ]] && export GRETA_ENV=$v; done
  return 0
}

vulkan_env() {
  if ! ldconfig -p | grep -q libvulkan.so.1; then
    local f
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && \
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  return 0
}

smoke_run() {
  local dir=$1 bin=$2 name=$3 limit=$4 to=$5; shift 5
  say "$bin $name: greta smoke $*"
  GRETA_KERNEL_CACHE=/tmp/k-$bin XDG_DATA_HOME=/tmp/d-$bin XDG_CACHE_HOME=/tmp/c-$bin \
    timeout "$limit" "$dir/$bin" smoke --json --no-progress --out "/tmp/o-$bin" "$@" \
    > "$to/$bin-$name.json" 2> "$to/$bin-$name.err"
  say "$bin $name: exit $?"
  tail -n 25 "$to/$bin-$name.err" >> "$log"
}
