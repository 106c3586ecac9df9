//! Numbers from `GRETA_*` variables: one reading for every numeric setting,
//! so each refuses garbage the same way (an error naming the variable,
//! through [`Setting::resolve`]) and none can overflow. A duration is a
//! whole number in the unit its variable's name says (`_MS`, `_S`); a value
//! past the setting's limit, however large (`18446744073709551615`, or more
//! digits than a `u64` holds), is the limit: clamped, never an overflow when
//! it is later added to an `Instant` or multiplied into nanoseconds.

use crate::Setting;
use std::time::Duration;

/// The unit a duration variable counts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Millis,
    Secs,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Millis => "milliseconds",
            Unit::Secs => "seconds",
        }
    }

    fn duration(self, n: u64) -> Duration {
        match self {
            Unit::Millis => Duration::from_millis(n),
            Unit::Secs => Duration::from_secs(n),
        }
    }
}

/// The longest wait any duration setting may ask for (a `GRETA_*` variable
/// or a flag in seconds or milliseconds): 7 days, far beyond any real wait
/// and far from an overflow when added to an `Instant`.
pub const MAX_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// `n` seconds (a flag's value), at most [`MAX_WAIT`].
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n.min(MAX_WAIT.as_secs()))
}

/// `n` milliseconds, at most [`MAX_WAIT`].
pub fn millis(n: u64) -> Duration {
    Duration::from_millis(n.min(MAX_WAIT.as_secs() * 1000))
}

/// A whole number written in ASCII digits (no sign, point, unit or
/// spaces inside); one too large for a `u64` is `u64::MAX`, for the caller
/// to clamp.
pub fn whole(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err("not a whole number".into());
    }
    Ok(s.parse::<u64>().unwrap_or(u64::MAX))
}

/// [`whole`] at least `min` (a smaller value is refused: it asks for what
/// the setting cannot do, as `GRETA_FETCH_ATTEMPTS=0`, no attempt at all,
/// and silently raising it hid that), at most `max` (a larger value is
/// `max`).
pub fn whole_in(s: &str, min: u64, max: u64) -> Result<u64, String> {
    match whole(s)? {
        n if n < min => Err(format!("{n} is less than {min}, the least it allows")),
        n => Ok(n.min(max)),
    }
}

/// A whole number of `unit`s, at most `max` (larger values are `max`).
pub fn duration(s: &str, unit: Unit, max: Duration) -> Result<Duration, String> {
    duration_in(s, unit, Duration::ZERO, max)
}

/// [`duration`] at least `min` (a shorter one is refused, as in
/// [`whole_in`]).
pub fn duration_in(s: &str, unit: Unit, min: Duration, max: Duration) -> Result<Duration, String> {
    let n = whole(s).map_err(|e| format!("{e} of {}", unit.name()))?;
    match unit.duration(n) {
        d if d < min => Err(format!(
            "{n} {} is less than {min:?}, the least it allows",
            unit.name()
        )),
        d => Ok(d.min(max)),
    }
}

/// The duration variable `env` (unset or empty: `None`), clamped to `max`;
/// garbage is an error that names the variable.
pub fn env_duration(
    env: &'static str,
    unit: Unit,
    max: Duration,
) -> Result<Option<Duration>, String> {
    env_duration_in(env, unit, Duration::ZERO, max)
}

/// [`env_duration`] at least `min`: a shorter value is an error that names
/// the variable.
pub fn env_duration_in(
    env: &'static str,
    unit: Unit,
    min: Duration,
    max: Duration,
) -> Result<Option<Duration>, String> {
    Setting::resolve(
        None,
        env,
        |s| duration_in(s, unit, min, max).map(Some),
        || None,
    )
    .map(|s| s.value)
}

/// The whole-number variable `env` (unset or empty: `None`), at least
/// `min` and at most `max` (larger is `max`); garbage or a value below
/// `min` is an error that names the variable.
pub fn env_whole(env: &'static str, min: u64, max: u64) -> Result<Option<u64>, String> {
    Setting::resolve(None, env, |s| whole_in(s, min, max).map(Some), || None).map(|s| s.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_flag_values_are_a_week_and_can_be_added_to_now() {
        assert_eq!(secs(u64::MAX), MAX_WAIT);
        assert_eq!(millis(u64::MAX), MAX_WAIT);
        assert_eq!(secs(5), Duration::from_secs(5));
        assert_eq!(millis(5), Duration::from_millis(5));
        let _ = std::time::Instant::now() + secs(u64::MAX) + Duration::from_secs(30);
    }

    #[test]
    fn whole_numbers_refuse_garbage_and_saturate() {
        assert_eq!(whole("0"), Ok(0));
        assert_eq!(whole(" 250 "), Ok(250));
        assert_eq!(whole("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(whole("99999999999999999999999999"), Ok(u64::MAX));
        for bad in [
            "", "garbage", "-1", "+5", "1.5", "1e3", "10ms", "1 0", "0x10",
        ] {
            let e = whole(bad).unwrap_err();
            assert!(e.contains("not a whole number"), "{bad}: {e}");
        }
        assert_eq!(
            whole_in("0", 1, 64),
            Err("0 is less than 1, the least it allows".to_string())
        );
        assert_eq!(whole_in("1", 1, 64), Ok(1));
        assert_eq!(whole_in("18446744073709551615", 1, 64), Ok(64));
    }

    #[test]
    fn durations_clamp_to_their_limit_without_overflow() {
        let max = Duration::from_secs(3600);
        assert_eq!(
            duration("1500", Unit::Millis, max),
            Ok(Duration::from_millis(1500))
        );
        assert_eq!(duration("18446744073709551615", Unit::Secs, max), Ok(max));
        assert_eq!(duration("18446744073709551615", Unit::Millis, max), Ok(max));
        // The clamped value can be added to an instant and turned into
        // nanoseconds (what the unclamped one panicked on).
        let d = duration("18446744073709551615", Unit::Secs, max).unwrap();
        let _ = std::time::Instant::now() + d;
        assert!(u64::try_from(d.as_nanos()).is_ok());
        let e = duration("garbage", Unit::Millis, max).unwrap_err();
        assert!(e.contains("milliseconds"), "{e}");
    }

    // Each test uses its own variable: tests run in parallel threads.
    #[test]
    fn a_variable_with_garbage_is_an_error_naming_it() {
        std::env::set_var("GRETA_VOCAB_TEST_NUM_A", "garbage");
        let e = env_duration(
            "GRETA_VOCAB_TEST_NUM_A",
            Unit::Millis,
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(e.starts_with("GRETA_VOCAB_TEST_NUM_A=\"garbage\": "), "{e}");
        std::env::set_var("GRETA_VOCAB_TEST_NUM_B", "18446744073709551615");
        assert_eq!(
            env_duration("GRETA_VOCAB_TEST_NUM_B", Unit::Secs, Duration::from_secs(9)),
            Ok(Some(Duration::from_secs(9)))
        );
        assert_eq!(env_whole("GRETA_VOCAB_TEST_NUM_B", 1, 64), Ok(Some(64)));
        assert_eq!(env_whole("GRETA_VOCAB_TEST_NUM_UNSET", 1, 64), Ok(None));
        // Below the least a setting allows: refused by name, never raised
        // silently (GRETA_FETCH_ATTEMPTS=0 was read as 1 and the first
        // failed download ended the install without naming it).
        std::env::set_var("GRETA_VOCAB_TEST_NUM_C", "0");
        assert_eq!(
            env_whole("GRETA_VOCAB_TEST_NUM_C", 1, 64),
            Err("GRETA_VOCAB_TEST_NUM_C=\"0\": 0 is less than 1, the least it allows".into())
        );
        assert_eq!(
            env_duration_in(
                "GRETA_VOCAB_TEST_NUM_C",
                Unit::Secs,
                Duration::from_secs(1),
                Duration::from_secs(9)
            ),
            Err(
                "GRETA_VOCAB_TEST_NUM_C=\"0\": 0 seconds is less than 1s, the least it allows"
                    .into()
            )
        );
    }
}
