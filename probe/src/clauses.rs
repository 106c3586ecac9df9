//! The one reading of the `all`/`any`/`none` lists that a rule
//! (rules.toml) and an error signature (signals.toml) both have.

/// Every `all` entry holds, at least one `any` entry does (when there are
/// any), and no `none` entry does.
pub fn hold<T>(all: &[T], any: &[T], none: &[T], holds: impl Fn(&T) -> bool) -> bool {
    all.iter().all(&holds) && (any.is_empty() || any.iter().any(&holds)) && !none.iter().any(&holds)
}

#[cfg(test)]
mod tests {
    #[test]
    fn all_any_none() {
        let h = |x: &u8| *x > 0;
        assert!(super::hold(&[1], &[], &[], h));
        assert!(super::hold(&[], &[0, 1], &[0], h));
        assert!(!super::hold(&[1, 0], &[], &[], h));
        assert!(!super::hold(&[], &[0], &[], h));
        assert!(!super::hold(&[1], &[1], &[0, 1], h));
    }
}
