#!/usr/bin/env bash
# Run HERE (the CPU machine), once: downloads the Vulkan loader and the GL vendor-neutral
# libraries that NVIDIA's Vulkan ICD (libGLX_nvidia.so.0) needs into .gl/ (git-ignored).
# Without libglvnd/libGLX the loader reports "Could not get 'vkCreateInstance' ... for ICD
# libGLX_nvidia.so.0" and "Found no drivers" (seen on an NVIDIA H200, 2026-11-21).
# On the GPU machine, scripts/gpu/bench.sh unpacks them.
set -euo pipefail
top=$(git rev-parse --show-toplevel)
cd "$top"
mkdir -p .gl /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
apt-get $o update -qq
cd .gl && apt-get $o download -qq libvulkan1 vulkan-tools libx11-6 libxcb1 libwayland-client0 \
  libxau6 libxdmcp6 libbsd0 libmd0 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 libxext6
ls "$top/.gl"
