#!/usr/bin/env python3
"""Prints two greta smoke results (greta.smoke/v1 JSON) side by side, gate by
gate: status, kernel median time and rate, and new/base time ratio. Used for
before/after checks of a refactor on one warm GPU (scripts/gpu/perf-side-by-side.sh).

usage: side_by_side.py BASE.json NEW.json
"""
import json
import sys


def gates(path):
    with open(path) as f:
        doc = json.load(f)
    # greta.smoke/v1: one entry per device, each with its own gates.
    return {g["id"]: g for d in doc.get("devices", []) for g in d.get("gates", [])}


def cell(g):
    m = g.get("metrics") or {}
    t, r = m.get("time_median_us"), m.get("rate")
    unit = m.get("unit", "")
    rate = f"{r:.4g} {unit}" if r is not None else "-"
    time = f"{t:.1f} us" if t is not None else "-"
    return g["status"], time, rate, t


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base, new = gates(sys.argv[1]), gates(sys.argv[2])
    print("| gate | base | new | new/base time |")
    print("| --- | --- | --- | ---: |")
    for gid in sorted(base.keys() | new.keys()):
        row = [gid]
        times = []
        for side in (base, new):
            if gid not in side:
                row.append("absent")
                times.append(None)
                continue
            status, time, rate, t = cell(side[gid])
            row.append(f"{status} {time} {rate}")
            times.append(t)
        a, b = times
        row.append(f"{b / a:.3f}" if a and b else "-")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
