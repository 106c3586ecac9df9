#!/usr/bin/env python3
"""Warm install timings for scripts/bench/install.sh (not a test).

usage: warm.py WORK RUNS GRETA PYTHON WHEEL...

Alternates, RUNS times (after one warm-up round):
  rebuild: `greta install --reinstall` | `uv venv` + `uv pip install` into a new venv
  no-op:   `greta install` (env up to date) | `uv pip install` into the existing venv
  auto:    `greta install` without --profile (env up to date)
Each command's wall time is taken with perf_counter around the child
(no shell in between). Prints one JSON object: medians, min and max in ms,
and the median of each step greta reports in timings_ms for the rebuilds.
"""
import json, os, shutil, statistics, subprocess, sys, time

work, runs, greta, py = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
wheels = sys.argv[5:]
envs = os.path.join(work, "data", "greta", "envs")
uvenv = os.path.join(work, "uvenv")
gi = [greta, "install", "--profile", "cpu", "--python", py, "--no-smoke", "--installer", "uv", "--json"]
uv_install = ["uv", "pip", "install", "-q", "--python", os.path.join(uvenv, "bin", "python"),
              "--no-index", "--no-deps", *wheels]


def timed(*cmds):
    t = time.perf_counter()
    out = b""
    for c in cmds:
        p = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            sys.exit(f"warm.py: {' '.join(c)} failed:\n{p.stderr.decode()}")
        out = p.stdout
    return 1000 * (time.perf_counter() - t), out


def no_trash():
    # greta hands the replaced env to a detached `rm -rf`; let it finish so
    # it does not slow down the run that follows.
    while any(n.startswith(".trash-") for n in os.listdir(envs)):
        time.sleep(0.005)


def result(out):
    return json.loads(out)["result"]


res = {k: [] for k in ("rebuild_greta", "rebuild_uv", "noop_greta", "noop_uv", "noop_auto")}
steps = []
for r in range(runs + 1):
    ms, out = timed(gi + ["--reinstall"])
    assert result(out) == "installed", out
    no_trash()
    if r:
        res["rebuild_greta"].append(ms)
        steps.append(json.loads(out)["report"]["timings_ms"])
    shutil.rmtree(uvenv, ignore_errors=True)
    ms, _ = timed(["uv", "venv", "-q", "--python", py, uvenv], uv_install)
    if r:
        res["rebuild_uv"].append(ms)
    ms, out = timed(gi)
    assert result(out) == "up-to-date", out
    if r:
        res["noop_greta"].append(ms)
    ms, _ = timed(uv_install)
    if r:
        res["noop_uv"].append(ms)
    ms, out = timed([greta, "install", "--python", py, "--no-smoke", "--installer", "uv", "--json"])
    assert result(out) == "up-to-date", out
    if r:
        res["noop_auto"].append(ms)

summary = {k: {"median": statistics.median(v), "min": min(v), "max": max(v)} for k, v in res.items()}
keys = ["venv", "install", "import_check", "receipt", "swap", "total"]
summary["rebuild_steps_ms"] = {k: statistics.median(s[k] for s in steps) for k in keys if all(k in s for s in steps)}
summary["load_average"] = open("/proc/loadavg").read().split()[:3]
print(json.dumps(summary))
