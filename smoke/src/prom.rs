//! `--prom FILE`: the run as a Prometheus textfile for node_exporter's
//! textfile collector (text exposition format 0.0.4): per device and gate,
//! pass / rate / floor / peer median, plus the run's status, duration and
//! time. Written by the caller through `greta_fsread::output` (a temporary
//! file in the same directory, synced, made world-readable and renamed over
//! FILE), so the collector never reads half a file; the temporary name does
//! not end in `.prom`, which the collector ignores.

use crate::results::{GateStatus, Report, RunStatus};
use std::fmt::Write as _;

/// Label set of one device.
struct DevLabels(String);

/// The textfile for a finished run.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let profile = format!("profile=\"{}\"", esc(&r.profile));
    run_families(
        &mut out,
        &profile,
        r.status,
        r.wall_s,
        unix_time(&r.finished_at),
    );

    let devs: Vec<(DevLabels, &crate::results::DeviceRun)> = r
        .devices
        .iter()
        .map(|d| {
            (
                DevLabels(format!(
                    "{profile},device=\"{}\",name=\"{}\",uuid=\"{}\",backend=\"{}\"",
                    d.index,
                    esc(&d.device.name),
                    esc(&d.device.uuid.map(|u| u.to_string()).unwrap_or_default()),
                    esc(&d.backend)
                )),
                d,
            )
        })
        .collect();
    family(
        &mut out,
        "greta_smoke_device_pass",
        "1 when every gate that ran on the device passed (and it was not lost), else 0.",
    );
    for (l, d) in &devs {
        sample(
            &mut out,
            "greta_smoke_device_pass",
            &l.0,
            bool01(d.status == RunStatus::Pass),
        );
    }
    family(
        &mut out,
        "greta_smoke_device_open_seconds",
        "Seconds to open the device.",
    );
    for (l, d) in &devs {
        sample(&mut out, "greta_smoke_device_open_seconds", &l.0, d.open_s);
    }
    type Pick = fn(&crate::results::GateResult) -> Option<f64>;
    let per_gate: [(&str, &str, bool, Pick); 5] = [
        (
            "greta_smoke_gate_pass",
            "1 when the gate passed, 0 when it failed (skipped gates: greta_smoke_gate_skipped).",
            false,
            |g| match g.status {
                GateStatus::Pass => Some(1.0),
                GateStatus::Fail => Some(0.0),
                GateStatus::Skip => None,
            },
        ),
        (
            "greta_smoke_gate_skipped",
            "1 for a gate that was skipped (the device cannot run it, f16 preconditions, device lost).",
            false,
            |g| (g.status == GateStatus::Skip).then_some(1.0),
        ),
        (
            "greta_smoke_gate_rate",
            "The gate's measured rate, in the unit of its unit label (us/dispatch: lower is better).",
            true,
            |g| g.metrics.as_ref().and_then(|m| m.rate),
        ),
        (
            "greta_smoke_gate_floor",
            "The floor the rate was held to (a minimum; for us/dispatch a maximum), when one applied.",
            true,
            |g| g.floor.as_ref().map(|f| f.limit),
        ),
        (
            "greta_smoke_gate_peer_median",
            "The node's median rate for the gate (--device all with two or more devices).",
            true,
            |g| g.peer.as_ref().map(|p| p.median),
        ),
    ];
    for (name, help, with_unit, pick) in per_gate {
        family(&mut out, name, help);
        for (l, d) in &devs {
            for g in &d.gates {
                let Some(v) = pick(g).filter(|v| v.is_finite()) else {
                    continue;
                };
                let mut labels = format!("{},gate=\"{}\"", l.0, esc(&g.id));
                if with_unit {
                    let unit = g.metrics.as_ref().map(|m| m.unit.as_str()).unwrap_or("");
                    let _ = write!(labels, ",unit=\"{}\"", esc(unit));
                }
                sample(&mut out, name, &labels, v);
            }
        }
    }
    health_families(&mut out, &profile, &r.checks, &devs);
    out
}

/// The node's health: each check (error counters, PCIe link, GPU count)
/// as pass/fail, and per watched gate what the GPU said of itself while it
/// ran (share of the time each limit held the clocks, power, temperature,
/// clock).
fn health_families(
    out: &mut String,
    profile: &str,
    run_checks: &[crate::telemetry::NodeCheck],
    devs: &[(DevLabels, &crate::results::DeviceRun)],
) {
    family(
        out,
        "greta_smoke_check_pass",
        "1 when a node check passed, 0 when it failed: error_counters (none rose), pcie_link (trained as the card allows), gpu_count (the backend sees every GPU), gpu_count_stable (none vanished during the run).",
    );
    // The run's own checks (GPU counts) carry no device.
    for c in run_checks {
        let labels = format!("{profile},check=\"{}\"", esc(&c.check));
        sample(out, "greta_smoke_check_pass", &labels, bool01(c.pass));
    }
    for (l, d) in devs {
        for c in &d.checks {
            let labels = format!("{},check=\"{}\"", l.0, esc(&c.check));
            sample(out, "greta_smoke_check_pass", &labels, bool01(c.pass));
        }
    }
    type Pick = fn(&crate::telemetry::Summary) -> Vec<(Option<&'static str>, Option<f64>)>;
    let per_summary: [(&str, &str, Pick); 4] = [
        (
            "greta_smoke_gate_throttle_ratio",
            "Share (0-1) of a watched gate's telemetry samples in which the limit held the clocks (power, thermal, current, other).",
            |s| {
                vec![
                    (Some("power"), Some(s.power_capped)),
                    (Some("thermal"), Some(s.thermal)),
                    (Some("current"), Some(s.current)),
                    (Some("other"), Some(s.other)),
                ]
            },
        ),
        (
            "greta_smoke_gate_power_watts",
            "Mean board power over a watched gate.",
            |s| vec![(None, s.mean_power_w)],
        ),
        (
            "greta_smoke_gate_temperature_max_celsius",
            "Hottest temperature read during a watched gate.",
            |s| vec![(None, s.max_temp_c)],
        ),
        (
            "greta_smoke_gate_clock_mhz",
            "Mean shader (SM, gfx) clock over a watched gate.",
            |s| vec![(None, s.mean_sm_mhz)],
        ),
    ];
    for (name, help, pick) in per_summary {
        family(out, name, help);
        for (l, d) in devs {
            for g in &d.gates {
                for t in &g.in_run.telemetry {
                    for (limit, v) in pick(t) {
                        let Some(v) = v.filter(|v| v.is_finite()) else {
                            continue;
                        };
                        let mut labels = format!(
                            "{},gate=\"{}\",telemetry=\"{}\"",
                            l.0,
                            esc(&g.id),
                            esc(&t.device)
                        );
                        if let Some(limit) = limit {
                            let _ = write!(labels, ",limit=\"{limit}\"");
                        }
                        sample(out, name, &labels, v);
                    }
                }
            }
        }
    }
}

/// The textfile for a run that decided nothing before any device ran
/// (exit 2): status 2, how long it took, when.
pub fn render_undecided(profile: &str, wall_s: f64) -> String {
    let mut out = String::new();
    let now = time::OffsetDateTime::now_utc();
    let t = now.unix_timestamp() as f64 + f64::from(now.millisecond()) / 1e3;
    run_families(
        &mut out,
        &format!("profile=\"{}\"", esc(profile)),
        RunStatus::Undecided,
        wall_s,
        Some(t),
    );
    out
}

fn run_families(out: &mut String, profile: &str, status: RunStatus, wall_s: f64, t: Option<f64>) {
    family(
        out,
        "greta_smoke_status",
        "Verdict of the last greta smoke run, as its exit code: 0 pass, 1 a gate failed, 2 undecided.",
    );
    sample(
        out,
        "greta_smoke_status",
        profile,
        f64::from(status.exit_code()),
    );
    family(
        out,
        "greta_smoke_run_duration_seconds",
        "Wall time of the last run.",
    );
    sample(out, "greta_smoke_run_duration_seconds", profile, wall_s);
    if let Some(t) = t {
        family(
            out,
            "greta_smoke_last_run_timestamp_seconds",
            "When the last run finished, Unix time.",
        );
        sample(out, "greta_smoke_last_run_timestamp_seconds", profile, t);
    }
}

fn family(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape(help, false));
    let _ = writeln!(out, "# TYPE {name} gauge");
}

fn sample(out: &mut String, name: &str, labels: &str, v: f64) {
    let _ = writeln!(out, "{name}{{{labels}}} {v}");
}

fn bool01(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// A label value: [`escape`]d, double quotes too.
fn esc(s: &str) -> String {
    escape(s, true)
}

/// Text for a label value (`quote`: a double quote is escaped too) or a
/// HELP line. The format's escapes (backslash, line feed, and a double
/// quote in a label value) as the format writes them. Every other control
/// character (CR, VT, FF, ESC, NEL...) and the Unicode line and paragraph
/// separators are valid there, but a reader that splits lines on them
/// (Python's `splitlines`, many editors) would cut the sample in two and
/// lose the file. They are written as text, the way Python and JavaScript
/// spell them (`\x1b`, `\x85`, `\u2028`; the backslash escaped in the
/// file), which every reader keeps on one line; no brace or comma, which
/// naive readers take for the end of a label.
fn escape(s: &str, quote: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '"' if quote => o.push_str("\\\""),
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(o, "\\\\u{:04x}", u32::from(c));
            }
            c if c.is_control() => {
                let _ = write!(o, "\\\\x{:02x}", u32::from(c));
            }
            c => o.push(c),
        }
    }
    o
}

fn unix_time(rfc3339: &str) -> Option<f64> {
    let t = time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .ok()?;
    Some(t.unix_timestamp_nanos() as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::sample_report;
    use crate::results::Peer;

    /// Parsed with prometheus-parse, a maintained parser of the text
    /// format, and checked line by line against the format's grammar.
    fn parse(text: &str) -> prometheus_parse::Scrape {
        for l in text.lines() {
            assert!(!l.is_empty(), "empty line in\n{text}");
            if let Some(rest) = l.strip_prefix("# ") {
                assert!(
                    rest.starts_with("HELP greta_smoke_") || rest.starts_with("TYPE greta_smoke_"),
                    "{l}"
                );
                continue;
            }
            let (name, rest) = l.split_once('{').expect("labels");
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{l}"
            );
            let (_, value) = rest.rsplit_once("} ").expect("value");
            assert!(value.parse::<f64>().is_ok_and(f64::is_finite), "{l}");
        }
        assert!(text.ends_with('\n'));
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("parses")
    }

    fn value(s: &prometheus_parse::Scrape, metric: &str, gate: Option<&str>) -> Option<f64> {
        s.samples
            .iter()
            .find(|x| x.metric == metric && gate.is_none_or(|g| x.labels.get("gate") == Some(g)))
            .map(|x| match x.value {
                prometheus_parse::Value::Gauge(v) => v,
                ref other => panic!("{metric} is not a gauge: {other:?}"),
            })
    }

    /// Each `(metric, gate, value)`: the sample's value (`None`: no such
    /// sample).
    fn assert_values(s: &prometheus_parse::Scrape, want: &[(&str, Option<&str>, Option<f64>)]) {
        for &(metric, gate, want) in want {
            assert_eq!(value(s, metric, gate), want, "{metric} {gate:?}");
        }
    }

    #[test]
    fn a_report_renders_as_valid_exposition_format() {
        let mut r = sample_report();
        r.devices[0].device.name = "GPU \"quoted\" \\ name\nx".into();
        r.devices[0].gates[0].peer = Some(Peer {
            median: 11.0,
            unit: crate::results::RateUnit::GBps,
            devices: 2,
            fraction: 0.85,
            limit: 9.35,
            ratio: 12.5 / 11.0,
            passed: true,
        });
        let text = render(&r);
        let s = parse(&text);
        assert_values(
            &s,
            &[
                ("greta_smoke_status", None, Some(1.0)),
                ("greta_smoke_run_duration_seconds", None, Some(2.9)),
                // 2026-11-21T22:49:40Z
                (
                    "greta_smoke_last_run_timestamp_seconds",
                    None,
                    Some(1_795_301_380.0),
                ),
                ("greta_smoke_device_pass", None, Some(0.0)),
                ("greta_smoke_gate_pass", Some("copy.bw"), Some(1.0)),
                ("greta_smoke_gate_pass", Some("softmax.256x1024"), Some(0.0)),
                ("greta_smoke_gate_pass", Some("gemm_f16.256"), None),
                ("greta_smoke_gate_skipped", Some("gemm_f16.256"), Some(1.0)),
                ("greta_smoke_gate_rate", Some("copy.bw"), Some(12.5)),
                ("greta_smoke_gate_floor", Some("copy.bw"), Some(7.5)),
                ("greta_smoke_gate_peer_median", Some("copy.bw"), Some(11.0)),
            ],
        );
        let rate = s
            .samples
            .iter()
            .find(|x| x.metric == "greta_smoke_gate_rate")
            .unwrap();
        assert_eq!(rate.labels.get("unit"), Some("GB/s"));
        assert_eq!(rate.labels.get("device"), Some("0"));
        assert_eq!(rate.labels.get("profile"), Some("default"));
        // Each family is announced once, and its samples follow it.
        for fam in ["greta_smoke_gate_rate", "greta_smoke_device_pass"] {
            assert_eq!(text.matches(&format!("# TYPE {fam} gauge\n")).count(), 1);
        }
        assert!(s.docs.contains_key("greta_smoke_gate_pass"));

        // The node's health: checks and what a watched gate's GPU said.
        let mut r = sample_report();
        r.checks.push(crate::telemetry::recount("cuda", 2, 1));
        r.devices[0].checks.push(crate::telemetry::NodeCheck {
            check: "pcie_link".into(),
            pass: true,
            detail: "card1: PCIe Gen5 x16 as the card allows".into(),
        });
        r.devices[0].gates[0]
            .in_run
            .telemetry
            .push(crate::telemetry::Summary {
                device: "card1".into(),
                samples: 20,
                power_capped: 0.25,
                thermal: 0.5,
                mean_power_w: Some(690.5),
                max_temp_c: Some(91.0),
                mean_sm_mhz: None,
                ..Default::default()
            });
        let text = render(&r);
        let s = parse(&text);
        let find = |metric: &str, key: &str, val: &str| {
            let hits: Vec<f64> = s
                .samples
                .iter()
                .filter(|x| x.metric == metric && x.labels.get(key) == Some(val))
                .map(|x| match x.value {
                    prometheus_parse::Value::Gauge(v) => v,
                    ref other => panic!("{metric} is not a gauge: {other:?}"),
                })
                .collect();
            assert_eq!(hits.len(), 1, "{metric} {key}={val} in\n{text}");
            hits[0]
        };
        assert_eq!(
            find("greta_smoke_check_pass", "check", "gpu_count_stable"),
            0.0
        );
        assert_eq!(find("greta_smoke_check_pass", "check", "pcie_link"), 1.0);
        assert_eq!(
            find("greta_smoke_gate_throttle_ratio", "limit", "thermal"),
            0.5
        );
        assert_eq!(
            find("greta_smoke_gate_throttle_ratio", "limit", "power"),
            0.25
        );
        assert_eq!(
            find("greta_smoke_gate_throttle_ratio", "limit", "current"),
            0.0
        );
        assert_eq!(
            find("greta_smoke_gate_power_watts", "telemetry", "card1"),
            690.5
        );
        assert_eq!(
            find(
                "greta_smoke_gate_temperature_max_celsius",
                "gate",
                "copy.bw"
            ),
            91.0
        );
        // No clock read: no sample, never a zero.
        assert_eq!(value(&s, "greta_smoke_gate_clock_mhz", None), None);
        assert!(s.docs.contains_key("greta_smoke_gate_throttle_ratio"));
        // Without telemetry or checks the families are announced, empty.
        let bare = parse(&render(&sample_report()));
        assert_eq!(value(&bare, "greta_smoke_check_pass", None), None);

        let u = render_undecided("health", 0.25);
        assert_values(
            &parse(&u),
            &[
                ("greta_smoke_status", None, Some(2.0)),
                ("greta_smoke_run_duration_seconds", None, Some(0.25)),
            ],
        );
    }
}
