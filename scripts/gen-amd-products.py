#!/usr/bin/env python3
"""Generates probe/amd-products.tsv, the AMD product table the format-agnostic
scan of `greta doctor --from` reads (probe/src/products.rs).

Sources (well-kept data, never typed by hand):
  - libdrm's amdgpu.ids (device id, revision, marketing name), package
    libdrm-common: /usr/share/libdrm/amdgpu.ids
  - pci.ids (device id, chip codename [retail names]) as the `pci-ids` crate
    of the workspace ships it (the same database greta names PCI ids with)
  - probe/gfx-targets.toml (device-id ranges -> gfx target; the marketing
    names only one chip carries)

Each row: KEY <tab> GFX <tab> DEVICE <tab> NAME
  KEY     the name reduced to what tells products apart (upper case, letters
          and digits only, without "AMD", "Radeon", "Graphics", ...):
          "AMD Radeon RX 6700 XT" -> RX6700XT, "Navi 22" -> NAVI22
  GFX     the gfx target when every device carrying KEY has the same one, else -
  DEVICE  the PCI device id (hex) when only one device carries KEY, else -
  NAME    the name to show ("AMD Radeon RX 6700 XT")

usage: scripts/gen-amd-products.py [--amdgpu-ids PATH] [--pci-ids PATH] > probe/amd-products.tsv
Regenerate after updating libdrm, the pci-ids crate or gfx-targets.toml.
"""

import argparse
import glob
import os
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Words that name the vendor or the kind of device, not the product.
NOISE = {"AMD", "ATI", "RADEON", "TM", "R", "GRAPHICS", "SERIES", "GPU", "PROCESSOR", "WITH", "GFX",
         "MOBILE", "OEM", "INSTINCT"}


# pci.ids device names of functions that are not the GPU itself.
NOT_GPU = re.compile(r"audio|hdmi|usb|bridge|root|controller|function|host|smbus|psp|ccp|encryption|sata|"
                     r"ethernet|iommu|i2c|sensor|dummy|pcie|xgmi|jpeg|vcn|uvd|\bacp\b|gpp", re.I)


def key_of(name):
    words = re.findall(r"[A-Za-z0-9]+", name.upper())
    words = [w for w in words if w not in NOISE]
    return "".join(words)


def gfx_ranges():
    t = tomllib.loads((REPO / "probe" / "gfx-targets.toml").read_text())
    return [(d["first"], d["last"], d["gfx"]) for d in t.get("device", [])], t.get("name", [])


def gfx_of(dev, ranges):
    for a, b, g in ranges:
        if a <= dev <= b:
            return g
    return None


def amdgpu_ids(path):
    out = []
    for line in Path(path).read_text(errors="replace").splitlines():
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3 or not re.fullmatch(r"[0-9A-Fa-f]{4}", parts[0]):
            continue
        out.append((int(parts[0], 16), parts[2]))
    return out


def split_retail(bracket):
    """'Radeon RX 6700/6700 XT/6750 XT / 6800M/6850M XT' -> the full names."""
    parts = [p.strip() for p in bracket.split("/") if p.strip()]
    if not parts:
        return []
    first = parts[0]
    m = re.search(r"\b[A-Za-z]*\d", first)
    prefix = first[: m.start()] if m else ""
    out = [first]
    for p in parts[1:]:
        if prefix and not p.lower().startswith(prefix.split()[0].lower()):
            p = prefix + p
        out.append(p)
    return out


def pci_ids(path):
    """(device, chip codename(s), retail names) of vendor 1002."""
    out = []
    in_amd = False
    for line in Path(path).read_text(errors="replace").splitlines():
        if line.startswith("1002 "):
            in_amd = True
            continue
        if in_amd and line and not line.startswith("\t") and not line.startswith("#"):
            break
        m = re.match(r"^\t([0-9a-f]{4})  (.*)$", line) if in_amd else None
        if not m:
            continue
        dev, text = int(m.group(1), 16), m.group(2)
        if NOT_GPU.search(text):
            continue  # the audio, USB, bridge ... functions of a GPU carry its retail name too
        b = re.match(r"^(.*?)\s*\[(.*)\]\s*$", text)
        chip, retail = (b.group(1), b.group(2)) if b else (text, "")
        out.append((dev, [c.strip() for c in chip.split("/") if c.strip()], split_retail(retail)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--amdgpu-ids", default="/usr/share/libdrm/amdgpu.ids")
    crate = sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/pci-ids-*/pciids/pci.ids")))
    ap.add_argument("--pci-ids", default=crate[-1] if crate else "/usr/share/misc/pci.ids")
    a = ap.parse_args()
    ranges, one_chip_names = gfx_ranges()
    rows = {}  # key -> {gfx set, device set, name}

    def add(key, dev, gfx, name):
        if len(key) < 3:
            return
        r = rows.setdefault(key, {"gfx": set(), "dev": set(), "name": name})
        r["gfx"].add(gfx)
        if dev is not None:
            r["dev"].add(dev)

    for dev, name in amdgpu_ids(a.amdgpu_ids):
        add(key_of(name), dev, gfx_of(dev, ranges), name)
    for dev, chips, retail in pci_ids(a.pci_ids):
        g = gfx_of(dev, ranges)
        for c in chips:
            add(key_of(c), dev, g, c)
        for r in retail:
            nm = r if r.lower().startswith(("radeon", "firepro", "instinct")) else r
            add(key_of(r), dev, g, "AMD " + nm if nm.lower().startswith("radeon") else nm)
    for n in one_chip_names:
        add(key_of(n["name"]), None, n["gfx"], "AMD Radeon " + n["name"])
    # AMD's series names ("ATI Radeon HD 5700 Series", the Catalyst/fglrx
    # and Windows name of every HD 57xx card; "Radeon R9 200 Series", "RX
    # 400 Series"): HD's four-digit and R5/R7/R9/RX's three-digit retail
    # models with their last two digits zeroed, where no product carries
    # that key already. A series has a target only when every model of it
    # has that one known target.
    series = {}
    for key, r in rows.items():
        m = re.fullmatch(r"(HD\d\d|R5\d|R7\d|R9\d|RX\d)(\d\d)", key)
        if not m:
            continue
        skey = m.group(1) + "00"
        if skey == key or skey in rows:
            continue
        series.setdefault(skey, set()).update(r["gfx"] if r["gfx"] else {None})
    for skey, gfx in series.items():
        m = re.fullmatch(r"(HD|R5|R7|R9|RX)(\d+)", skey)
        one = gfx if len(gfx) == 1 else {None}
        rows[skey] = {"gfx": one, "dev": set(), "name": f"AMD Radeon {m.group(1)} {m.group(2)} Series"}
    # A short key of letters only ("VII", "FIJI", "PRO", "EXT") is an
    # ordinary word as often as a product: it is kept only when it names one
    # device of a known target ("Radeon VII", 66af, gfx906; the Fiji and
    # Lexa chips), never a family ("Radeon Pro Series") or a function.
    for key in [k for k in rows if not re.search(r"\d", k) and len(k) < 5]:
        r = rows[key]
        if len(r["dev"]) != 1 or len(r["gfx"] - {None}) != 1:
            del rows[key]
    print("# Generated by scripts/gen-amd-products.py from libdrm's amdgpu.ids, pci.ids (pci-ids crate)")
    print("# and probe/gfx-targets.toml; do not edit. KEY\tGFX\tDEVICE\tNAME (see the script).")
    for key in sorted(rows):
        r = rows[key]
        gfx = r["gfx"] - {None}
        g = next(iter(gfx)) if len(gfx) == 1 and None not in r["gfx"] else "-"
        if len(gfx) == 1 and None in r["gfx"]:
            g = next(iter(gfx))  # a device outside every range does not make the others ambiguous
        d = f"{next(iter(r['dev'])):04x}" if len(r["dev"]) == 1 else "-"
        print(f"{key}\t{g}\t{d}\t{r['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
