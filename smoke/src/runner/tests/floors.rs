//! Which floor a gate is held to: a baseline, a measured class, the spec
//! of a known model, or the achievable rate of a first-seen device.

use super::*;

#[test]
fn baseline_floors_pass_and_fail() {
    let f = Fixture::new();
    let mut dev = FakeDevice::new(true);
    let first = f.run(&mut dev);
    let mut report = crate::results::tests::sample_report();
    report.devices = vec![first];
    let base = Baseline::parse(std::path::Path::new("b.json"), &report.to_json()).unwrap();

    // Same speed: every measured gate passes its floor.
    let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(Some(&base)), &Quiet);
    assert_eq!(run.status, crate::results::RunStatus::Pass);
    let floor = run.gates[0].floor.as_ref().unwrap();
    assert!(floor.passed && floor.source.contains("b.json"));
    assert_eq!(floor.limit, 0.512 * 0.75);

    // Twice as slow: under 0.75 of the baseline.
    let mut slow = FakeDevice::new(true);
    slow.ns_per_dispatch = 2_000;
    let run = run_device(&mut slow, 0.1, &f.ctx(Some(&base)), &Quiet);
    assert_eq!(run.gates[0].status, GateStatus::Fail);
    let why = reason(&run, 0);
    assert!(why.contains("under the floor"), "{why}");
    assert_eq!(run.status, crate::results::RunStatus::Fail);
}

/// A specs file whose one row claims the fake device by name: 0.5 GB/s,
/// 0.002 TFLOP/s f32, 0.004 f16 (the fake's copy runs 0.512 GB/s, its
/// softmax 0.256, its GEMMs 0.001024 TFLOP/s at 1000 ns a dispatch).
fn fake_specs() -> SpecFile {
    SpecFile::parse(
        "fake-specs.toml",
        r#"
schema_version = 1
[[device]]
model = "Fake GPU 1"
vendor = "test"
arch = "none"
match = ["fake gpu"]
mem_bw_gbs = 0.5
fp16_dense_tflops = 0.004
bf16_dense_tflops = 0.004
fp32_tflops = 0.002
confidence = "test"
source = ["https://example.invalid/fake"]
figures_from = "test"
notes = "test"
"#,
    )
    .unwrap()
}

fn spec_floor_source(g: &GateResult) -> Option<&str> {
    g.floor
        .as_ref()
        .map(|f| f.source.as_str())
        .filter(|s| s.starts_with("spec "))
}

/// A device greta knows, in `perf`, with no baseline and no class:
/// every gate of the four rate classes is held to its spec floor, a 4x
/// slower device fails them, rope (no rate class) gets none.
#[test]
fn spec_floors_apply_where_no_baseline_or_class_does() {
    let mut f = Fixture::new();
    f.specs = fake_specs();
    f.profile = Profile::Perf;
    let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(None), &Quiet);
    assert_eq!(
        run.status,
        crate::results::RunStatus::Pass,
        "{:?}",
        run.gates
    );
    let copy = &run.gates[0];
    let floor = copy.floor.as_ref().unwrap();
    assert_eq!(
        (floor.reference, floor.fraction, floor.limit),
        (0.5, 0.5, 0.25)
    );
    assert!(floor
        .source
        .contains("Fake GPU 1 mem_bw_gbs (streaming class"));
    assert_eq!(copy.spec_fraction, Some(0.512 / 0.5));
    let spec = copy.spec.as_ref().unwrap();
    assert_eq!((spec.figure, spec.model.as_str()), (0.5, "Fake GPU 1"));
    assert_eq!(run.gates[2].floor.as_ref().unwrap().fraction, 0.45);
    assert_eq!(run.gates[4].floor.as_ref().unwrap().limit, 0.004 * 0.15);
    assert!(run.gates[3].floor.is_none());
    assert!(
        run.notes.iter().any(|n| n
            .contains("spec figures: Fake GPU 1 (fake-specs.toml), matched by name \"fake gpu\"")),
        "{:?}",
        run.notes
    );

    let mut slow = FakeDevice::new(true);
    slow.ns_per_dispatch = 4_000;
    let run = run_device(&mut slow, 0.1, &f.ctx(None), &Quiet);
    for i in [0, 1, 2] {
        let g = &run.gates[i];
        assert_eq!(g.status, GateStatus::Fail, "{}", g.id);
        let why = g.reason.as_deref().unwrap();
        assert!(
            why.contains("under the floor") && why.contains("from spec Fake GPU 1"),
            "{why}"
        );
    }
    // The f16 gate runs only after clean f32 gates.
    assert_eq!(run.gates[4].status, GateStatus::Skip);
    assert_eq!(run.status, crate::results::RunStatus::Fail);
}

/// A baseline or a class floor wins over the spec; outside `perf` the
/// spec only reports fractions; an unknown device says it has none.
#[test]
fn spec_floors_yield_to_baselines_and_classes_and_stay_out_of_other_profiles() {
    let mut f = Fixture::new();
    f.specs = fake_specs();
    // default: fractions of spec, no floors at all.
    let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(None), &Quiet);
    assert!(run.gates.iter().all(|g| g.floor.is_none()));
    assert_eq!(run.gates[1].spec_fraction, Some(0.001024 / 0.002));
    assert!(run
        .notes
        .iter()
        .any(|n| n.contains("fraction of spec") && !n.contains("spec floors")));

    f.profile = Profile::Perf;
    f.classes = ClassFile::parse(
        "c.toml",
        "[[class]]\nid = \"fakes\"\nmeasured = \"test\"\nmatch = { driver_name = \"radv\" }\nrates = { \"copy.t\" = 0.6 }\n",
    )
    .unwrap();
    let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(None), &Quiet);
    assert!(run.gates[0]
        .floor
        .as_ref()
        .unwrap()
        .source
        .contains("class fakes"));
    assert!(spec_floor_source(&run.gates[1]).is_some());

    let mut report = crate::results::tests::sample_report();
    report.devices = vec![run];
    let base = Baseline::parse(std::path::Path::new("b.json"), &report.to_json()).unwrap();
    let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(Some(&base)), &Quiet);
    for g in run.gates.iter().filter(|g| g.metrics.is_some()) {
        assert!(
            g.floor.as_ref().unwrap().source.contains("b.json"),
            "{}",
            g.id
        );
    }

    // Unknown to the built-in specs: no fractions, no spec floor, a note.
    f.specs = SpecFile::builtin();
    f.classes = ClassFile::default();
    let mut dev = FakeDevice::new(true);
    dev.info.name = "Unlisted GPU".into();
    dev.info.device_id = 0x1234;
    let run = f.run(&mut dev);
    assert!(run
        .gates
        .iter()
        .all(|g| g.floor.is_none() && g.spec.is_none() && g.spec_fraction.is_none()));
    assert!(
        run.notes
            .iter()
            .any(|n| n.contains("no spec figures for this device")
                && n.contains("PCI 1002:1234")
                && n.contains("no spec floors")),
        "{:?}",
        run.notes
    );
    // ... said only where spec floors could apply.
    f.profile = Profile::Default;
    let mut dev = FakeDevice::new(true);
    dev.info.name = "Unlisted GPU".into();
    dev.info.device_id = 0x1234;
    let run = f.run(&mut dev);
    assert!(
        run.notes.iter().all(|n| !n.contains("spec")),
        "{:?}",
        run.notes
    );
}

/// A first-seen device (no baseline, no class) in `health`: a full-size
/// gate is held to 0.85 of its model's achievable copy rate; a device at
/// 1/1.3 of its speed fails it, a clean one passes; on a CPU device the
/// gate runs only where the specs give that device such a rate.
#[test]
fn full_size_gates_hold_the_achievable_floor_on_a_first_seen_device() {
    let mut f = Fixture::new();
    f.profile = Profile::Health;
    f.gates = crate::gates::Catalog::parse(
        "t.toml",
        "[[gate]]\nid = \"copy.full\"\nabout = \"\"\nop = { op = \"copy\", n = 64 }\nprofiles = [\"health\"]\nachievable = \"copy\"\n\
         [[gate]]\nid = \"copy.small\"\nabout = \"\"\nop = { op = \"copy\", n = 64 }\nprofiles = [\"health\"]\n",
    )
    .unwrap()
    .plan(Profile::Health, &[], false)
    .unwrap();
    // The fake copies 512 bytes in 1000 ns: 0.512 GB/s; 0.85 x 0.55 = 0.4675.
    let achievable = "[[device.achievable]]\nwhat = \"copy\"\nrate = 0.55\nmeasured = \"2026-11-29\"\nsource = \"test data\"\n";
    let row = format!(
        "schema_version = 1\n{}",
        "[[device]]\nmodel = \"Fake GPU 1\"\nvendor = \"test\"\narch = \"none\"\nmatch = [\"fake gpu\"]\nmem_bw_gbs = 0.5\nfp16_dense_tflops = 0.004\nbf16_dense_tflops = 0.004\nfp32_tflops = 0.002\nconfidence = \"test\"\nsource = [\"https://example.invalid/fake\"]\nfigures_from = \"test\"\nnotes = \"test\"\n"
    );
    f.specs = SpecFile::parse("fake-specs.toml", &format!("{row}{achievable}")).unwrap();

    let run = f.run(&mut FakeDevice::new(true));
    assert_eq!(
        run.status,
        crate::results::RunStatus::Pass,
        "{:?}",
        run.gates
    );
    let floor = run.gates[0].floor.as_ref().unwrap();
    assert_eq!((floor.reference, floor.fraction), (0.55, 0.85));
    assert!(
        floor
            .source
            .starts_with("achievable Fake GPU 1 copy (measured 2026-11-29: test data)"),
        "{}",
        floor.source
    );
    // A gate that is not full size has no floor outside perf.
    assert!(run.gates[1].floor.is_none());

    f.faults = Faults::parse(&["slow:0:1.3".into()], &f.gates).unwrap();
    let run = f.run(&mut FakeDevice::new(true));
    assert_eq!(run.gates[0].status, GateStatus::Fail);
    let why = reason(&run, 0);
    assert!(
        why.contains("under the floor") && why.contains("achievable Fake GPU 1 copy"),
        "{why}"
    );
    assert_eq!(run.gates[1].status, GateStatus::Pass);
    assert_eq!(run.status, crate::results::RunStatus::Fail);
    // Not slow enough to matter: 1/1.05 of the speed passes.
    f.faults = Faults::parse(&["slow:0:1.05".into()], &f.gates).unwrap();
    assert_eq!(
        f.run(&mut FakeDevice::new(true)).gates[0].status,
        GateStatus::Pass
    );
    f.faults = Faults::default();

    // A CPU device: the gate runs where the specs give it a rate ...
    let mut cpu = FakeDevice::new(true);
    cpu.info.device_type = greta_vocab::DeviceType::Cpu;
    assert_eq!(f.run(&mut cpu).gates[0].status, GateStatus::Pass);
    // ... and is skipped, saying why, where they do not.
    f.specs = SpecFile::parse("fake-specs.toml", &row).unwrap();
    let mut cpu = FakeDevice::new(true);
    cpu.info.device_type = greta_vocab::DeviceType::Cpu;
    let run = f.run(&mut cpu);
    assert_eq!(run.gates[0].status, GateStatus::Skip);
    assert!(
        reason(&run, 0).contains(
            "full-size gate on a CPU device: fake-specs.toml has no achievable copy rate"
        ),
        "{}",
        reason(&run, 0)
    );
    assert_eq!(run.gates[1].status, GateStatus::Pass);
    // A GPU without a rate runs it, unfloored.
    let run = f.run(&mut FakeDevice::new(true));
    assert_eq!(run.gates[0].status, GateStatus::Pass);
    assert!(run.gates[0].floor.is_none());
}

/// The built-in data holds an H100 SXM and an H200 seen for the first
/// time on CUDA to floors a GPU at 1/1.3 of its speed misses: in every
/// profile the full-size copy and the vendor stress gate against the
/// model's achievable rates (specs.toml), and in `perf` every gate with a
/// measured CUDA class rate (floors.toml) at the default fraction. The
/// healthy rates themselves, and 0.9 of them (a slow day), pass.
#[test]
fn a_first_seen_h100_or_h200_on_cuda_at_1_over_1_3_fails_its_floors() {
    use crate::spec::{DeviceKey, SpecMatch};
    let specs = SpecFile::builtin();
    let classes = ClassFile::builtin();
    let catalog = crate::gates::Catalog::builtin();
    for (name, pci, class_id) in [
        ("NVIDIA H100 80GB HBM3", 0x2330, "nvidia-h100-sxm-cuda"),
        ("NVIDIA H200", 0x2335, "nvidia-h200-cuda"),
    ] {
        let mut dev = crate::results::tests::sample_report().devices[0]
            .device
            .clone();
        dev.name = name.into();
        dev.vendor_id = 0x10de;
        dev.device_id = pci;
        dev.device_type = greta_vocab::DeviceType::DiscreteGpu;
        let SpecMatch::Found { spec, .. } = specs.lookup(&DeviceKey::of(&dev)) else {
            panic!("{name}: no spec row");
        };
        let holds = |reference: &crate::floors::Reference, fraction: f64, what: &str| {
            let r = reference.rate;
            let at = |speed: f64| {
                let rate = if reference.unit.higher_is_better() {
                    r * speed
                } else {
                    r / speed
                };
                crate::floors::apply(Some(rate), reference, fraction).passed
            };
            assert!(at(1.0) && at(0.9), "{name} {what}: a healthy rate passes");
            assert!(
                !at(1.0 / 1.3),
                "{name} {what}: 1/1.3 of it fails ({fraction} x {r})"
            );
        };
        for gate in [
            "copy.1g",
            "stress.gemm_f16.8192.short",
            "stress.gemm_f16.8192",
        ] {
            let g = catalog.get(gate).unwrap();
            let kind = g.achievable.unwrap();
            let (reference, fraction) = spec
                .achievable_floor(kind, &g.op, true)
                .unwrap_or_else(|| panic!("{name} {gate}: no achievable rate"));
            assert!(
                reference.source.contains("measured 2026-11-2"),
                "{}",
                reference.source
            );
            holds(&reference, fraction, gate);
        }
        let class = classes
            .class_for(&dev, "cuda")
            .unwrap_or_else(|| panic!("{name}: no CUDA class"));
        assert_eq!(class.id, class_id);
        assert!(classes
            .class_for(&dev, "vulkan")
            .is_none_or(|c| c.id != class_id));
        let perf = catalog.plan(Profile::Perf, &[], false).unwrap();
        let mut held = 0;
        for g in &perf {
            let Some(reference) = class.reference(&g.id, g.unit()) else {
                continue;
            };
            holds(&reference, crate::DEFAULT_FLOOR_FRACTION, &g.id);
            held += 1;
        }
        assert!(held >= 11, "{name}: {held} perf gates with class rates");
    }
}
