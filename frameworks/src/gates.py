# greta framework gates: run by greta inside an env's interpreter (embedded in
# the greta binary, written to a private temporary directory for each run:
# triton compiles kernels from their source file, so this must be a file).
#
# Protocol (frameworks/src/lib.rs, the greta-frameworks crate, holds the Rust side):
#   argv: gates=M1,M2 seed=N timeout=SECONDS repeats=N MODULE...
#         (every MODULE is imported and inspected; those in `gates` are
#         also gated)
#   stdin: the line "go [key=value...]" (greta may start the interpreter
#          early and let it wait while the wheels are still being installed;
#          options on this line override argv's)
#   fd 1 (as inherited): JSON lines, each one object with an "event" key:
#          {"event": "done", "module": M}      a module's child finished
#          {"event": "result", ...}            the whole run, last line
#   Everything else anyone prints (frameworks print a lot) goes to stderr:
#   fd 1 is moved aside before anything is imported.
#
# Only the standard library is imported here: each module is imported and
# gated in its own forked child, side by side, and a child that does not
# finish in time is killed (SIGKILL) and named with the step it was in.
# A child dies with this process (PR_SET_PDEATHSIG); greta kills the whole
# process group afterwards, so nothing a framework started outlives the run.
# The references are computed with NumPy in float64 from the exact input
# values (f16/bf16 inputs are widened exactly), on fresh random inputs.

import importlib, os, select, signal, site, sys, time

_OUT = os.dup(1)
os.dup2(2, 1)
sys.stdout = sys.stderr

try:
    import ctypes
    _prctl = ctypes.CDLL(None).prctl
except Exception:
    _prctl = None


def enc(v):
    # JSON, ASCII only (non-ASCII as \u escapes, a lone surrogate as U+FFFD).
    # Not the json module: importing it costs ~7 ms of CPU on every install.
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return "null"
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(enc(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(enc(str(k)) + ":" + enc(x) for k, x in v.items()) + "}"
    out = []
    for c in str(v):
        o = ord(c)
        if 0x20 <= o < 0x7F and c != '"' and c != "\\":
            out.append(c)
        elif o > 0xFFFF:
            o -= 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append("\\u%04x" % o)
    return '"' + "".join(out) + '"'


def emit(obj):
    data = (enc(obj) + "\n").encode("ascii")
    while data:
        data = data[os.write(_OUT, data):]


def err_text(e):
    s = "%s: %s" % (type(e).__name__, e)
    return s[:4000]


def tail_of_traceback():
    import traceback
    return "".join(traceback.format_exc().splitlines(True)[-12:])[-4000:]


# ----------------------------------------------------------------- numerics

class Gates:
    """Collects one framework's gate records; `phase` tells the parent which
    step is running, so a time-out names it."""

    def __init__(self, wfd, seed, repeats):
        self.wfd = wfd
        self.seed = seed
        self.repeats = repeats
        self.records = []
        self.np = None

    def send(self, obj):
        data = (enc(obj) + "\n").encode("ascii")
        while data:
            data = data[os.write(self.wfd, data):]

    def phase(self, name):
        self.send({"phase": name})

    def numpy(self):
        if self.np is None:
            import numpy
            self.np = numpy
        return self.np

    def rng(self, gate_id, r):
        # The same gate id, seed and repeat give the same inputs (reproducible
        # with --seed); every repeat gets new ones.
        h = 0
        for c in gate_id:
            h = (h * 131 + ord(c)) % (1 << 61)
        return self.numpy().random.default_rng([self.seed, h, r])

    def run(self, gate_id, shape, flops, nbytes, once, timing_runs=10):
        """once(r) -> (out_f64, ref_f64, device_str, timed_fn). Runs `repeats`
        repeats with fresh inputs, each checked; then times timed_fn."""
        np = self.numpy() if self.np is None else self.np
        self.phase(gate_id)
        rec = {"id": gate_id, "shape": shape, "flops": flops, "bytes": nbytes,
               "repeats": 0, "rel_err": None, "max_abs_err": None, "finite": True,
               "device": None, "first_call_us": None, "median_us": None,
               "min_us": None, "error": None}
        try:
            worst_rel = 0.0
            worst_abs = 0.0
            timed = None
            for r in range(self.repeats):
                t = time.perf_counter()
                out, ref, device, timed = once(r)
                if r == 0:
                    rec["first_call_us"] = (time.perf_counter() - t) * 1e6
                rec["device"] = device
                out = np.asarray(out, dtype=np.float64)
                ref = np.asarray(ref, dtype=np.float64)
                if out.shape != ref.shape:
                    raise ValueError("result shape %s, expected %s" % (out.shape, ref.shape))
                if not np.isfinite(out).all():
                    rec["finite"] = False
                    bad = int((~np.isfinite(out)).sum())
                    raise ValueError("%d of %d result elements are NaN or infinite" % (bad, out.size))
                diff = out - ref
                den = float(np.linalg.norm(ref))
                rel = float(np.linalg.norm(diff)) / den if den > 0 else float(np.linalg.norm(diff))
                worst_rel = max(worst_rel, rel)
                worst_abs = max(worst_abs, float(np.abs(diff).max()))
                rec["repeats"] = r + 1
            rec["rel_err"] = worst_rel
            rec["max_abs_err"] = worst_abs
            times = []
            for _ in range(timing_runs):
                t = time.perf_counter()
                timed()
                times.append((time.perf_counter() - t) * 1e6)
            times.sort()
            rec["median_us"] = times[len(times) // 2]
            rec["min_us"] = times[0]
        except BaseException as e:
            rec["error"] = err_text(e)
            rec["traceback"] = tail_of_traceback()
        self.records.append(rec)
        return rec


def softmax_ref(np, x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


# -------------------------------------------------------------------- torch

def torch_info(torch):
    info = {}
    v = getattr(torch, "version", None)
    info["hip"] = getattr(v, "hip", None)
    info["cuda"] = getattr(v, "cuda", None)
    try:
        info["cuda_available"] = bool(torch.cuda.is_available())
        info["device_count"] = int(torch.cuda.device_count())
    except Exception as e:
        info["cuda_available"] = False
        info["device_error"] = err_text(e)
    return info


def torch_device_info(torch, info):
    if info.get("cuda_available"):
        p = torch.cuda.get_device_properties(0)
        d = {"kind": "gpu", "name": str(p.name)}
        for k in ("gcnArchName", "pci_bus_id", "pci_device_id", "pci_domain_id",
                  "major", "minor", "total_memory", "multi_processor_count"):
            x = getattr(p, k, None)
            if x is not None:
                d[k] = x if isinstance(x, (int, str)) else str(x)
        u = getattr(p, "uuid", None)
        if u is not None:
            d["uuid"] = str(u)
        return d
    # Why there is no GPU, in torch's words (e.g. "Found no NVIDIA driver",
    # "No HIP GPUs are available", "Torch not compiled with CUDA enabled").
    reason = None
    try:
        torch.cuda.init()
    except BaseException as e:
        reason = err_text(e)
    return {"kind": "cpu", "name": "cpu", "reason": reason}


def torch_gates(torch, g, info):
    np = g.numpy()
    dev = torch.device("cuda:0" if info.get("cuda_available") else "cpu")
    on_gpu = dev.type == "cuda"

    def sync():
        if on_gpu:
            torch.cuda.synchronize()

    def where(t):
        d = t.device
        return "%s:%s" % (d.type, d.index) if d.index is not None else d.type

    # The CPU (the cpu profile, or a fallback) gets smaller shapes and fewer
    # timed calls: torch's f16 GEMM on a CPU is ~100x slower than f32.
    dim = 512 if on_gpu else 256
    runs = 10 if on_gpu else 3

    def matmul(dtype, name, m=dim, n=dim, k=dim):
        size = {torch.float32: 4, torch.float16: 2, torch.bfloat16: 2}[dtype]

        def once(r):
            rng = g.rng(name, r)
            a = torch.from_numpy(rng.uniform(-1, 1, (m, k)).astype(np.float32)).to(dtype)
            b = torch.from_numpy(rng.uniform(-1, 1, (k, n)).astype(np.float32)).to(dtype)
            ref = a.double().numpy() @ b.double().numpy()
            da, db = a.to(dev), b.to(dev)
            out = torch.matmul(da, db)
            sync()
            res = out.float().cpu().numpy()

            def timed():
                torch.matmul(da, db)
                sync()
            return res, ref, where(out), timed
        g.run(name, "m=%d n=%d k=%d" % (m, n, k), 2 * m * n * k, size * (m * k + k * n + m * n), once, runs)

    matmul(torch.float32, "torch.matmul_f32")
    matmul(torch.float16, "torch.matmul_f16")
    matmul(torch.bfloat16, "torch.matmul_bf16")

    rows, cols = 256, 1024

    def softmax_once(r):
        rng = g.rng("torch.softmax", r)
        x = rng.uniform(-8, 8, (rows, cols)).astype(np.float32)
        dx = torch.from_numpy(x).to(dev)
        out = torch.softmax(dx, dim=-1)
        sync()

        def timed():
            torch.softmax(dx, dim=-1)
            sync()
        return out.cpu().numpy(), softmax_ref(np, x.astype(np.float64)), where(out), timed
    g.run("torch.softmax", "rows=%d cols=%d" % (rows, cols), 0, 8 * rows * cols, softmax_once, runs)

    B, H, L, D = 2, 8, 256, 64
    sdpa = getattr(getattr(torch.nn, "functional", None), "scaled_dot_product_attention", None)

    def sdpa_once(r):
        if sdpa is None:
            raise RuntimeError("torch.nn.functional.scaled_dot_product_attention is missing (torch < 2.0)")
        rng = g.rng("torch.sdpa", r)
        qkv = [torch.from_numpy(rng.uniform(-1, 1, (B, H, L, D)).astype(np.float32)).to(torch.float16)
               for _ in range(3)]
        q, k, v = [t.double().numpy() for t in qkv]
        s = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(D)
        ref = softmax_ref(np, s) @ v
        dq, dk, dv = [t.to(dev) for t in qkv]
        out = sdpa(dq, dk, dv)
        sync()

        def timed():
            sdpa(dq, dk, dv)
            sync()
        return out.float().cpu().numpy(), ref, where(out), timed
    g.run("torch.sdpa", "batch=%d heads=%d len=%d dim=%d f16" % (B, H, L, D),
          4 * B * H * L * L * D, 2 * 4 * B * H * L * D, sdpa_once, runs)


# ------------------------------------------------------------------- triton

tl = None
_triton_kernels = None


def define_triton_kernels(triton):
    global tl, _triton_kernels
    import triton.language as tl_mod
    tl = tl_mod

    @triton.jit
    def vec_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    @triton.jit
    def softmax_rows(x_ptr, out_ptr, stride, ncols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < ncols
        x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        s = tl.sum(e, axis=0)
        tl.store(out_ptr + row * stride + offs, e / s, mask=mask)

    _triton_kernels = (vec_add, softmax_rows)


def triton_gates(triton, g, info):
    np = g.numpy()
    try:
        import torch
    except BaseException as e:
        raise RuntimeError("triton needs torch for device buffers, and torch does not import: %s" % err_text(e))
    if not torch.cuda.is_available():
        reason = None
        try:
            torch.cuda.init()
        except BaseException as e:
            reason = err_text(e)
        info["device"] = {"kind": "cpu", "name": "cpu", "reason": reason}
        raise RuntimeError("no GPU for triton: torch.cuda.is_available() is False" + (" (%s)" % reason if reason else ""))
    p = torch.cuda.get_device_properties(0)
    info["device"] = {"kind": "gpu", "name": str(p.name)}
    try:
        info["target"] = str(triton.runtime.driver.active.get_current_target())
    except Exception as e:
        info["target_error"] = err_text(e)
    g.phase("triton.compile")
    define_triton_kernels(triton)
    vec_add, softmax_rows = _triton_kernels
    dev = torch.device("cuda:0")
    n = 1 << 20

    def add_once(r):
        rng = g.rng("triton.vec_add", r)
        a = rng.uniform(-1, 1, n).astype(np.float32)
        b = rng.uniform(-1, 1, n).astype(np.float32)
        da, db = torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev)
        out = torch.empty_like(da)
        grid = (triton.cdiv(n, 1024),)
        vec_add[grid](da, db, out, n, BLOCK=1024)
        torch.cuda.synchronize()

        def timed():
            vec_add[grid](da, db, out, n, BLOCK=1024)
            torch.cuda.synchronize()
        return out.cpu().numpy(), a.astype(np.float64) + b.astype(np.float64), str(out.device), timed
    g.run("triton.vec_add", "n=%d" % n, 0, 12 * n, add_once)

    rows, cols = 256, 1000

    def softmax_once(r):
        rng = g.rng("triton.softmax", r)
        x = rng.uniform(-8, 8, (rows, cols)).astype(np.float32)
        dx = torch.from_numpy(x).to(dev)
        out = torch.empty_like(dx)
        block = triton.next_power_of_2(cols)
        softmax_rows[(rows,)](dx, out, dx.stride(0), cols, BLOCK=block)
        torch.cuda.synchronize()

        def timed():
            softmax_rows[(rows,)](dx, out, dx.stride(0), cols, BLOCK=block)
            torch.cuda.synchronize()
        return out.cpu().numpy(), softmax_ref(np, x.astype(np.float64)), str(out.device), timed
    g.run("triton.softmax", "rows=%d cols=%d" % (rows, cols), 0, 8 * rows * cols, softmax_once)


# ---------------------------------------------------------------------- jax

def jax_info(jax):
    info = {}
    try:
        devs = jax.devices()
        info["devices"] = [{"platform": str(getattr(d, "platform", "?")),
                            "kind": str(getattr(d, "device_kind", "?")),
                            "id": getattr(d, "id", None)} for d in devs]
        info["default_backend"] = str(jax.default_backend())
    except Exception as e:
        info["device_error"] = err_text(e)
    try:
        import jaxlib
        info["jaxlib"] = str(getattr(jaxlib, "__version__", "")) or None
    except Exception:
        pass
    return info


def jax_gates(jax, g, info):
    np = g.numpy()
    import jax.numpy as jnp
    devs = jax.devices()
    dev = devs[0]
    info["device"] = {"kind": "cpu" if dev.platform == "cpu" else "gpu",
                      "name": str(getattr(dev, "device_kind", dev.platform)),
                      "platform": str(dev.platform)}
    if dev.platform == "cpu":
        # Why no GPU backend came up, in jax's words, when it says.
        try:
            jax.devices("gpu")
        except BaseException as e:
            info["device"]["reason"] = err_text(e)
    hi = jax.lax.Precision.HIGHEST
    f = jax.jit(lambda a, b: jnp.matmul(a, b, precision=hi))
    on_cpu = dev.platform == "cpu"
    m = n = k = 256 if on_cpu else 512

    def once(r):
        rng = g.rng("jax.matmul_f32", r)
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        da, db = jax.device_put(a, dev), jax.device_put(b, dev)
        out = f(da, db).block_until_ready()
        try:
            where = ",".join(sorted("%s:%s" % (d.platform, d.id) for d in out.devices()))
        except Exception:
            where = str(dev.platform)

        def timed():
            f(da, db).block_until_ready()
        return np.asarray(out), a.astype(np.float64) @ b.astype(np.float64), where, timed
    g.run("jax.matmul_f32", "m=%d n=%d k=%d" % (m, n, k), 2 * m * n * k, 4 * (m * k + k * n + m * n), once,
          3 if on_cpu else 10)


# ------------------------------------------------------------------ driver

INFO = {"torch": torch_info, "triton": lambda m: {}, "jax": jax_info}
GATES = {"torch": torch_gates, "triton": triton_gates, "jax": jax_gates}


def child(mod, wfd, compute, seed, repeats):
    t0 = time.monotonic()
    g = Gates(wfd, seed, repeats)
    r = {"module": mod, "status": "ok", "error": None}
    try:
        if mod == "jax":
            # torch and jax share the GPU side by side: no 75% preallocation.
            os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        g.phase("import")
        t = time.perf_counter()
        m = importlib.import_module(mod)
        r["import_s"] = time.perf_counter() - t
        r["version"] = str(getattr(m, "__version__", "")) or None
        r["file"] = getattr(m, "__file__", None)
        g.phase("inspect")
        info = INFO[mod](m)
        r["info"] = info
        if compute:
            if mod == "torch":
                g.phase("device")
                info["device"] = torch_device_info(m, info)
            try:
                g.numpy()
            except BaseException as e:
                raise RuntimeError("numpy does not import (%s): the float64 reference needs it" % err_text(e))
            GATES[mod](m, g, info)
    except ModuleNotFoundError as e:
        # The module itself is absent (not one it needs): not installed.
        r["status"] = "missing" if e.name == mod and "import_s" not in r else "error"
        r["error"] = err_text(e)
        r["traceback"] = tail_of_traceback()
    except BaseException as e:
        r["status"] = "error"
        r["error"] = err_text(e)
        r["traceback"] = tail_of_traceback()
    r["gates"] = g.records
    r["elapsed_s"] = time.monotonic() - t0
    g.send({"result": r})


def parse_args(argv):
    opts = {"gates": "", "seed": "0", "timeout": "300", "repeats": "3"}
    mods = []
    for a in argv:
        k, eq, v = a.partition("=")
        if eq:
            opts[k] = v
        else:
            mods.append(a)
    gated = [m for m in opts["gates"].split(",") if m]
    return (gated, int(opts["seed"]), float(opts["timeout"]),
            max(1, int(opts["repeats"])), mods)


def main():
    go = sys.stdin.readline().split()
    if not go or go[0] != "go":
        sys.exit(3)
    # Options on the "go" line override those of argv.
    gated, seed, timeout, repeats, mods = parse_args(sys.argv[1:] + go[1:])
    # What start-up would have done had the packages been there already: the
    # wheels' .pth files, a sitecustomize, fresh directory listings.
    for d in site.getsitepackages():
        site.addsitedir(d)
    if "sitecustomize" not in sys.modules:
        try:
            import sitecustomize  # noqa: F401
        except ImportError:
            pass
    importlib.invalidate_caches()

    me = os.getpid()
    kids = {}
    started = time.monotonic()
    for mod in mods:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(rfd)
                if _prctl is not None:
                    _prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
                if os.getppid() != me:
                    os._exit(1)
                child(mod, wfd, mod in gated, seed, repeats)
            finally:
                os._exit(0)
        os.close(wfd)
        kids[rfd] = {"module": mod, "pid": pid, "buf": b"", "phase": "start",
                     "result": None, "started": time.monotonic()}

    results = {}

    def finish(rfd, status, error):
        k = kids.pop(rfd)
        os.close(rfd)
        if k["result"] is None:
            try:
                _, st = os.waitpid(k["pid"], 0)
            except ChildProcessError:
                st = 0
            if status is None:
                how = ("signal %d" % os.WTERMSIG(st)) if os.WIFSIGNALED(st) else ("exit status %d" % os.WEXITSTATUS(st))
                status, error = "crashed", "the process ended (%s) during %s before it reported" % (how, k["phase"])
            results[k["module"]] = {"module": k["module"], "status": status, "error": error,
                                    "phase": k["phase"], "gates": [],
                                    "elapsed_s": time.monotonic() - k["started"]}
        else:
            try:
                os.waitpid(k["pid"], 0)
            except ChildProcessError:
                pass
            results[k["module"]] = k["result"]
        emit({"event": "done", "module": k["module"]})

    while kids:
        left = started + timeout - time.monotonic()
        if left <= 0:
            for rfd in list(kids):
                k = kids[rfd]
                try:
                    os.kill(k["pid"], signal.SIGKILL)
                except ProcessLookupError:
                    pass
                finish(rfd, "timeout", "%s did not finish within %g s and was killed (it was in %s)" % (k["module"], timeout, k["phase"]))
            break
        ready, _, _ = select.select(list(kids), [], [], min(left, 1.0))
        for rfd in ready:
            k = kids[rfd]
            b = os.read(rfd, 65536)
            if not b:
                finish(rfd, None, None)
                continue
            k["buf"] += b
            if len(k["buf"]) > (8 << 20):
                os.kill(k["pid"], signal.SIGKILL)
                finish(rfd, "crashed", "%s wrote more than 8 MiB of results" % k["module"])
                continue
            while b"\n" in k["buf"]:
                line, _, k["buf"] = k["buf"].partition(b"\n")
                text = line.decode("ascii", "replace")
                if text.startswith('{"phase":'):
                    k["phase"] = text[10:-2] if text.endswith('"}') else text
                elif text.startswith('{"result":'):
                    k["result"] = text
    # Results are re-emitted as they came (already JSON text from the child).
    parts = []
    for mod in mods:
        r = results.get(mod)
        if isinstance(r, str):
            parts.append(r[len('{"result":'):-1])
        elif r is not None:
            parts.append(enc(r))
    py = {"executable": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3],
          "prefix": sys.prefix, "base_prefix": getattr(sys, "base_prefix", sys.prefix),
          "isolated": bool(sys.flags.isolated)}
    env = {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                     "ROCR_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION",
                                     "JAX_PLATFORMS", "PYTORCH_ROCM_ARCH") if k in os.environ}
    head = enc({"event": "result", "python": py, "env": env, "wall_s": time.monotonic() - started})
    line = head[:-1] + ',"frameworks":[' + ",".join(parts) + "]}\n"
    data = line.encode("ascii")
    while data:
        data = data[os.write(_OUT, data):]


main()
os._exit(0)  # the result is out; interpreter teardown would only cost time
