//! The fleet contracts of `greta smoke`, end to end on Mesa lavapipe with
//! the validation layers on (docs/fleet.md): node-problem-detector's exit
//! codes with one line on stdout, the Prometheus textfile (parsed with
//! prometheus-parse), the `health` profile, and the TEST-ONLY fault
//! injection: every `health` gate catches a corrupted result, a slow device
//! and a hung kernel.

use crate::support::run::Run;
use greta_smoke::results::{GateStatus, Report};
use std::path::Path;

fn greta(args: &[&str]) -> Run {
    let mut cmd = crate::support::greta();
    cmd.arg("smoke").args(args).env("GRETA_VK_VALIDATION", "1");
    Run::of(cmd)
}

fn scrape(p: &Path) -> prometheus_parse::Scrape {
    let text = std::fs::read_to_string(p).expect("textfile written");
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("valid exposition format")
}

fn gauge(s: &prometheus_parse::Scrape, metric: &str, gate: Option<&str>) -> Option<f64> {
    s.samples
        .iter()
        .find(|x| x.metric == metric && gate.is_none_or(|g| x.labels.get("gate") == Some(g)))
        .map(|x| match x.value {
            prometheus_parse::Value::Gauge(v) => v,
            ref v => panic!("{metric}: not a gauge: {v:?}"),
        })
}

/// The one line a plugin prints: exactly one, no table mixed in.
fn one_line(r: &Run) -> &str {
    assert_eq!(r.stdout.lines().count(), 1, "{:?}", r.stdout);
    r.stdout.trim_end()
}

/// Runs `args` as node-problem-detector runs a plugin: it must exit `code`
/// with one line on stdout that starts with `start`; the line comes back.
fn plugin(args: &[&str], code: i32, start: &str) -> String {
    let r = greta(args);
    assert_eq!(r.code, code, "{}", r.stderr);
    let l = one_line(&r).to_string();
    assert!(l.starts_with(start), "{l}");
    l
}

#[test]
fn npd_exit_codes_one_line_and_the_prometheus_textfile() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("greta.prom");
    let p = prom.to_str().unwrap();
    let base = [
        "--device",
        "all",
        "--profile",
        "ultrasafe",
        "--oneline",
        "--no-save",
        "--prom",
        p,
    ];

    plugin(&base, 0, "OK: ultrasafe: 2 gates passed on 1 device in ");
    let s = scrape(&prom);
    assert_eq!(gauge(&s, "greta_smoke_status", None), Some(0.0));
    assert_eq!(gauge(&s, "greta_smoke_device_pass", None), Some(1.0));
    for g in ["fill.tiny", "copy.tiny"] {
        assert_eq!(
            gauge(&s, "greta_smoke_gate_pass", Some(g)),
            Some(1.0),
            "{g}"
        );
        assert!(
            gauge(&s, "greta_smoke_gate_rate", Some(g)).unwrap() > 0.0,
            "{g}"
        );
    }
    let rate = s
        .samples
        .iter()
        .find(|x| x.metric == "greta_smoke_gate_rate")
        .unwrap();
    assert!(rate.labels.get("name").unwrap().contains("llvmpipe"));
    assert_eq!(rate.labels.get("unit"), Some("GB/s"));
    assert!(gauge(&s, "greta_smoke_last_run_timestamp_seconds", None).unwrap() > 1.7e9);

    let mut bad = base.to_vec();
    bad.extend(["--include-test-gates", "--inject", "corrupt:0:copy.tiny"]);
    let l = plugin(&bad, 1, "FAIL: ultrasafe on 1 device: device 0 (llvmpipe");
    assert!(
        l.contains("copy.tiny: 1/2 clean repeats")
            && l.ends_with("[TEST faults injected: corrupt:0:copy.tiny]"),
        "{l}"
    );
    let s = scrape(&prom);
    assert_eq!(gauge(&s, "greta_smoke_status", None), Some(1.0));
    assert_eq!(
        gauge(&s, "greta_smoke_gate_pass", Some("copy.tiny")),
        Some(0.0)
    );
    assert_eq!(
        gauge(&s, "greta_smoke_gate_pass", Some("fill.tiny")),
        Some(1.0)
    );

    let mut none = base.to_vec();
    none[1] = "99";
    plugin(&none, 2, "UNKNOWN: could not run: no usable device");
    let s = scrape(&prom);
    assert_eq!(gauge(&s, "greta_smoke_status", None), Some(2.0));
    assert_eq!(gauge(&s, "greta_smoke_gate_pass", None), None);

    // An unwritable textfile is exit 2 before any gate runs.
    let nowhere = dir.path().join("missing/greta.prom");
    let mut args = base.to_vec();
    args[7] = nowhere.to_str().unwrap();
    let l = plugin(&args, 2, "UNKNOWN: --prom ");
    assert!(l.contains("missing"), "{l}");
    // Only the textfile is there: no temporaries, no result files.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["greta.prom"]);
}

fn report(r: &Run) -> Report {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not a report ({e}): {}", r.stdout))
}

/// The health profile passes on lavapipe; then each fault is injected into
/// each of its gates alone (f16 gates run only after clean f32 gates, so
/// one gate per run): a corrupted result fails it by the reference check,
/// a device 100x slow fails it by its floor from a clean run (peers need
/// two devices: tested on the fake node in greta-smoke), a hung kernel
/// fails it by the timeout. noop.dispatch has no output to corrupt.
#[test]
fn every_health_gate_catches_every_injected_fault() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let clean = greta(&[
        "--device",
        "cpu",
        "--profile",
        "health",
        "--json",
        "--no-progress",
        "--out",
        out,
    ]);
    assert_eq!(clean.code, 0);
    let rep = report(&clean);
    // The full-size gates (sized for a GPU; held to a model's achievable
    // rate) skip a CPU device that has none.
    let (ran, skipped): (Vec<_>, Vec<_>) = rep.devices[0]
        .gates
        .iter()
        .partition(|g| g.status != GateStatus::Skip);
    let skipped: Vec<&str> = skipped
        .iter()
        .inspect(|g| {
            let why = g.reason.as_deref().unwrap_or("");
            assert!(
                why.starts_with("full-size gate on a CPU device"),
                "{}: {why}",
                g.id
            );
        })
        .map(|g| g.id.as_str())
        .collect();
    assert_eq!(
        skipped,
        ["memtest.1g", "copy.1g", "stress.gemm_f16.8192.short"]
    );
    let gates: Vec<String> = ran.iter().map(|g| g.id.clone()).collect();
    assert_eq!(gates.len(), 25, "{gates:?}");
    let baseline = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let baseline = baseline.to_str().unwrap();

    let mut caught = std::collections::BTreeMap::<&str, usize>::new();
    for g in &gates {
        for (fault, spec, extra) in [
            ("corrupt", format!("corrupt:0:{g}"), vec!["--repeat", "2"]),
            (
                "slow",
                "slow:0:100".to_string(),
                vec!["--repeat", "2", "--baseline", baseline],
            ),
            ("hang", format!("hang:0:{g}"), vec!["--timeout", "1"]),
        ] {
            let mut args = vec![
                "--device",
                "cpu",
                "--profile",
                "health",
                "--gate",
                g,
                "--json",
                "--no-save",
                "--inject",
                &spec,
            ];
            args.extend(extra);
            let r = greta(&args);
            let rep = report(&r);
            assert_eq!(rep.settings.inject, std::slice::from_ref(&spec));
            let res = &rep.devices[0].gates[0];
            if fault == "corrupt" && g == "noop.dispatch" {
                assert_eq!(
                    (r.code, res.status),
                    (0, GateStatus::Pass),
                    "noop has no output"
                );
                continue;
            }
            assert_eq!((r.code, res.status), (1, GateStatus::Fail), "{spec} on {g}");
            let why = res.reason.as_deref().unwrap();
            let right = match fault {
                "corrupt" => why.starts_with("1/2 clean repeats; first failure: repeat 1/2"),
                "slow" => why.contains("under the floor") || why.contains("over the ceiling"),
                _ => why.contains("injected hang") && why.contains("did not complete within 1s"),
            };
            assert!(right, "{spec} on {g}: {why}");
            *caught.entry(fault).or_default() += 1;
        }
    }
    eprintln!("caught: {caught:?} of {} gates", gates.len());
    assert_eq!(caught["corrupt"], gates.len() - 1);
    assert_eq!(caught["slow"], gates.len());
    assert_eq!(caught["hang"], gates.len());
}
