#!/usr/bin/env python3
"""The transformer-block gate's reference in PyTorch, timed in the
same call as `greta smoke --profile perf --gates block.*`.

One Llama-2-7B decoder layer (hidden 4096, 32 heads x 128, MLP 11008 SwiGLU,
RMSNorm eps 1e-5, RoPE theta 10000, "rotate half"), fp16 weights and
activations, batch 1, written in plain PyTorch with SDPA, exactly the
layer greta's gate runs (the fused QKV and gate/up weights included):

    decode L:  one token against a KV cache of L positions (eager, and
               replayed from a CUDA graph)
    prefill S: S tokens from an empty cache, causal (eager, and from a
               CUDA graph)

It also measures the device-to-device copy rate, so the decode memory
roofline (bytes of weights + KV read, over the copy rate) comes from the
same run. Prints one JSON object; times are medians over CUDA-event-timed
repeats after warm-up, fresh random inputs (never zeros).

With `--compile MODE` (e.g. max-autotune) it times instead the same layer
through torch.compile(mode=MODE) at decode L512 and prefill S2048 only, as
`compiled_s` (its compile time as `compile_s`): a separate run, because
max-autotune's kernel search takes minutes and may be cut off.
"""
import json
import math
import sys

import torch
import torch.nn.functional as F

import torch_ref  # beside this file: python3 puts the script's folder on sys.path

HIDDEN, HEADS, HEAD_DIM, FFN, EPS, THETA = 4096, 32, 128, 11008, 1e-5, 10000.0


def bench(fn, warmup=20, reps=100):
    # torch_ref.py's timer (CUDA events, median), with more repeats: a
    # decode layer is a fraction of a millisecond.
    return torch_ref.bench(fn, warmup=warmup, reps=reps)


def rmsnorm(x, g):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * g.float()).half()


def rope(x, pos):
    # x: [tokens, heads, head_dim], positions pos: [tokens]
    half = HEAD_DIM // 2
    inv = THETA ** (-torch.arange(0, half, device=x.device, dtype=torch.float32) * 2 / HEAD_DIM)
    ang = pos.float()[:, None] * inv[None, :]
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]
    xf = x.float()
    a, b = xf[..., :half], xf[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1).half()


class Layer:
    def __init__(self, dev):
        s = 1 / math.sqrt(HIDDEN)
        r = lambda *shape, scale=1.0: ((torch.rand(*shape, device=dev) * 2 - 1) * scale).half()
        self.g_attn = (torch.rand(HIDDEN, device=dev) + 0.5).half()
        self.g_mlp = (torch.rand(HIDDEN, device=dev) + 0.5).half()
        self.wqkv = r(3 * HIDDEN, HIDDEN, scale=s)
        self.wo = r(HIDDEN, HIDDEN, scale=s)
        self.w_gateup = r(2 * FFN, HIDDEN, scale=s)
        self.w_down = r(HIDDEN, FFN, scale=1 / math.sqrt(FFN))

    def weight_bytes(self):
        return sum(t.numel() * 2 for t in
                   (self.g_attn, self.g_mlp, self.wqkv, self.wo, self.w_gateup, self.w_down))

    def forward(self, x, k_cache, v_cache, pos0):
        # x: [tokens, hidden]; caches [max_seq, heads, head_dim], rows pos0.. written
        t = x.shape[0]
        a = rmsnorm(x, self.g_attn)
        qkv = a @ self.wqkv.t()
        q, k, v = qkv.view(t, 3, HEADS, HEAD_DIM).unbind(1)
        pos = torch.arange(pos0, pos0 + t, device=x.device)
        q, k = rope(q, pos), rope(k, pos)
        k_cache[pos0:pos0 + t] = k
        v_cache[pos0:pos0 + t] = v
        keys, vals = k_cache[:pos0 + t], v_cache[:pos0 + t]
        # [1, heads, tokens, head_dim]: SDPA's fused kernels (flash,
        # memory-efficient) take only 4-D inputs; 3-D ones fall back to the
        # unfused math path (2.5x slower at S=2048 on the H200).
        qh, kh, vh = (t_.transpose(0, 1).unsqueeze(0) for t_ in (q, keys, vals))
        if t == 1:
            o = F.scaled_dot_product_attention(qh, kh, vh)
        elif pos0 == 0:
            # is_causal, not a mask: lets SDPA take its flash kernel (an
            # explicit mask sends it to a slower one).
            o = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)
        else:
            mask = torch.ones(t, pos0 + t, device=x.device, dtype=torch.bool).tril(pos0)
            o = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask)
        o = o.squeeze(0).transpose(0, 1).reshape(t, HIDDEN)
        h = x + o @ self.wo.t()
        m = rmsnorm(h, self.g_mlp)
        gu = m @ self.w_gateup.t()
        gate, up = gu[:, :FFN], gu[:, FFN:]
        return h + (F.silu(gate.float()) * up.float()).half() @ self.w_down.t()


def compiled(mode):
    dev = torch.device("cuda")
    torch.manual_seed(int.from_bytes(__import__("os").urandom(4), "little"))
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "mode": mode, "refs": {}}
    layer = Layer(dev)
    fwd = torch.compile(layer.forward, mode=mode, dynamic=False)
    import time
    with torch.no_grad():
        for name, rows, cache, pos in (("block.decode.L512", 1, 513, 512),
                                       ("block.prefill.S2048", 2048, 2048, 0)):
            k_cache = ((torch.rand(cache, HEADS, HEAD_DIM, device=dev) * 2 - 1)).half()
            v_cache = ((torch.rand(cache, HEADS, HEAD_DIM, device=dev) * 2 - 1)).half()
            x = ((torch.rand(rows, HIDDEN, device=dev) * 2 - 1)).half()
            t0 = time.time()
            fwd(x, k_cache, v_cache, pos)
            torch.cuda.synchronize()
            built = time.time() - t0
            t = bench(lambda: fwd(x, k_cache, v_cache, pos), warmup=5, reps=30)
            out["refs"][name] = {"compiled_s": t, "compile_s": built}
            print(f"{name}: compiled {t * 1e6:.0f} us after {built:.0f} s of compiling",
                  file=sys.stderr, flush=True)
    json.dump(out, sys.stdout, indent=1)
    print()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--compile":
        return compiled(sys.argv[2])
    dev = torch.device("cuda")
    torch.manual_seed(int.from_bytes(__import__("os").urandom(4), "little"))
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cuda": torch.version.cuda, "layer": "llama2-7b", "refs": {}}
    n = (1 << 30) // 4
    src = torch.rand(n, device=dev)
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src))
    copy_gbps = 2 * n * 4 / t / 1e9
    out["copy_gbps"] = copy_gbps
    del src, dst
    layer = Layer(dev)
    wbytes = layer.weight_bytes()
    with torch.no_grad():
        for L in (512, 4096):
            k_cache = ((torch.rand(L + 1, HEADS, HEAD_DIM, device=dev) * 2 - 1)).half()
            v_cache = ((torch.rand(L + 1, HEADS, HEAD_DIM, device=dev) * 2 - 1)).half()
            x = ((torch.rand(1, HIDDEN, device=dev) * 2 - 1)).half()
            eager = bench(lambda: layer.forward(x, k_cache, v_cache, L))
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    layer.forward(x, k_cache, v_cache, L)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                layer.forward(x, k_cache, v_cache, L)
            graph = bench(g.replay)
            kv = 2 * (L + 1) * HIDDEN * 2
            moved = wbytes + kv + 2 * HIDDEN * 2
            roofline = moved / (copy_gbps * 1e9)
            out["refs"][f"block.decode.L{L}"] = {
                "eager_s": eager, "graph_s": graph, "bytes": moved,
                "roofline_s": roofline, "graph_fraction_of_roofline": roofline / graph}
            del k_cache, v_cache, g
        for S in (128, 512, 2048):
            k_cache = torch.empty(S, HEADS, HEAD_DIM, device=dev, dtype=torch.half)
            v_cache = torch.empty_like(k_cache)
            x = ((torch.rand(S, HIDDEN, device=dev) * 2 - 1)).half()
            eager = bench(lambda: layer.forward(x, k_cache, v_cache, 0), warmup=5, reps=30)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    layer.forward(x, k_cache, v_cache, 0)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                layer.forward(x, k_cache, v_cache, 0)
            graph = bench(g.replay, warmup=5, reps=30)
            flops = 2 * S * (4 * HIDDEN * HIDDEN + 3 * FFN * HIDDEN) + 2 * HEADS * HEAD_DIM * S * (S + 1)
            out["refs"][f"block.prefill.S{S}"] = {
                "eager_s": eager, "graph_s": graph, "flops": flops,
                "tflops_eager": flops / eager / 1e12, "tflops_graph": flops / graph / 1e12}
            del g
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
