//! Hostname rules shared by routes and listeners: which names are valid, and how a route hostname is narrowed
//! by a listener hostname (the Gateway API's hostname intersection, with wildcards).

use std::fmt;
use std::net::IpAddr;

/// A hostname a route or listener may carry: an RFC 1123 domain, optionally with one leading `*.` label.
/// Stored lower-cased and without a trailing dot, so equal names compare equal and records are written in
/// one spelling.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hostname(String);

/// Why a hostname was rejected; the warning that skips it quotes this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostnameError {
    /// Empty.
    #[error("is empty")]
    Empty,
    /// An address, which a route's hostname may not be.
    #[error("is an IP address, not a hostname")]
    IpAddress,
    /// Over 253 characters.
    #[error("is longer than 253 characters")]
    TooLong,
    /// Two dots in a row, or a leading dot.
    #[error("has an empty label")]
    EmptyLabel,
    /// A label over 63 characters.
    #[error("has a label longer than 63 characters")]
    LabelTooLong,
    /// A character DNS labels may not hold.
    #[error("has a label with a character other than a-z, 0-9 and '-'")]
    BadCharacter,
    /// A label that starts or ends with a hyphen.
    #[error("has a label that starts or ends with '-'")]
    BadHyphen,
    /// A `*` anywhere but as the whole first label.
    #[error("uses '*' other than as the whole first label")]
    BadWildcard,
}

impl Hostname {
    /// Validate and canonicalise. One trailing dot is accepted and dropped: `a.example.com.` names the same
    /// domain as `a.example.com`, and records are written without it anyway.
    pub fn parse(raw: &str) -> Result<Hostname, HostnameError> {
        let name = raw.strip_suffix('.').unwrap_or(raw);
        if name.is_empty() {
            return Err(HostnameError::Empty);
        }
        if name.parse::<IpAddr>().is_ok() {
            return Err(HostnameError::IpAddress);
        }
        let domain = name.strip_prefix("*.").unwrap_or(name);
        if domain.len() > 253 {
            return Err(HostnameError::TooLong);
        }
        for label in domain.split('.') {
            check_label(label)?;
        }
        Ok(Hostname(name.to_ascii_lowercase()))
    }

    /// The hostname as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it starts with `*.`, so it matches one label more.
    pub fn is_wildcard(&self) -> bool {
        self.0.starts_with("*.")
    }

    /// The names both hostnames cover, as one name: the more specific of the two when one contains the
    /// other (a wildcard covers names of any depth below it, never its own apex), else nothing.
    pub fn intersect<'a>(&'a self, other: &'a Hostname) -> Option<&'a Hostname> {
        if self == other {
            return Some(self);
        }
        // `wide` is the shorter one; at equal length a wildcard is the wider.
        let (wide, narrow) = if other.0.len() < self.0.len()
            || (other.0.len() == self.0.len() && other.is_wildcard() && !self.is_wildcard())
        {
            (other, self)
        } else {
            (self, other)
        };
        // "*.example.com" → ".example.com": the narrow name must end with it (so the apex never matches).
        let suffix = wide.0.strip_prefix('*')?;
        if suffix.starts_with('.') && narrow.0.ends_with(suffix) {
            Some(narrow)
        } else {
            None
        }
    }
}

fn check_label(label: &str) -> Result<(), HostnameError> {
    if label.is_empty() {
        return Err(HostnameError::EmptyLabel);
    }
    if label.len() > 63 {
        return Err(HostnameError::LabelTooLong);
    }
    if label.contains('*') {
        return Err(HostnameError::BadWildcard);
    }
    if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(HostnameError::BadCharacter);
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Err(HostnameError::BadHyphen);
    }
    Ok(())
}

impl fmt::Display for Hostname {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name a route hostname gets on a listener: the route's name when the listener has no hostname, else
/// the intersection of both.
pub fn narrow<'a>(listener: Option<&'a Hostname>, route: &'a Hostname) -> Option<&'a Hostname> {
    match listener {
        None => Some(route),
        Some(l) => l.intersect(route),
    }
}

/// Whether a target is usable: an IP address, or a hostname a CNAME can point at
/// ([`extdns_endpoint::TargetKind::Hostname`]: labels of letters, digits, `-` and `_`, a final label that is
/// not all digits so a mistyped IP such as `01.2.3.4` or `1.2.3.4:80` is caught, at most 253 characters),
/// but not a wildcard.
pub fn valid_target(target: &extdns_endpoint::Target) -> bool {
    target.is_ip() || (target.is_hostname() && !target.starts_with("*."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Hostname {
        Hostname::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    /// Checks what `listener` and `route` narrow to.
    fn meets(listener: &str, route: &str, expected: Option<&str>) {
        assert_eq!(meet(listener, route).as_deref(), expected, "{listener} ~ {route}");
    }

    fn meet(listener: &str, route: &str) -> Option<String> {
        let (l, r) = (h(listener), h(route));
        narrow(Some(&l), &r).map(|x| x.to_string())
    }

    #[test]
    fn hostname_is_lower_cased_and_loses_one_trailing_dot() {
        assert_eq!(h("Foo.Example.COM.").as_str(), "foo.example.com");
        assert_eq!(h("*.Example.com").as_str(), "*.example.com");
    }

    /// Checks that each of `names` is rejected for `error`.
    fn rejected(error: HostnameError, names: &[&str]) {
        for name in names {
            assert_eq!(Hostname::parse(name), Err(error.clone()), "{name:?}");
        }
    }

    #[test]
    fn hostname_rejects_ip_addresses() {
        rejected(HostnameError::IpAddress, &["10.0.0.1", "2001:db8::1"]);
    }

    #[test]
    fn hostname_rejects_underscores_bad_hyphens_and_empty_labels() {
        rejected(HostnameError::BadCharacter, &["_svc.example.com", "a b.example.com"]);
        rejected(HostnameError::BadHyphen, &["-a.example.com", "a-.example.com"]);
        rejected(HostnameError::EmptyLabel, &["a..example.com"]);
        rejected(HostnameError::Empty, &[""]);
    }

    #[test]
    fn hostname_rejects_long_labels_and_names() {
        rejected(
            HostnameError::LabelTooLong,
            &[&format!("{}.example.com", "a".repeat(64))],
        );
        rejected(HostnameError::TooLong, &[&vec!["abcdefghi"; 26].join(".")]);
        assert!(Hostname::parse(&format!("{}.example.com", "a".repeat(63))).is_ok());
    }

    #[test]
    fn hostname_wildcard_only_as_whole_first_label() {
        assert!(h("*.example.com").is_wildcard());
        rejected(
            HostnameError::BadWildcard,
            &["*example.com", "a.*.example.com", "*", "*.*.example.com"],
        );
    }

    #[test]
    fn narrowing_without_listener_hostname_keeps_route_hostname() {
        let r = h("a.example.com");
        assert_eq!(narrow(None, &r), Some(&r));
    }

    #[test]
    fn narrowing_equal_names_match() {
        meets("a.example.com", "A.example.com", Some("a.example.com"));
        meets("*.example.com", "*.example.com", Some("*.example.com"));
    }

    #[test]
    fn narrowing_wildcard_listener_exact_route_gives_route_name() {
        meets(
            "*.example.internal",
            "foo.example.internal",
            Some("foo.example.internal"),
        );
    }

    #[test]
    fn narrowing_exact_listener_wildcard_route_gives_listener_name() {
        meets(
            "foo.example.internal",
            "*.example.internal",
            Some("foo.example.internal"),
        );
    }

    #[test]
    fn narrowing_wildcard_matches_any_depth_but_not_apex() {
        meets("*.example.net", "foo.bar.example.net", Some("foo.bar.example.net"));
        meets("*.example.net", "example.net", None);
        meets("example.net", "*.example.net", None);
    }

    #[test]
    fn narrowing_two_wildcards_gives_the_narrower() {
        meets("*.example.net", "*.foo.example.net", Some("*.foo.example.net"));
        meets("*.foo.example.net", "*.example.net", Some("*.foo.example.net"));
        meets("*.foo.example.net", "*.bar.example.net", None);
    }

    #[test]
    fn narrowing_different_exact_names_do_not_match() {
        meets("a.example.com", "b.example.com", None);
        meets("*.example.com", "a.example.org", None);
        // A suffix that is not on a label boundary is not a match.
        meets("*.ample.com", "a.example.com", None);
    }

    #[test]
    fn narrowing_same_length_wildcard_and_name() {
        meets("*.x.com", "y.x.com", Some("y.x.com"));
        meets("y.x.com", "*.x.com", Some("y.x.com"));
    }

    #[test]
    fn target_must_be_ip_or_hostname() {
        for ok in [
            "1.2.3.4",
            "2001:db8::1",
            "lb.example.com",
            "lb.example.com.",
            "a_b.example.com",
            "localhost",
        ] {
            assert!(valid_target(&ok.into()), "{ok}");
        }
        for bad in [
            "",
            "not an address",
            "1.2.3.4:80",
            "01.2.3.4",
            "999.1.1.1",
            "a..b",
            "-a.example.com",
            ".",
            "*.example.com",
        ] {
            assert!(!valid_target(&bad.into()), "{bad}");
        }
    }
}
