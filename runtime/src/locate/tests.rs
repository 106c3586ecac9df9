use super::*;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::time::Duration;

/// Set in a test binary started by [`alone`]: the body runs there.
const ALONE: &str = "RUNTIME_LOCATE_TEST_ALONE";

/// Runs the test `name` (its path in this crate) by itself in a new
/// process of this test binary, as `nobody` when `as_nobody` and this
/// process is root (whom no permission stops). Returns `true` where the
/// body must run (that process, or this one when it need not start one);
/// otherwise waits for it and asserts it ran and passed.
fn alone(name: &str, as_nobody: bool) -> bool {
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if as_nobody && !root {
        return true;
    }
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, "1");
    if as_nobody {
        use std::os::unix::process::CommandExt;
        // SAFETY: between fork and exec only async-signal-safe calls that
        // drop this child's privileges to nobody's.
        unsafe {
            cmd.pre_exec(|| {
                let nobody = 65534;
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(nobody) != 0
                    || libc::setuid(nobody) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = greta_vocab::child::Child::new(cmd)
        .output(Some(Duration::from_secs(300)))
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), out.stderr);
    assert!(out.status.success(), "{name} alone: {}\n{text}", out.how());
    assert!(
        text.contains("1 passed"),
        "{name} did not run alone:\n{text}"
    );
    false
}

/// A machine under a temporary root, readable by whoever runs the test.
struct Planted(tempfile::TempDir);

impl Planted {
    fn new() -> Planted {
        let t = tempfile::tempdir().unwrap();
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
        Planted(t)
    }

    fn root(&self) -> &Path {
        self.0.path()
    }

    /// `rel` under the root (an absolute host path like `/opt/rocm`).
    fn at(&self, rel: &str) -> PathBuf {
        self.root().join(rel.trim_start_matches('/'))
    }

    /// A file at `rel` (its folders made).
    fn file(&self, rel: &str) -> PathBuf {
        let p = self.at(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, b"\x7fELF not really").unwrap();
        p
    }

    /// A link at `rel` to `target` (as written).
    fn link(&self, rel: &str, target: &str) -> PathBuf {
        let p = self.at(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        symlink(target, &p).unwrap();
        p
    }

    fn env(&self) -> SearchEnv {
        SearchEnv::under_root(self.root())
    }
}

/// `(path under the root, rule, state)` of each candidate, for comparing a
/// whole list at once.
fn rows(p: &Planted, c: &[Candidate]) -> Vec<(String, String, String)> {
    c.iter()
        .map(|c| {
            let path = match c.path.strip_prefix(p.root()) {
                Ok(rel) => format!("/{}", rel.display()),
                Err(_) => c.path.display().to_string(),
            };
            let rule = c
                .rule
                .to_string()
                .replace(&p.root().display().to_string(), "");
            (path, rule, c.state.to_string())
        })
        .collect()
}

fn row(path: &str, rule: &str, state: &str) -> (String, String, String) {
    (path.into(), rule.into(), state.into())
}

const LIB: &str = "/usr/lib/x86_64-linux-gnu";

/// libamdhip64 in the documented order, every place with its rule and
/// what is there: the env's torch wheel, `$ROCM_PATH` (not there),
/// `$HIP_PATH` (a file where its lib folder should be), the newest
/// `/opt/rocm-*`, then each loader name where the loader's places hold it
/// (a dangling link on `LD_LIBRARY_PATH`, a standard directory, the
/// ld.so.cache) or left to the loader.
#[test]
fn hip_is_found_in_its_order_under_a_planted_root() {
    let p = Planted::new();
    p.file("/env/lib/python3.12/site-packages/torch/lib/libamdhip64.so");
    p.file("/hip/lib");
    p.file("/opt/rocm-6.3.1/lib/libamdhip64.so.6.3.1");
    p.link(
        "/opt/rocm-6.3.1/lib/libamdhip64.so.6",
        "libamdhip64.so.6.3.1",
    );
    fs::create_dir_all(p.at("/opt/rocm-5.7.0/lib")).unwrap();
    p.link("/ld/libamdhip64.so.7", "/nowhere/libamdhip64.so.7");
    p.file("/usr/lib64/libamdhip64.so.6");
    p.file(&format!("{LIB}/libamdhip64.so.5"));
    let cache =
        greta_vocab::ld_so::cache_with(&[("libamdhip64.so.5", &format!("{LIB}/libamdhip64.so.5"))]);
    fs::create_dir_all(p.at("/etc")).unwrap();
    fs::write(p.at("/etc/ld.so.cache"), cache).unwrap();
    let env = SearchEnv {
        env_roots: vec!["/env".into()],
        rocm_path: Some("/rocm".into()),
        hip_path: Some("/hip".into()),
        ld_library_path: Some("/ld".into()),
        ..p.env()
    };
    let found = find_library(VendorLibrary::Hip, &env).unwrap();
    let loader = "the dynamic loader's search path";
    let hip_lib_error = format!(
        "cannot list {}: Not a directory (os error 20)",
        p.at("/hip/lib").display()
    );
    assert_eq!(
        rows(&p, &found),
        [
            row(
                "/env/lib/python3.12/site-packages/torch/lib/libamdhip64.so",
                "the env's own ROCm (torch wheel) in /env",
                "found, not loaded"
            ),
            row("/rocm/lib/libamdhip64.so", "$ROCM_PATH", "not there"),
            row("/hip/lib/libamdhip64.so", "$HIP_PATH", &hip_lib_error),
            row(
                "/opt/rocm-6.3.1/lib/libamdhip64.so.6.3.1",
                "ROCm install /opt/rocm-6.3.1",
                "found, not loaded"
            ),
            row(
                "/opt/rocm-6.3.1/lib/libamdhip64.so.6",
                "ROCm install /opt/rocm-6.3.1",
                "found, not loaded"
            ),
            row(
                "/opt/rocm-5.7.0/lib/libamdhip64.so",
                "ROCm install /opt/rocm-5.7.0",
                "not there"
            ),
            row(
                "libamdhip64.so",
                loader,
                "in none of the loader's places; left to the dynamic loader"
            ),
            row(
                "/ld/libamdhip64.so.7",
                &format!("{loader} (LD_LIBRARY_PATH)"),
                "a link to /nowhere/libamdhip64.so.7, which is not there"
            ),
            row(
                "/usr/lib64/libamdhip64.so.6",
                &format!("{loader} (a standard directory)"),
                "found, not loaded"
            ),
            row(
                &format!("{LIB}/libamdhip64.so.5"),
                &format!("{loader} (ld.so.cache)"),
                "found, not loaded"
            ),
        ]
    );
    assert_eq!(
        found[0].to_string(),
        format!(
            "{} (the env's own ROCm (torch wheel) in /env): found, not loaded",
            found[0].path.display()
        )
    );
}

/// `$GRETA_HIP_LIB` is the whole search: the files of the folder it
/// names, or the file; a value the settings reader refused is the error.
#[test]
fn an_override_is_the_only_candidate_and_a_refused_one_is_the_error() {
    let p = Planted::new();
    p.file("/mine/libamdhip64.so.6");
    p.file("/mine/libamdhip64.so");
    p.file(&format!("{LIB}/libamdhip64.so.5"));
    let var = EnvVars::GRETA_HIP_LIB;
    let with = |v: Override| SearchEnv {
        greta_hip_lib: v,
        rocm_path: Some("/mine".into()),
        ..p.env()
    };
    let found = find_library(VendorLibrary::Hip, &with(Ok(Some("/mine".into())))).unwrap();
    let rule = format!("${var}");
    assert_eq!(
        rows(&p, &found),
        [
            row("/mine/libamdhip64.so", &rule, "found, not loaded"),
            row("/mine/libamdhip64.so.6", &rule, "found, not loaded"),
        ]
    );
    let found = find_library(VendorLibrary::Hip, &with(Ok(Some("/gone.so".into())))).unwrap();
    assert_eq!(rows(&p, &found), [row("/gone.so", &rule, "not there")]);
    let refused = format!("{var}=\"/x\\n\": holds a control character");
    assert_eq!(
        find_library(VendorLibrary::Hip, &with(Err(refused.clone()))),
        Err(refused)
    );
    for (lib, set) in [
        (VendorLibrary::Cuda, EnvVars::GRETA_CUDA_LIB),
        (VendorLibrary::Nvrtc, EnvVars::GRETA_NVRTC_LIB),
    ] {
        let mut env = p.env();
        let v = Ok(Some(PathBuf::from("/mine/libamdhip64.so")));
        match lib {
            VendorLibrary::Cuda => env.greta_cuda_lib = v,
            _ => env.greta_nvrtc_lib = v,
        }
        let found = find_library(lib, &env).unwrap();
        assert_eq!(
            rows(&p, &found),
            [row(
                "/mine/libamdhip64.so",
                &format!("${set}"),
                "found, not loaded"
            )],
            "{lib:?}"
        );
    }
}

/// NVRTC: the env's NVIDIA wheels, `$CUDA_PATH`, `$CUDA_HOME`, the CUDA
/// toolkits newest first, then the loader's names; a folder without the
/// library is not named, one that cannot be listed is.
#[test]
fn nvrtc_is_found_in_its_order() {
    let p = Planted::new();
    p.file("/env/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
    p.file("/cudapath/lib64/libnvrtc.so.12");
    p.file("/cudahome/lib64");
    p.file("/usr/local/cuda-12.4/lib64/libnvrtc.so.12");
    p.file("/usr/local/cuda-11.8/lib64/libnvrtc.so.11.2");
    fs::create_dir_all(p.at("/usr/local/cuda/lib64")).unwrap();
    p.file(&format!("{LIB}/libnvrtc.so.12"));
    let env = SearchEnv {
        env_roots: vec!["/env".into()],
        cuda_path: Some("/cudapath".into()),
        cuda_home: Some("/cudahome".into()),
        ..p.env()
    };
    let found = find_library(VendorLibrary::Nvrtc, &env).unwrap();
    let got = rows(&p, &found);
    let paths: Vec<&str> = got.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/env/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
            "/cudapath/lib64/libnvrtc.so.12",
            "/cudahome/lib64/libnvrtc.so",
            "/usr/local/cuda-12.4/lib64/libnvrtc.so.12",
            "/usr/local/cuda-11.8/lib64/libnvrtc.so.11.2",
            "libnvrtc.so.13",
            &format!("{LIB}/libnvrtc.so.12"),
            "libnvrtc.so.11.2",
            "libnvrtc.so",
        ]
    );
    assert_eq!(got[0].1, "the env's NVIDIA wheels in /env");
    assert_eq!(got[1].1, "$CUDA_PATH");
    assert!(got[2].2.starts_with("cannot list "), "{:?}", got[2]);
    assert_eq!(got[3].1, "CUDA toolkit /usr/local/cuda-12.4");
}

/// Without an ld.so.cache the directories ld.so.conf names stand in (what
/// the cache is built from); a FIFO on `LD_LIBRARY_PATH` is named as no
/// library. libcuda is asked for by the CUDA bindings' names.
#[test]
fn vulkan_and_cuda_without_a_cache_use_ld_so_conf() {
    let p = Planted::new();
    fs::create_dir_all(p.at("/etc/ld.so.conf.d")).unwrap();
    fs::write(
        p.at("/etc/ld.so.conf"),
        "include /etc/ld.so.conf.d/*.conf\n",
    )
    .unwrap();
    fs::write(p.at("/etc/ld.so.conf.d/vk.conf"), "/opt/vk/lib\n").unwrap();
    p.file("/opt/vk/lib/libvulkan.so.1");
    p.file("/opt/vk/lib/libcuda.so.1");
    fs::create_dir_all(p.at("/ld")).unwrap();
    let fifo = std::ffi::CString::new(p.at("/ld/libvulkan.so.1").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path in our temp dir.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let env = SearchEnv {
        ld_library_path: Some("/ld".into()),
        ..p.env()
    };
    let loader = "the dynamic loader's search path";
    assert_eq!(
        rows(&p, &find_library(VendorLibrary::Vulkan, &env).unwrap()),
        [
            row(
                "/ld/libvulkan.so.1",
                &format!("{loader} (LD_LIBRARY_PATH)"),
                "is a FIFO, not a library file (only a regular file is loaded)"
            ),
            row(
                "/opt/vk/lib/libvulkan.so.1",
                &format!("{loader} (ld.so.conf)"),
                "found, not loaded"
            ),
        ]
    );
    let cuda = find_library(VendorLibrary::Cuda, &env).unwrap();
    let found: Vec<_> = rows(&p, &cuda)
        .into_iter()
        .filter(|r| r.2 == "found, not loaded")
        .collect();
    assert_eq!(
        found,
        [row(
            "/opt/vk/lib/libcuda.so.1",
            &format!("{loader} (ld.so.conf)"),
            "found, not loaded"
        )]
    );
    let mut names = cudarc::get_lib_name_candidates("cuda");
    names.sort();
    names.dedup();
    assert_eq!(
        cuda.len(),
        names.len(),
        "every name the bindings ask for, once"
    );
}

/// The directories other tools' variables name are read once, by the
/// settings module's rule for a directory: one that is not UTF-8, holds a
/// control character, is relative or names a FIFO or a regular file is
/// left out of the search (each was searched, as `<value>/lib` or
/// `<value>/lib64`, a FIFO as a ROCm install), and so out of hipcc's
/// search too; an absolute directory, a link to one, or one not there yet
/// is kept. Run alone: it sets the process's variables.
#[test]
fn live_directory_variables_are_read_by_the_directory_rule() {
    if !alone(
        "locate::tests::live_directory_variables_are_read_by_the_directory_rule",
        false,
    ) {
        return;
    }
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo on a path in our temp dir.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let file = t.path().join("file");
    fs::write(&file, "").unwrap();
    let link = t.path().join("link");
    symlink(t.path(), &link).unwrap();
    let vars = [
        EnvVars::GRETA_ENV,
        "VIRTUAL_ENV",
        "HIP_PATH",
        "ROCM_PATH",
        "CUDA_PATH",
        "CUDA_HOME",
    ];
    let live = || {
        let e = SearchEnv::live();
        (
            e.env_roots,
            [e.hip_path, e.rocm_path, e.cuda_path, e.cuda_home],
        )
    };
    let refused: [&OsStr; 6] = [
        OsStr::from_bytes(b"/x/\xff"),
        OsStr::new("/x/\u{1b}[2J"),
        fifo.as_os_str(),
        file.as_os_str(),
        OsStr::new("usr/local/cuda"),
        OsStr::new("./cuda"),
    ];
    for (k, v) in vars.iter().zip(refused) {
        std::env::set_var(k, v);
    }
    assert_eq!(live(), (vec![], [None, None, None, None]));
    // hipcc's search reads `HIP_PATH`/`ROCM_PATH` from the same place: the
    // FIFO and the file are not named among the places it looked.
    std::env::set_var("PATH", t.path());
    let looked = crate::hip::hipcc::choice("gfx942").unwrap_err();
    for v in [&fifo, &file] {
        assert!(!looked.contains(&*v.to_string_lossy()), "{looked}");
    }
    let yet = t.path().join("not/yet");
    let kept = [t.path(), &link, &yet, t.path(), &link, &yet].map(|p| p as &Path);
    for (k, v) in vars.iter().zip(kept) {
        std::env::set_var(k, v);
    }
    let p = |v: &Path| Some(v.to_path_buf());
    assert_eq!(
        live(),
        (
            vec![t.path().to_path_buf(), link.clone()],
            [p(&yet), p(t.path()), p(&link), p(&yet)]
        )
    );
}

/// A folder that cannot be listed (permissions: run as nobody where the
/// test is root) is named with why, in the place of the library it may
/// hold; so is a file in a folder that cannot be entered.
#[test]
fn an_unreadable_folder_is_named_with_why() {
    if !alone(
        "locate::tests::an_unreadable_folder_is_named_with_why",
        true,
    ) {
        return;
    }
    let p = Planted::new();
    p.file("/rocm/lib/libamdhip64.so.6");
    fs::set_permissions(p.at("/rocm/lib"), fs::Permissions::from_mode(0o000)).unwrap();
    p.file("/shut/libvulkan.so.1");
    fs::set_permissions(p.at("/shut"), fs::Permissions::from_mode(0o000)).unwrap();
    let env = SearchEnv {
        rocm_path: Some("/rocm".into()),
        ld_library_path: Some("/shut".into()),
        ..p.env()
    };
    let hip = find_library(VendorLibrary::Hip, &env).unwrap();
    let vk = find_library(VendorLibrary::Vulkan, &env).unwrap();
    for dir in ["/rocm/lib", "/shut"] {
        fs::set_permissions(p.at(dir), fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert_eq!(
        rows(&p, &hip[..1]),
        [row(
            "/rocm/lib/libamdhip64.so",
            "$ROCM_PATH",
            &format!(
                "cannot list {}: Permission denied (os error 13)",
                p.at("/rocm/lib").display()
            )
        )]
    );
    assert_eq!(
        rows(&p, &vk[..1]),
        [row(
            "/shut/libvulkan.so.1",
            "the dynamic loader's search path (LD_LIBRARY_PATH)",
            "Permission denied (os error 13)"
        )]
    );
}

/// The search maps nothing: run alone (no other test has loaded a GPU
/// library into the process), every vendor library is searched on this
/// machine and `/proc/self/maps` holds none of them after. Then one that
/// was found is opened, and the maps show it: the check can see a load.
#[test]
fn the_search_maps_no_gpu_library() {
    if !alone("locate::tests::the_search_maps_no_gpu_library", false) {
        return;
    }
    const GPU_LIBS: [&str; 4] = ["libamdhip64", "libcuda.so", "libnvrtc", "libvulkan"];
    let mapped = || -> Vec<String> {
        fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter(|l| GPU_LIBS.iter().any(|g| l.contains(g)))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(mapped(), Vec::<String>::new(), "mapped before the search");
    let env = SearchEnv::live();
    let mut found = Vec::new();
    for lib in VendorLibrary::ALL {
        let c = find_library(lib, &env).unwrap_or_default();
        found.extend(c.into_iter().filter(|c| c.state == State::Found));
    }
    assert_eq!(mapped(), Vec::<String>::new(), "mapped by the search");
    // The control: what the search found, opened, is in the maps.
    let Some(vk) = found
        .iter()
        .find(|c| c.path.to_string_lossy().contains("libvulkan"))
    else {
        eprintln!("no libvulkan on this machine: the control cannot run");
        return;
    };
    let (lib, loaded) = open_first("libvulkan", std::slice::from_ref(vk)).unwrap();
    let real = fs::canonicalize(&loaded.path).unwrap();
    assert!(
        mapped()
            .iter()
            .any(|l| l.ends_with(&*real.to_string_lossy())),
        "{} opened but not in the maps: {:?}",
        real.display(),
        mapped()
    );
    drop(lib);
}

/// With `/lib64` a link to `usr/lib64` (a merged /usr), the file the cache
/// names and the one a standard directory holds are one file: listed once.
#[test]
fn one_file_under_two_names_is_listed_once() {
    let p = Planted::new();
    p.file("/usr/lib64/libvulkan.so.1");
    p.link("/lib64", "usr/lib64");
    let cache = greta_vocab::ld_so::cache_with(&[("libvulkan.so.1", "/lib64/libvulkan.so.1")]);
    fs::create_dir_all(p.at("/etc")).unwrap();
    fs::write(p.at("/etc/ld.so.cache"), cache).unwrap();
    assert_eq!(
        rows(&p, &find_library(VendorLibrary::Vulkan, &p.env()).unwrap()),
        [row(
            "/lib64/libvulkan.so.1",
            "the dynamic loader's search path (ld.so.cache)",
            "found, not loaded"
        )]
    );
}
