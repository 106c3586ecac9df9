#!/usr/bin/env bash
# The host-copy gate (copy.host.256m: pinned host memory to the device and
# back, fresh random bytes compared each round, each way's GB/s held to 0.6
# of the PCIe link's rate) on the GPU, one call of a few minutes:
#   1. clean on CUDA (cuMemHostAlloc + cuMemcpyHtoDAsync/DtoHAsync) and on
#      Vulkan (vkCmdCopyBuffer to and from HOST_VISIBLE|HOST_CACHED memory),
#      and on HIP where the machine has a ROCm runtime: each must pass its
#      link floor, with the link greta read (NVML) beside nvidia-smi's;
#   2. --inject slow:0:2 (each copy's time doubled) must FAIL it on CUDA
#      (a healthy link at 0.7-0.9 of its rate falls under 0.6 at half);
#   3. --inject corrupt:0 must FAIL it on CUDA naming the round and byte.
# Prepare here: cargo build --release -p greta; mkdir -p .device/hc;
#   xz -c target/release/greta > .device/hc/greta.xz;
#   bash scripts/gpu/prepare-loader.sh (once, for .gl)
# Run from the repository root with carry [".device/hc", ".gl"]:
#   bash scripts/gpu/host-copy.sh .device/hc
# Results in $OUT: host-copy.log (each run's rates, floor and verdict) and
# host-copy.tgz (every JSON and stderr).
set -uo pipefail
. scripts/gpu/lib.sh
begin host-copy "$1"
vulkan_env
nvidia-smi -q 2>&1 | grep -A14 -i "GPU Link Info" | tee -a "$log"
gate=(--profile acceptance --gate copy.host.256m)

# show NAME: the gate's rates, link, floor and verdict from the result.
show() {
  python3 - "$out/greta-$1.json" <<'PY' | tee -a "$log"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("  (no result: %s)" % e); sys.exit(0)
for dev in d.get("devices", []):
    for g in dev.get("gates", []):
        h = g.get("host_copy") or {}
        f = g.get("floor") or {}
        print("  %s %s: up %s GB/s, down %s GB/s, %s/%s clean, link %s (%s GB/s), floor %s %s; %s; %s" % (
            g["id"], g["status"], h.get("up_gbps"), h.get("down_gbps"), h.get("rounds_clean"),
            h.get("rounds"), h.get("link"), h.get("link_gbps"), f.get("limit"),
            h.get("no_floor") or "", h.get("how"), g.get("reason")))
PY
}

for b in cuda vulkan hip; do
  smoke_run "$dir" greta "$b" 120 "$out" --backend "$b" "${gate[@]}"; show "$b"
done
smoke_run "$dir" greta cuda-slow 120 "$out" --backend cuda "${gate[@]}" --inject slow:0:2; show cuda-slow
smoke_run "$dir" greta cuda-corrupt 120 "$out" --backend cuda "${gate[@]}" --inject corrupt:0; show cuda-corrupt
say "done after $((SECONDS - start)) s"
tar -C "$out" -czf "$final/host-copy.tgz" .
