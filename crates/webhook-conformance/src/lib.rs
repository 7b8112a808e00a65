//! A conformance kit for external-dns webhook provider servers.
//!
//! external-dns ships no test suite for the servers its webhook provider talks to, and the published ones
//! break it in quiet ways (a media type re-serialised with a space, `providerSpecific` as a map, 200 where
//! 204 is required). This kit plays the client against a running server, writes records of every type
//! extdns manages under one zone, reads them back, updates and deletes them, and reports per named check.
//! The names are stable so CI logs and bug reports can quote them.
//!
//! Two kinds of check. **Protocol** checks (negotiation, media types, status codes, shapes, null handling,
//! idempotence) are what the client relies on: every server must pass them, and the run passes when they
//! do. **Capability** checks (which record types, set identifiers and provider-specific properties come
//! back as written) describe the provider behind the server: each is reported SUPPORTED or UNSUPPORTED, never
//! as a failure, since a provider without MX records is not a broken server. The facts checked are those
//! of external-dns v0.22's client; where its own webhook server (`external-dns --webhook-server`) differs
//! from the OpenAPI file, the server that runs is the reference (see `docs/providers/webhook.md`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), extdns_webhook_conformance::Error> {
//! let report = extdns_webhook_conformance::check_url("http://127.0.0.1:8888").await?;
//! assert!(report.passed(), "{report}");
//! # Ok(()) }
//! ```
//!
//! ```
//! use extdns_webhook_conformance::{CHECKS, Kind, kind_of};
//!
//! // Every check has a stable name, printed with PASS or FAIL (protocol) or SUPPORTED or UNSUPPORTED
//! // (capability).
//! assert!(CHECKS.contains(&"negotiate.content-type"));
//! assert_eq!(kind_of("apply.status-204"), Kind::Protocol);
//! assert_eq!(kind_of("roundtrip.naptr"), Kind::Capability);
//! ```

mod http;
mod suite;
mod wire;

use std::fmt;
use std::time::Duration;

/// The media type of every call, byte for byte (no space after `;`): the client compares it as a string.
pub const MEDIA_TYPE: &str = "application/external.dns.webhook+json;version=1";

/// The zone written under when none is given and the server's domain filter names none. `example.org` is
/// reserved for documentation (RFC 2606), so a server that manages every domain is not made to touch a
/// real one by accident.
pub const DEFAULT_ZONE: &str = "example.org";

/// Every check, in the order they run. A [`Report`] holds one result for each, unless negotiation could not
/// reach the server at all (then only `negotiate.status-200`, failed).
pub const CHECKS: &[&str] = &[
    "negotiate.status-200",
    "negotiate.content-type",
    "negotiate.domain-filter",
    "records.status-200",
    "records.content-type",
    "records.shape",
    "adjust.status-200",
    "adjust.content-type",
    "adjust.shape",
    "apply.status-204",
    "roundtrip.a",
    "roundtrip.aaaa",
    "roundtrip.cname",
    "roundtrip.txt",
    "roundtrip.srv",
    "roundtrip.mx",
    "roundtrip.ns",
    "roundtrip.ptr",
    "roundtrip.naptr",
    "roundtrip.set-identifier",
    "roundtrip.provider-specific",
    "apply.accepts-null",
    "apply.empty",
    "records.read-twice",
    "apply.create-twice",
    "apply.update",
    "apply.update-twice",
    "apply.delete",
    "apply.delete-twice",
    "errors.bad-json-records",
    "errors.bad-json-adjust",
    "cleanup",
];

/// Whether a check is about the protocol (must pass) or about what the provider stores (reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Must pass: the protocol requires it.
    Protocol,
    /// Reported, never failed: what the server supports.
    Capability,
}

/// The kind of the check named `name`: the `roundtrip.*` checks are the capabilities.
pub fn kind_of(name: &str) -> Kind {
    if name.starts_with("roundtrip.") {
        Kind::Capability
    } else {
        Kind::Protocol
    }
}

/// What to check and where.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The server's base URL, as the client's `webhook-provider-url`.
    pub url: reqwest::Url,
    /// The zone the test records are written under; `None` derives it from the negotiated domain filter.
    pub zone: Option<String>,
    /// Per request, as the client's read + write timeouts (5 s + 10 s by default).
    pub timeout: Duration,
}

impl Config {
    /// A configuration for the server at `url` (http or https), zone derived, external-dns's timeout.
    pub fn new(url: &str) -> Result<Self, Error> {
        let parsed = reqwest::Url::parse(url).map_err(|source| Error::InvalidUrl {
            url: url.to_owned(),
            source,
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::UnsupportedScheme { url: url.to_owned() });
        }
        Ok(Config {
            url: parsed,
            zone: None,
            timeout: Duration::from_secs(15),
        })
    }

    /// Writes the test records under `zone` instead of the derived one.
    pub fn with_zone(mut self, zone: &str) -> Result<Self, Error> {
        let trimmed = zone.trim_end_matches('.');
        let valid = !trimmed.is_empty()
            && trimmed.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !valid {
            return Err(Error::InvalidZone { zone: zone.to_owned() });
        }
        self.zone = Some(trimmed.to_ascii_lowercase());
        Ok(self)
    }
}

/// Why the kit could not run at all (a check that fails is a [`Report`] entry, not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL does not parse.
    #[error("webhook server URL {url:?} is not a URL: {source}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// The parser's reason.
        #[source]
        source: url::ParseError,
    },
    /// The scheme is not one the protocol runs over.
    #[error("webhook server URL {url:?} is not http or https")]
    UnsupportedScheme {
        /// The URL given.
        url: String,
    },
    /// The zone is not a DNS name.
    #[error("zone {zone:?} is not a DNS name")]
    InvalidZone {
        /// The zone given.
        zone: String,
    },
    /// The HTTP client could not be built.
    #[error("{0}")]
    Client(#[source] extdns_provider::http::HttpError),
}

/// The result of one check. For a capability, `Pass` is supported and `Fail` unsupported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// It did as the protocol says.
    Pass,
    /// Why it failed (or is unsupported), naming the call and the field.
    Fail(String),
}

/// One named check and its result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Check {
    /// A stable name from [`CHECKS`].
    pub name: &'static str,
    /// How it went.
    pub outcome: Outcome,
}

impl Check {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Pass
    }

    /// Whether a failure fails the run.
    pub fn kind(&self) -> Kind {
        kind_of(self.name)
    }
}

/// `PASS name` or `FAIL name: why` for a protocol check, `SUPPORTED name` or `UNSUPPORTED name: why` for a
/// capability; one line, as the command prints it.
impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (yes, no) = match self.kind() {
            Kind::Protocol => ("PASS", "FAIL"),
            Kind::Capability => ("SUPPORTED", "UNSUPPORTED"),
        };
        match &self.outcome {
            Outcome::Pass => write!(f, "{yes} {}", self.name),
            Outcome::Fail(why) => write!(f, "{no} {}: {why}", self.name),
        }
    }
}

/// Every check's result, in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The zone the records were written under.
    pub zone: String,
    /// Every check, in the order run.
    pub checks: Vec<Check>,
}

impl Report {
    /// True when every protocol check passed (capabilities are reported, not judged).
    pub fn passed(&self) -> bool {
        self.failures().next().is_none()
    }

    /// The protocol checks that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.kind() == Kind::Protocol && !c.passed())
    }

    /// The capabilities the provider lacks.
    pub fn unsupported(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|c| c.kind() == Kind::Capability && !c.passed())
    }

    /// The result of the check named `name`, if it ran.
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }
}

/// The protocol checks, the capability table, then a summary line.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for kind in [Kind::Protocol, Kind::Capability] {
            for check in self.checks.iter().filter(|c| c.kind() == kind) {
                writeln!(f, "{check}")?;
            }
        }
        let count = |kind| self.checks.iter().filter(|c| c.kind() == kind).count();
        let (protocol, capabilities) = (count(Kind::Protocol), count(Kind::Capability));
        write!(
            f,
            "{} of {protocol} protocol checks passed; {} of {capabilities} capabilities supported (zone {})",
            protocol - self.failures().count(),
            capabilities - self.unsupported().count(),
            self.zone
        )
    }
}

/// Runs every check against the server of `config` and cleans up the records it wrote.
pub async fn run(config: &Config) -> Result<Report, Error> {
    suite::run(config).await
}

/// Runs every check against the server at `url` with the defaults: the one-line entry point for tests.
pub async fn check_url(url: &str) -> Result<Report, Error> {
    run(&Config::new(url)?).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_are_unique() {
        let mut names = CHECKS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CHECKS.len());
    }

    #[test]
    fn config_validates_url_and_zone() {
        assert!(matches!(Config::new("not a url"), Err(Error::InvalidUrl { .. })));
        assert!(matches!(Config::new("ftp://x"), Err(Error::UnsupportedScheme { .. })));
        let zone = Config::new("http://127.0.0.1:8888").and_then(|c| c.with_zone("Example.ORG."));
        assert_eq!(zone.ok().and_then(|c| c.zone), Some("example.org".to_owned()));
        assert!(matches!(
            Config::new("http://x").and_then(|c| c.with_zone("a..b")),
            Err(Error::InvalidZone { .. })
        ));
    }

    #[test]
    fn lines_name_the_check() {
        let fail = Check {
            name: "apply.status-204",
            outcome: Outcome::Fail("got 200".into()),
        };
        assert_eq!(fail.to_string(), "FAIL apply.status-204: got 200");
        let pass = Check {
            name: "cleanup",
            outcome: Outcome::Pass,
        };
        assert_eq!(pass.to_string(), "PASS cleanup");
        let unsupported = Check {
            name: "roundtrip.mx",
            outcome: Outcome::Fail("POST /records answered 500".into()),
        };
        assert_eq!(
            unsupported.to_string(),
            "UNSUPPORTED roundtrip.mx: POST /records answered 500"
        );
    }

    #[test]
    fn only_protocol_failures_fail_a_report() {
        let report = Report {
            zone: "example.org".into(),
            checks: vec![
                Check {
                    name: "apply.status-204",
                    outcome: Outcome::Pass,
                },
                Check {
                    name: "roundtrip.naptr",
                    outcome: Outcome::Fail("refused".into()),
                },
            ],
        };
        assert!(report.passed());
        assert_eq!(report.unsupported().count(), 1);
        let text = report.to_string();
        assert!(
            text.ends_with("1 of 1 protocol checks passed; 0 of 1 capabilities supported (zone example.org)"),
            "{text}"
        );
        let mut failing = report;
        failing.checks[0].outcome = Outcome::Fail("500".into());
        assert!(!failing.passed());
    }
}
