#!/usr/bin/env python3
"""Writes synthetic wheels shaped like a torch/triton/jax set (many files,
incompressible bytes) plus a greta lock dir pointing at BASE_URL.

usage: make_wheels.py OUT_DIR BASE_URL [SCALE]
  OUT_DIR/files/*.whl, OUT_DIR/lock/{matrix.toml,pylock.cpu.toml}
SCALE multiplies the sizes (1.0 = torch 256 MiB in 3000 files)."""
import base64, hashlib, os, sys, zipfile

out, base = sys.argv[1], sys.argv[2].rstrip("/")
scale = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
files_dir = os.path.join(out, "files")
lock_dir = os.path.join(out, "lock")
os.makedirs(files_dir, exist_ok=True)
os.makedirs(lock_dir, exist_ok=True)

# (project, version, module, total bytes, file count)
SPECS = [
    ("torch", "2.5.1", "torch", int(256 * 2**20 * scale), 3000),
    ("triton", "3.1.0", "triton", int(64 * 2**20 * scale), 400),
    ("jax", "0.4.35", "jax", int(4 * 2**20 * scale), 600),
]


def b64(d):
    return base64.urlsafe_b64encode(d).rstrip(b"=").decode()


def wheel(project, version, module, total, count):
    dist = project.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    name = f"{dist}-{version}-py3-none-any.whl"
    path = os.path.join(files_dir, name)
    entries = [(f"{module}/__init__.py", f"__version__ = {version!r}\n".encode())]
    if module == "torch":
        entries.append(("torch/version.py", f"__version__ = {version!r}\nhip = None\ncuda = None\n".encode()))
    per = max(1, total // count)
    for i in range(count):
        entries.append((f"{module}/_data/part{i:05d}.bin", os.urandom(per)))
    entries.append((f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n".encode()))
    entries.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: greta-bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = "".join(f"{p},sha256={b64(hashlib.sha256(b).digest())},{len(b)}\n" for p, b in entries)
    record += f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for p, b in entries:
            z.writestr(p, b)
    data = open(path, "rb").read()
    return name, hashlib.sha256(data).hexdigest(), len(data)


xy = "%d.%d" % sys.version_info[:2]
lock = ['lock-version = "1.0"', 'created-by = "greta-bench"', 'requires-python = ">=3.8"']
for spec in SPECS:
    name, sha, size = wheel(*spec)
    lock += ["", "[[packages]]", f'name = "{spec[0]}"', f'version = "{spec[1]}"',
             f'wheels = [{{ name = "{name}", url = "{base}/files/{name}", size = {size}, hashes = {{ sha256 = "{sha}" }} }}]']
open(os.path.join(lock_dir, "pylock.cpu.toml"), "w").write("\n".join(lock) + "\n")
open(os.path.join(lock_dir, "matrix.toml"), "w").write(f'''schema = 1

[profiles.cpu]
backend = "cpu"
summary = "benchmark profile (synthetic wheels)"
status = "locked"
serves = "*"
python = ["{xy}"]
indexes = ["https://download.pytorch.org/whl/cpu"]
requirements = ["torch", "triton", "jax"]
lockfile = "pylock.cpu.toml"
''')
print(files_dir)
