//! scripts/grafana/greta-smoke.json names only what greta writes: every
//! panel query and template variable is parsed (PromQL by promql-parser,
//! a maintained parser), and each metric and label it names must be one
//! that `greta smoke --prom` emits. The emitted set is not a list kept by
//! hand: it is read from a textfile greta_smoke::prom renders from a real
//! lavapipe run's report, with a floor, a peer median and a skipped gate
//! set on it (typed fields) so that every family of the textfile is there.

use greta_smoke::results::{Floor, GateStatus, Peer, RateUnit, Report};
use promql_parser::parser::{self, Expr, LabelModifier};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Labels Prometheus adds to every scraped sample (node_exporter's
/// textfile collector is scraped like any target).
const SCRAPE_LABELS: [&str; 2] = ["instance", "job"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// metric -> its label names, from a rendered textfile.
fn emitted() -> BTreeMap<String, BTreeSet<String>> {
    let text =
        std::fs::read_to_string(repo().join("report/tests/data/lavapipe-default.json")).unwrap();
    let mut r: Report = serde_json::from_str(&text).unwrap();
    let gates = &mut r.devices[0].gates;
    let rate = gates[1].metrics.as_ref().unwrap().rate.unwrap();
    gates[1].floor = Some(Floor {
        limit: rate * 0.75,
        unit: RateUnit::GBps,
        reference: rate,
        fraction: 0.75,
        source: "baseline b.json".into(),
        passed: true,
    });
    gates[1].peer = Some(Peer {
        median: rate,
        unit: RateUnit::GBps,
        devices: 2,
        fraction: 0.85,
        limit: rate * 0.85,
        ratio: 1.0,
        passed: true,
    });
    gates[2].status = GateStatus::Skip;
    gates[2].metrics = None;
    // A watched gate's telemetry with every figure read, and the checks
    // of a device and of the run.
    gates[0]
        .in_run
        .telemetry
        .push(greta_smoke::telemetry::Summary {
            device: "card1".into(),
            samples: 20,
            power_capped: 0.25,
            thermal: 0.0,
            mean_power_w: Some(690.0),
            max_power_w: Some(700.0),
            power_limit_w: Some(700.0),
            max_temp_c: Some(81.0),
            mean_sm_mhz: Some(1980.0),
            ..Default::default()
        });
    r.devices[0].checks.push(greta_smoke::telemetry::NodeCheck {
        check: "pcie_link".into(),
        pass: true,
        detail: "card1: PCIe Gen5 x16 as the card allows".into(),
    });
    r.checks
        .push(greta_smoke::telemetry::recount("vulkan", 1, 1));
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for t in [
        greta_smoke::prom::render(&r),
        greta_smoke::prom::render_undecided("health", 1.0),
    ] {
        let declared: BTreeSet<&str> = t
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        let s = prometheus_parse::Scrape::parse(t.lines().map(|l| Ok(l.to_string()))).unwrap();
        for x in &s.samples {
            let e = out.entry(x.metric.clone()).or_default();
            e.extend(x.labels.keys().cloned());
        }
        // Every family the textfile declares has samples here.
        for d in declared {
            assert!(out.contains_key(d), "{d} declared but not sampled");
        }
    }
    out
}

/// What a query names.
#[derive(Default, Debug)]
struct Named {
    metrics: BTreeSet<String>,
    /// (metric or "" when not tied to one, label)
    labels: BTreeSet<(String, String)>,
}

fn walk(e: &Expr, n: &mut Named) -> BTreeSet<String> {
    // Returns the metrics under `e` (grouping labels are checked against them).
    match e {
        Expr::VectorSelector(v) => selector(v, n),
        Expr::MatrixSelector(m) => selector(&m.vs, n),
        Expr::Aggregate(a) => {
            let ms = walk(&a.expr, n);
            if let Some(p) = &a.param {
                walk(p, n);
            }
            if let Some(m) = &a.modifier {
                grouping(m, &ms, n);
            }
            ms
        }
        Expr::Binary(b) => {
            let mut ms = walk(&b.lhs, n);
            ms.extend(walk(&b.rhs, n));
            if let Some(m) = b.modifier.as_ref().and_then(|m| m.matching.as_ref()) {
                grouping(m, &ms, n);
            }
            ms
        }
        Expr::Unary(u) => walk(&u.expr, n),
        Expr::Paren(p) => walk(&p.expr, n),
        Expr::Subquery(s) => walk(&s.expr, n),
        Expr::Call(c) => {
            assert!(
                !c.func.name.starts_with("label_"),
                "{}: label_replace/label_join make labels this check does not follow",
                c.func.name
            );
            let mut ms = BTreeSet::new();
            for a in &c.args.args {
                ms.extend(walk(a, n));
            }
            ms
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => BTreeSet::new(),
    }
}

fn selector(v: &parser::VectorSelector, n: &mut Named) -> BTreeSet<String> {
    let mut name = v.name.clone();
    for m in &v.matchers.matchers {
        if m.name == "__name__" {
            name = Some(m.value.clone());
        }
    }
    let name = name.expect("every selector names its metric");
    for m in v
        .matchers
        .matchers
        .iter()
        .chain(v.matchers.or_matchers.iter().flatten())
    {
        if m.name != "__name__" {
            n.labels.insert((name.clone(), m.name.clone()));
        }
    }
    n.metrics.insert(name.clone());
    BTreeSet::from([name])
}

fn grouping(m: &LabelModifier, metrics: &BTreeSet<String>, n: &mut Named) {
    // A grouping label must be on at least one metric it groups.
    let owners = metrics.iter().cloned().collect::<Vec<_>>().join(",");
    for l in &m.labels().labels {
        n.labels.insert((format!("any of {owners}"), l.clone()));
    }
}

/// Grafana's variables in a query, replaced by something PromQL parses.
fn unvariable(q: &str) -> String {
    q.replace("$__rate_interval", "5m")
        .replace("$__interval", "5m")
        .replace("$__range", "5m")
}

/// The problems of one query: metrics and labels greta does not emit.
fn problems(
    q: &str,
    emitted: &BTreeMap<String, BTreeSet<String>>,
    legend: Option<&str>,
) -> Vec<String> {
    let expr = match parser::parse(&unvariable(q)) {
        Ok(e) => e,
        Err(e) => return vec![format!("{q}: does not parse: {e}")],
    };
    let mut n = Named::default();
    walk(&expr, &mut n);
    let mut out = Vec::new();
    let has = |metric: &str, label: &str| {
        SCRAPE_LABELS.contains(&label) || emitted.get(metric).is_some_and(|ls| ls.contains(label))
    };
    for m in &n.metrics {
        if !emitted.contains_key(m) {
            out.push(format!("{q}: metric {m} is not one greta writes"));
        }
    }
    for (owner, l) in &n.labels {
        let ok = match owner.strip_prefix("any of ") {
            Some(list) => list.split(',').any(|m| has(m, l)),
            None => has(owner, l),
        };
        if !ok {
            out.push(format!("{q}: label {l} is not on {owner}"));
        }
    }
    if let Some(legend) = legend {
        for part in legend.split("{{").skip(1) {
            let l = part.split("}}").next().unwrap().trim();
            if !n.metrics.iter().any(|m| has(m, l)) {
                out.push(format!("{q}: legend label {l} is on none of its metrics"));
            }
        }
    }
    out
}

fn panels(v: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
    for p in v["panels"].as_array().into_iter().flatten() {
        out.push(p.clone());
        panels(p, out);
    }
}

#[test]
fn every_dashboard_query_names_metrics_and_labels_greta_writes() {
    let emitted = emitted();
    for m in [
        "greta_smoke_status",
        "greta_smoke_last_run_timestamp_seconds",
        "greta_smoke_device_pass",
        "greta_smoke_gate_rate",
        "greta_smoke_gate_floor",
        "greta_smoke_gate_peer_median",
        "greta_smoke_gate_skipped",
    ] {
        assert!(emitted.contains_key(m), "{m}: {emitted:?}");
    }
    let path = repo().join("scripts/grafana/greta-smoke.json");
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut all = Vec::new();
    panels(&dash, &mut all);
    let mut bad = Vec::new();
    let mut used = BTreeSet::new();
    let mut queries = 0;
    for p in &all {
        for t in p["targets"].as_array().into_iter().flatten() {
            let q = t["expr"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: a target without expr", p["title"]));
            bad.extend(problems(q, &emitted, t["legendFormat"].as_str()));
            if let Ok(e) = parser::parse(&unvariable(q)) {
                let mut n = Named::default();
                walk(&e, &mut n);
                used.extend(n.metrics);
            }
            queries += 1;
        }
    }
    // Template variables: label_values(SELECTOR, LABEL).
    for v in dash["templating"]["list"].as_array().unwrap() {
        let Some(q) = v["query"]["query"].as_str() else {
            continue;
        };
        let inner = q
            .strip_prefix("label_values(")
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{q}: only label_values(...) variables are checked"));
        let (sel, label) = inner.rsplit_once(',').unwrap();
        bad.extend(problems(
            sel.trim(),
            &emitted,
            Some(&format!("{{{{{}}}}}", label.trim())),
        ));
        queries += 1;
    }
    assert!(bad.is_empty(), "{bad:#?}");
    assert!(queries >= 10, "{queries} queries");
    // The dashboard shows what the issue asks: node pass/fail, per-gate
    // rates and floors per GPU, the last run's age.
    for m in [
        "greta_smoke_status",
        "greta_smoke_device_pass",
        "greta_smoke_gate_rate",
        "greta_smoke_gate_floor",
        "greta_smoke_last_run_timestamp_seconds",
        "greta_smoke_check_pass",
        "greta_smoke_gate_throttle_ratio",
        "greta_smoke_gate_power_watts",
        "greta_smoke_gate_temperature_max_celsius",
    ] {
        assert!(used.contains(m), "no panel shows {m}");
    }
}

/// The check can fail: a metric greta does not write, a label it does not
/// put on that metric, a legend naming a missing label.
#[test]
fn the_query_check_refuses_names_greta_does_not_write() {
    let e = emitted();
    assert!(
        problems("greta_smoke_gate_rates", &e, None)[0].contains("metric greta_smoke_gate_rates")
    );
    assert!(problems("greta_smoke_status{gate=\"x\"}", &e, None)[0].contains("label gate"));
    assert!(problems("sum by (gpu) (greta_smoke_gate_rate)", &e, None)[0].contains("label gpu"));
    assert!(
        problems("greta_smoke_gate_rate", &e, Some("{{ gpu }}"))[0].contains("legend label gpu")
    );
    assert!(problems(
        "greta_smoke_gate_rate{instance=\"a\"}",
        &e,
        Some("{{device}} {{unit}}")
    )
    .is_empty());
    assert!(problems("rate(", &e, None)[0].contains("does not parse"));
}
