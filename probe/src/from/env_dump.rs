//! Environment dumps (`env`, `env | grep ...`, `export`/`declare -x` lines,
//! and `export X=...` typed in a pasted terminal session): only the
//! variables doctor's rules read are kept.

use crate::facts::Facts;

/// Variables that change what the GPU stack does.
pub const KEYS: &[&str] = &[
    "VK_ICD_FILENAMES",
    "VK_DRIVER_FILES",
    "VK_ADD_DRIVER_FILES",
    "AMD_VULKAN_ICD",
    "DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1",
    "MESA_VK_DEVICE_SELECT",
    "VK_LOADER_DRIVERS_SELECT",
    "VK_LOADER_DRIVERS_DISABLE",
    "HSA_OVERRIDE_GFX_VERSION",
    "LD_LIBRARY_PATH",
    "ROCM_PATH",
    "HIP_PATH",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
];

fn assignment(line: &str) -> Option<(&str, &str)> {
    if !line.contains('=') {
        return None;
    }
    let mut t = line.trim();
    for p in ["export ", "declare -x ", "setenv "] {
        if let Some(pos) = t.find(p) {
            t = t[pos + p.len()..].trim();
        }
    }
    let (k, v) = t.split_once('=')?;
    if k.is_empty()
        || !k
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    Some((k, v.trim().trim_matches('"').trim_matches('\'')))
}

pub fn recognise(text: &str) -> bool {
    if !text.contains('=') {
        return false;
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let assigns = lines.iter().filter(|l| assignment(l).is_some()).count();
    let known = lines
        .iter()
        .filter_map(|l| assignment(l))
        .filter(|(k, _)| KEYS.contains(k) || k.starts_with("HSA_OVERRIDE_GFX_VERSION"))
        .count();
    known > 0 && assigns * 2 >= lines.len()
}

pub fn parse(text: &str) -> Facts {
    apply(text, |_| true)
}

/// `export X=...` lines anywhere (terminal sessions pasted with prompts).
pub fn parse_exports(text: &str) -> Facts {
    if !(text.contains("export ") || text.contains("declare -x ")) {
        return Facts::default();
    }
    apply(text, |l| l.contains("export ") || l.contains("declare -x "))
}

fn apply(text: &str, take: impl Fn(&str) -> bool) -> Facts {
    let mut f = Facts::default();
    for l in text.lines().filter(|l| take(l)) {
        let Some((k, v)) = assignment(l) else {
            continue;
        };
        if k.starts_with("VK_")
            || k == "AMD_VULKAN_ICD"
            || k.starts_with("DISABLE_LAYER_AMD")
            || k == "MESA_VK_DEVICE_SELECT"
        {
            f.vulkan.env.push((k.to_string(), v.to_string()));
        } else if k.starts_with("HSA_OVERRIDE_GFX_VERSION") {
            f.rocm.hsa_override_gfx_version = Some(v.to_string());
        } else if k == "LD_LIBRARY_PATH" {
            f.rocm.ld_library_path_rocm = v
                .split(':')
                .filter(|p| p.to_lowercase().contains("rocm"))
                .map(String::from)
                .collect();
        } else if k == "ROCM_PATH" || k == "HIP_PATH" {
            f.rocm
                .active_reason
                .get_or_insert_with(|| format!("{k}={v}"));
        }
    }
    f
}
