use super::*;
use crate::gates::Profile;
use std::time::Duration;

/// A request with every field away from its default.
fn full_request() -> SmokeRequest {
    SmokeRequest {
        profile: Profile::Perf,
        device: "MI300X".parse().unwrap(),
        backend: BackendChoice::Cuda,
        gates: vec!["gemm_f16.4096".into(), "copy.1g".into()],
        repeat: Some(3),
        timeout_s: 12.5,
        floor_fraction: 0.75,
        peer_fraction: 0.9,
        baseline: Some("/runs/base line.json".into()),
        deny_list: Some("/etc/greta/deny.toml".into()),
        seed: Some(42),
        include_test_gates: true,
        inject: vec!["slow:0:0.5".into()],
    }
}

/// The wire form is pinned: a parent and a child of two builds of greta
/// that differ here would misread each other, so a change must be seen.
const SMOKE_SAMPLE: &str = r#"{"smoke":{"profile":"perf","device":"MI300X","backend":"cuda","gates":["gemm_f16.4096","copy.1g"],"repeat":3,"timeout_s":12.5,"floor_fraction":0.75,"peer_fraction":0.9,"baseline":"/runs/base line.json","deny_list":"/etc/greta/deny.toml","seed":42,"include_test_gates":true,"inject":["slow:0:0.5"]}}"#;
const DEVICES_SAMPLE: &str = r#"{"devices":{"backend":"hip"}}"#;
const ERROR_SAMPLE: &str =
    r#"{"schema":"greta.gpu-child/v1","kind":"no_device","message":"no HIP device found: x"}"#;
const LISTING_SAMPLE: &str = r#"{"schema":"greta.gpu-devices/v1","backend":"hip","devices":[],"error":"no HIP library (libamdhip64) found","no_device":true,"error_kind":"loader_missing"}"#;

#[test]
fn requests_round_trip_and_match_the_pinned_sample() {
    let smoke = Request::Smoke(full_request());
    assert_eq!(serde_json::to_string(&smoke).unwrap(), SMOKE_SAMPLE);
    assert_eq!(
        serde_json::from_str::<Request>(SMOKE_SAMPLE).unwrap(),
        smoke
    );
    let devices = Request::Devices(DevicesRequest {
        backend: GpuBackend::Hip,
    });
    assert_eq!(serde_json::to_string(&devices).unwrap(), DEVICES_SAMPLE);
    assert_eq!(
        serde_json::from_str::<Request>(DEVICES_SAMPLE).unwrap(),
        devices
    );
    // Defaults round trip too (no optional field is lost or invented).
    let plain = Request::Smoke(SmokeRequest {
        backend: BackendChoice::Hip,
        ..SmokeRequest::new(Profile::Default)
    });
    let text = serde_json::to_string(&plain).unwrap();
    assert_eq!(serde_json::from_str::<Request>(&text).unwrap(), plain);
}

#[test]
fn replies_print_as_their_own_schema_and_read_back_by_it() {
    let e = Reply::parse(ERROR_SAMPLE.as_bytes()).unwrap();
    assert_eq!(
        e,
        Reply::Error(ChildError::new(
            ErrorKind::CouldNotRun,
            "no HIP device found: x"
        ))
    );
    assert_eq!(serde_json::to_string(&e).unwrap(), ERROR_SAMPLE);
    let l = Reply::parse(LISTING_SAMPLE.as_bytes()).unwrap();
    match &l {
        Reply::Devices(d) => assert_eq!(
            (d.error_kind, d.no_device, d.backend.as_str()),
            (Some(greta_vocab::DevicesError::LoaderMissing), true, "hip")
        ),
        other => panic!("not a listing: {other:?}"),
    }
    assert_eq!(serde_json::to_string(&l).unwrap(), LISTING_SAMPLE);
    // Through serde as well as through `parse`.
    assert_eq!(serde_json::from_str::<Reply>(ERROR_SAMPLE).unwrap(), e);
    for kind in [ErrorKind::Usage, ErrorKind::Input, ErrorKind::CouldNotRun] {
        let r = Reply::Error(ChildError::new(kind, "m"));
        let back = Reply::parse(serde_json::to_string(&r).unwrap().as_bytes()).unwrap();
        assert_eq!(back, r);
    }
}

/// The child serves Vulkan too (install's proof step asks it directly): an
/// ultrasafe request on lavapipe is answered with its report.
#[test]
fn the_child_serves_a_vulkan_smoke_request_with_its_report() {
    let served = serve(Request::Smoke(SmokeRequest {
        profile: Profile::Ultrasafe,
        device: "cpu".parse().unwrap(),
        backend: BackendChoice::Vulkan,
        gates: vec![],
        repeat: None,
        timeout_s: 30.0,
        floor_fraction: crate::DEFAULT_FLOOR_FRACTION,
        peer_fraction: crate::DEFAULT_PEER_FRACTION,
        baseline: None,
        deny_list: None,
        seed: Some(7),
        include_test_gates: false,
        inject: vec![],
    }));
    assert!(!served.device_lost);
    let report = match served.reply {
        Reply::Report(r) => r,
        other => panic!("no report: {other:?}"),
    };
    assert_eq!(served.code, 0, "{:?}", report.status);
    assert_eq!(report.profile, "ultrasafe");
    assert_eq!(report.settings.seed, 7);
    assert_eq!(report.devices.len(), 1);
    assert!(!report.devices[0].gates.is_empty());
}

#[test]
fn a_report_reply_is_the_report_itself() {
    // A report's reply is its greta.smoke/v1 JSON, no wrapper.
    let report = crate::results::tests::sample_report();
    let reply = Reply::Report(Box::new(report.clone()));
    let text = serde_json::to_string(&reply).unwrap();
    assert_eq!(text, serde_json::to_string(&report).unwrap());
    assert_eq!(Reply::parse(text.as_bytes()).unwrap(), reply);
}

#[test]
fn stdout_that_is_no_reply_says_why() {
    for (bad, why) in [
        ("", "no output on stdout"),
        ("Segmentation fault", "stdout is not JSON"),
        ("{\"schema\":\"x\"}", "unknown schema Some(\"x\")"),
        ("{\"a\":1}", "unknown schema None"),
        ("{\"schema\":\"greta.smoke/v1\"}", "report does not parse"),
        (
            "{\"schema\":\"greta.gpu-child/v1\",\"kind\":\"oops\",\"message\":\"\"}",
            "object does not parse",
        ),
    ] {
        let e = Reply::parse(bad.as_bytes()).unwrap_err();
        assert!(e.contains(why), "{bad}: {e}");
    }
    // A request with a field the child does not know is refused, not guessed.
    let extra = SMOKE_SAMPLE.replacen("\"repeat\"", "\"repeats\":1,\"repeat\"", 1);
    assert!(serde_json::from_str::<Request>(&extra).is_err());
    let bad_backend = DEVICES_SAMPLE.replace("hip", "vulkan");
    assert!(serde_json::from_str::<Request>(&bad_backend).is_err());
}

#[test]
fn a_timeout_that_is_no_duration_is_a_usage_error() {
    for t in [-1.0, 1e300, f64::NAN] {
        let r = SmokeRequest {
            timeout_s: t,
            ..full_request()
        };
        match r.options() {
            Err(SmokeError::Usage(m)) => assert!(m.contains("--timeout"), "{m}"),
            other => panic!("{t}: {other:?}"),
        }
    }
    let o = full_request().options().unwrap();
    assert_eq!(o.request.timeout().unwrap(), Duration::from_secs_f64(12.5));
    assert_eq!(o.request, full_request());
    assert!(!o.write_results && !o.progress && o.out_dir.is_none());
}

/// Every default is set in one place: a request for a profile carries
/// that profile's own submission limit, and the options of `greta smoke`
/// with no flags are the default profile's request.
#[test]
fn a_new_request_has_its_profiles_defaults() {
    for p in [Profile::Ultrasafe, Profile::Standard, Profile::Perf] {
        let r = SmokeRequest::new(p);
        assert_eq!(r.timeout_s, p.default_timeout_s(), "{p:?}");
        assert_eq!(r.device, DeviceChoice::default());
        assert_eq!(r.backend, BackendChoice::Auto);
        assert_eq!(r.floor_fraction, crate::DEFAULT_FLOOR_FRACTION);
        assert_eq!(r.peer_fraction, crate::DEFAULT_PEER_FRACTION);
    }
    assert_eq!(SmokeRequest::new(Profile::Perf).timeout_s, 60.0);
    let o = Options::default();
    assert_eq!(o.request, SmokeRequest::new(Profile::Default));
    assert!(o.write_results && o.progress && o.out_dir.is_none());
}

#[test]
fn device_choices_round_trip_as_their_text() {
    for s in ["auto", "cpu", "all", "3", "MI300X"] {
        let d: DeviceChoice = s.parse().unwrap();
        assert_eq!(device_text::text(&d), s);
        let r = SmokeRequest {
            device: d.clone(),
            ..full_request()
        };
        let back: SmokeRequest = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.device, d);
    }
}

#[test]
fn every_run_error_has_its_kind() {
    assert_eq!(
        ErrorKind::of(&SmokeError::Usage("u".into())),
        ErrorKind::Usage
    );
    assert_eq!(
        ErrorKind::of(&SmokeError::NoDevice("n".into())),
        ErrorKind::CouldNotRun
    );
    let missing =
        crate::floors::Baseline::load(std::path::Path::new("/nonexistent/b.json")).unwrap_err();
    assert_eq!(ErrorKind::of(&SmokeError::Input(missing)), ErrorKind::Input);
}

#[test]
fn a_request_is_read_whole_and_capped() {
    let r = Request::read(SMOKE_SAMPLE.as_bytes()).unwrap();
    assert_eq!(r, Request::Smoke(full_request()));
    let e = Request::read(&b"{\"devices\":"[..]).unwrap_err();
    assert!(e.starts_with("the request on stdin: "), "{e}");
    // An endless stdin is not read past the cap.
    let endless = std::io::repeat(b' ');
    let e = Request::read(endless).unwrap_err();
    assert!(e.contains("over 1048576 bytes"), "{e}");
}

fn tune_request() -> TuneRequest {
    TuneRequest {
        profile: Profile::Perf,
        device: "H200".parse().unwrap(),
        backend: BackendChoice::Cuda,
        gates: vec!["gemm_f16.8192".into()],
        timeout_s: 60.0,
        seed: 7,
        cache_dir: Some("/tmp/tuning dir".into()),
        dry_run: true,
    }
}

const TUNE_SAMPLE: &str = r#"{"tune":{"profile":"perf","device":"H200","backend":"cuda","gates":["gemm_f16.8192"],"timeout_s":60.0,"seed":7,"cache_dir":"/tmp/tuning dir","dry_run":true}}"#;

/// `--tune --backend hip|cuda` crosses to the child as its own request,
/// pinned like the others; the options come back as they were sent.
#[test]
fn a_tune_request_round_trips_and_gives_back_its_options() {
    let req = Request::Tune(tune_request());
    assert_eq!(serde_json::to_string(&req).unwrap(), TUNE_SAMPLE);
    assert_eq!(Request::read(TUNE_SAMPLE.as_bytes()).unwrap(), req);
    let o = tune_request().options().unwrap();
    assert_eq!(
        (
            o.request.backend,
            o.timeout,
            o.request.seed,
            o.request.dry_run,
            o.request.profile
        ),
        (
            BackendChoice::Cuda,
            Duration::from_secs(60),
            7,
            true,
            Profile::Perf
        )
    );
    assert_eq!(o.request, tune_request());
    assert_eq!(o.device, "H200".parse().unwrap());
    // One device only; a timeout that is no duration: usage errors.
    let all = TuneRequest {
        device: DeviceChoice::All,
        ..tune_request()
    };
    assert!(matches!(all.options(), Err(SmokeError::Usage(m)) if m.contains("one device")));
    let bad = TuneRequest {
        timeout_s: f64::NAN,
        ..tune_request()
    };
    assert!(matches!(bad.options(), Err(SmokeError::Usage(m)) if m.contains("--timeout")));
}

/// The child tunes HIP/CUDA only; with no such device here the reply is
/// an error of kind no_device (exit 2), never a report or a panic. A tune
/// report read back is the report.
#[test]
fn the_child_serves_a_tune_request() {
    let served = serve(Request::Tune(TuneRequest {
        backend: BackendChoice::Vulkan,
        ..tune_request()
    }));
    assert!(!served.device_lost);
    match (&served.reply, served.code) {
        (Reply::Error(e), 2) => assert_eq!(
            (e.kind, e.message.as_str()),
            (
                ErrorKind::Usage,
                "the GPU child tunes --backend hip or cuda only"
            )
        ),
        other => panic!("{other:?}"),
    }
    let served = serve(Request::Tune(TuneRequest {
        backend: BackendChoice::Hip,
        ..tune_request()
    }));
    match (&served.reply, served.code) {
        (Reply::Error(e), 2) => assert_eq!(e.kind, ErrorKind::CouldNotRun, "{e:?}"),
        // A machine with a HIP GPU tunes it (dry run: nothing written).
        (Reply::Tune(r), 0) => assert!(r.cache.is_none()),
        other => panic!("{other:?}"),
    }
    let report = crate::tune::TuneReport {
        schema: crate::tune::SCHEMA.into(),
        device: "NVIDIA H200".into(),
        uuid: None,
        driver: "CUDA driver API sm_90".into(),
        profile: "perf".into(),
        seed: 7,
        cache: Some("/tmp/t/cuda-x-1.json".into()),
        gates: vec![crate::tune::GateTune {
            gate: "gemm_f16.8192".into(),
            shape_class: "gemm_f16:m8192,n8192,k8192".into(),
            candidates: vec![crate::tune::Candidate {
                asked: Default::default(),
                ran: Some(Default::default()),
                kernel: Some("gemm_f16".into()),
                median_ns: Some(4_000_000),
                correct: true,
                rel_err: Some(1e-7),
                reason: None,
            }],
            best: Some(0),
            speedup: None,
            skipped: None,
        }],
        wall_s: 1.5,
    };
    let reply = Reply::Tune(Box::new(report.clone()));
    let text = serde_json::to_string(&reply).unwrap();
    assert_eq!(text, serde_json::to_string(&report).unwrap());
    assert!(text.starts_with("{\"schema\":\"greta.tune/v1\""), "{text}");
    assert_eq!(Reply::parse(text.as_bytes()).unwrap(), reply);
}

/// The runtime query's wire forms are pinned like the others.
const RUNTIME_REQUEST_SAMPLE: &str =
    r#"{"runtime":{"backend":"hip","env_roots":["/staging/env"]}}"#;
const RUNTIME_SAMPLE: &str = r#"{"schema":"greta.gpu-runtime/v1","backend":"hip","runtime":{"library":{"what":"libamdhip64","path":"/opt/rocm/lib/libamdhip64.so","why":"/opt/rocm"},"compiler":"hiprtc /opt/rocm/lib/libhiprtc.so (beside the runtime)"},"error":null}"#;

#[test]
fn the_runtime_query_round_trips_as_its_own_schema() {
    let req = Request::Runtime(RuntimeRequest {
        backend: GpuBackend::Hip,
        env_roots: vec!["/staging/env".into()],
    });
    assert_eq!(serde_json::to_string(&req).unwrap(), RUNTIME_REQUEST_SAMPLE);
    assert_eq!(
        serde_json::from_str::<Request>(RUNTIME_REQUEST_SAMPLE).unwrap(),
        req
    );
    let r = Reply::parse(RUNTIME_SAMPLE.as_bytes()).unwrap();
    match &r {
        Reply::Runtime(a) => {
            let rt = a.runtime.as_ref().unwrap();
            assert_eq!(
                rt.library.path,
                std::path::Path::new("/opt/rocm/lib/libamdhip64.so")
            );
            assert_eq!(rt.library.why, "/opt/rocm");
            assert!(a.error.is_none());
        }
        other => panic!("not a runtime answer: {other:?}"),
    }
    assert_eq!(serde_json::to_string(&r).unwrap(), RUNTIME_SAMPLE);
}
