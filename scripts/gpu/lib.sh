# Shared by the side-by-side GPU scripts (perf-side-by-side.sh,
# linear-f16-epilogues.sh, attn-coopmat.sh); source it from
# the repository root, then call `begin` (or set `log`, the log file).
#   begin NAME DIR           $dir (DIR, absolute), $final ($OUT, else NAME-out),
#                            $out (scratch), $log ($final/NAME.log: written where
#                            the device tool collects it, so it comes back even
#                            if the call is cut off), $start; DIR's binaries
#                            unpacked; gpu_env
#   gate_lines JSON          per device of a smoke JSON: the gates not passed,
#                            then one line per timed gate (kernel, time, rate,
#                            rel_err), on stdout and in $log
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
    [[ -e $x ]] || continue
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

begin() {
  dir=$(cd "$2" && pwd)
  final=${OUT:-$1-out}
  out=$(mktemp -d)
  mkdir -p "$final"
  log="$final/$1.log"
  start=$SECONDS
  unpack_binaries "$dir"
  gpu_env
}

gate_lines() {
  python3 - "$1" <<'PY' | tee -a "$log"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("  (no result: %s)" % e); sys.exit(0)
for dev in d.get("devices", []):
    gates = dev.get("gates", [])
    bad = [g.get("id") for g in gates if g.get("status") not in ("pass", "skip")]
    print("  %d gates, not passed: %s" % (len(gates), bad or "none"))
    for g in gates:
        m = g.get("metrics") or {}
        if m.get("time_median_us") is None:
            continue
        print("  %-32s %-6s %-28s %10s us %10s %s  rel_err %s" % (
            g.get("id"), g.get("status"), g.get("kernel"), m.get("time_median_us"),
            m.get("rate"), m.get("unit"), m.get("rel_err")))
PY
}
