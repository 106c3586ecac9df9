#!/usr/bin/env python3
"""Doctor accuracy over a corpus of real pastes.

Runs `greta doctor --json --from FILES...` for every case of every folder
under the given corpus directories and scores it against the folder's
expect.toml, with the same rules as probe/tests/it/fixtures.rs: every
expected GPU matched one-to-one (vendor, name_contains, gfx, vf) and no
extra GPU, every fact (a substring of what doctor reports), every `must`
id raised and no `must_not` id raised. A case is right when every item
holds. Prints one line per wrong case (with what failed), then a table per
class and in total.

A case's class comes from its expect.toml (`class = [1, 6]` at the top, or
in the case table), else from the INDEX.md of its corpus directory (the
line naming the folder, `class N` / a `class` column), else `-`.

usage: scripts/doctor-accuracy.py [--greta BIN] [--json OUT] [-q] DIR...
  BIN: the greta binary (default: target/debug/greta, built if missing)
  exit 0 always when it could run (the score is the output), 2 on bad input.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib
from collections import OrderedDict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def greta_bin(arg):
    if arg:
        return arg
    b = REPO / "target" / "debug" / "greta"
    if not b.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "greta"], cwd=REPO, check=True)
    return str(b)


def index_classes(corpus):
    """folder -> [class, ...] from corpus/INDEX.md (any of: a `class` column
    of a markdown table, or `class N[, M]` written on the folder's line)."""
    out = {}
    idx = corpus / "INDEX.md"
    if not idx.is_file():
        return out
    col = None
    for line in idx.read_text(errors="replace").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if "|" in line else []
        if cells and any(c.lower().startswith("class") for c in cells):
            col = next(i for i, c in enumerate(cells) if c.lower().startswith("class"))
            continue
        names = re.findall(r"[A-Za-z0-9][A-Za-z0-9._+-]{5,}", line)
        folders = [n for n in names if (corpus / n).is_dir()]
        if not folders:
            continue
        classes = []
        if col is not None and len(cells) > col:
            classes = re.findall(r"\d+|healthy", cells[col].lower())
        if not classes:
            m = re.search(r"class(?:es)?\s*[:=]?\s*((?:\d+|healthy)(?:\s*[,/+&]\s*(?:\d+|healthy))*)", line, re.I)
            if m:
                classes = re.findall(r"\d+|healthy", m.group(1).lower())
        for f in folders:
            out.setdefault(f, classes)
    return out


def gpu_matches(e, a):
    if "vendor" in e and a.get("vendor") != e["vendor"]:
        return False
    if "name_contains" in e and e["name_contains"] not in (a.get("name") or ""):
        return False
    if "gfx" in e and (a.get("gfx") or "") != e["gfx"]:
        return False
    if "vf" in e and a.get("vf") is not e["vf"]:
        return False
    return True


def assign(exp, act, used, i=0):
    if i == len(exp):
        return True
    for j, a in enumerate(act):
        if not used[j] and gpu_matches(exp[i], a):
            used[j] = True
            if assign(exp, act, used, i + 1):
                return True
            used[j] = False
    return False


def brief(g):
    return f"{g.get('vendor')}/{g.get('name')}/{g.get('gfx') or ''}/vf={g.get('vf')}"


def score(report, case):
    """(items, wrong items as text)."""
    errs, items = [], 0
    facts = report.get("facts", {})
    gpus = facts.get("gpus") or []
    exp = case.get("gpu", [])
    items += 1
    if len(gpus) != len(exp):
        errs.append(f"expected {len(exp)} GPU(s), doctor reports {len(gpus)}: {[brief(g) for g in gpus]}")
    elif not assign(exp, gpus, [False] * len(gpus)):
        errs.append(f"GPUs do not match {exp}: doctor reports {[brief(g) for g in gpus]}")
    want = case.get("facts", {})
    have = {
        "rocm_version": (facts.get("rocm") or {}).get("version") or "",
        "kernel_driver_version": facts.get("kernel_driver_version") or "",
    }
    for k, v in want.items():
        items += 1
        if k == "vulkan_drivers":
            got = (facts.get("vulkan") or {}).get("drivers") or []
            miss = [w for w in v if not any(w in h for h in got)]
            if miss:
                errs.append(f"vulkan_drivers: want {miss}, doctor reports {got}")
        elif k in have:
            if str(v) not in have[k]:
                errs.append(f"{k}: want {v!r}, doctor reports {have[k]!r}")
        else:
            errs.append(f"fact {k}: this scorer does not know it")
    raised = [f.get("id") for f in report.get("findings") or []]
    fnd = case.get("findings", {})
    for i in fnd.get("must", []):
        items += 1
        if i not in raised:
            errs.append(f"must raise {i}; raised {raised}")
    for i in fnd.get("must_not", []):
        items += 1
        if i in raised:
            errs.append(f"must not raise {i} (false alarm)")
    # Raised, and only as a warning: the evidence allows no failure.
    for i in fnd.get("warn", []):
        items += 1
        sev = [f.get("severity") for f in report.get("findings") or [] if f.get("id") == i]
        if sev != ["warn"]:
            errs.append(f"must raise {i} as a warning; raised as {sev}")
    return items, errs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--greta")
    ap.add_argument("--json", help="write per-case results here")
    ap.add_argument("-q", action="store_true", help="only the tables")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    greta = greta_bin(a.greta)
    results = []
    for d in a.dirs:
        corpus = Path(d)
        if not corpus.is_dir():
            print(f"doctor-accuracy: {d}: not a directory", file=sys.stderr)
            return 2
        idx = index_classes(corpus)
        for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
            exp_path = folder / "expect.toml"
            if not exp_path.is_file():
                continue  # not complete yet (its expect.toml comes last)
            try:
                exp = tomllib.loads(exp_path.read_text())
            except Exception as e:  # a broken expect.toml is reported, not scored
                print(f"doctor-accuracy: {exp_path}: {e}", file=sys.stderr)
                continue
            top_class = exp.get("class")
            for key, case in (exp.get("case") or {}).items():
                classes = case.get("class", top_class)
                if classes is None:
                    classes = idx.get(folder.name) or ["-"]
                if not isinstance(classes, list):
                    classes = [classes]
                classes = [str(c) for c in classes] or ["-"]
                files = [str(folder / f) for f in case.get("files", [])]
                p = subprocess.run([greta, "doctor", "--json", "--from", *files],
                                   capture_output=True, text=True, timeout=120)
                try:
                    report = json.loads(p.stdout)
                    items, errs = score(report, case)
                except json.JSONDecodeError:
                    items, errs = 1, [f"no JSON report (exit {p.returncode}): {p.stderr.strip()[:300]}"]
                results.append({"corpus": str(corpus), "case": f"{folder.name} [{key}]",
                                "classes": classes, "right": not errs, "items": items,
                                "errors": errs, "exit": p.returncode})
    if not a.q:
        for r in results:
            if not r["right"]:
                print(f"WRONG {r['case']} (class {','.join(r['classes'])}):")
                for e in r["errors"]:
                    print(f"    {e}")
    per = OrderedDict()
    for r in results:
        for c in r["classes"]:
            t = per.setdefault(c, [0, 0])
            t[0] += r["right"]
            t[1] += 1
    def key(c):
        return (0, int(c)) if c.isdigit() else (1, c)
    print()
    print("| class | right | cases | % |")
    print("|---|---:|---:|---:|")
    for c in sorted(per, key=key):
        ok, n = per[c]
        print(f"| {c} | {ok} | {n} | {100 * ok / n:.0f}% |")
    ok = sum(r["right"] for r in results)
    n = len(results)
    print(f"| **total** | **{ok}** | **{n}** | **{100 * ok / max(n, 1):.0f}%** |")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
