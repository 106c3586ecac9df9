#!/usr/bin/env python3
"""Builds the synthetic sysroot trees used by tests/sysroot_*.rs.

Each tree is a machine as `Root::sysroot` sees it: files at their usual
paths plus `.greta/` (env, id, dev-nodes, cmd/*.txt). Real tool output and
manifests are copied from ../fixtures (never edited); what
no fixture has (sysfs attribute files, node modes, ELF headers) is written
here, with values taken from the fixtures' SOURCE.md notes.

Run from anywhere: python3 probe/tests/sysroots/make.py  (idempotent; it
rewrites the trees from scratch).

Not made here: lavapipe-radv-no-gpu, a `greta doctor --capture` of a
Debian 12 CI container (Mesa lavapipe + RADV manifests, no GPU, Debian's
ROCm 5.2 HIP in /usr), kept as captured.
"""
import os, shutil, struct, pathlib

HERE = pathlib.Path(__file__).resolve().parent
FIX = HERE.parent / "fixtures"


def w(tree, rel, text, mode=None):
    p = tree / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    if mode is not None:
        os.chmod(p, mode)


def link(tree, rel, target):
    p = tree / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.is_symlink() or p.exists():
        p.unlink()
    os.symlink(target, p)


def fixture(rel):
    return (FIX / rel).read_text()


def elf_header(cls=2, machine=62):
    """First 64 bytes of an ELF shared object (what doctor reads of an ICD library)."""
    ident = b"\x7fELF" + bytes([cls, 1, 1, 0]) + bytes(8)
    rest = struct.pack("<HHI", 3, machine, 1)  # ET_DYN, e_machine, EV_CURRENT
    return (ident + rest).ljust(64, b"\0")


def pci_gpu(tree, addr, vendor, device, cls, rev, sub_v, sub_d, driver="amdgpu", render=None,
            vram=None, gtt=None, physfn=False):
    d = f"/sys/bus/pci/devices/{addr}"
    w(tree, f"{d}/class", f"0x{cls:06x}\n")
    w(tree, f"{d}/vendor", f"0x{vendor:04x}\n")
    w(tree, f"{d}/device", f"0x{device:04x}\n")
    w(tree, f"{d}/revision", f"0x{rev:02x}\n")
    w(tree, f"{d}/subsystem_vendor", f"0x{sub_v:04x}\n")
    w(tree, f"{d}/subsystem_device", f"0x{sub_d:04x}\n")
    if driver:
        link(tree, f"{d}/driver", f"../../../bus/pci/drivers/{driver}")
    if render is not None:
        w(tree, f"{d}/drm/renderD{render}/dev", f"226:{render}\n")
    if vram is not None:
        w(tree, f"{d}/mem_info_vram_total", f"{vram}\n")
    if gtt is not None:
        w(tree, f"{d}/mem_info_gtt_total", f"{gtt}\n")
    if physfn:
        link(tree, f"{d}/physfn", "../0000:82:00.0")


def other_pci(tree, addr, cls, vendor, device):
    d = f"/sys/bus/pci/devices/{addr}"
    w(tree, f"{d}/class", f"0x{cls:06x}\n")
    w(tree, f"{d}/vendor", f"0x{vendor:04x}\n")
    w(tree, f"{d}/device", f"0x{device:04x}\n")


def kfd_node(tree, n, props):
    w(tree, f"/sys/class/kfd/kfd/topology/nodes/{n}/properties",
      "".join(f"{k} {v}\n" for k, v in props.items()))


CPU_NODE = {"cpu_cores_count": 16, "simd_count": 0, "mem_banks_count": 1, "gfx_target_version": 0,
            "vendor_id": 0, "device_id": 0, "drm_render_minor": 0}


def gpu_props(simd, per_cu, gfx_tv, vendor, device, minor):
    """A modern node `properties` file, shaped like the real gfx1100 dump
    in fixtures/rx7900xtx-gfx1100/kfd-node-properties.template.txt."""
    t = fixture("rx7900xtx-gfx1100/kfd-node-properties.template.txt")
    out = {}
    for line in t.splitlines():
        k, v = line.split()
        out[k] = v
    out.update(simd_count=simd, simd_per_cu=per_cu, gfx_target_version=gfx_tv, vendor_id=vendor,
               device_id=device, drm_render_minor=minor)
    return out


def greta(tree, env, id_line, nodes, cmds=None):
    w(tree, "/.greta/env", "".join(f"{k}={v}\n" for k, v in env.items()))
    if id_line:
        w(tree, "/.greta/id", id_line + "\n")
    w(tree, "/.greta/dev-nodes", "".join(n + "\n" for n in nodes))
    for name, text in (cmds or {}).items():
        w(tree, f"/.greta/cmd/{name}.txt", text)


def fresh(name):
    t = HERE / name
    if t.exists():
        shutil.rmtree(t)
    t.mkdir()
    return t


# 1. MI300X SR-IOV VF in a cloud droplet, ROCm 7.2.4 (fixtures/mi300x-vf-rocm7.2):
#    PCI 0000:83:00.0 device 0x74b5, Processing accelerator class, amdgpu 6.16.13,
#    KFD gfx_target_version 90402, 304 CUs, 196288 MB VRAM, user in render+video.
t = fresh("mi300x-vf")
pci_gpu(t, "0000:83:00.0", 0x1002, 0x74b5, 0x120000, 0x00, 0x1002, 0x74a1, render=128,
        vram=196288 * 1024 * 1024, gtt=247409212 * 1024)
other_pci(t, "0000:00:01.0", 0x060000, 0x8086, 0x0d57)
kfd_node(t, 0, CPU_NODE)
kfd_node(t, 1, gpu_props(1216, 4, 90402, 4098, 29877, 128))
w(t, "/sys/module/amdgpu/version", "6.16.13\n")
w(t, "/sys/module/amdgpu/initstate", "live\n")
w(t, "/proc/sys/kernel/osrelease", "6.8.0-60-generic\n")
w(t, "/etc/group", "root:x:0:\nvideo:x:44:ubuntu\nrender:x:110:ubuntu\nubuntu:x:1000:\n")
w(t, "/opt/rocm-7.2.4/.info/version", "7.2.4-70\n")
w(t, "/opt/rocm-7.2.4/share/hip/version",
  "HIP_VERSION_MAJOR=7\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=53211\nHIP_VERSION_GITHASH=e0fdb1ab86\n")
w(t, "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.53211", b"")
link(t, "/opt/rocm-7.2.4/lib/libamdhip64.so.7", "libamdhip64.so.7.2.53211")
link(t, "/opt/rocm", "/opt/rocm-7.2.4")
greta(t, {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/ubuntu", "USER": "ubuntu"},
      "uid=1000(ubuntu) gid=1000(ubuntu) groups=1000(ubuntu),44(video),110(render)",
      ["/dev/kfd c 0660 0 110", "/dev/dri/renderD128 c 0660 0 110"],
      {"rocminfo": fixture("mi300x-vf-rocm7.2/rocminfo.txt")})

# 2. Phoenix 760M (gfx1103) APU with a 512 MiB UMA carve-out; RADV and AMDVLK
#    both installed for it; user NOT in `render` (kfd), and in `video` only in
#    /etc/group (joined without logging in again); a greta env with ROCm torch.
t = fresh("phoenix-apu")
pci_gpu(t, "0000:c5:00.0", 0x1002, 0x15bf, 0x030000, 0xc1, 0x1462, 0x7d76, render=128,
        vram=512 * 1024 * 1024, gtt=15 * 1024 ** 3)
other_pci(t, "0000:c5:00.1", 0x040300, 0x1002, 0x1640)
kfd_node(t, 0, CPU_NODE)
kfd_node(t, 1, gpu_props(24, 2, 110003, 4098, 5567, 128))
w(t, "/sys/module/amdgpu/initstate", "live\n")
w(t, "/proc/sys/kernel/osrelease", "6.12.9-amd64\n")
w(t, "/etc/group", "root:x:0:\nvideo:x:44:ann\nrender:x:105:\nann:x:1000:\n")
w(t, "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json",
  fixture("icd-manifests/debian12-mesa22.3.6/radeon_icd.x86_64.json"))
w(t, "/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so", elf_header())
w(t, "/etc/vulkan/icd.d/amd_icd64.json", fixture("icd-manifests/amdvlk-amdgpu-install/amd_icd64.json"))
w(t, "/opt/amdgpu/lib/x86_64-linux-gnu/amdvlk64.so", elf_header())
w(t, "/usr/lib/x86_64-linux-gnu/libvulkan.so.1", elf_header())
w(t, "/usr/bin/python3", "#!/bin/sh\n", 0o755)
w(t, "/usr/bin/python3-config", "#!/bin/sh\n", 0o755)
sp = "/home/ann/.local/share/greta/envs/rocm6.2/lib/python3.11/site-packages"
w(t, f"{sp}/torch-2.5.1+rocm6.2.dist-info/METADATA",
  "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+rocm6.2\nSummary: Tensors and Dynamic neural networks\n\nlong description\n")
w(t, f"{sp}/torch/version.py",
  "from typing import Optional\n__version__ = '2.5.1+rocm6.2'\ndebug = False\ncuda: Optional[str] = None\n"
  "git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'\nhip: Optional[str] = '6.2.41133-dd7f95766'\n")
w(t, f"{sp}/numpy-2.1.2.dist-info/METADATA", "Metadata-Version: 2.1\nName: numpy\nVersion: 2.1.2\n")
devices = """{
  "devices": [
    {"name": "AMD Radeon 760M (RADV GFX1103_R1)", "kind": "radv", "device_type": "INTEGRATED_GPU",
     "vendor_id": 4098, "device_id": 5567, "driver_name": "radv", "driver_info": "Mesa 24.2.8-1",
     "api_version": "1.3.289", "device_uuid": "00000000-c500-0000-0000-000000000000",
     "fp16": true, "subgroup_size": 64, "min_subgroup_size": 32, "max_subgroup_size": 64,
     "cooperative_matrix": true},
    {"name": "AMD Radeon 760M Graphics", "kind": "amdvlk", "device_type": "INTEGRATED_GPU",
     "vendor_id": 4098, "device_id": 5567, "driver_name": "AMD open-source driver",
     "driver_info": "2024.Q4.3 (LLPC)", "api_version": "1.3.299",
     "device_uuid": "00000000-c500-0000-0000-000000000000",
     "fp16": true, "subgroup_size": 64, "min_subgroup_size": 32, "max_subgroup_size": 64,
     "cooperative_matrix": true}
  ],
  "error": null,
  "instance_version": "1.3.290"
}
"""
greta(t, {"PATH": "/usr/bin:/bin", "HOME": "/home/ann", "USER": "ann",
          "HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
      "uid=1000(ann) gid=1000(ann) groups=1000(ann),24(cdrom)",
      ["/dev/kfd c 0660 0 105", "/dev/dri/renderD128 c 0660 0 44"],
      {"greta-vulkan-devices": devices, "python-version_usr_bin_python3": "Python 3.11.2\n"})

# 3. RX 7900 XTX (gfx1100) in a container started without /dev/kfd, two ROCm
#    installs with ROCM_PATH choosing the older one, LD_LIBRARY_PATH into the
#    other; Debian's hipcc in /usr as well.
t = fresh("two-rocm-no-kfd")
pci_gpu(t, "0000:03:00.0", 0x1002, 0x744c, 0x030000, 0xc8, 0x1002, 0x0e3b, render=128)
# VRAM/GTT only reachable the documented way, /sys/class/drm/card0/device/.
link(t, "/sys/class/drm/card0", "../../devices/pci0000:00/0000:00:01.1/0000:03:00.0/drm/card0")
link(t, "/sys/devices/pci0000:00/0000:00:01.1/0000:03:00.0/drm/card0/device", "../../../0000:03:00.0")
w(t, "/sys/devices/pci0000:00/0000:00:01.1/0000:03:00.0/mem_info_vram_total", f"{24 * 1024 ** 3}\n")
w(t, "/sys/devices/pci0000:00/0000:00:01.1/0000:03:00.0/mem_info_gtt_total", f"{32 * 1024 ** 3}\n")
kfd_node(t, 0, CPU_NODE)
kfd_node(t, 1, gpu_props(192, 2, 110000, 4098, 29772, 128))
w(t, "/sys/module/amdgpu/initstate", "live\n")
w(t, "/proc/sys/kernel/osrelease", "6.1.0-28-amd64\n")
w(t, "/.dockerenv", "")
w(t, "/proc/1/cgroup", "0::/\n")
w(t, "/etc/group", "root:x:0:\nvideo:x:44:\nrender:x:107:\n")
for ver, patch in (("6.2.0", "41133"), ("6.4.1", "43483")):
    w(t, f"/opt/rocm-{ver}/.info/version", f"{ver}-{patch[:2]}\n")
    major, minor = ver.split(".")[:2]
    w(t, f"/opt/rocm-{ver}/share/hip/version",
      f"HIP_VERSION_MAJOR={major}\nHIP_VERSION_MINOR={minor}\nHIP_VERSION_PATCH={patch}\nHIP_VERSION_GITHASH=abc{patch}\n")
    w(t, f"/opt/rocm-{ver}/lib/libamdhip64.so.{major}.{minor}.{patch}", b"")
    w(t, f"/opt/rocm-{ver}/bin/hipconfig", "#!/usr/bin/perl\n", 0o755)
link(t, "/opt/rocm", "rocm-6.4.1")
w(t, "/usr/bin/hipcc", "#!/usr/bin/perl\n", 0o755)
w(t, "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153", b"")
link(t, "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", "libamdhip64.so.5.2.21153")
greta(t, {"PATH": "/opt/rocm/bin:/usr/bin:/bin", "HOME": "/root", "ROCM_PATH": "/opt/rocm-6.2.0/",
          "LD_LIBRARY_PATH": "/opt/rocm-6.4.1/lib:/usr/local/lib"},
      "uid=0(root) gid=0(root) groups=0(root)",
      ["/dev/dri/renderD128 c 0666 0 107"],
      {"rocminfo": fixture("broken-kfd-access/rocminfo-no-such-file-container-without-device-kfd.txt")})

# 4. VK_DRIVER_FILES replaces the whole search; VK_ADD_DRIVER_FILES would be ignored.
t = fresh("vk-driver-files")
w(t, "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json",
  fixture("icd-manifests/debian12-mesa22.3.6/radeon_icd.x86_64.json"))
w(t, "/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so", elf_header())
w(t, "/home/u/icd/lvp_icd.x86_64.json", fixture("icd-manifests/debian12-mesa22.3.6/lvp_icd.x86_64.json"))
w(t, "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so", elf_header())
w(t, "/home/u/extra/nvidia_icd.json", fixture("icd-manifests/nvidia-proprietary/nvidia_icd.json"))
w(t, "/usr/lib/x86_64-linux-gnu/libvulkan.so.1", elf_header())
greta(t, {"PATH": "/usr/bin", "HOME": "/home/u", "VK_DRIVER_FILES": "/home/u/icd/lvp_icd.x86_64.json",
          "VK_ADD_DRIVER_FILES": "/home/u/extra"}, None, [])

# 5. Search order and broken manifests: XDG config before /etc before XDG data;
#    malformed JSON, a directory and a dangling link where manifests should be,
#    a 32-bit library, a missing library, a bare soname found through
#    ld.so.conf; garbage in sysfs/KFD; no Vulkan loader.
t = fresh("broken-icds")
w(t, "/home/u/.config/vulkan/icd.d/radeon_icd.x86_64.json",
  fixture("icd-manifests/debian12-mesa22.3.6/radeon_icd.x86_64.json"))
w(t, "/etc/vulkan/icd.d/amd_icd32.json",
  '{"file_format_version": "1.0.0", "ICD": {"library_path": "/usr/lib/i386-linux-gnu/amdvlk32.so", "api_version": "1.3.280"}}\n')
w(t, "/usr/lib/i386-linux-gnu/amdvlk32.so", elf_header(cls=1, machine=3))
w(t, "/usr/share/vulkan/icd.d/broken.json", fixture("icd-manifests/nvidia-proprietary/nvidia_icd.json")[:70])
w(t, "/usr/share/vulkan/icd.d/dir_instead.json/README", "a directory where a manifest should be\n")
link(t, "/usr/share/vulkan/icd.d/dangling.json", "/nonexistent/icd.json")
w(t, "/usr/share/vulkan/icd.d/nvidia_icd.json", fixture("icd-manifests/nvidia-proprietary/nvidia_icd.json"))
w(t, "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
w(t, "/etc/ld.so.conf.d/nvidia.conf", "# NVIDIA driver\n/usr/lib/nvidia\n")
w(t, "/usr/lib/nvidia/libGLX_nvidia.so.0", elf_header())
w(t, "/usr/share/vulkan/implicit_layer.d/amd_icd64.json",
  '{"file_format_version": "1.0.0", "layer": {"name": "VK_LAYER_AMD_switchable_graphics_64", "type": "GLOBAL",'
  ' "library_path": "/opt/amdgpu-pro/lib/x86_64-linux-gnu/amdvlk64.so", "api_version": "1.3.280",'
  ' "implementation_version": "1", "description": "AMD switchable graphics layer",'
  ' "disable_environment": {"DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1": "1"}}}\n')
w(t, "/sys/bus/pci/devices/0000:00:02.0/class/README", "class is a directory here\n")
w(t, "/sys/bus/pci/devices/0000:00:03.0/class", b"\xff\xfe\x00garbage\n")
w(t, "/sys/class/kfd/kfd/topology/nodes/0/properties", bytes(range(256)) * 4)
w(t, "/sys/class/kfd/kfd/topology/nodes/1/properties/README", "properties is a directory here\n")
link(t, "/proc/sys/kernel/osrelease", "/proc/sys/kernel/osrelease")
w(t, "/etc/group", "\x00\x01garbage\n::::\nrender:x:notanumber:\n")
greta(t, {"PATH": "/usr/bin", "HOME": "/home/u"}, "garbage id line",
      ["/dev/kfd c 06x0 0 0", "nonsense", "/dev/dri/renderD128 c 0660 0 0"],
      {"rocminfo": "\x00\x01\x02"})
# 6. NVIDIA RTX 2060 on Debian 12 (fixtures/nvidia-rtx2060-debian-contrast): the
#    captured `vulkaninfo --summary` replays through the --from parser; the
#    kernel module version comes from /proc/driver/nvidia/version.
t = fresh("nvidia-rtx2060")
pci_gpu(t, "0000:01:00.0", 0x10de, 0x1f08, 0x030000, 0xa1, 0x1458, 0x37ce, driver="nvidia", render=128)
other_pci(t, "0000:01:00.1", 0x040300, 0x10de, 0x10f9)
w(t, "/sys/module/nvidia/initstate", "live\n")
w(t, "/proc/driver/nvidia/version",
  "NVRM version: NVIDIA UNIX x86_64 Kernel Module  525.125.06  Tue May 30 05:10:05 UTC 2023\n"
  "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
w(t, "/proc/sys/kernel/osrelease", "6.1.0-13-amd64\n")
w(t, "/etc/group", "root:x:0:\nvideo:x:44:val\nrender:x:105:\n")
w(t, "/usr/share/vulkan/icd.d/nvidia_icd.json", fixture("icd-manifests/nvidia-proprietary/nvidia_icd.json"))
w(t, "/usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0", elf_header())
w(t, "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", fixture("icd-manifests/debian12-mesa22.3.6/lvp_icd.x86_64.json"))
w(t, "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so", elf_header())
w(t, "/usr/lib/x86_64-linux-gnu/libvulkan.so.1", elf_header())
w(t, "/usr/bin/python3.11", "#!/bin/sh\n", 0o755)
link(t, "/usr/bin/python3", "python3.11")
# pyenv: shims resolve through $PYENV_ROOT/version without running bash;
# python3.10 is not in the selected version (pyenv would say "not found").
SHIM = ('#!/usr/bin/env bash\nset -e\n[ -n "$PYENV_DEBUG" ] && set -x\n\nprogram="${0##*/}"\n\n'
        'export PYENV_ROOT="/home/val/.pyenv"\nexec "/home/val/.pyenv/libexec/pyenv" exec "$program" "$@"\n')
for name in ("python3", "python3.10", "python3.12"):
    w(t, f"/home/val/.pyenv/shims/{name}", SHIM, 0o755)
w(t, "/home/val/.pyenv/version", "3.12.1\n")
w(t, "/home/val/.pyenv/versions/3.12.1/bin/python3.12", "\x7fELF", 0o755)
link(t, "/home/val/.pyenv/versions/3.12.1/bin/python3", "python3.12")
w(t, "/home/val/.pyenv/versions/3.10.13/bin/python3.10", "\x7fELF", 0o755)
greta(t, {"PATH": "/home/val/.pyenv/shims:/usr/bin:/bin", "HOME": "/home/val", "USER": "val"},
      "uid=1000(val) gid=1000(val) groups=1000(val),44(video)",
      ["/dev/dri/renderD128 c 0666 0 105"],
      {"vulkaninfo-summary": fixture("nvidia-rtx2060-debian-contrast/vulkaninfo-summary-devices-section.txt"),
       "python-version_usr_bin_python3": "Python 3.11.2\n",
       "python-version_home_val_.pyenv_versions_3.12.1_bin_python3": "Python 3.12.1\n"})
print("trees written under", HERE)
