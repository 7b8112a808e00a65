//! A shared name's health check as its annotations spell it (docs/shared-names.md, "Health"):
//! `shared-health-check` (`tcp:<port>`, `http:<port>[/<path>]`, `https:<port>[/<path>]`),
//! `shared-health-interval` (a Go duration, 10s by default) and `shared-health-threshold` (failed probes in
//! a row that withdraw a target, 3 by default), carried to the controller as provider-specific properties.

use std::time::Duration;

use extdns_endpoint::Endpoint;
use extdns_endpoint::shared::{HEALTH_CHECK, HEALTH_INTERVAL, HEALTH_THRESHOLD};
use extdns_source::annotations::parse_go_duration;

/// The time between two probes when the annotation does not say.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// The failed probes in a row that withdraw a target when the annotation does not say.
pub const DEFAULT_THRESHOLD: u32 = 3;
/// The shortest interval taken: a shorter one probes every second, so a typo cannot flood a target.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The longest one probe may take: a target that neither answers nor refuses in this time failed it.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What one probe does against one target.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Probe {
    /// A TCP connection to the port is accepted.
    Tcp {
        /// The port connected to.
        port: u16,
    },
    /// An HTTP GET of the path answers 2xx (redirects are not followed; a 3xx is a failure).
    Http {
        /// Whether the GET goes over TLS (the record's name as SNI, its certificate checked).
        tls: bool,
        /// The port.
        port: u16,
        /// The path, starting with `/`.
        path: String,
    },
}

/// A shared name's health check.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HealthCheck {
    /// What is probed.
    pub probe: Probe,
    /// The time between two probes of one target.
    pub interval: Duration,
    /// The failed probes in a row that make a target unhealthy (one success makes it healthy again).
    pub threshold: u32,
}

/// A health annotation that cannot be read: the name is published without probing, and a warning names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HealthCheckError {
    /// The check is not `tcp:`, `http:` or `https:` followed by a port.
    #[error("shared-health-check {0:?} is not tcp:<port>, http:<port>[/<path>] or https:<port>[/<path>]")]
    Check(String),
    /// The interval is not a positive Go duration.
    #[error("shared-health-interval {input:?} is not a positive duration (e.g. 10s)")]
    Interval {
        /// The value as written.
        input: String,
        /// Why it is not a duration, when it is not one at all.
        #[source]
        cause: Option<extdns_source::annotations::DurationError>,
    },
    /// The threshold is not a whole number from 1.
    #[error("shared-health-threshold {0:?} is not a whole number of failed probes from 1")]
    Threshold(String),
}

/// The health properties of an endpoint, taken off it (the plan and the provider must never see them).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HealthProperties {
    check: Option<String>,
    interval: Option<String>,
    threshold: Option<String>,
}

impl HealthProperties {
    /// Removes the three properties from `e`, returning them; `None` when it had none.
    pub fn take(e: &mut Endpoint) -> Option<HealthProperties> {
        let mut take = |name: &str| e.provider_specific.remove(name);
        let props = HealthProperties {
            check: take(HEALTH_CHECK),
            interval: take(HEALTH_INTERVAL),
            threshold: take(HEALTH_THRESHOLD),
        };
        (props != HealthProperties::default()).then_some(props)
    }

    /// The check they spell; `Ok(None)` without a `shared-health-check` (an interval or threshold alone
    /// probes nothing).
    pub fn check(&self) -> Result<Option<HealthCheck>, HealthCheckError> {
        let Some(check) = self.check.as_deref() else {
            return Ok(None);
        };
        let probe = parse_probe(check).ok_or_else(|| HealthCheckError::Check(check.to_string()))?;
        let interval = match self.interval.as_deref() {
            None => DEFAULT_INTERVAL,
            Some(text) => parse_interval(text)?,
        };
        let threshold = match self.threshold.as_deref() {
            None => DEFAULT_THRESHOLD,
            Some(text) => text
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| HealthCheckError::Threshold(text.to_string()))?,
        };
        Ok(Some(HealthCheck {
            probe,
            interval,
            threshold,
        }))
    }
}

fn parse_probe(text: &str) -> Option<Probe> {
    let (scheme, rest) = text.trim().split_once(':')?;
    let (port, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let port = port.parse::<u16>().ok().filter(|p| *p != 0)?;
    match scheme.to_ascii_lowercase().as_str() {
        "tcp" if path == "/" && !rest.contains('/') => Some(Probe::Tcp { port }),
        "http" | "https" => Some(Probe::Http {
            tls: scheme.eq_ignore_ascii_case("https"),
            port,
            path: path.to_string(),
        }),
        _ => None,
    }
}

fn parse_interval(text: &str) -> Result<Duration, HealthCheckError> {
    let invalid = |cause| HealthCheckError::Interval {
        input: text.to_string(),
        cause,
    };
    let nanos = parse_go_duration(text.trim()).map_err(|e| invalid(Some(e)))?;
    let nanos = u64::try_from(nanos)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| invalid(None))?;
    Ok(Duration::from_nanos(nanos).max(MIN_INTERVAL))
}

#[cfg(test)]
mod tests {
    use extdns_endpoint::RecordType;

    use super::*;

    fn props(check: Option<&str>, interval: Option<&str>, threshold: Option<&str>) -> HealthProperties {
        HealthProperties {
            check: check.map(str::to_string),
            interval: interval.map(str::to_string),
            threshold: threshold.map(str::to_string),
        }
    }

    #[test]
    fn checks_are_read_with_their_defaults() {
        let tcp = props(Some("tcp:443"), None, None).check();
        assert_eq!(
            tcp,
            Ok(Some(HealthCheck {
                probe: Probe::Tcp { port: 443 },
                interval: DEFAULT_INTERVAL,
                threshold: DEFAULT_THRESHOLD
            }))
        );
        let https = props(Some("https:8443/healthz"), Some("30s"), Some("5")).check();
        assert_eq!(
            https,
            Ok(Some(HealthCheck {
                probe: Probe::Http {
                    tls: true,
                    port: 8443,
                    path: "/healthz".into()
                },
                interval: Duration::from_secs(30),
                threshold: 5
            }))
        );
        let http = props(Some("HTTP:80"), Some("100ms"), None).check();
        assert_eq!(
            http.map(|c| c.map(|c| (c.probe, c.interval))),
            Ok(Some((
                Probe::Http {
                    tls: false,
                    port: 80,
                    path: "/".into()
                },
                MIN_INTERVAL
            )))
        );
        assert_eq!(props(None, Some("5s"), None).check(), Ok(None));
    }

    #[test]
    fn bad_checks_are_refused_naming_the_annotation() {
        for bad in ["tcp", "tcp:0", "tcp:70000", "tcp:443/x", "udp:53", "http:/healthz", ""] {
            let err = props(Some(bad), None, None).check();
            assert_eq!(err, Err(HealthCheckError::Check(bad.into())), "{bad}");
        }
        for bad in ["0s", "-5s", "soon"] {
            let err = props(Some("tcp:443"), Some(bad), None).check();
            assert!(
                matches!(&err, Err(HealthCheckError::Interval { input, .. }) if input == bad),
                "{bad}: {err:?}"
            );
        }
        for bad in ["0", "-1", "three"] {
            let err = props(Some("tcp:443"), None, Some(bad)).check();
            assert_eq!(err, Err(HealthCheckError::Threshold(bad.into())), "{bad}");
        }
    }

    #[test]
    fn the_properties_are_taken_off_the_endpoint() {
        let mut e = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
        assert_eq!(HealthProperties::take(&mut e), None);
        e.provider_specific.set(HEALTH_CHECK, "tcp:443");
        e.provider_specific.set(HEALTH_THRESHOLD, "2");
        e.provider_specific.set("alias", "true");
        let taken = HealthProperties::take(&mut e);
        assert_eq!(taken, Some(props(Some("tcp:443"), None, Some("2"))));
        assert_eq!(e.provider_specific.get("alias"), Some("true"));
        assert_eq!(e.provider_specific.get(HEALTH_CHECK), None);
        assert_eq!(e.provider_specific.get(HEALTH_THRESHOLD), None);
    }
}
