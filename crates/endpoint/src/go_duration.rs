//! Durations in Go's syntax (`1m`, `30s`, `1h30m`, `500ms`, `1.5h`): external-dns's flags take them, its TTL
//! annotation too, and users paste their Deployment's arguments and annotations unchanged. One parser for
//! both, here below every crate that reads one.

use std::time::Duration;

/// A value that is not a Go duration (`time.ParseDuration` syntax), or not one a flag takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// Not a number and not a duration.
    #[error("invalid duration {input:?}")]
    Invalid {
        /// The value.
        input: String,
    },
    /// A number followed by something other than a unit.
    #[error("missing unit in duration {input:?}")]
    MissingUnit {
        /// The value.
        input: String,
    },
    /// A unit Go's durations do not have.
    #[error("unknown unit {unit:?} in duration {input:?}")]
    UnknownUnit {
        /// The value.
        input: String,
        /// The unit.
        unit: String,
    },
    /// Not Go's duration syntax, as a flag value ([`parse`]).
    #[error("invalid duration {input:?}: expected Go syntax such as 30s, 1m, 1h30m or 500ms")]
    Syntax {
        /// The value.
        input: String,
    },
    /// Negative, as a flag value ([`parse`]): no flag of extdns means anything by one.
    #[error("invalid duration {input:?}: negative durations are not allowed")]
    Negative {
        /// The value.
        input: String,
    },
}

/// Go's `time.ParseDuration`: an optionally signed sequence of decimal numbers, each with an optional
/// fraction and a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), e.g. `1h30m`, `1.5h`, `-300ms`.
/// Returns nanoseconds; like Go, "0" needs no unit and anything beyond ±2^63 ns is an error.
pub fn parse_nanos(input: &str) -> Result<i128, DurationError> {
    let invalid = || DurationError::Invalid {
        input: input.to_string(),
    };
    let mut s = input;
    let negative = if let Some(r) = s.strip_prefix('-') {
        s = r;
        true
    } else {
        if let Some(r) = s.strip_prefix('+') {
            s = r;
        }
        false
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !s.is_empty() {
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, rest) = s.split_at(int_len);
        let (frac_part, rest) = match rest.strip_prefix('.') {
            Some(r) => {
                let n = r.bytes().take_while(u8::is_ascii_digit).count();
                r.split_at(n)
            }
            None => ("", rest),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (unit, rest) = rest.split_at(unit_len);
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => {
                return Err(DurationError::MissingUnit {
                    input: input.to_string(),
                });
            }
            other => {
                return Err(DurationError::UnknownUnit {
                    input: input.to_string(),
                    unit: other.to_string(),
                });
            }
        };
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = whole.checked_mul(scale).ok_or_else(invalid)?;
        // The fraction, truncated to nanoseconds as Go does (digits past 18 cannot matter).
        let mut f_scale = scale;
        for d in frac_part.bytes().take(30) {
            f_scale /= 10;
            if f_scale == 0 {
                break;
            }
            value += i128::from(d - b'0') * f_scale;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > i128::from(i64::MAX) + 1 {
            return Err(invalid());
        }
        s = rest;
    }
    if !negative && total > i128::from(i64::MAX) {
        return Err(invalid());
    }
    Ok(if negative { -total } else { total })
}

/// A Go duration as a flag takes it: syntax errors say what is expected, negative durations are refused
/// (no extdns flag has a meaning for them).
pub fn parse(s: &str) -> Result<Duration, DurationError> {
    let bad = || DurationError::Syntax { input: s.to_string() };
    let nanos = parse_nanos(s).map_err(|_| bad())?;
    // Go's durations are int64 nanoseconds.
    if nanos.unsigned_abs() > i64::MAX as u128 {
        return Err(bad());
    }
    if nanos < 0 {
        return Err(DurationError::Negative { input: s.to_string() });
    }
    u64::try_from(nanos).map(Duration::from_nanos).map_err(|_| bad())
}

/// Format like Go's `Duration.String()` (`1m0s`, `30s`, `1h30m0s`, `500ms`, `0s`), so defaults in `--help`
/// and in logs read as they do in external-dns.
pub fn format(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", fraction(nanos, 1_000));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", fraction(nanos, 1_000_000));
    }
    let secs_total = nanos / 1_000_000_000;
    let (h, m) = (secs_total / 3600, (secs_total / 60) % 60);
    let secs = fraction(nanos % 60_000_000_000, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{secs}s"),
        (0, m) => format!("{m}m{secs}s"),
        (h, m) => format!("{h}h{m}m{secs}s"),
    }
}

/// `value / unit` as a decimal with trailing zeros removed.
fn fraction(value: u128, unit: u128) -> String {
    let whole = value / unit;
    let rem = value % unit;
    if rem == 0 {
        return whole.to_string();
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{rem:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Duration {
        parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn go_duration_units_parse() {
        assert_eq!(ok("1m"), Duration::from_secs(60));
        assert_eq!(ok("30s"), Duration::from_secs(30));
        assert_eq!(ok("1h30m"), Duration::from_secs(5400));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("1.5h"), Duration::from_secs(5400));
        assert_eq!(ok("2us"), Duration::from_micros(2));
        assert_eq!(ok("2µs"), Duration::from_micros(2));
        assert_eq!(ok("7ns"), Duration::from_nanos(7));
        assert_eq!(ok(".5s"), Duration::from_millis(500));
        assert_eq!(ok("1m0s"), Duration::from_secs(60));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("+5s"), Duration::from_secs(5));
    }

    #[test]
    fn go_duration_rejects_what_go_rejects() {
        for bad in ["", "1", "10", "s", "1x", "1.s5", ".s", "1h 30m", "1H", "--1s", "abc"] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn negative_durations_are_rejected_with_a_clear_message() {
        let err = parse("-1s").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("negative"), "{err}");
        assert_eq!(parse("-0s").ok(), Some(Duration::ZERO));
    }

    #[test]
    fn durations_beyond_go_int64_are_rejected() {
        assert!(parse("3000000h").is_err());
        assert!(parse("2562047h").is_ok());
    }

    #[test]
    fn format_matches_go_duration_string() {
        assert_eq!(format(Duration::ZERO), "0s");
        assert_eq!(format(Duration::from_secs(60)), "1m0s");
        assert_eq!(format(Duration::from_secs(30)), "30s");
        assert_eq!(format(Duration::from_secs(5400)), "1h30m0s");
        assert_eq!(format(Duration::from_millis(500)), "500ms");
        assert_eq!(format(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(format(Duration::from_nanos(1500)), "1.5µs");
        assert_eq!(format(Duration::from_nanos(7)), "7ns");
        assert_eq!(format(Duration::from_secs(3661)), "1h1m1s");
    }

    #[test]
    fn format_and_parse_round_trip() {
        for s in ["0s", "1m0s", "5s", "1h0m0s", "250ms", "1.25s", "2h3m4.5s"] {
            assert_eq!(format(ok(s)), s);
        }
    }
}
