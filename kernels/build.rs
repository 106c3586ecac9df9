//! Compiles every `shaders/*.comp` to SPIR-V with the vendored glslang and
//! writes `$OUT_DIR/spirv.rs`, a table of `(name, bytes)` the crate embeds.
//! A shader that fails to compile fails the build with glslang's own
//! `file:line` messages, rewritten to point at the source path.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
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
    let mut table = String::from("/// Every compiled shader: (file stem, SPIR-V bytes).\npub static SHADERS: &[(&str, &[u8])] = &[\n");
    let mut failures = Vec::new();
    for path in &entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        match compile(compiler, path) {
            Ok(words) => {
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                let spv = out.join(format!("{stem}.spv"));
                std::fs::write(&spv, bytes).unwrap();
                writeln!(
                    table,
                    "    ({stem:?}, include_bytes!({:?})),",
                    spv.display().to_string()
                )
                .unwrap();
            }
            Err(msg) => failures.push(msg),
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
    table.push_str("];\n");
    std::fs::write(out.join("spirv.rs"), table).unwrap();
}

/// glslang reports `ERROR: 0:LINE: message` (0 = the string index); rewrite
/// that to `path:LINE: message` so editors and humans find the line.
fn compile(compiler: &glslang::Compiler, path: &Path) -> Result<Vec<u32>, String> {
    use glslang::{
        CompilerOptions, ShaderInput, ShaderSource, ShaderStage, SpirvVersion, Target,
        VulkanVersion,
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let source = ShaderSource::from(text);
    let options = CompilerOptions {
        target: Target::Vulkan {
            version: VulkanVersion::Vulkan1_2,
            spirv_version: SpirvVersion::SPIRV1_5,
        },
        ..CompilerOptions::default()
    };
    let input = ShaderInput::new(
        &source,
        ShaderStage::Compute,
        &options,
        None::<&[(&str, Option<&str>)]>,
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
                    if let Some(rest) = rest.strip_prefix("0:") {
                        return format!(
                            "{p}:{rest} ({})",
                            kind.trim_end_matches(": ").to_lowercase()
                        );
                    }
                }
            }
            format!("{p}: {l}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
