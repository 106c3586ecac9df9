//! "Did you mean": the nearest known values to a word a user typed, for
//! every value greta names (profiles, gates, check ids, backends, envs).
//! One ranking everywhere: Jaro-Winkler similarity (strsim, the crate clap
//! uses for its own suggestions), which favours a shared prefix, so
//! `defualt` finds `default` and `gemm` finds the `gemm_*` gates.

/// Below this similarity a candidate is not offered (clap's own cut-off).
const CUTOFF: f64 = 0.7;

/// Up to `n` known values nearest to `word`, best first; none that are
/// not near. A candidate that contains `word` whole counts as near.
pub fn nearest<'a, I>(word: &str, known: I, n: usize) -> Vec<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let w = word.to_ascii_lowercase();
    let mut scored: Vec<(f64, &'a str)> = known
        .into_iter()
        .map(|k| {
            let kl = k.to_ascii_lowercase();
            let mut s = strsim::jaro_winkler(&w, &kl);
            if !w.is_empty() && kl.contains(&w) {
                s = s.max(CUTOFF + 0.1);
            }
            (s, k)
        })
        .filter(|(s, _)| *s >= CUTOFF)
        .collect();
    // Best first; equal scores keep the catalogue's order.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(n).map(|(_, k)| k).collect()
}

/// ` (did you mean `a`, `b` or `c`?)`, or nothing when none is near.
pub fn did_you_mean<'a, I>(word: &str, known: I, n: usize) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    let near = nearest(word, known, n);
    let quoted: Vec<String> = near.iter().map(|k| format!("`{k}`")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => format!(" (did you mean {one}?)"),
        [init @ .., last] => format!(" (did you mean {} or {last}?)", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROFILES: [&str; 7] = [
        "ultrasafe",
        "fill",
        "default",
        "standard",
        "perf",
        "health",
        "frameworks",
    ];

    #[test]
    fn a_typo_finds_the_value_it_was_meant_to_be() {
        assert_eq!(nearest("defualt", PROFILES, 3)[0], "default");
        assert_eq!(nearest("framework", PROFILES, 1), ["frameworks"]);
        assert_eq!(nearest("STANDARD", PROFILES, 1), ["standard"]);
    }

    #[test]
    fn nothing_near_offers_nothing() {
        assert!(nearest("zzzzqqq", PROFILES, 3).is_empty());
        assert_eq!(did_you_mean("zzzzqqq", PROFILES, 3), "");
    }

    #[test]
    fn at_most_n_and_a_sentence_for_each_count() {
        let gates = [
            "gemm_f16.256",
            "gemm_f16.1k",
            "gemm_f32.256",
            "gemm_f32.1k",
            "copy.16m",
        ];
        let near = nearest("gemm", gates, 3);
        assert_eq!(near.len(), 3);
        assert!(near.iter().all(|g| g.starts_with("gemm")), "{near:?}");
        assert_eq!(did_you_mean("fil", ["fill"], 3), " (did you mean `fill`?)");
        assert_eq!(
            did_you_mean("gemm_f16.25", ["gemm_f16.256", "gemm_f32.256"], 3),
            " (did you mean `gemm_f16.256` or `gemm_f32.256`?)"
        );
    }
}
