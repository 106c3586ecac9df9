//! What the doctor concludes from one paste, for the tests of the
//! application-log and Python-framework recognisers (`tests_apps.rs`,
//! `tests_python.rs`): the parse, the merge and the rules, as `--from` runs
//! them.
use super::parse_text;
use crate::facts::Vendor;

/// One GPU as a paste shows it: vendor, name, gfx target.
pub(super) type Shown = (Vendor, String, Option<String>);

/// The finding ids and the GPUs of one paste.
pub(super) fn explain(text: &str) -> (Vec<String>, Vec<Shown>) {
    let (_, facts) = parse_text(text, "pasted.txt");
    let facts = crate::merge::merge(vec![facts]);
    let mut ids: Vec<String> = crate::rules::diagnose(&facts)
        .into_iter()
        .map(|f| f.id)
        .collect();
    ids.dedup();
    let gpus = facts
        .gpus
        .iter()
        .map(|g| (g.vendor, g.name.clone(), g.gfx.clone()))
        .collect();
    (ids, gpus)
}
