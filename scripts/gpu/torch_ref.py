#!/usr/bin/env python3
"""PyTorch/cuBLAS ceilings measured in the same run as `greta smoke --profile perf`.

Prints one JSON object: for each reference, the median time over timed
repeats (CUDA events, after warm-up, fresh random inputs, never zeros) and the
rate computed from the bytes/flops the operation must move, counted the same
way greta counts them (docs/performance.md).

`--gemm`: only the f16 matrix products (HGEMM at 4096 and 8192, and
F.linear at the Llama-2-7B prefill projections' shapes, greta's linear_f16).
"""
import json
import sys

import torch

GIB = 1 << 30


def bench(fn, warmup=5, reps=30):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    times.sort()
    return times[len(times) // 2]


# Y = X W^T (tokens, rows, cols) as greta's linear_f16 gates and the
# prefill layer's projections: QKV, the output projection, gate/up (one
# matrix and apart), down.
LINEAR_SHAPES = ((2048, 12288, 4096), (2048, 4096, 4096), (2048, 22016, 4096),
                 (2048, 11008, 4096), (2048, 4096, 11008))


def f16_products(dev, refs):
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    for s in (4096, 8192):
        a16 = torch.randn(s, s, device=dev, dtype=torch.half)
        b16 = torch.randn(s, s, device=dev, dtype=torch.half)
        c16 = torch.empty(s, s, device=dev, dtype=torch.half)
        t = bench(lambda: torch.matmul(a16, b16, out=c16), reps=10)
        refs[f"hgemm_{s}"] = {"flops": 2 * s**3, "s": t, "tflops": 2 * s**3 / t / 1e12}
        del a16, b16, c16
    for tokens, rows, cols in LINEAR_SHAPES:
        x = torch.randn(tokens, cols, device=dev, dtype=torch.half)
        w = torch.randn(rows, cols, device=dev, dtype=torch.half)
        t = bench(lambda: torch.nn.functional.linear(x, w), reps=20)
        flops = 2 * tokens * rows * cols
        refs[f"linear_f16_{tokens}x{rows}x{cols}"] = {"flops": flops, "s": t, "tflops": flops / t / 1e12}
        del x, w


def main():
    dev = torch.device("cuda")
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cuda": torch.version.cuda, "refs": {}}
    refs = out["refs"]
    if "--gemm" in sys.argv[1:]:
        f16_products(dev, refs)
        json.dump(out, sys.stdout, indent=1)
        print()
        return

    n = GIB // 4  # 1 GiB of f32
    x = torch.rand(n, device=dev)
    y = torch.rand(n, device=dev)
    z = torch.empty_like(x)
    t = bench(lambda: z.copy_(x))
    refs["copy"] = {"bytes": 2 * n * 4, "s": t, "gbps": 2 * n * 4 / t / 1e9}
    t = bench(lambda: z.fill_(1.2345))
    refs["fill"] = {"bytes": n * 4, "s": t, "gbps": n * 4 / t / 1e9}
    t = bench(lambda: torch.add(x, y, out=z))
    refs["vec_add"] = {"bytes": 3 * n * 4, "s": t, "gbps": 3 * n * 4 / t / 1e9}
    del x, y, z

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # f16 GEMM with f32 accumulation, as greta's gemm_f16 (no fp16 reduction shortcuts).
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    for s in (4096, 8192):
        a = torch.randn(s, s, device=dev)
        b = torch.randn(s, s, device=dev)
        c = torch.empty(s, s, device=dev)
        t = bench(lambda: torch.matmul(a, b, out=c), reps=10)
        refs[f"sgemm_{s}"] = {"flops": 2 * s**3, "s": t, "tflops": 2 * s**3 / t / 1e12}
        a16, b16 = a.half(), b.half()
        c16 = torch.empty(s, s, device=dev, dtype=torch.half)
        t = bench(lambda: torch.matmul(a16, b16, out=c16), reps=10)
        refs[f"hgemm_{s}"] = {"flops": 2 * s**3, "s": t, "tflops": 2 * s**3 / t / 1e12}
        del a, b, c, a16, b16, c16

    for rows, cols in ((4096, 8192), (256, 1024)):
        x = torch.randn(rows, cols, device=dev)
        w = torch.randn(cols, device=dev)
        bias = torch.randn(cols, device=dev)
        moved = 2 * rows * cols * 4  # read x once, write y once (weights negligible)
        ops = {
            "rmsnorm": lambda: torch.nn.functional.rms_norm(x, (cols,), w, 1e-5),
            "layernorm": lambda: torch.nn.functional.layer_norm(x, (cols,), w, bias, 1e-5),
            "softmax": lambda: torch.softmax(x, dim=-1),
        }
        for name, fn in ops.items():
            t = bench(fn)
            refs[f"{name}_{rows}x{cols}"] = {"bytes": moved, "s": t, "gbps": moved / t / 1e9}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
