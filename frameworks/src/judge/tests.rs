use super::*;
use crate::{DeviceSeen, Info, PythonSeen};

fn run(mods: Vec<ModuleRun>, env: &[(&str, &str)]) -> Run {
    Run {
        python: PythonSeen {
            executable: "/e/bin/python".into(),
            version: "3.12.1".into(),
            prefix: "/e".into(),
            base_prefix: None,
            isolated: true,
        },
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        wall_s: 1.0,
        frameworks: mods,
    }
}

fn gate(id: &str, rel: f64, device: &str) -> GateRecord {
    GateRecord {
        id: id.into(),
        shape: "m=2".into(),
        flops: 16,
        bytes: 48,
        repeats: 3,
        rel_err: Some(rel),
        max_abs_err: Some(rel),
        finite: true,
        device: Some(device.into()),
        first_call_us: Some(900.0),
        median_us: Some(10.0),
        min_us: Some(9.0),
        error: None,
        traceback: None,
    }
}

fn torch(
    hip: Option<&str>,
    cuda: Option<&str>,
    device: DeviceKind,
    gates: Vec<GateRecord>,
) -> ModuleRun {
    ModuleRun {
        module: "torch".into(),
        status: ModuleStatus::Ok,
        error: None,
        traceback: None,
        phase: None,
        import_s: Some(2.0),
        version: Some("2.15.0".into()),
        file: Some("/e/lib/python3.12/site-packages/torch/__init__.py".into()),
        info: Info {
            hip: hip.map(String::from),
            cuda: cuda.map(String::from),
            device: Some(DeviceSeen {
                kind: device,
                name: if device == DeviceKind::Gpu {
                    "NVIDIA H200".into()
                } else {
                    "cpu".into()
                },
                reason: (device == DeviceKind::Cpu)
                    .then(|| "RuntimeError: No CUDA GPUs are available".into()),
                platform: None,
                gcn_arch_name: None,
                pci_bus_id: None,
                pci_device_id: None,
                pci_domain_id: None,
                uuid: None,
            }),
            ..Info::default()
        },
        gates,
        elapsed_s: Some(3.0),
    }
}

fn expect(backend: Option<&str>, gpu: Option<Vendor>) -> Expect {
    Expect {
        label: "test".into(),
        backend: backend.map(|b| b.parse().unwrap()),
        version: None,
        gpu: gpu.map(|vendor| GpuWant {
            vendor,
            names: vec!["NVIDIA H200".into()],
        }),
        env_root: Some(PathBuf::from("/e")),
        require_all: true,
    }
}

fn ids(j: &Judgement) -> Vec<&str> {
    j.findings.iter().map(|f| f.id.as_str()).collect()
}

fn verdict<'a>(j: &'a Judgement, id: &str) -> &'a Judged {
    j.modules
        .iter()
        .flat_map(|m| &m.gates)
        .find(|g| g.id == id)
        .unwrap_or_else(|| panic!("no gate {id} in {:?}", j.modules))
}

const T: Duration = Duration::from_secs(60);

fn gated() -> Vec<String> {
    vec!["torch".into(), "jax".into(), "triton".into()]
}

/// A run of a CUDA 13.0 torch on a device of `kind`, with its `gates`, in
/// an environment with `env` set.
fn cuda_torch_run(kind: DeviceKind, gates: Vec<GateRecord>, env: &[(&str, &str)]) -> Run {
    run(vec![torch(None, Some("13.0"), kind, gates)], env)
}

#[test]
fn gpu_results_within_tolerance_pass() {
    let r = cuda_torch_run(
        DeviceKind::Gpu,
        vec![
            gate("torch.matmul_f32", 3e-7, "cuda:0"),
            gate("torch.matmul_f16", 4e-3, "cuda:0"),
        ],
        &[],
    );
    let j = judge(&r, &expect(Some("cuda"), Some(Vendor::Nvidia)), &gated(), T);
    assert!(j.findings.is_empty(), "{:?}", j.findings);
    assert!(!j.failed());
    assert_eq!(verdict(&j, "torch.device").verdict, GateStatus::Pass);
    assert_eq!(verdict(&j, "torch.matmul_f16").tolerance, Some(1e-2));
}

#[test]
fn just_over_the_tolerance_is_a_wrong_result() {
    let r = cuda_torch_run(
        DeviceKind::Gpu,
        vec![gate("torch.matmul_f32", 1.5e-5, "cuda:0")],
        &[],
    );
    let j = judge(&r, &expect(Some("cuda"), Some(Vendor::Nvidia)), &gated(), T);
    assert_eq!(ids(&j), ["framework.wrong-result"]);
    let g = verdict(&j, "torch.matmul_f32");
    assert_eq!(g.verdict, GateStatus::Fail);
    assert!(
        g.reason.as_deref().unwrap().contains("1.500e-5 > 1e-5"),
        "{:?}",
        g.reason
    );
}

#[test]
fn a_gpu_machine_whose_framework_ran_on_the_cpu_fails_and_says_why() {
    let r = cuda_torch_run(
        DeviceKind::Cpu,
        vec![gate("torch.matmul_f32", 3e-7, "cpu")],
        &[("CUDA_VISIBLE_DEVICES", "")],
    );
    let j = judge(&r, &expect(None, Some(Vendor::Nvidia)), &gated(), T);
    assert_eq!(ids(&j), ["framework.cpu-fallback"]);
    let d = verdict(&j, "torch.device");
    assert_eq!(d.verdict, GateStatus::Fail);
    assert!(d.reason.as_deref().unwrap().contains("ran on the CPU"));
    // A correct result computed on the CPU still fails.
    assert_eq!(verdict(&j, "torch.matmul_f32").verdict, GateStatus::Fail);
    let ev = &j.findings[0].evidence[0];
    assert!(
        ev.contains("No CUDA GPUs") && ev.contains("CUDA_VISIBLE_DEVICES"),
        "{ev}"
    );
    assert!(j.findings[0].fix.commands[0].contains("unset CUDA_VISIBLE_DEVICES"));
}

#[test]
fn the_cpu_profile_runs_on_the_cpu_and_skips_triton() {
    let r = run(
        vec![torch(
            None,
            Some("13.2"),
            DeviceKind::Cpu,
            vec![gate("torch.matmul_f32", 3e-7, "cpu")],
        )],
        &[],
    );
    let e = expect(Some("cpu"), None);
    assert!(!e.triton_runs());
    let j = judge(&r, &e, &["torch".into()], T);
    assert!(j.findings.is_empty(), "{:?}", j.findings);
    assert_eq!(verdict(&j, "torch.device").verdict, GateStatus::Pass);
    assert!(e.triton_skip_reason().contains("cpu profile"));
}

#[test]
fn build_for_another_backend_is_a_mismatch_not_a_fallback() {
    // A CUDA torch on an AMD-only machine runs on the CPU: the cause is the build.
    let r = cuda_torch_run(
        DeviceKind::Cpu,
        vec![gate("torch.matmul_f32", 3e-7, "cpu")],
        &[],
    );
    let j = judge(&r, &expect(None, Some(Vendor::Amd)), &gated(), T);
    assert_eq!(ids(&j), ["framework.mismatch"]);
    // ROCm 6.3 torch in a rocm6.4 profile.
    let r = run(
        vec![torch(Some("6.3.42131"), None, DeviceKind::Gpu, vec![])],
        &[],
    );
    let mut e = expect(Some("rocm"), Some(Vendor::Amd));
    e.version = Some("6.4".into());
    assert_eq!(ids(&judge(&r, &e, &gated(), T)), ["framework.mismatch"]);
    e.version = Some("6.3".into());
    assert!(judge(&r, &e, &gated(), T).findings.is_empty());
    // "6.40" is not "6.4".
    assert!(!version_prefix("6.40.1", "6.4") && version_prefix("6.4.43484-123", "6.4"));
    // A ROCm torch in the cpu profile.
    let r = run(
        vec![torch(Some("6.4.1"), None, DeviceKind::Cpu, vec![])],
        &[],
    );
    assert_eq!(
        ids(&judge(&r, &expect(Some("cpu"), None), &gated(), T)),
        ["framework.mismatch"]
    );
}

#[test]
fn import_errors_timeouts_and_foreign_files_are_findings() {
    let mut broken = torch(None, None, DeviceKind::Cpu, vec![]);
    broken.status = ModuleStatus::Error;
    broken.import_s = None;
    broken.error = Some("ImportError: libamdhip64.so: cannot open shared object file".into());
    let mut hung = torch(None, None, DeviceKind::Cpu, vec![]);
    hung.module = "jax".into();
    hung.status = ModuleStatus::Timeout;
    hung.import_s = None;
    hung.phase = Some("jax.matmul_f32".into());
    let mut foreign = torch(None, Some("13.0"), DeviceKind::Gpu, vec![]);
    foreign.module = "triton".into();
    foreign.file = Some("/usr/lib/python3/triton/__init__.py".into());
    foreign.info = Info::default();
    let r = run(vec![broken, hung, foreign], &[]);
    let j = judge(&r, &expect(Some("cuda"), Some(Vendor::Nvidia)), &[], T);
    let got = ids(&j);
    for id in [
        "framework.import-failed",
        "framework.gate-failed",
        "framework.mismatch",
    ] {
        assert!(got.contains(&id), "{id} in {got:?}");
    }
    let g = verdict(&j, "jax.matmul_f32");
    assert_eq!(g.verdict, GateStatus::Fail);
    assert!(
        g.reason
            .as_deref()
            .unwrap()
            .contains("did not finish within 60s"),
        "{:?}",
        g.reason
    );
    assert!(j
        .modules
        .iter()
        .any(|m| m.module == "jax" && m.lost.is_some()));
}

#[test]
fn missing_modules_are_skipped_unless_required() {
    let mut gone = torch(None, None, DeviceKind::Cpu, vec![]);
    gone.status = ModuleStatus::Missing;
    gone.import_s = None;
    gone.error = Some("ModuleNotFoundError: No module named 'torch'".into());
    let r = run(vec![gone], &[]);
    let mut e = expect(None, None);
    e.require_all = false;
    let j = judge(&r, &e, &gated(), T);
    assert!(j.findings.is_empty());
    assert_eq!(verdict(&j, "torch.import").verdict, GateStatus::Skip);
    e.require_all = true;
    assert_eq!(
        ids(&judge(&r, &e, &gated(), T)),
        ["framework.import-failed"]
    );
}

#[test]
fn nan_results_fail_whatever_the_tolerance() {
    let mut g = gate("jax.matmul_f32", 0.0, "cuda:0");
    g.finite = false;
    g.rel_err = None;
    g.error = Some("ValueError: 3 of 262144 result elements are NaN or infinite".into());
    let r = run(
        vec![torch(None, Some("13.0"), DeviceKind::Gpu, vec![g])],
        &[],
    );
    let j = judge(&r, &expect(Some("cuda"), Some(Vendor::Nvidia)), &gated(), T);
    assert_eq!(ids(&j), ["framework.wrong-result"]);
}

/// A machine with one AMD GPU `name`, a gfx1103.
fn gfx1103_machine(name: &str) -> greta_probe::Facts {
    greta_probe::Facts {
        gpus: vec![greta_probe::Gpu {
            vendor: greta_probe::Vendor::Amd,
            name: name.into(),
            gfx: Some("gfx1103".into()),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn runtime_messages_get_the_doctors_finding_ids() {
    let facts = gfx1103_machine("AMD Radeon 760M");
    let texts = vec![(
        "torch.matmul_f32".to_string(),
        "RuntimeError: HIP error: invalid device function\nrocBLAS error: Cannot read /e/lib/python3.12/site-packages/torch/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1103".to_string(),
    )];
    let f = doctor_findings(&facts, &texts);
    let got: Vec<&str> = f.iter().map(|f| f.id.as_str()).collect();
    assert!(got.contains(&"rocm.gfx-unsupported"), "{got:?}");
    // Nothing in the text: nothing added.
    assert!(doctor_findings(&facts, &[("x".into(), "ValueError: shapes".into())]).is_empty());
}

/// The gates' failure in an env whose torch is on TheRock's ROCm
/// without this GPU's device wheel (hipErrorInvalidImage) gets its own
/// finding, naming the env and the missing target.
#[test]
fn a_missing_device_wheel_gets_its_own_finding() {
    use greta_probe::Framework;
    let fw = |name: &str, version: &str| Framework {
        env: "/e".into(),
        name: name.into(),
        version: version.into(),
        backend: Some("rocm".into()),
        backend_version: Some("10.1.0".into()),
    };
    let mut facts = gfx1103_machine("AMD Radeon 780M");
    facts.python.frameworks = vec![
        fw("torch", "2.14.0+rocm10.1.0"),
        fw("rocm-sdk-core", "10.1.0"),
        fw("amd-torch-device-gfx942", "2.14.0+rocm10.1.0"),
    ];
    let texts = vec![(
        "torch.matmul_f32".to_string(),
        "RuntimeError: HIP error: device kernel image is invalid".to_string(),
    )];
    let f = doctor_findings(&facts, &texts);
    let mine = f
        .iter()
        .find(|f| f.id == "framework.device-wheel-missing")
        .unwrap_or_else(|| panic!("{f:?}"));
    assert!(
        mine.evidence.iter().any(|e| e.contains("gfx1103")),
        "{mine:?}"
    );
    // with the device wheel, only the generic gfx finding remains
    facts
        .python
        .frameworks
        .push(fw("amd-torch-device-gfx1103", "2.14.0+rocm10.1.0"));
    let f = doctor_findings(&facts, &texts);
    assert!(
        f.iter().all(|f| f.id != "framework.device-wheel-missing"),
        "{f:?}"
    );
}
