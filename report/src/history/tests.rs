use super::*;
use crate::load::tests::sample;

fn run_at(t: &str, version: &str, driver: &str, scale: f64) -> Run {
    let mut r = sample(2);
    r.started_at = t.into();
    r.greta_version = version.into();
    for d in &mut r.devices {
        d.device.uuid = None;
        d.device.driver_info = driver.into();
        for g in &mut d.gates {
            if let Some(m) = g.metrics.as_mut() {
                m.rate = m.rate.map(|v| v * scale);
            }
        }
    }
    Run::from_report(r)
}

/// Past its cap a history reads no more: the newest names were read,
/// the first one not read is named with how many older ones were not
/// either, the cap, and what to do. Each cap on its own (the real ones
/// take hundreds of big files to reach: `report_memory` in the
/// installer's tests measures the memory of the real binary).
#[test]
fn past_its_cap_a_history_reads_the_newest_files_and_names_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    for day in 10..20 {
        let r = run_at(&format!("2026-11-{day}T10:00:00Z"), "0.2.0", "Mesa 23", 1.0);
        std::fs::write(
            dir.path().join(format!("smoke-{day}.json")),
            r.report.to_json(),
        )
        .unwrap();
    }
    let per_run = 2 * (1 + sample(1).devices[0].gates.len());
    for (cap, says) in [
        ("items", "devices and gate results"),
        ("names", "bytes of names"),
    ] {
        let mut h = History::new("r");
        match cap {
            "items" => h.kept.max_items = 4 * per_run,
            // Room for one run's names as if each were new: the
            // second run could add as many again.
            _ => {
                let one = run_at("2026-11-10T10:00:00Z", "0.2.0", "Mesa 23", 1.0);
                h.kept.max_names = crate::digest::needs(&one).1;
            }
        }
        h.read(dir.path()).unwrap();
        let kept = h.len();
        assert!((1..10).contains(&kept), "{cap}: {kept} runs kept of 10");
        assert_eq!(h.skipped().len(), 1, "{cap}: {:?}", h.skipped());
        let s = &h.skipped()[0];
        let first_not_read = 19 - kept;
        assert!(
            s.path.ends_with(format!("smoke-{first_not_read}.json")),
            "{cap}: {s:?}"
        );
        let older = first_not_read - 10;
        assert!(
            s.why.contains(&format!("nor the {older} older file"))
                && s.why.contains(says)
                && s.why.contains(&format!("{kept} run"))
                && s.why.contains("move older ones out"),
            "{cap}: {}",
            s.why
        );
        if cap == "items" {
            assert_eq!(kept, 4);
        }
        let page = h.render();
        assert!(
            page.contains(&format!("<p class=\"meta\">{kept} run")),
            "{cap}"
        );
        assert!(page.contains(&format!("smoke-{first_not_read}.json")));
    }
}

/// A chart costs the page the same however few its points: past
/// `CHARTS` gate ids (a profile has a few dozen) the rest get their
/// tables and a line saying why, so a file naming thousands of gate
/// ids cannot make the page thousands of charts long.
#[test]
fn past_its_chart_cap_a_history_gives_tables() {
    let mut r = run_at("2026-11-20T10:00:00Z", "0.1.0", "Mesa 22", 1.0);
    let one = r.report.devices[0]
        .gates
        .iter()
        .find(|g| g.metrics.as_ref().is_some_and(|m| m.rate.is_some()))
        .unwrap()
        .clone();
    r.report.devices.truncate(1);
    r.report.devices[0].gates = (0..CHARTS + 44)
        .map(|i| {
            let mut g = one.clone();
            g.id = format!("gate-{i}");
            g
        })
        .collect();
    let h = render_history(&[r], &[], "/r");
    assert_eq!(h.matches("<svg class=\"history\"").count(), CHARTS);
    assert_eq!(
        h.matches(&format!(
            "{} gate ids and charts the first {CHARTS}",
            CHARTS + 44
        ))
        .count(),
        44
    );
    assert_eq!(
        h.matches("class=\"history-numbers\"").count(),
        CHARTS + 44,
        "every gate keeps its table"
    );
}

#[test]
fn history_charts_each_gate_marks_version_changes_and_keeps_numbers() {
    let runs = vec![
        run_at("2026-11-20T10:00:00Z", "0.1.0", "Mesa 22", 1.0),
        run_at("2026-11-22T10:00:00Z", "0.2.0", "Mesa 22", 1.5),
        run_at("2026-11-21T10:00:00Z", "0.1.0", "Mesa 22", 1.1),
        run_at("2026-11-23T10:00:00Z", "0.2.0", "Mesa 23", 1.2),
    ];
    let mut bad = runs[0].clone();
    bad.report.started_at = "yesterday".into();
    let mut all = runs.clone();
    all.push(bad);
    let h = render_history(&all, &[], "/results");
    let gates = crate::node::Node::of(&runs[0].report).ids;
    assert_eq!(h.matches("<svg class=\"history\"").count(), gates.len());
    // Each chart's legend is text: every device named under every chart.
    assert_eq!(
        h.matches("class=\"legend history-legend\"").count(),
        gates.len()
    );
    assert_eq!(h.matches("</svg> GPU 1 llvmpipe").count(), gates.len());
    assert!(
        h.contains("greta 0.1.0 -&gt; 0.2.0"),
        "the version change is listed"
    );
    assert!(h.contains("driver llvmpipe Mesa 22 0.0.1 -&gt; llvmpipe Mesa 23 0.0.1"));
    assert_eq!(
        h.matches("<li data-t=").count(),
        2,
        "the greta change; the driver change of both devices, said once"
    );
    assert!(h.contains(
        "2 devices (GPU 0 llvmpipe (LLVM 15.0.6, 256 bits), GPU 1 llvmpipe (LLVM 15.0.6, 256 bits)): driver"
    ));
    assert!(h.contains("yesterday") && h.contains("not an RFC 3339 time"));
    // The numbers: every run's rate of copy.16m on each device, as text.
    let copy = runs[0].report.devices[0]
        .gates
        .iter()
        .find(|g| g.id == "copy.16m")
        .unwrap();
    let base = copy.metrics.as_ref().unwrap().rate.unwrap();
    for s in [1.0, 1.1, 1.5, 1.2] {
        let v = base * s;
        assert!(
            h.contains(&format!("data-rate=\"{}\">{}<", exact(v), num(v))),
            "{v}"
        );
    }
    // Runs are in time order in the table: 1.1 (the 21st) before 1.5.
    let a = h.find(&exact(base * 1.1)).unwrap();
    let z = h.find(&exact(base * 1.5)).unwrap();
    assert!(a < z);
    // Devices that share a UUID within a run (replayed or cloned) stay
    // apart; one UUID across runs is one device.
    let mut twins = run_at("2026-11-24T10:00:00Z", "0.2.0", "Mesa 23", 1.0);
    let u = Some("6d657361-3232-2e33-2e36-000000000000".parse().unwrap());
    for d in &mut twins.report.devices {
        d.device.uuid = u;
    }
    let mut later = twins.clone();
    later.report.started_at = "2026-11-25T10:00:00Z".into();
    let h = render_history(&[twins, later], &[], "/r");
    assert!(h.contains("2 devices"), "two devices, not one");
    let empty = render_history(
        &[],
        &[Skipped {
            path: "x.json".into(),
            why: "bad".into(),
        }],
        "/r",
    );
    assert!(empty.contains("No greta.smoke/v1 result") && empty.contains("x.json"));
}

/// A frameworks run (its devices torch and jax in one interpreter) at `t`
/// with `python` and torch `version`.
fn frameworks_run_at(t: &str, python: &str, version: &str) -> Run {
    let mut r = sample(2);
    r.started_at = t.into();
    r.backend_requested = "frameworks".into();
    for d in &mut r.devices {
        d.device.uuid = None;
        d.device.driver_name = "cpu".into();
        d.device.driver_info = format!("torch {version}");
        d.device.driver_version = version.into();
        d.notes = vec![format!("python {python} (3.11.2)")];
    }
    Run::from_report(r)
}

/// Runs of the frameworks profile against two interpreters (each with its
/// own torch) are two series, not a driver change; a torch upgrade in one
/// interpreter is one.
#[test]
fn frameworks_runs_against_another_interpreter_are_no_driver_change() {
    let runs = vec![
        frameworks_run_at("2026-11-20T10:00:00Z", "/usr/bin/python3", "2.4.0"),
        frameworks_run_at("2026-11-21T10:00:00Z", "/envs/cpu/bin/python", "2.5.1"),
        frameworks_run_at("2026-11-22T10:00:00Z", "/usr/bin/python3", "2.4.0"),
    ];
    let h = render_history(&runs, &[], "/results");
    assert!(!h.contains("driver cpu"), "{h}");
    assert!(h.contains("(python /usr/bin/python3 (3.11.2))"), "{h}");
    assert!(h.contains("(python /envs/cpu/bin/python (3.11.2))"), "{h}");

    let mut upgraded = runs.clone();
    upgraded.push(frameworks_run_at(
        "2026-11-23T10:00:00Z",
        "/envs/cpu/bin/python",
        "2.6.0",
    ));
    let h = render_history(&upgraded, &[], "/results");
    assert!(
        h.contains("driver cpu torch 2.5.1 2.5.1 -&gt; cpu torch 2.6.0 2.6.0"),
        "{h}"
    );
}
