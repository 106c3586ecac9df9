use super::*;

fn ok(text: &str) -> MarkerTree {
    parse(text, &Budget::per_file()).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn err(text: &str) -> MarkerError {
    parse(text, &Budget::per_file()).expect_err(text)
}

/// Markers of every shape the lock set uses, and the grammar's corners
/// (whitespace, `not in`, the operator word's boundaries): read here, each
/// is the very tree uv-pep508's own parser makes (trees are canonical, so
/// equal trees mean the same marker).
#[test]
fn markers_read_as_uv_pep508_reads_them() {
    let mut corpus: Vec<String> = Vec::new();
    corpus.extend(
        [
            "python_version == '3.12'",
            "python_version=='3.12'and sys_platform=='linux'",
            "  ( python_version >= '3.12' )  ",
            "(python_full_version < '3.12') and python_version == '3.11'",
            "'device-gfx942' in extras",
            "'device-gfx942' not  in extras or 'device-gfx90a' in extras",
            "python_version >= '3.12' and ('device-gfx1100' in extras or 'device-gfx1101' in extras)",
            "platform_machine == \"x86_64\" or (platform_machine == 'aarch64' and sys_platform == 'linux')",
            "extra == 'cuda' or extra != 'rocm'",
            "'linux' in sys_platform and os_name == 'posix'",
            "python_version in '3.11 3.12'",
            "((((python_version < '3.13'))))",
            "python_version < '3.13' or python_version >= '3.13'",
            "implementation_name == 'cpython' and platform_python_implementation != 'PyPy'",
        ]
        .map(String::from),
    );
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lock");
    for e in std::fs::read_dir(&lock).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("pylock.") && name.ends_with(".toml")) {
            continue;
        }
        let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        for pkg in doc["packages"].as_array().unwrap() {
            if let Some(m) = pkg.get("marker").and_then(|m| m.as_str()) {
                corpus.push(m.to_string());
            }
        }
    }
    assert!(corpus.len() > 50, "{} markers", corpus.len());
    for m in &corpus {
        let want = MarkerTree::from_str(m).unwrap_or_else(|e| panic!("{m:?}: {e}"));
        assert_eq!(ok(m), want, "{m:?}");
    }
}

/// What uv-pep508 refuses is refused here too, at the place it names.
#[test]
fn malformed_markers_are_refused_where_uv_pep508_refuses_them() {
    for m in [
        "",
        "python_version",
        "python_version ==",
        "python_version == '3.12",
        "python_version == '3.12' and",
        "python_version == '3.12' and(sys_platform == 'linux')",
        "(python_version == '3.12'",
        "python_version == '3.12')",
        "python_version = '3.12'",
        "'x' not extras",
        "'x' notin extras",
        "nonsense == '1'",
        "python_version == '3.12' xor os_name == 'nt'",
        "()",
    ] {
        let theirs = MarkerTree::from_str(m).expect_err(m);
        let ours = err(m);
        assert!(ours.offset <= m.len(), "{m:?}: {ours}");
        // A comparison's own error is uv-pep508's, at its place.
        if !m.contains('(') && !m.contains(')') && !m.contains(" and") && !m.contains(" xor") {
            assert_eq!(ours.message, theirs.message.to_string(), "{m:?}");
            assert_eq!(ours.offset, theirs.start, "{m:?}");
        }
    }
}

/// A comparison uv-pep508 ignores would change meaning with its
/// neighbours (alone "true", in a whole marker "absent"): refused.
#[test]
fn comparisons_uv_ignores_are_refused() {
    for m in [
        "'a' == 'b'",
        "python_version == '3.12' or 'a' == 'b'",
        "extra > 'cuda'",
        "os_name ~= 'posix'",
        "python_version == sys_platform",
    ] {
        let e = err(m);
        assert!(
            e.message.contains("no comparison uv evaluates"),
            "{m:?}: {e}"
        );
    }
}

/// 15,000 nested parentheses overflowed uv-pep508's recursive parser (the
/// process aborted); now the 33rd is refused, where it stands.
#[test]
fn deep_nesting_is_refused_at_the_parenthesis_past_the_bound() {
    let m = format!(
        "{}python_version == '3.12'{}",
        "(".repeat(15_000),
        ")".repeat(15_000)
    );
    let e = err(&m);
    assert_eq!(e.offset, MAX_DEPTH, "{e}");
    assert!(e.message.contains("nested deeper than 32"), "{e}");
    // Just within the bound it is read, and means what it says.
    let m = format!(
        "{}python_version == '3.12'{}",
        "(".repeat(MAX_DEPTH),
        ")".repeat(MAX_DEPTH)
    );
    assert_eq!(ok(&m), ok("python_version == '3.12'"));
    // Unclosed ones are refused at the open parenthesis.
    let m = "(python_version == '3.12' or (os_name == 'nt'";
    assert_eq!(err(m).offset, m.rfind('(').unwrap());
}

/// `'device-gfxN' in extras` 5,000 times made the algebra allocate more
/// than 4 GB; the term past the bound is refused before any is combined.
#[test]
fn too_many_terms_are_refused() {
    let terms: Vec<String> = (0..5000)
        .map(|i| format!("'device-gfx{i}' in extras"))
        .collect();
    let m = terms.join(" or ");
    let e = err(&m);
    assert!(e.message.contains("more than 128 comparisons"), "{e}");
    assert_eq!(e.offset, m.find("'device-gfx128'").unwrap(), "{e}");
    // Longer than the byte bound: refused before uv-pep508 reads it.
    let m = format!("'{}' in extras", "x".repeat(MAX_BYTES));
    let e = err(&m);
    assert!(e.message.contains("longer than 16384 bytes"), "{e}");
    let short: Vec<String> = (0..5000).map(|i| format!("'e{i}' in extras")).collect();
    let m = short[..MAX_TERMS + 1].join(" or ");
    assert!(m.len() <= MAX_BYTES);
    let e = err(&m);
    assert!(e.message.contains("more than 128 comparisons"), "{e}");
    assert_eq!(e.offset, m.rfind("'e128'").unwrap(), "{e}");
    // The bound itself is read, and is the tree uv-pep508 makes.
    let m = short[..MAX_TERMS].join(" or ");
    assert_eq!(ok(&m), MarkerTree::from_str(&m).unwrap());
}

/// Within the term bound, `(a1 and b1) or (a2 and b2) or ...` grows the
/// decision diagram exponentially (every `a` is ordered before every `b`):
/// refused once its work passes the bound, quickly.
#[test]
fn an_exponential_expression_is_refused_by_its_work() {
    let pairs: Vec<String> = (0..100)
        .map(|i| format!("('a{i:03}' in extras and 'b{i:03}' in extras)"))
        .collect();
    let m = pairs.join(" or ");
    let t = std::time::Instant::now();
    let e = err(&m);
    assert!(e.message.contains("too large an expression"), "{e}");
    assert!(e.message.contains("its terms combine beyond"), "{e}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t.elapsed()
    );
    // A few pairs are fine (and uv-pep508's tree).
    let m = pairs[..4].join(" or ");
    assert_eq!(ok(&m), MarkerTree::from_str(&m).unwrap());
}

/// Markers each within the bound add up: a file's markers share one
/// budget, and what one costs is what the algebra's work bound says (an
/// `or` of k extras: 1 + 2 + ... + (k-1)).
#[test]
fn the_markers_of_a_file_share_a_budget() {
    let terms: Vec<String> = (0..100).map(|i| format!("'f{i}' in extras")).collect();
    let m = terms.join(" or ");
    let budget = Budget::per_file();
    parse(&m, &budget).unwrap();
    assert_eq!(FILE_WORK - budget.0.get(), 99 * 100 / 2);
    let budget = Budget(Cell::new(3 * 99 * 100 / 2 + 10));
    for _ in 0..3 {
        parse(&m, &budget).unwrap();
    }
    let e = parse(&m, &budget).unwrap_err();
    assert!(
        e.message
            .contains("the markers of this file together exceed"),
        "{e}"
    );
}

#[test]
fn requirements_keep_their_marker() {
    let b = Budget::per_file();
    let r = requirement("jax==0.12.0.1 ; python_version >= '3.12'", &b).unwrap();
    let theirs: uv_pep508::Requirement =
        "jax==0.12.0.1 ; python_version >= '3.12'".parse().unwrap();
    assert_eq!(r, theirs);
    let r = requirement("torch[device-gfx942]==2.9", &b).unwrap();
    assert_eq!(r, "torch[device-gfx942]==2.9".parse().unwrap());
    let deep = format!(
        "torch==2.9 ; {}python_version >= '3.12'",
        "(".repeat(15_000)
    );
    match requirement(&deep, &b) {
        Err(RequirementError::Marker(e)) => assert_eq!(e.offset, 13 + MAX_DEPTH, "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        requirement("torch===", &b),
        Err(RequirementError::Pep508(_))
    ));
}
