//! The ceiling on every duration a user hands the installer (a `GRETA_*`
//! variable or a flag in seconds or milliseconds). A number near the top of
//! `u64` once panicked ("overflow when adding duration to instant", exit
//! 101) where the limit was added to the time of day; a week is far beyond
//! any real wait and far from that overflow, so larger values are taken as
//! a week (docs/install.md, docs/env.md).

use std::time::Duration;

/// The longest wait any duration setting may ask for: 7 days.
pub const MAX_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// `n` seconds, at most [`MAX_WAIT`].
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n.min(MAX_WAIT.as_secs()))
}

/// `n` milliseconds, at most [`MAX_WAIT`].
pub fn millis(n: u64) -> Duration {
    Duration::from_millis(n.min(MAX_WAIT.as_secs() * 1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_numbers_are_a_week_and_can_be_added_to_now() {
        assert_eq!(secs(u64::MAX), MAX_WAIT);
        assert_eq!(millis(u64::MAX), MAX_WAIT);
        assert_eq!(secs(5), Duration::from_secs(5));
        assert_eq!(millis(5), Duration::from_millis(5));
        let _ = std::time::Instant::now() + secs(u64::MAX) + Duration::from_secs(30);
    }
}
