//! Environment dumps (`env`, `env | grep ...`, `export`/`declare -x` lines,
//! and `export X=...` typed in a pasted terminal session): only the
//! variables doctor's rules read are kept.

use super::shared_lines::lines_of;
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

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "env-dump",
    label: "environment variables",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[KEYS, &["HSA_OVERRIDE_GFX_VERSION"]],
};

pub fn recognise(text: &str) -> bool {
    if !text.contains('=') {
        return false;
    }
    let lines: Vec<&str> = lines_of(text)
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

/// `export X=...` lines anywhere (terminal sessions pasted with prompts),
/// and `HSA_OVERRIDE_GFX_VERSION` wherever a tool or a command line prints
/// it: ollama's `... HSA_OVERRIDE_GFX_VERSION=11.0.0`, its config map
/// `HSA_OVERRIDE_GFX_VERSION:10.3.0`, `--env HSA_OVERRIDE_GFX_VERSION="10.3.0"`,
/// systemd's `Environment="HSA_OVERRIDE_GFX_VERSION=11.5.1"`.
pub fn parse_exports(text: &str) -> Facts {
    let mut f = if text.contains("export ") || text.contains("declare -x ") {
        apply(text, |l| l.contains("export ") || l.contains("declare -x "))
    } else {
        Facts::default()
    };
    if f.rocm.hsa_override_gfx_version.is_none() {
        f.rocm.hsa_override_gfx_version = override_mention(text);
    }
    prefixed_selection(text, &mut f);
    f
}

/// A device selection written before a command on a session's command line
/// (`> ROCR_VISIBLE_DEVICES=1 CUDA_VISIBLE_DEVICES=1 python -c ...`,
/// Parsl#3858): that command's environment only, so it is kept (over the
/// session's exports) only when, with those exports, it hides every device
/// on any machine: the one statement such a line proves about the session.
fn prefixed_selection(text: &str, f: &mut Facts) {
    use crate::hip_order::{hides_every_device, SELECTION_VARS};
    // Every selection variable ends so: a line without it is no prefix.
    if !text.contains("_VISIBLE_DEVICES=") {
        return;
    }
    for line in lines_of(text).filter(|l| l.contains("_VISIBLE_DEVICES=")) {
        let Some(prefix) = command_prefix(line) else {
            continue;
        };
        let mut sel = f.rocm.visible_devices.clone();
        let mut any = false;
        for (k, v) in prefix {
            if SELECTION_VARS.contains(&k) {
                sel.retain(|(x, _)| x != k);
                sel.push((k.to_string(), v.to_string()));
                any = true;
            }
        }
        if any && hides_every_device(&sel).is_some() {
            f.rocm.visible_devices = sel;
            return;
        }
    }
}

/// The `NAME=value` words before the command of a command line: after a
/// prompt (a word ending in `$`, `#`, `>` or `%`) or at the line's start,
/// followed by a command word.
fn command_prefix(line: &str) -> Option<Vec<(&str, &str)>> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let first = words.iter().position(|w| word_assignment(w).is_some())?;
    if first > 0 && !words[first - 1].ends_with(['$', '#', '>', '%']) {
        return None;
    }
    let assigns: Vec<(&str, &str)> = words[first..]
        .iter()
        .map_while(|w| word_assignment(w))
        .collect();
    // A command must follow (else it is an assignment of the shell's own).
    words.get(first + assigns.len())?;
    Some(assigns)
}

/// One shell word `NAME=value` (value unquoted).
fn word_assignment(w: &str) -> Option<(&str, &str)> {
    let (k, v) = w.split_once('=')?;
    let ok = !k.is_empty()
        && k.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && k.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    ok.then(|| (k, v.trim_matches('"').trim_matches('\'')))
}

/// The last value given to `HSA_OVERRIDE_GFX_VERSION` (or a per-GPU
/// `HSA_OVERRIDE_GFX_VERSION_<n>`) anywhere in `text`, written `=` or `:`,
/// bare or quoted; an empty value (ollama prints unset variables as
/// `HSA_OVERRIDE_GFX_VERSION:` in its config map) is no value.
pub fn override_mention(text: &str) -> Option<String> {
    const KEY: &str = "HSA_OVERRIDE_GFX_VERSION";
    if !text.contains(KEY) {
        return None;
    }
    let mut found = None;
    for line in lines_of(text) {
        let mut rest = line;
        while let Some(p) = rest.find(KEY) {
            let mut after = &rest[p + KEY.len()..];
            // per-GPU form: _<digits>
            if let Some(r) = after.strip_prefix('_') {
                after = r.trim_start_matches(|c: char| c.is_ascii_digit());
            }
            rest = after;
            let Some(v) = after
                .strip_prefix('=')
                .or_else(|| after.strip_prefix(':'))
                .or_else(|| set_to(line, after))
            else {
                continue;
            };
            let v = v.trim_start_matches(['"', '\'', '\\']);
            let value: String = v
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                .collect();
            if !value.is_empty() {
                found = Some(value);
            }
        }
    }
    found
}

/// An application saying it set the variable itself, in words: KoboldCpp's
/// `Set AMD HSA_OVERRIDE_GFX_VERSION to 10.3.0` (a statement of what is in
/// effect, not advice: the line starts with the verb and the value is a
/// version).
fn set_to<'a>(line: &str, after: &'a str) -> Option<&'a str> {
    let lead = line.trim_start().to_ascii_lowercase();
    if !(lead.starts_with("set ") || lead.starts_with("setting ")) {
        return None;
    }
    let v = after.strip_prefix(" to ")?.trim_start();
    let version = v.split(|c: char| c.is_whitespace() || c == ',').next()?;
    let parts: Vec<&str> = version.trim_end_matches('.').split('.').collect();
    (parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then_some(v)
}

fn apply(text: &str, take: impl Fn(&str) -> bool) -> Facts {
    let mut f = Facts::default();
    for l in lines_of(text).filter(|l| take(l)) {
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
        } else if crate::hip_order::SELECTION_VARS.contains(&k) {
            f.rocm.visible_devices.retain(|(x, _)| x != k);
            f.rocm.visible_devices.push((k.to_string(), v.to_string()));
        } else if k == "ROCM_PATH" || k == "HIP_PATH" {
            f.rocm
                .active_reason
                .get_or_insert_with(|| format!("{k}={v}"));
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parsl#3858's session: four commands, each with its own prefix; the
    /// second one hides every device (ROCr keeps one, HIP is asked for
    /// device 1). Its lines without that command keep nothing.
    #[test]
    fn a_selection_written_as_a_command_prefix() {
        let line2 = "> ROCR_VISIBLE_DEVICES=1 CUDA_VISIBLE_DEVICES=1 python -c \"import torch\"";
        let others = "> CUDA_VISIBLE_DEVICES=1 python -c \"import torch\"\n\
                      > ROCR_VISIBLE_DEVICES=1 CUDA_VISIBLE_DEVICES=0 python -c \"import torch\"\n\
                      > ROCR_VISIBLE_DEVICES=1 python -c \"import torch\"\n";
        let f = parse_exports(&format!("{others}{line2}\n"));
        assert_eq!(
            f.rocm.visible_devices,
            [
                ("ROCR_VISIBLE_DEVICES".to_string(), "1".to_string()),
                ("CUDA_VISIBLE_DEVICES".to_string(), "1".to_string())
            ]
        );
        assert!(parse_exports(others).rocm.visible_devices.is_empty());
        // A prompt with a path, quoted values; prose is no command line.
        let f = parse_exports("user@host:~$ HIP_VISIBLE_DEVICES=\"-1\" ./bench\n");
        assert_eq!(f.rocm.visible_devices.len(), 1);
        for t in [
            "the docs say ROCR_VISIBLE_DEVICES=1 CUDA_VISIBLE_DEVICES=1 python fails\n",
            "$ HIP_VISIBLE_DEVICES=-1\n",
        ] {
            assert!(parse_exports(t).rocm.visible_devices.is_empty(), "{t}");
        }
    }

    #[test]
    fn override_is_found_in_every_spelling() {
        for (line, want) in [
            (
                "msg=\"skipping rocm gfx compatibility check\" HSA_OVERRIDE_GFX_VERSION=11.0.0",
                Some("11.0.0"),
            ),
            (
                "    --env HSA_OVERRIDE_GFX_VERSION=\"10.3.0\" \\",
                Some("10.3.0"),
            ),
            (
                "Environment=\"HSA_OVERRIDE_GFX_VERSION=11.5.1\"",
                Some("11.5.1"),
            ),
            (
                "env=\"map[HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION:10.3.0 HTTPS_PROXY:]\"",
                Some("10.3.0"),
            ),
            (
                "env=\"map[HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION: HTTPS_PROXY:]\"",
                None,
            ),
            ("HSA_OVERRIDE_GFX_VERSION_1=10.3.0", Some("10.3.0")),
            (
                "HSA_OVERRIDE_GFX_VERSION=gfx1102 (or gfx1103)",
                Some("gfx1102"),
            ),
            ("no variable here", None),
        ] {
            assert_eq!(override_mention(line).as_deref(), want, "{line}");
        }
    }

    /// KoboldCpp-ROCm sets the override itself and says so in its banner
    /// (LostRuins/koboldcpp#936); advice to set it, or ollama's empty map
    /// entry, is no value in effect.
    #[test]
    fn an_override_an_application_says_it_set() {
        assert_eq!(
            override_mention("Welcome to KoboldCpp - Version 1.68.yr0-ROCm\nSet AMD HSA_OVERRIDE_GFX_VERSION to 10.3.0\n")
                .as_deref(),
            Some("10.3.0")
        );
        assert_eq!(
            override_mention("you can set HSA_OVERRIDE_GFX_VERSION to 10.3.0 and retry\n"),
            None
        );
        assert_eq!(
            override_mention("Set HSA_OVERRIDE_GFX_VERSION to your card's version\n"),
            None
        );
        assert_eq!(
            override_mention("env=\"map[HSA_OVERRIDE_GFX_VERSION: HTTPS_PROXY: HTTP_PROXY:]\"\n"),
            None
        );
    }
}
