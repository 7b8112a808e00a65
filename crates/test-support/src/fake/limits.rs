//! The cloud fakes' documented rate limits lowered from the environment, so that a test or a run about the
//! limits stays short without a change of code: one variable per cloud, `EXTDNS_FAKE_<CLOUD>_LIMITS`
//! ([`variable`]; `<CLOUD>` is the fake's [`Api::CLOUD`]), read once where the fake is started
//! ([`crate::fake::FakeServer::serve`]).
//!
//! Its value is a comma-separated list of figures, `[read=|write=|delete=]<requests>/<duration>`
//! (`1/s`, `60/15s`, `1200/5m`, `read=25/1s,write=5/1s`). A figure keeps the vendor's meter and only
//! changes its numbers: for a sliding window, `<requests>` in any `<duration>`; for a token bucket, a
//! burst of `<requests>` refilled at `<requests>` each `<duration>` (Route53's documented `5/1s`, Resource
//! Manager's reads `250/10s`). A figure without a kind sets every limit of the fake, one with a kind the
//! limits counting that kind alone (Resource Manager's); a later figure wins.
//!
//! It only lowers: a figure above the documented one (more requests at once, or a faster rate) is
//! refused, so a variable left in a shell can never make a benchmark look better than the cloud; a test
//! that must run faster than the cloud raises them in code ([`crate::fake::FakeServer::with_limits`]).

use std::time::Duration;

use super::{Api, Meter, Op, RateLimit};

/// Why a variable's value was refused; each names the variable, its value and the form it takes, so the
/// message alone tells how to fix it.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LimitsError {
    /// A figure that is not `[kind=]<requests>/<duration>`.
    #[error(
        "{variable}={value:?}: {figure:?} {reason}; each comma-separated figure is \
         [read=|write=|delete=]<requests>/<duration> such as 1/s, 60/15s or 1200/5m"
    )]
    Malformed {
        /// The variable.
        variable: String,
        /// Its whole value.
        value: String,
        /// The figure refused.
        figure: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A kind this fake's limits do not count apart.
    #[error(
        "{variable}={value:?}: {figure:?} names {kind} requests, but no limit of this fake counts them \
         apart (its documented limits: {documented}); give the figure without \"{kind}=\""
    )]
    NoSuchKind {
        /// The variable.
        variable: String,
        /// Its whole value.
        value: String,
        /// The figure refused.
        figure: String,
        /// The kind it named.
        kind: &'static str,
        /// The fake's documented limits, as figures.
        documented: String,
    },
    /// A figure above the documented one.
    #[error(
        "{variable}={value:?}: {figure:?} is above the documented limit {documented} (more requests at once \
         or a faster rate); the variable only lowers a fake's limits"
    )]
    Raises {
        /// The variable.
        variable: String,
        /// Its whole value.
        value: String,
        /// The figure refused.
        figure: String,
        /// The documented limit it would raise, as a figure.
        documented: String,
    },
    /// A variable given to a fake whose API documents no limit.
    #[error("{variable}={value:?}: this fake's API documents no rate limit to lower")]
    NoLimits {
        /// The variable.
        variable: String,
        /// Its whole value.
        value: String,
    },
}

/// The variable that lowers the limits of the fakes of `cloud` (`ROUTE53`): `EXTDNS_FAKE_ROUTE53_LIMITS`.
pub fn variable(cloud: &str) -> String {
    format!("EXTDNS_FAKE_{cloud}_LIMITS")
}

/// The limits a fake of `S` starts with: its documented ones ([`Api::limits`]), lowered by its variable
/// when `env` (the process's environment, or a test's) sets it.
pub fn starting<S: Api>(env: impl Fn(&str) -> Option<String>) -> Result<Vec<RateLimit>, LimitsError> {
    let documented = S::limits();
    let Some(cloud) = S::CLOUD else {
        return Ok(documented);
    };
    let variable = variable(cloud);
    match env(&variable) {
        Some(value) => lowered(&variable, &value, &documented),
        None => Ok(documented),
    }
}

/// `documented` with the figures of `value` (the value of `variable`) in place of theirs.
pub fn lowered(variable: &str, value: &str, documented: &[RateLimit]) -> Result<Vec<RateLimit>, LimitsError> {
    if documented.is_empty() {
        return Err(LimitsError::NoLimits {
            variable: variable.to_string(),
            value: value.to_string(),
        });
    }
    let mut limits = documented.to_vec();
    for figure in value.split(',').map(str::trim) {
        let malformed = |reason| LimitsError::Malformed {
            variable: variable.to_string(),
            value: value.to_string(),
            figure: figure.to_string(),
            reason,
        };
        let (kind, requests, per) = parse_figure(figure).map_err(malformed)?;
        let chosen: Vec<usize> = (0..limits.len())
            .filter(|&i| kind.is_none() || documented[i].counts == kind)
            .collect();
        if chosen.is_empty() {
            return Err(LimitsError::NoSuchKind {
                variable: variable.to_string(),
                value: value.to_string(),
                figure: figure.to_string(),
                kind: kind.map_or("", kind_name),
                documented: documented.iter().map(|l| describe(*l)).collect::<Vec<_>>().join(", "),
            });
        }
        for i in chosen {
            let limit = with_figure(documented[i], requests, per);
            if raises(limit.meter, documented[i].meter) {
                return Err(LimitsError::Raises {
                    variable: variable.to_string(),
                    value: value.to_string(),
                    figure: figure.to_string(),
                    documented: describe(documented[i]),
                });
            }
            limits[i] = limit;
        }
    }
    Ok(limits)
}

/// A limit as a figure of the variable (`read=250/10s`), how the errors show the documented ones.
pub fn describe(limit: RateLimit) -> String {
    let (requests, per) = figure_of(limit.meter);
    let kind = limit.counts.map(|k| format!("{}=", kind_name(k))).unwrap_or_default();
    format!("{kind}{requests}/{}", seconds(per))
}

/// `[kind=]<requests>/<duration>`, or why not.
fn parse_figure(figure: &str) -> Result<(Option<Op>, u32, Duration), &'static str> {
    let (kind, rest) = match figure.split_once('=') {
        Some((kind, rest)) => (Some(parse_kind(kind.trim())?), rest.trim()),
        None => (None, figure),
    };
    let (requests, per) = rest.split_once('/').ok_or("has no \"/\"")?;
    let requests: u32 = requests
        .trim()
        .parse()
        .map_err(|_| "does not start with a whole number of requests")?;
    if requests == 0 {
        return Err("admits no request at all");
    }
    let per = parse_duration(per.trim())?;
    Ok((kind, requests, per))
}

fn parse_kind(kind: &str) -> Result<Op, &'static str> {
    match kind {
        "read" => Ok(Op::Read),
        "write" => Ok(Op::Write),
        "delete" => Ok(Op::Delete),
        _ => Err("names a kind other than read, write or delete"),
    }
}

fn kind_name(kind: Op) -> &'static str {
    match kind {
        Op::Read => "read",
        Op::Write => "write",
        Op::Delete => "delete",
    }
}

/// `500ms`, `15s`, `5m`, `1h`, or a bare unit for one of it (`s`).
fn parse_duration(text: &str) -> Result<Duration, &'static str> {
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or("has a duration without a unit (ms, s, m or h)")?;
    let (number, unit) = text.split_at(split);
    let number: f64 = if number.is_empty() {
        1.0
    } else {
        number
            .parse()
            .map_err(|_| "has a duration that is not a number and a unit")?
    };
    let unit_seconds = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err("has a duration unit other than ms, s, m or h"),
    };
    let secs = number * unit_seconds;
    if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
        return Err("has a duration that is not between 1 ms and a day");
    }
    Ok(Duration::from_secs_f64(secs))
}

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// `limit` metered as before with `requests` each `per`.
fn with_figure(limit: RateLimit, requests: u32, per: Duration) -> RateLimit {
    let meter = match limit.meter {
        Meter::Window { .. } => Meter::Window {
            requests: requests as usize,
            window: per,
        },
        Meter::Bucket { .. } => Meter::Bucket {
            capacity: requests,
            per_second: f64::from(requests) / per.as_secs_f64(),
        },
    };
    RateLimit { meter, ..limit }
}

/// A meter's figure: requests at most at once, and the time they take at its rate.
fn figure_of(meter: Meter) -> (f64, Duration) {
    match meter {
        Meter::Window { requests, window } => (requests as f64, window),
        Meter::Bucket { capacity, per_second } => (
            f64::from(capacity),
            Duration::from_secs_f64(f64::from(capacity) / per_second.max(f64::MIN_POSITIVE)),
        ),
    }
}

/// Whether `new` admits more at once, or a faster rate, than `documented`.
fn raises(new: Meter, documented: Meter) -> bool {
    let (new_requests, new_per) = figure_of(new);
    let (requests, per) = figure_of(documented);
    let rate = |r: f64, d: Duration| r / d.as_secs_f64();
    new_requests > requests || rate(new_requests, new_per) > rate(requests, per) * (1.0 + 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUCKET: RateLimit = RateLimit::bucket(5, 5.0);
    const WINDOW: RateLimit = RateLimit::window(1200, Duration::from_secs(300));
    const AZURE: [RateLimit; 3] = [
        RateLimit::bucket(250, 25.0).of(Op::Read),
        RateLimit::bucket(200, 10.0).of(Op::Write),
        RateLimit::bucket(200, 10.0).of(Op::Delete),
    ];

    fn lower(value: &str, documented: &[RateLimit]) -> Result<Vec<RateLimit>, LimitsError> {
        lowered("EXTDNS_FAKE_X_LIMITS", value, documented)
    }

    #[test]
    fn a_figure_keeps_the_vendors_meter_and_changes_its_numbers() {
        assert_eq!(lower("1/s", &[BUCKET]), Ok(vec![RateLimit::bucket(1, 1.0)]));
        assert_eq!(lower("2/4s", &[BUCKET]), Ok(vec![RateLimit::bucket(2, 0.5)]));
        assert_eq!(
            lower("60/15s", &[WINDOW]),
            Ok(vec![RateLimit::window(60, Duration::from_secs(15))])
        );
        assert_eq!(
            lower(" 600 / 5m ", &[WINDOW]),
            Ok(vec![RateLimit::window(600, Duration::from_secs(300))])
        );
        assert_eq!(
            lower("1/500ms", &[WINDOW]),
            Ok(vec![RateLimit::window(1, Duration::from_millis(500))])
        );
    }

    #[test]
    fn a_kind_sets_the_limits_counting_it_and_no_kind_sets_them_all() {
        let all = lower("5/1s", &AZURE).unwrap_or_default();
        assert!(
            all.iter().all(|l| l.meter == RateLimit::bucket(5, 5.0).meter),
            "{all:?}"
        );
        let reads = lower("read=25/1s", &AZURE).unwrap_or_default();
        assert_eq!(reads, [RateLimit::bucket(25, 25.0).of(Op::Read), AZURE[1], AZURE[2]]);
        let later_wins = lower("2/1s,write=1/1s", &AZURE).unwrap_or_default();
        assert_eq!(
            later_wins.iter().map(|l| l.meter).collect::<Vec<_>>(),
            [
                RateLimit::bucket(2, 2.0).meter,
                RateLimit::bucket(1, 1.0).meter,
                RateLimit::bucket(2, 2.0).meter
            ]
        );
    }

    #[test]
    fn the_documented_figure_itself_is_accepted() {
        assert_eq!(lower("5/1s", &[BUCKET]), Ok(vec![BUCKET]));
        assert_eq!(lower("read=250/10s", &AZURE).map(|l| l[0]), Ok(AZURE[0]));
        assert_eq!(lower("1200/5m", &[WINDOW]), Ok(vec![WINDOW]));
    }

    #[test]
    fn a_figure_above_the_documented_one_is_refused() {
        for value in ["6/1s", "5/500ms", "1/100ms"] {
            let err = lower(value, &[BUCKET]).err();
            assert!(matches!(err, Some(LimitsError::Raises { .. })), "{value}: {err:?}");
        }
        let message = lower("2000/10m", &[WINDOW])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            message,
            "EXTDNS_FAKE_X_LIMITS=\"2000/10m\": \"2000/10m\" is above the documented limit 1200/300s (more \
             requests at once or a faster rate); the variable only lowers a fake's limits"
        );
    }

    #[test]
    fn a_malformed_value_is_refused_naming_the_variable_and_the_form() {
        for (value, reason) in [
            ("", "has no \"/\""),
            ("5", "has no \"/\""),
            ("five/1s", "does not start with a whole number of requests"),
            ("0/1s", "admits no request at all"),
            ("5/1", "has a duration without a unit (ms, s, m or h)"),
            ("5/1d", "has a duration unit other than ms, s, m or h"),
            ("5/0s", "has a duration that is not between 1 ms and a day"),
            ("5/1.2.3s", "has a duration that is not a number and a unit"),
            ("reads=5/1s", "names a kind other than read, write or delete"),
            ("1/s,", "has no \"/\""),
        ] {
            let message = lower(value, &[BUCKET]).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(message.starts_with("EXTDNS_FAKE_X_LIMITS="), "{value}: {message}");
            assert!(message.contains(reason), "{value}: {message}");
            assert!(message.contains("<requests>/<duration>"), "{value}: {message}");
        }
    }

    #[test]
    fn a_kind_no_limit_counts_apart_is_refused_with_the_documented_limits() {
        let message = lower("read=1/s", &[BUCKET])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            message,
            "EXTDNS_FAKE_X_LIMITS=\"read=1/s\": \"read=1/s\" names read requests, but no limit of this fake \
             counts them apart (its documented limits: 5/1s); give the figure without \"read=\""
        );
        assert!(matches!(lower("1/s", &[]), Err(LimitsError::NoLimits { .. })));
    }

    #[test]
    fn describes_limits_as_the_variables_figures() {
        assert_eq!(describe(BUCKET), "5/1s");
        assert_eq!(describe(AZURE[0]), "read=250/10s");
        assert_eq!(describe(WINDOW), "1200/300s");
    }
}
