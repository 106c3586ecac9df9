#!/usr/bin/env python3
"""Joins greta smoke results (greta.smoke/v1 JSON) with torch_ref.py's figures
from the same run and prints the ratio table against the targets of the
device's backend: the Vulkan kernels' and the HIP sources' (run as their
CUDA twin with --backend cuda, or on AMD with --backend hip).

usage: ratio.py TORCH_REF.json GRETA_RESULT.json [GRETA_RESULT.json ...]
Each greta gate is matched to its in-run reference by op and shape:
  fill/copy/vec_add at >= 1 GiB   -> torch copy (bytes read + written)
  gemm_f32 NxNxN                  -> cuBLAS SGEMM, TF32 off, same N
  gemm_f16 NxNxN                  -> cuBLAS fp16 GEMM, same N
  rmsnorm/layernorm/softmax RxC   -> the copy ceiling (bytes the op must move);
                                     torch's own op is shown beside it
  noop                            -> absolute: target <= 2 us per dispatch
Where greta measured its own in-run ceiling (--profile perf: the gate's
`ceiling` and `ratio`), that ratio is shown beside torch's as `own`.
"""
import json
import re
import sys

# Per backend: the Vulkan kernels' and the HIP/CUDA kernels' (docs/performance.md).
TARGETS = {
    "vulkan": {"fill": 0.95, "copy": 0.95, "vec_add": 0.95, "gemm_f32": 0.80,
               "gemm_f16": 0.70, "rmsnorm": 0.90, "layernorm": 0.90, "softmax": 0.90},
    "hip": {"fill": 0.95, "copy": 0.95, "vec_add": 0.95, "gemm_f32": 0.75,
            "gemm_f16": 0.50, "rmsnorm": 0.90, "layernorm": 0.90, "softmax": 0.90},
}
TARGETS["cuda"] = TARGETS["hip"]


def main():
    ref = json.load(open(sys.argv[1]))["refs"]
    copy_ceiling = ref["copy"]["gbps"]
    rows = []
    for path in sys.argv[2:]:
        rep = json.load(open(path))
        for dev in rep["devices"]:
            targets = TARGETS.get(dev.get("backend", "vulkan"), TARGETS["vulkan"])
            for g in dev["gates"]:
                m = g.get("metrics") or {}
                rate = m.get("rate")
                op = g["op"]
                dims = [int(x) for x in re.findall(r"\d+", g["shape"])]
                against, refrate, note = None, None, ""
                if op in ("fill", "copy", "vec_add"):
                    against, refrate = "torch copy", copy_ceiling
                    note = f"torch {op}: {ref[op]['gbps']:.0f} GB/s"
                elif op in ("gemm_f32", "gemm_f16") and dims:
                    key = ("sgemm_" if op == "gemm_f32" else "hgemm_") + str(dims[0])
                    if key in ref:
                        against, refrate = ("cuBLAS SGEMM" if op == "gemm_f32" else "cuBLAS HGEMM"), ref[key]["tflops"]
                elif op in ("rmsnorm", "layernorm", "softmax") and len(dims) >= 2:
                    against, refrate = "copy ceiling", copy_ceiling
                    key = f"{op}_{dims[0]}x{dims[1]}"
                    if key in ref:
                        note = f"torch {op}: {ref[key]['gbps']:.0f} GB/s ({ref[key]['gbps'] / copy_ceiling:.2f})"
                ratio = rate / refrate if (rate and refrate) else None
                tgt = targets.get(op)
                own = g.get("ratio")
                if op == "noop" and rate is not None:
                    verdict = "ok" if rate <= 2.0 else "MISS"
                elif op in ("fill", "copy", "vec_add") and (m.get("bytes") or 0) < (1 << 30):
                    # Targets apply from 1 GiB: smaller buffers sit in L2 or are launch-bound.
                    verdict = "-"
                elif op in ("rmsnorm", "layernorm", "softmax") and dims[:2] == [256, 1024]:
                    # 2 MiB: launch-bound (~4 us), reported, judged in docs/performance.md.
                    verdict = "-"
                elif ratio is not None and tgt is not None:
                    verdict = "ok" if ratio >= tgt else "MISS"
                else:
                    verdict = "-"
                backend = dev.get("backend", "?")
                rows.append((rep["profile"], backend, g["id"], g["status"], rate, m.get("unit", ""), against or "-",
                             refrate, ratio, own, tgt, verdict, note, g.get("kernel") or ""))
    print(f"{'profile':9} {'backend':7} {'gate':26} {'status':6} {'rate':>10} {'unit':11} {'reference':14} {'ref':>9} "
          f"{'ratio':>6} {'own':>6} {'target':>6} {'':4} kernel / note")
    for p, be, gid, st, rate, unit, against, refrate, ratio, own, tgt, verdict, note, kern in rows:
        fmt = lambda v, f: (f % v) if v is not None else "-"
        print(f"{p:9} {be:7} {gid:26} {st:6} {fmt(rate, '%.2f'):>10} {unit:11} {against:14} {fmt(refrate, '%.1f'):>9} "
              f"{fmt(ratio, '%.3f'):>6} {fmt(own, '%.3f'):>6} {fmt(tgt, '%.2f'):>6} {verdict:4} {kern} {note}")


if __name__ == "__main__":
    main()
