//! Small real wheels: a zip with the package, `METADATA`, `WHEEL` and a
//! `RECORD` whose hashes pip and uv verify on install. Each carries a blob
//! of fresh random bytes so every test run downloads different content and
//! the files are big enough to be cut mid-body.

#![allow(dead_code)]

use base64::Engine;
use sha2::{Digest, Sha256};
use std::io::Write;

pub struct Wheel {
    pub project: String,
    pub version: String,
    pub filename: String,
    pub bytes: Vec<u8>,
    pub sha256: String,
}

/// Builds `{dist}-{version}-py3-none-any.whl` holding `files` (path, text)
/// plus `{module}/_blob.bin` of `blob` random bytes.
pub fn build(
    project: &str,
    version: &str,
    module: &str,
    files: &[(&str, String)],
    blob: usize,
) -> Wheel {
    build_tagged(project, version, module, files, blob, "", "py3-none-any")
}

/// As [`build`], with more `METADATA` lines (`Provides-Extra`,
/// `Requires-Dist`: what a resolver reads, as AMD's host wheels declare
/// their per-target device wheels behind extras), for the wheel tag `tag`
/// (`cp312-cp312-linux_x86_64`, `py3-none-linux_x86_64`: how AMD tags its
/// ROCm wheels).
pub fn build_tagged(
    project: &str,
    version: &str,
    module: &str,
    files: &[(&str, String)],
    blob: usize,
    metadata: &str,
    tag: &str,
) -> Wheel {
    let dist = project.replace('-', "_");
    let info = format!("{dist}-{version}.dist-info");
    let mut entries: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
        .collect();
    let mut rng_bytes = vec![0u8; blob];
    fill_random(&mut rng_bytes);
    entries.push((format!("{module}/_blob.bin"), rng_bytes));
    entries.push((
        format!("{info}/METADATA"),
        format!("Metadata-Version: 2.1\nName: {project}\nVersion: {version}\nSummary: greta test stand-in for {project}\n{metadata}").into_bytes(),
    ));
    entries.push((
        format!("{info}/WHEEL"),
        format!("Wheel-Version: 1.0\nGenerator: greta-tests\nRoot-Is-Purelib: true\nTag: {tag}\n")
            .into_bytes(),
    ));
    let mut record = String::new();
    for (p, b) in &entries {
        let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(b));
        record.push_str(&format!("{p},sha256={digest},{}\n", b.len()));
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    entries.push((format!("{info}/RECORD"), record.into_bytes()));

    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (p, b) in &entries {
            z.start_file(p.as_str(), opts).unwrap();
            z.write_all(b).unwrap();
        }
        z.finish().unwrap();
    }
    let bytes = buf.into_inner();
    let filename = format!("{dist}-{version}-{tag}.whl");
    let sha256 = super::sha256_hex(&bytes);
    Wheel {
        project: project.to_string(),
        version: version.to_string(),
        filename,
        bytes,
        sha256,
    }
}

/// A stand-in torch: `torch.version.hip/cuda` as given, `torch.cuda.device_count()`.
pub fn torch(version: &str, hip: Option<&str>, cuda: Option<&str>, blob: usize) -> Wheel {
    build(
        "torch",
        version,
        "torch",
        &torch_files(version, hip, cuda),
        blob,
    )
}

/// The files of the stand-in [`torch`], for a torch wheel built otherwise
/// (with `Requires-Dist` lines, another tag: [`build_tagged`]).
pub fn torch_files(
    version: &str,
    hip: Option<&str>,
    cuda: Option<&str>,
) -> [(&'static str, String); 2] {
    let q = |v: Option<&str>| v.map(|s| format!("{s:?}")).unwrap_or_else(|| "None".into());
    [
        (
            "torch/__init__.py",
            "from . import version\n__version__ = version.__version__\n\nclass _Cuda:\n    @staticmethod\n    def device_count():\n        return 0\n\ncuda = _Cuda()\n".to_string(),
        ),
        ("torch/version.py", format!("__version__ = {version:?}\nhip = {}\ncuda = {}\n", q(hip), q(cuda))),
    ]
}

pub fn triton(version: &str, blob: usize) -> Wheel {
    build(
        "triton",
        version,
        "triton",
        &[("triton/__init__.py", format!("__version__ = {version:?}\n"))],
        blob,
    )
}

pub fn jax(version: &str, blob: usize) -> Wheel {
    build(
        "jax",
        version,
        "jax",
        &[(
            "jax/__init__.py",
            format!(
                "__version__ = {version:?}\n\ndef devices():\n    return ['CpuDevice(id=0)']\n"
            ),
        )],
        blob,
    )
}

/// Random bytes from the OS (fresh every run).
pub fn fill_random(buf: &mut [u8]) {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(buf)
        .unwrap();
}
