//! Compiles every `shaders/*.comp` to SPIR-V with the vendored glslang and
//! writes `$OUT_DIR/spirv.rs`: `enum Shader`, one variant per compiled
//! shader or variant, with its name and embedded bytes. The planner names
//! shaders by that enum, so a renamed or missing shader is a compile error
//! rather than a "not built into this greta" at run time.
//! A shader that fails to compile fails the build with glslang's own
//! `file:line` messages, rewritten to point at the source path.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

// The matrix-instruction lane layouts, shared with the crate (see there).
#[allow(dead_code)]
#[path = "src/matrix_lanes.rs"]
mod matrix_lanes;

fn main() {
    let manifest = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).to_path_buf();
    println!(
        "cargo:rerun-if-changed={}",
        manifest.join("src/matrix_lanes.rs").display()
    );
    std::fs::write(
        PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("matrix_lanes.h"),
        matrix_lanes::header(),
    )
    .unwrap();
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("shaders");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed={}", dir.display());

    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "comp"))
        .collect();
    entries.sort();

    let compiler = glslang::Compiler::acquire().expect("glslang process initialisation failed");
    // (name, .spv path) of every shader that compiled, in file order.
    let mut built: Vec<(String, String)> = Vec::new();
    let mut failures = Vec::new();
    for path in &entries {
        println!("cargo:rerun-if-changed={}", path.display());
        for (name, defines) in variants(path) {
            match compile(compiler, path, &defines, spirv16(path)) {
                Ok(words) => {
                    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                    let spv = out.join(format!("{name}.spv"));
                    std::fs::write(&spv, bytes).unwrap();
                    built.push((name, spv.display().to_string()));
                }
                Err(msg) => failures.push(format!("[{name}] {msg}")),
            }
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            for line in f.lines() {
                println!("cargo:warning={line}");
            }
        }
        panic!("shader compilation failed:\n{}", failures.join("\n"));
    }
    std::fs::write(out.join("spirv.rs"), shader_enum(&built)).unwrap();
}

/// `gemm_f16_cm2` -> `GemmF16Cm2`: the variant of a shader name.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut c = part.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The source of `enum Shader` for `built` (name, .spv path) pairs. Names
/// must be lowercase snake case and their variants distinct: a clash would
/// otherwise surface as a confusing error in generated code.
fn shader_enum(built: &[(String, String)]) -> String {
    let mut seen = std::collections::BTreeMap::new();
    for (name, _) in built {
        assert!(
            !name.is_empty()
                && name.starts_with(|c: char| c.is_ascii_lowercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "shader name {name:?}: use lowercase letters, digits and _ (it becomes an enum variant)"
        );
        if let Some(other) = seen.insert(camel(name), name) {
            panic!(
                "shaders {other:?} and {name:?} both become Shader::{}",
                camel(name)
            );
        }
    }
    let mut src = String::new();
    src.push_str(
        "/// Every compiled shader (a `shaders/*.comp` file, or one `//! variant`\n\
         /// of it), named in the source by its variant and on disk by [`Shader::name`].\n\
         #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\n\
         pub enum Shader {\n",
    );
    for (name, _) in built {
        writeln!(src, "    /// `{name}`\n    {},", camel(name)).unwrap();
    }
    src.push_str("}\n\nimpl Shader {\n");
    src.push_str("    /// Every shader, in build order (file name, then variant line).\n");
    src.push_str("    pub const ALL: &'static [Shader] = &[\n");
    for (name, _) in built {
        writeln!(src, "        Shader::{},", camel(name)).unwrap();
    }
    src.push_str("    ];\n\n");
    src.push_str(
        "    /// The shader's name: its file stem or variant name (`gemm_f32_v4`),\n\
         /// the text results and tuning caches carry.\n\
         pub const fn name(self) -> &'static str {\n        match self {\n",
    );
    for (name, _) in built {
        writeln!(src, "            Shader::{} => {name:?},", camel(name)).unwrap();
    }
    src.push_str("        }\n    }\n\n");
    src.push_str(
        "    /// The embedded SPIR-V, little-endian bytes.\n\
         pub const fn bytes(self) -> &'static [u8] {\n        match self {\n",
    );
    for (name, spv) in built {
        writeln!(
            src,
            "            Shader::{} => include_bytes!({spv:?}),",
            camel(name)
        )
        .unwrap();
    }
    src.push_str("        }\n    }\n}\n");
    src
}

/// `#define`s of one variant: (name, optional value).
type Defines = Vec<(String, Option<String>)>;

/// A shader is compiled once under its file stem, or once per
/// `//! variant NAME DEFINE[=VALUE]...` line it contains (one source, several
/// kernels, e.g. gemm in f32 and f16).
fn variants(path: &Path) -> Vec<(String, Defines)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let v: Vec<_> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("//! variant "))
        .map(|rest| {
            let mut words = rest.split_whitespace();
            let name = words
                .next()
                .expect("variant line without a name")
                .to_string();
            let defs = words
                .map(|w| match w.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None => (w.to_string(), None),
                })
                .collect();
            (name, defs)
        })
        .collect();
    if v.is_empty() {
        vec![(
            path.file_stem().unwrap().to_string_lossy().into_owned(),
            vec![],
        )]
    } else {
        v
    }
}

/// Shaders that need SPIR-V 1.6 (e.g. `GL_NV_cooperative_matrix2`) say so
/// with a `//! spirv 1.6` line; the rest target SPIR-V 1.5 (Vulkan 1.2).
fn spirv16(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .any(|l| l.trim() == "//! spirv 1.6")
}

/// glslang reports `ERROR: 0:LINE: message` (0 = the string index); rewrite
/// that to `path:LINE: message` so editors and humans find the line.
fn compile(
    compiler: &glslang::Compiler,
    path: &Path,
    defines: &[(String, Option<String>)],
    spirv16: bool,
) -> Result<Vec<u32>, String> {
    use glslang::{
        CompilerOptions, ShaderInput, ShaderSource, ShaderStage, SpirvVersion, Target,
        VulkanVersion,
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let source = ShaderSource::from(text);
    let defs: Vec<(&str, Option<&str>)> = defines
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect();
    let options = CompilerOptions {
        target: if spirv16 {
            Target::Vulkan {
                version: VulkanVersion::Vulkan1_3,
                spirv_version: SpirvVersion::SPIRV1_6,
            }
        } else {
            Target::Vulkan {
                version: VulkanVersion::Vulkan1_2,
                spirv_version: SpirvVersion::SPIRV1_5,
            }
        },
        ..CompilerOptions::default()
    };
    let input = ShaderInput::new(
        &source,
        ShaderStage::Compute,
        &options,
        Some(&defs[..]),
        None,
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let shader = glslang::Shader::new(compiler, input)
        .parse()
        .map_err(|e| locate(path, &e.to_string()))?;
    shader.compile().map_err(|e| locate(path, &e.to_string()))
}

fn locate(path: &Path, log: &str) -> String {
    let p = path.display().to_string();
    log.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("Log:") && !l.starts_with("DebugLog:"))
        .map(|l| {
            for kind in ["ERROR: ", "WARNING: "] {
                if let Some(rest) = l.strip_prefix(kind) {
                    // `<string index>:<line>: message`; the index is 0 (or 1 after a preamble).
                    if let Some((idx, tail)) = rest.split_once(':') {
                        if idx.chars().all(|c| c.is_ascii_digit()) && !idx.is_empty() {
                            let sev = kind.trim_end_matches(": ").to_lowercase();
                            return format!("{p}:{tail} ({sev})");
                        }
                    }
                }
            }
            format!("{p}: {l}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
