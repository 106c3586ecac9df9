#!/usr/bin/env python3
"""torch's F.scaled_dot_product_attention
at the shapes of greta's attention gates, fp16, timed with CUDA events, so
greta's figures have a ratio on the same GPU in the same call.

prefill: q, k, v (1, 32, S, 128), is_causal=True, S = 512, 2048
decode:  q (1, 32, 1, 128) against k, v (1, 32, L, 128), L = 512, 4096

Rates are counted as greta counts them: TFLOP/s = 4 * heads * head_dim *
visible (query, key) pairs / time; GB/s = bytes of q, o and the L rows of
K and V / time. Prints one JSON object."""
import json
import sys

import torch
import torch.nn.functional as F

import torch_ref  # beside this file: python3 puts the script's folder on sys.path


def timed(fn, warm=20, iters=100):
    # torch_ref.py's timer (CUDA events, median over iters after warm
    # calls), in microseconds.
    return torch_ref.bench(fn, warmup=warm, reps=iters) * 1e6


def main():
    dev = torch.device("cuda")
    h, d = 32, 128
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "gates": {}}
    for s in (512, 2048):
        q, k, v = (torch.randn(1, h, s, d, device=dev, dtype=torch.float16) for _ in range(3))
        us = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        pairs = s * (s + 1) // 2
        out["gates"][f"attn_prefill_f16.32x128.S{s}"] = {
            "us": us,
            "rate": 4 * h * d * pairs / (us * 1e-6) / 1e12,
            "unit": "TFLOP/s",
        }
    for length in (512, 4096):
        q = torch.randn(1, h, 1, d, device=dev, dtype=torch.float16)
        k, v = (torch.randn(1, h, length, d, device=dev, dtype=torch.float16) for _ in range(2))
        us = timed(lambda: F.scaled_dot_product_attention(q, k, v))
        nbytes = 2 * (2 * h * d + 2 * length * h * d)
        out["gates"][f"attn_decode_f16.32x128.L{length}"] = {
            "us": us,
            "rate": nbytes / (us * 1e-6) / 1e9,
            "unit": "GB/s",
        }
    # The device-to-device copy of the L=4096 K+V footprint (64 MiB), as
    # greta's in-run ceiling counts it (read + write).
    n = 2 * 4096 * h * d
    src = torch.empty(n, device=dev, dtype=torch.float16)
    dst = torch.empty_like(src)
    us = timed(lambda: dst.copy_(src))
    out["copy_64MiB_GBps"] = 2 * 2 * n / (us * 1e-6) / 1e9
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
