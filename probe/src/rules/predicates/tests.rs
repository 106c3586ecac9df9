use super::*;

/// The evidence `p` gives for `f`, `None` when it does not hold.
pub(super) fn eval(p: &dyn Predicate, f: &Facts) -> Option<Vec<String>> {
    p.eval(&View::new(f))
}

pub(super) fn holds(p: &dyn Predicate, f: &Facts) -> bool {
    eval(p, f).is_some()
}

#[test]
fn scanned_holds_for_its_own_area_only() {
    for (p, area, other) in [
        (&PCI_SCANNED, "pci", "rocm"),
        (&ROCM_SCANNED, "rocm", "pci"),
        (&PYTHON_SCANNED, "python", "rocm"),
    ] {
        assert_eq!(eval(p, &scanned(&[area])).unwrap(), [p.evidence], "{area}");
        assert!(!holds(p, &scanned(&[other])), "{area}");
        assert!(!holds(p, &Facts::default()), "{area}");
    }
}

/// Facts where `areas` were inspected completely.
pub(super) fn scanned(areas: &[&str]) -> Facts {
    Facts {
        scanned: areas.iter().map(|a| a.to_string()).collect(),
        ..Facts::default()
    }
}

pub(super) fn gpu(vendor: Vendor, name: &str) -> Gpu {
    Gpu {
        vendor,
        name: name.into(),
        ..Gpu::default()
    }
}

pub(super) fn with_gpus(gpus: Vec<Gpu>) -> Facts {
    Facts {
        gpus,
        ..Facts::default()
    }
}

#[test]
fn names_are_unique_and_rules_toml_spelled() {
    for (i, p) in PREDICATES.iter().enumerate() {
        let n = p.name();
        assert!(
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "{n}"
        );
        assert!(!p.meaning().is_empty(), "{n}");
        assert!(
            PREDICATES[i + 1..].iter().all(|q| q.name() != n),
            "{n} twice"
        );
        assert!(find(n).is_some());
    }
}

/// `reads` names real fields of the facts JSON.
#[test]
fn reads_name_facts_fields() {
    let facts = serde_json::to_value(Facts::default()).unwrap();
    for p in PREDICATES {
        assert!(!p.reads().is_empty(), "{}", p.name());
        for path in p.reads() {
            let found = path.split('.').try_fold(&facts, |v, k| v.get(k)).is_some();
            assert!(found, "{}: reads unknown facts field {path}", p.name());
        }
    }
}

/// Every predicate a rule names exists, and every predicate is named
/// by some rule (a predicate no rule uses is dead code).
#[test]
fn rules_and_predicates_match() {
    let rules = crate::rules::rules();
    let named: Vec<&str> = rules
        .iter()
        .flat_map(|r| r.all.iter().chain(&r.any).chain(&r.none))
        .map(String::as_str)
        .filter(|p| !p.starts_with("signal:"))
        .collect();
    for n in &named {
        assert!(find(n).is_some(), "rules.toml names unknown predicate {n}");
    }
    for p in PREDICATES {
        assert!(
            named.contains(&p.name()),
            "no rule uses predicate {}",
            p.name()
        );
    }
}

#[test]
fn signals_hold_with_their_source_line() {
    let f = Facts {
        signals: vec![crate::facts::Signal {
            id: "kfd-permission-denied".into(),
            source: "dmesg.txt".into(),
            line: Some(7),
            text: "permission denied".into(),
        }],
        ..Facts::default()
    };
    let e = evaluate(&f);
    assert_eq!(
        e.evidence("signal:kfd-permission-denied"),
        ["dmesg.txt:7: permission denied"]
    );
    assert_eq!(e.vars.len(), VARS.len());
    for k in VARS {
        assert!(e.vars.contains_key(k), "{k}");
    }
}

/// torch 2.0.1+rocm5.4.2 on a gfx1100 (ROCm 5.4's wheels lack it):
/// the fix names the profile whose wheels carry gfx1100; without the
/// build in the text, or with no profile for the target, plain install.
#[test]
fn install_names_the_profile_that_carries_the_target() {
    use crate::facts::Framework;
    use crate::rules::ProfileTargets;
    let profiles = [
        ProfileTargets {
            name: "rocm6.1".into(),
            gfx: vec!["gfx90a".into()],
        },
        ProfileTargets {
            name: "rocm6.3".into(),
            gfx: vec!["gfx1030".into(), "gfx1100".into()],
        },
    ];
    let mut g = gpu(Vendor::Amd, "AMD Radeon RX 7900 XTX");
    g.gfx = Some("gfx1100".into());
    let mut f = with_gpus(vec![g]);
    let cmd = |f: &Facts| evaluate_for(f, &profiles).vars["install_command"].clone();
    assert_eq!(cmd(&f), "greta install");
    f.python.frameworks.push(Framework {
        name: "torch".into(),
        version: "2.0.1+rocm5.4.2".into(),
        backend: Some("rocm".into()),
        ..Framework::default()
    });
    assert_eq!(cmd(&f), "greta install --profile rocm6.3");
    f.gpus[0].gfx = Some("gfx1201".into());
    assert_eq!(cmd(&f), "greta install");
}

#[test]
fn override_hints_by_family() {
    assert_eq!(override_hint(&["gfx1031".into()]).0, "10.3.0");
    assert_eq!(override_hint(&["gfx1100".into()]).0, "11.0.0");
    assert!(override_hint(&["gfx1100".into()]).1.contains("is itself"));
    assert_eq!(override_hint(&[]).0, "<major.minor.stepping>");
    assert!(override_hint(&["gfx942".into()]).1.contains("no override"));
    // A command only where the note says it helps.
    assert!(override_helps(&["gfx1031".into()]));
    for g in [&["gfx1100".to_string()][..], &["gfx942".into()], &[]] {
        assert!(!override_helps(g), "{g:?}");
    }
}
