#!/usr/bin/env bash
# The Vulkan prefill attention on the matrix units (attn_prefill_f16_cm)
# against the f32-FMA one (attn_prefill_f16): one binary, the two attention kernels forced in
# turn through the tuning cache and interleaved on the same warm GPU:
#   - doctor --json (the cooperative-matrix shapes the driver lists);
#   - --tune of both Llama-2-7B attention gates: with the binary measured
#     (4195a30) it timed coopmat=1 (the new kernel) and coopmat=0 (the
#     f32-FMA one), each checked against the CPU reference; the sweep has
#     offered no attention candidate since (docs/performance.md, "Vulkan
#     prefill attention on cooperative matrices"), and the step still writes the tuning file that names the device
#     for the next step;
#   - two tuning caches made from that file, every attention shape class
#     of the gates (attention and prefill blocks, default and perf sizes)
#     pinned to coopmat=0 ("old") or coopmat=1 ("new");
#   - perf gates of attention and the prefill block, old, new, old, new;
#   - the default profile on Vulkan with the binary's own default, then
#     with the old kernel pinned (every op checked against its reference).
# Prepare here (the folder travels, not this checkout):
#   cargo build --release -p greta; xz -c target/release/greta > DIR/greta.xz
#   cp scripts/gpu/attn-coopmat.sh DIR/
#   scripts/gpu/prepare-loader.sh            (the Vulkan loader debs in .gl)
# Run from the repository root with carry [DIR, ".gl"]:
#   bash DIR/attn-coopmat.sh
# Results in $OUT: attn-coopmat.tgz (the log, one JSON and stderr per run,
# the tuning files) and attn-coopmat.log (the log alone, with a summary line per gate).
set -uo pipefail
. scripts/gpu/lib.sh
begin attn-coopmat "$(dirname "$0")"
vulkan_env
bin="$dir/greta"

# greta with the caches of set NAME: run NAME FILE LIMIT_S ARGS...
run() {
  local name=$1 file=$2 limit=$3; shift 3
  say "$file: greta smoke $*"
  XDG_CACHE_HOME=/tmp/c-$name XDG_DATA_HOME=/tmp/d-$name GRETA_KERNEL_CACHE=/tmp/k-$name \
    timeout "$limit" "$bin" smoke --json --no-progress --out "/tmp/o-$name" "$@" \
    > "$out/$file.json" 2> "$out/$file.err"
  say "$file: exit $?"
  tail -n 12 "$out/$file.err" >> "$log"
  gate_lines "$out/$file.json"
}

XDG_CACHE_HOME=/tmp/c-tune XDG_DATA_HOME=/tmp/d-tune timeout 60 "$bin" doctor --json \
  > "$out/doctor.json" 2> "$out/doctor.err"
say "doctor: exit $?"

attn=(--gate attn_prefill_f16.32x128.S512 --gate attn_prefill_f16.32x128.S2048)
say "tune: greta smoke --backend vulkan --tune ${attn[*]}"
XDG_CACHE_HOME=/tmp/c-tune XDG_DATA_HOME=/tmp/d-tune timeout 90 "$bin" smoke --backend vulkan \
  --tune --no-progress "${attn[@]}" > "$out/tune.out" 2> "$out/tune.err"
say "tune: exit $?"
cat "$out/tune.out" >> "$log"; tail -n 30 "$out/tune.err" >> "$log"

# The tuning file the sweep wrote (it names the device and driver), with
# the attention classes pinned to one kernel.
python3 - /tmp/c-tune/greta/tuning "$out" <<'EOF' | tee -a "$log"
import glob, json, os, sys
src, out = sys.argv[1], sys.argv[2]
classes = ["attn_prefill_f16:t%d,h%d,d%d" % c for c in
           [(64, 4, 64), (128, 4, 64), (128, 32, 128), (512, 32, 128), (2048, 32, 128)]]
files = glob.glob(os.path.join(src, "vulkan-*.json"))
if not files:
    print("no tuning file in", src)
for f in files:
    for name, v in (("old", 0), ("new", 1)):
        d = json.load(open(f))
        for c in classes:
            d["entries"][c] = {"tuning": {"coopmat": v},
                               "kernel": "attn_prefill_f16_cm" if v else "attn_prefill_f16",
                               "median_ns": 1, "measured_op": "pinned by attn-coopmat.sh"}
        dst = "/tmp/c-%s/greta/tuning" % name
        os.makedirs(dst, exist_ok=True)
        json.dump(d, open(os.path.join(dst, os.path.basename(f)), "w"), indent=1)
        json.dump(d, open(os.path.join(out, "tuning-%s.json" % name), "w"), indent=1)
        print("pinned coopmat=%d in %s/%s" % (v, dst, os.path.basename(f)))
EOF

perf=(--backend vulkan --profile perf --repeat 3 "${attn[@]}"
      --gate block_prefill.S128 --gate block_prefill.S512 --gate block_prefill.S2048)
# run_left NAME FILE MOST_S ARGS...: only with time left before 285 s.
run_left() {
  local left=$((285 - (SECONDS - start)))
  if (( left > 25 )); then run "$1" "$2" $(( left < $3 ? left : $3 )) "${@:4}"
  else say "$2: skipped, $left s left"; fi
}
run_left old old-perf1 80 "${perf[@]}"
run_left new new-perf1 80 "${perf[@]}"
run_left dflt dflt-default 45 --backend vulkan
run_left old old-perf2 80 "${perf[@]}"
run_left new new-perf2 80 "${perf[@]}"
run_left old old-default 45 --backend vulkan
say "done after $((SECONDS - start)) s"
tar -C "$out" -czf "$final/attn-coopmat.tgz" .
