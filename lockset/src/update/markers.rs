//! One PEP 508 marker for an entry that only some of the per-Python
//! resolutions hold.

use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};

/// One marker for an entry seen in some of the per-Python resolutions.
pub fn combine_markers(
    per: &BTreeMap<String, Option<String>>,
    all: &[String],
) -> Result<Option<String>> {
    let distinct: BTreeSet<&Option<String>> = per.values().collect();
    let everywhere = all.iter().all(|py| per.contains_key(py));
    let py_clause = |pys: &[&String]| -> String {
        let parts: Vec<String> = pys
            .iter()
            .map(|py| format!("python_version == '{py}'"))
            .collect();
        if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("({})", parts.join(" or "))
        }
    };
    let out = if distinct.len() == 1 {
        let m = distinct.into_iter().next().cloned().flatten();
        if everywhere {
            m
        } else {
            let pys: Vec<&String> = per.keys().collect();
            Some(match m {
                Some(m) => format!("({m}) and {}", py_clause(&pys)),
                None => py_clause(&pys),
            })
        }
    } else {
        let parts: Vec<String> = per
            .iter()
            .map(|(py, m)| match m {
                Some(m) => format!("(({m}) and python_version == '{py}')"),
                None => format!("python_version == '{py}'"),
            })
            .collect();
        Some(parts.join(" or "))
    };
    if let Some(m) = &out {
        crate::marker::parse(m, &crate::marker::Budget::per_file()).map_err(|e| {
            anyhow::anyhow!(
                "combined marker {} is invalid: {e}",
                crate::marker::shown(m)
            )
        })?;
    }
    Ok(out)
}
