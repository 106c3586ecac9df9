//! docs/smoke.md documents every gate, profile, CSV column and exit code;
//! this keeps it true when the catalogue changes.

use greta_smoke::results::CSV_COLUMNS;
use greta_smoke::{Catalog, Profile};

fn doc() -> String {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/smoke.md");
    std::fs::read_to_string(p).expect("docs/smoke.md exists")
}

/// Backticked words of a markdown line.
fn ticked(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

#[test]
fn every_gate_has_a_row_in_the_gates_table() {
    let doc = doc();
    for g in &Catalog::builtin().gates {
        let row = format!("| `{}` |", g.id);
        assert!(
            doc.contains(&row),
            "docs/smoke.md lacks a row for gate {}",
            g.id
        );
    }
}

#[test]
fn profile_table_lists_exactly_each_profiles_gates() {
    let doc = doc();
    let c = Catalog::builtin();
    for p in Profile::ALL {
        let prefix = format!("| `{}` |", p.as_str());
        let row = doc
            .lines()
            .find(|l| l.starts_with(&prefix) && l.matches('|').count() == 5)
            .unwrap_or_else(|| panic!("no profile row for {p}"));
        let gates_cell = row.split('|').nth(4).unwrap();
        let mut documented: Vec<&str> = ticked(gates_cell);
        let mut planned: Vec<String> = c
            .plan(p, &[], false)
            .unwrap()
            .into_iter()
            .map(|g| g.id)
            .collect();
        documented.sort();
        planned.sort();
        assert_eq!(documented, planned, "profile {p}");
        assert!(
            row.contains(&format!("| {} |", p.repeats())),
            "profile {p}: repeats"
        );
    }
}

#[test]
fn csv_columns_and_exit_codes_are_documented() {
    let doc = doc();
    let csv_section = doc.split("### CSV").nth(1).expect("CSV section");
    let documented: Vec<&str> = csv_section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| ticked(l)[0])
        .collect();
    assert_eq!(documented, CSV_COLUMNS);
    for code in ["| 0 |", "| 1 |", "| 2 |"] {
        assert!(doc.contains(code));
    }
}

/// The spec table in docs/smoke.md is the data's (smoke/data/specs.toml).
#[test]
fn the_spec_table_is_the_data() {
    let table = greta_smoke::spec::markdown(&greta_smoke::spec::SpecFile::builtin());
    assert!(
        doc().contains(&table),
        "docs/smoke.md lacks the spec table of smoke/data/specs.toml; it should read:\n{table}"
    );
}
