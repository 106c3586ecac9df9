//! The claims files of the every-target tests (`hip_targets.txt`,
//! `cuda_targets.txt`): one row per line, words split on whitespace, `#`
//! to the end of a line a comment.

/// Each line of `text` as (its number from 1, the line, its words).
pub fn rows(text: &str) -> impl Iterator<Item = (usize, &str, Vec<&str>)> {
    text.lines().enumerate().map(|(i, line)| {
        let words = line
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        (i + 1, line, words)
    })
}
