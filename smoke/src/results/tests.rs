//! Tests of the results schema and files.
use super::*;

pub fn sample_report() -> Report {
    let device = DeviceInfo {
        name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
        vendor_id: 0x10005,
        device_id: 0,
        device_type: DeviceType::Cpu,
        driver_name: "llvmpipe".into(),
        driver_info: "Mesa 22.3.6 (LLVM 15.0.6)".into(),
        driver_version: "0.0.1".into(),
        api_version: "1.3.230".into(),
        uuid: Some("6d657361-3232-2e33-2e36-000000000000".parse().unwrap()),
        pci_bus_id: None,
        fp16: true,
    };
    let metrics = Metrics {
        rate: Some(12.5),
        unit: RateUnit::GBps,
        rel_err: Some(0.0),
        max_abs_err: Some(0.0),
        repeats_clean: 10,
        repeats_total: 10,
        time_median_us: Some(80.0),
        time_min_us: Some(75.5),
        wall_median_us: Some(300.0),
        bytes: 1 << 20,
        flops: 0,
        timing: Some("device_timestamps".into()),
        first_call_us: None,
    };
    Report {
        schema: SCHEMA.into(),
        greta_version: "0.1.0".into(),
        started_at: "2026-11-21T22:49:37.123456Z".into(),
        finished_at: "2026-11-21T22:49:40Z".into(),
        wall_s: 2.9,
        host: HostInfo {
            hostname: Some("ci".into()),
            os: Some("Linux 12 Debian GNU/Linux".into()),
            kernel: None,
            cpu: None,
        },
        profile: "default".into(),
        backend_requested: "auto".into(),
        settings: Settings {
            repeat: None,
            timeout_s: 10.0,
            floor_fraction: 0.75,
            baseline: None,
            gates: vec![],
            seed: 42,
            include_test_gates: false,
            peer_fraction: None,
            inject: vec![],
        },
        status: RunStatus::Fail,
        devices: vec![DeviceRun {
            index: 0,
            backend: "vulkan".into(),
            device,
            status: RunStatus::Fail,
            lost: None,
            open_s: 0.2,
            validation_messages: vec![],
            notes: vec![],
            checks: vec![],
            gates: vec![
                GateResult {
                    metrics: Some(metrics.clone()),
                    floor: Some(Floor {
                        limit: 7.5,
                        unit: RateUnit::GBps,
                        reference: 10.0,
                        fraction: 0.75,
                        source: "baseline b.json".into(),
                        passed: true,
                    }),
                    wall_s: 0.1,
                    kernel: Some("copy".into()),
                    ..GateResult::new(
                        "copy.bw".into(),
                        "copy".into(),
                        "n=262144".into(),
                        GateStatus::Pass,
                        None,
                        Tolerance::Exact,
                        7,
                    )
                },
                GateResult {
                    metrics: Some(Metrics {
                        rel_err: None,
                        rate: None,
                        ..metrics
                    }),
                    wall_s: 0.2,
                    ..GateResult::new(
                        "softmax.256x1024".into(),
                        "softmax".into(),
                        "rows=256 cols=1024".into(),
                        GateStatus::Fail,
                        Some("rel_err 1e-3 > 1e-5, \"quoted\"".into()),
                        Tolerance::FP32,
                        8,
                    )
                },
                GateResult::new(
                    "gemm_f16.256".into(),
                    "gemm_f16".into(),
                    "m=256 n=256 k=256".into(),
                    GateStatus::Skip,
                    Some("an f32 gate failed".into()),
                    Tolerance::FP16_ACC32,
                    9,
                ),
            ],
        }],
        findings: vec![],
        checks: vec![],
    }
}

#[test]
fn json_round_trip_is_lossless() {
    let r = sample_report();
    let text = r.to_json();
    let back: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
    // The field names other tools match on.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], "greta.smoke/v1");
    let g = &v["devices"][0]["gates"][0];
    assert_eq!(g["status"], "pass");
    assert_eq!(g["metrics"]["unit"], "GB/s");
    assert_eq!(g["tolerance"]["kind"], "exact");
    assert_eq!(v["devices"][0]["gates"][1]["tolerance"]["value"], 1e-5);
    assert!(v["devices"][0]["gates"][1]["metrics"]["rel_err"].is_null());
}

#[test]
fn ceiling_ratio_and_stress_fields_are_additive() {
    let r = sample_report();
    let before = r.to_json();
    // Not measured: not one byte of the report changes.
    assert!(!before.contains("ceiling") && !before.contains("ratio") && !before.contains("stress"));
    let mut r2 = r.clone();
    let g = &mut r2.devices[0].gates[0];
    g.in_run.ceiling = Some(CeilingRef {
        rate: 25.0,
        unit: RateUnit::GBps,
        source: "memcpy d2d (cuMemcpyDtoDAsync)".into(),
        library: "/usr/lib/x86_64-linux-gnu/libcuda.so.1".into(),
        version: "CUDA 12.8".into(),
    });
    g.in_run.ratio = Some(0.5);
    let g = &mut r2.devices[0].gates[2];
    g.in_run.ceiling_unavailable =
        Some("no cuBLAS (libcublas) found for an in-run ceiling; looked in: a; b".into());
    g.in_run.stress = Some(StressSummary {
        engine: "greta gemm_f16".into(),
        library: None,
        version: None,
        note: Some("no vendor BLAS".into()),
        seconds: 30.0,
        intervals: 30,
        intervals_clean: 30,
        gemms: 900,
        tiles_checked: 240,
        tflops_sustained: Some(600.0),
        tflops_min: Some(590.0),
        tflops_median: Some(601.0),
        tflops_max: Some(610.0),
    });
    let text = r2.to_json();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let g0 = &v["devices"][0]["gates"][0];
    assert_eq!(g0["ceiling"]["rate"], 25.0);
    assert_eq!(g0["ceiling"]["unit"], "GB/s");
    assert_eq!(g0["ceiling"]["source"], "memcpy d2d (cuMemcpyDtoDAsync)");
    assert_eq!(
        g0["ceiling"]["library"],
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    );
    assert_eq!(g0["ceiling"]["version"], "CUDA 12.8");
    assert_eq!(g0["ratio"], 0.5);
    let g1 = &v["devices"][0]["gates"][1];
    assert!(g1.get("ceiling").is_none() && g1.get("ratio").is_none());
    let g2 = &v["devices"][0]["gates"][2];
    assert!(g2["ceiling_unavailable"]
        .as_str()
        .unwrap()
        .contains("looked in: a; b"));
    assert_eq!(g2["stress"]["tflops_sustained"], 600.0);
    assert_eq!(g2["stress"]["intervals"], 30);
    assert!(g2["stress"].get("library").is_none());
    // The gate's other fields are where and what they were: removing
    // the new keys gives the old gate back byte for byte.
    let mut stripped = v.clone();
    for g in stripped["devices"][0]["gates"].as_array_mut().unwrap() {
        let o = g.as_object_mut().unwrap();
        for k in ["ceiling", "ratio", "ceiling_unavailable", "stress"] {
            o.remove(k);
        }
    }
    let old: serde_json::Value = serde_json::from_str(&before).unwrap();
    assert_eq!(stripped, old);
    let back: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r2);
}

#[test]
fn csv_has_header_and_one_row_per_gate_with_quoting() {
    let r = sample_report();
    let text = r.to_csv();
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    assert_eq!(
        rd.headers().unwrap().iter().collect::<Vec<_>>(),
        CSV_COLUMNS
    );
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(&rows[0][4], "copy.bw");
    assert_eq!(&rows[0][6], "12.5");
    assert_eq!(&rows[0][8], "7.5");
    assert_eq!(&rows[1][15], "rel_err 1e-3 > 1e-5, \"quoted\"");
    assert_eq!(&rows[2][5], "skip");
    assert_eq!(&rows[2][6], "");
    assert_eq!(&rows[0][1], "llvmpipe (LLVM 15.0.6, 256 bits)");
}

#[test]
fn write_is_dated_and_never_clobbers() {
    let dir = tempfile::tempdir().unwrap();
    let r = sample_report();
    let a = write_report(&r, dir.path()).unwrap();
    let b = write_report(&r, dir.path()).unwrap();
    assert_eq!(
        a.json.file_name().unwrap(),
        "smoke-20261121T224937Z-default.json"
    );
    assert_eq!(
        b.json.file_name().unwrap(),
        "smoke-20261121T224937Z-default-1.json"
    );
    let back: Report = serde_json::from_str(&std::fs::read_to_string(&a.json).unwrap()).unwrap();
    assert_eq!(back, r);
    assert!(std::fs::read_to_string(&b.csv)
        .unwrap()
        .starts_with("device,"));
    // No temporary files left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.iter().all(|n| !n.ends_with(".tmp")));
}

#[test]
fn write_into_unwritable_place_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let err = write_report(&sample_report(), &file.join("sub")).unwrap_err();
    assert!(format!("{err:#}").contains("not-a-dir"), "{err:#}");
}

#[test]
fn status_summary() {
    let mut r = sample_report();
    assert_eq!(Report::summarize(&r.devices), RunStatus::Fail);
    r.devices[0].gates.remove(1);
    assert_eq!(Report::summarize(&r.devices), RunStatus::Pass);
    // A validation message anywhere fails the run, gates passing or not.
    r.devices[0].validation_messages.push("VUID-x".into());
    assert_eq!(Report::summarize(&r.devices), RunStatus::Fail);
    r.devices[0].validation_messages.clear();
    r.devices[0].gates.remove(0);
    assert_eq!(Report::summarize(&r.devices), RunStatus::Undecided);
}

#[test]
fn file_stamp_from_rfc3339() {
    assert_eq!(file_stamp("2026-11-21T22:49:37Z"), "20261121T224937Z");
    assert_eq!(file_stamp("2026-11-21T22:49:37.5Z"), "20261121T224937Z");
}

#[test]
fn a_failed_device_check_fails_the_run_and_round_trips() {
    let mut r = sample_report();
    r.devices[0].gates.remove(1);
    assert_eq!(Report::summarize(&r.devices), RunStatus::Pass);
    r.devices[0].checks.push(crate::telemetry::NodeCheck {
        check: "error_counters".into(),
        pass: true,
        detail: "4 counters unchanged".into(),
    });
    assert_eq!(Report::summarize(&r.devices), RunStatus::Pass);
    r.devices[0].checks.push(crate::telemetry::NodeCheck {
        check: "pcie_link".into(),
        pass: false,
        detail: "PCIe Gen5 x16 card trained at Gen4 x8 (card1)".into(),
    });
    assert_eq!(Report::summarize(&r.devices), RunStatus::Fail);
    let back: Report = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(back.devices[0].checks, r.devices[0].checks);
    // A report without checks (older greta) still reads.
    let mut j: serde_json::Value = serde_json::from_str(&sample_report().to_json()).unwrap();
    assert!(
        j["devices"][0].get("checks").is_none(),
        "empty checks are not written"
    );
    j["devices"][0]["notes"] = serde_json::json!([]);
    let _: Report = serde_json::from_value(j).unwrap();
}

/// The device's PCI address is written where the backend gave one, and
/// left out where it gave none, so a file without it (older greta,
/// lavapipe) reads as before and one with it round-trips.
#[test]
fn the_pci_address_is_written_where_known_and_older_files_still_read() {
    let r = sample_report();
    let text = r.to_json();
    assert!(!text.contains("pci_bus_id"), "none known, none written");
    let mut r2 = r.clone();
    r2.devices[0].device.pci_bus_id = Some("0000:c1:00.0".into());
    let text2 = r2.to_json();
    let v: serde_json::Value = serde_json::from_str(&text2).unwrap();
    assert_eq!(v["devices"][0]["device"]["pci_bus_id"], "0000:c1:00.0");
    let back: Report = serde_json::from_str(&text2).unwrap();
    assert_eq!(back, r2);
    let old: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(old.devices[0].device.pci_bus_id, None);
}

/// The results' device record carries the runtime's PCI address.
#[test]
fn the_runtime_pci_address_reaches_the_results() {
    let mut d = greta_runtime::DeviceInfo::placeholder();
    d.pci_bus_id = Some("0000:41:00.0".into());
    assert_eq!(
        crate::runner::device_info(&d).pci_bus_id.as_deref(),
        Some("0000:41:00.0")
    );
}
