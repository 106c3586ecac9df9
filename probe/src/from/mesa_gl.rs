//! Mesa's OpenGL renderer string, which names the GPU and (radeonsi) its
//! target or chip: `glxinfo -B`'s `OpenGL renderer string: AMD Radeon 890M
//! Graphics (radeonsi, gfx1150, LLVM 20.1.2, DRM 3.64, 6.17.0-29-generic)`,
//! and `inxi -G`'s `API: OpenGL ... renderer: AMD Radeon 890M Graphics
//! (radeonsi gfx1150 LLVM 20.1.2 ...)`, which inxi wraps over indented
//! continuation lines (older Mesa names the chip: `(radeonsi polaris10 ACO
//! DRM 3.61 ...)`). People paste them into application bug reports to show
//! their GPU; software renderers (llvmpipe) and layered ones (zink) name no
//! GPU of their own.

use super::amd;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, Vendor};

const GLXINFO: &str = "OpenGL renderer string:";

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "open-gl-renderer",
    label: "OpenGL renderer (glxinfo -B, inxi -G)",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[GLXINFO, "API: OpenGL"]],
};

pub fn recognise(text: &str) -> bool {
    text.contains(GLXINFO) || inxi_renderers(text).next().is_some()
}

/// The text after `renderer: ` of every `API: OpenGL` entry of inxi's
/// Graphics section, its continuation lines joined (inxi indents them
/// deeper than the `API:` line).
fn inxi_renderers(text: &str) -> impl Iterator<Item = String> + '_ {
    let lines: Vec<&str> = lines_of(text).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let indent = l.len() - l.trim_start().len();
        if !l.trim_start().starts_with("API: OpenGL") {
            i += 1;
            continue;
        }
        let mut joined = l.trim().to_string();
        let mut j = i + 1;
        while j < lines.len() {
            let n = lines[j];
            let ni = n.len() - n.trim_start().len();
            if n.trim().is_empty() || ni <= indent {
                break;
            }
            joined.push(' ');
            joined.push_str(n.trim());
            j += 1;
        }
        if let Some(p) = joined.find("renderer: ") {
            out.push(joined[p + "renderer: ".len()..].to_string());
        }
        i = j;
    }
    out.into_iter()
}

/// One renderer string to a GPU: the name before ` (`, the vendor from the
/// name, and for radeonsi the gfx target or chip named first in the
/// parentheses.
fn gpu_of(renderer: &str) -> Option<Gpu> {
    let r = renderer.trim();
    // Mesa's D3D12 driver (WSL2) layers on the Windows driver and names its
    // GPU inside: "D3D12 (NVIDIA GeForce RTX 3070 Ti Laptop GPU)".
    let r = r
        .strip_prefix("D3D12 (")
        .and_then(|x| x.strip_suffix(')'))
        .unwrap_or(r);
    let lc = r.to_ascii_lowercase();
    if lc.starts_with("llvmpipe") || lc.starts_with("softpipe") || lc.starts_with("zink") {
        return None;
    }
    // A trademark mark is part of the name, not its details: "AMD Radeon
    // (TM) RX 480 Graphics" (screenFetch#413).
    let details = r.match_indices(" (").map(|(p, _)| p).find(|&p| {
        !["TM)", "tm)", "R)"]
            .iter()
            .any(|m| r[p + 2..].starts_with(m))
    });
    let (name, inside) = match details {
        Some(p) => (r[..p].trim(), r[p + 2..].trim_end_matches(')')),
        // NVIDIA's own: "NVIDIA GeForce RTX 3060/PCIe/SSE2".
        None => (r.split('/').next().unwrap_or(r).trim(), ""),
    };
    let vendor = super::vulkaninfo::vendor_from_name(name);
    if !matches!(vendor, Vendor::Amd | Vendor::Nvidia) || name.is_empty() || name.len() > 100 {
        return None;
    }
    let mut gfx = None;
    if vendor == Vendor::Amd {
        let mut words = inside.split([',', ' ']).filter(|w| !w.is_empty());
        if words.next() == Some("radeonsi") {
            gfx = words
                .next()
                .and_then(|w| amd::find_gfx(w).or_else(|| amd::gfx_from_chip(w)));
        }
    }
    Some(Gpu {
        vendor,
        vendor_id: vendor.pci_id(),
        name: name.to_string(),
        integrated: gfx
            .as_deref()
            .filter(|g| amd::is_apu_target(g))
            .map(|_| true),
        gfx,
        seen_by: vec!["opengl".into()],
        ..Gpu::default()
    })
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let glx = lines_of(text).filter_map(|l| {
        let p = l.find(GLXINFO)?;
        Some(l[p + GLXINFO.len()..].to_string())
    });
    for r in glx.chain(inxi_renderers(text)) {
        if let Some(g) = gpu_of(&r) {
            if !f.gpus.iter().any(|x| x.name == g.name) {
                super::limits::push_gpu(&mut f, g);
            }
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trademark_mark_is_part_of_the_name() {
        let g = gpu_of("AMD Radeon (TM) RX 480 Graphics").unwrap();
        assert_eq!(g.name, "AMD Radeon (TM) RX 480 Graphics");
        let g = gpu_of("AMD Radeon(TM) Graphics (radeonsi, gfx1036, LLVM 17.0.6, DRM 3.57, 6.8.0)")
            .unwrap();
        assert_eq!(g.gfx.as_deref(), Some("gfx1036"));
    }

    #[test]
    fn d3d12_renderer_names_the_gpu_inside() {
        // WSL2 (microsoft/WSL#11649): Mesa's D3D12 driver over the Windows one.
        let t = "OpenGL vendor string: Microsoft Corporation\nOpenGL renderer string: D3D12 (NVIDIA GeForce RTX 3070 Ti Laptop GPU)\n";
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].vendor, Vendor::Nvidia);
        assert_eq!(f.gpus[0].name, "NVIDIA GeForce RTX 3070 Ti Laptop GPU");
        let f = parse("OpenGL renderer string: D3D12 (AMD Radeon(TM) Graphics)\n");
        assert_eq!(f.gpus[0].vendor, Vendor::Amd);
        assert_eq!(f.gpus[0].name, "AMD Radeon(TM) Graphics");
    }

    #[test]
    fn inxi_wraps_the_renderer_over_continuation_lines() {
        // ollama/ollama#16690 (Mesa 25.2, gfx target named).
        let t = "Graphics:\n  Device-1: AMD driver: amdgpu v: kernel\n  API: OpenGL v: 4.6 compat-v: 4.5 vendor: amd mesa\n    v: 25.2.8-0ubuntu0.24.04.1 renderer: AMD Radeon 890M Graphics (radeonsi\n    gfx1150 LLVM 20.1.2 DRM 3.64 6.17.0-29-generic)\n  API: Vulkan v: 1.3.275 drivers: N/A surfaces: xcb,xlib\n";
        assert!(recognise(t));
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].name, "AMD Radeon 890M Graphics");
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1150"));
        assert_eq!(f.gpus[0].integrated, Some(true));
        // ollama/ollama#2453 (Mesa 25.1, the chip named, the name wrapped too).
        let t = "  API: OpenGL v: 4.6 compat-v: 4.5 vendor: amd mesa v: 25.1.4 renderer: AMD\n    Radeon Pro WX 5100 Graphics (radeonsi polaris10 ACO DRM 3.61\n    6.14.0-63.fc42.x86_64)\n  Info: Tools: api: eglinfo, glxinfo, vulkaninfo gpu: amdgpu_top,radeontop\n";
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].name, "AMD Radeon Pro WX 5100 Graphics");
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx803"));
    }

    #[test]
    fn glxinfo_renderer_string_and_software_renderers() {
        // glxinfo -B's spelling of the same string (commas).
        let f = parse("OpenGL renderer string: AMD Radeon 890M Graphics (radeonsi, gfx1150, LLVM 20.1.2, DRM 3.64, 6.17.0-29-generic)\n");
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1150"));
        // llvmpipe is no GPU (constructed from Mesa's software renderer name).
        assert!(
            parse("OpenGL renderer string: llvmpipe (LLVM 15.0.7, 256 bits)\n")
                .gpus
                .is_empty()
        );
        // Without a renderer line inxi output is not this format.
        assert!(!recognise(
            "Graphics:\n  Device-1: AMD driver: amdgpu v: kernel\n"
        ));
    }
}
