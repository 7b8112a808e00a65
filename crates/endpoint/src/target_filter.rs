use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::Target;

/// Keep only targets inside the filter networks (when any are given) and outside the excluded ones. A
/// hostname target is never inside a network, so it is dropped when filter networks are set and kept when
/// only exclusions are.
#[derive(Debug, Clone, Default)]
pub struct TargetNetFilter {
    include: Vec<IpNet>,
    exclude: Vec<IpNet>,
}

/// Which of the filter's two lists a network belongs to.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkList {
    /// Targets must be inside one of these.
    Include,
    /// Targets must be outside all of these.
    Exclude,
}

impl fmt::Display for NetworkList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NetworkList::Include => "filter",
            NetworkList::Exclude => "excluded",
        })
    }
}

/// Why a `--target-net-filter` / `--exclude-target-net` value was refused.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetNetFilterError {
    /// A network is not in CIDR notation (a bare address without `/len` is refused too).
    #[error("invalid {list} network {value:?}: expected a CIDR such as 10.0.0.0/8 or 2001:db8::/32 ({source})")]
    InvalidNetwork {
        /// Which flag the value came from.
        list: NetworkList,
        /// The value as given, trimmed.
        value: String,
        /// The parser's reason.
        #[source]
        source: ipnet::AddrParseError,
    },
}

impl TargetNetFilterError {
    /// The list the bad network was given in, so the caller can name where it came from.
    pub fn list(&self) -> NetworkList {
        match self {
            TargetNetFilterError::InvalidNetwork { list, .. } => *list,
        }
    }
}

impl TargetNetFilter {
    /// Networks in CIDR notation; surrounding space is ignored and empty entries are dropped.
    pub fn new<S: AsRef<str>>(include: &[S], exclude: &[S]) -> Result<Self, TargetNetFilterError> {
        Ok(TargetNetFilter {
            include: parse_nets(include, NetworkList::Include)?,
            exclude: parse_nets(exclude, NetworkList::Exclude)?,
        })
    }

    /// True when either list has a network; an unconfigured filter keeps every target.
    pub fn is_configured(&self) -> bool {
        !self.include.is_empty() || !self.exclude.is_empty()
    }

    /// Whether the target should be kept.
    pub fn matches(&self, target: &Target) -> bool {
        let ip = target.ip();
        let inside = |nets: &[IpNet], ip: Option<IpAddr>| ip.is_some_and(|ip| nets.iter().any(|n| n.contains(&ip)));
        (self.include.is_empty() || inside(&self.include, ip)) && !inside(&self.exclude, ip)
    }
}

fn parse_nets<S: AsRef<str>>(values: &[S], list: NetworkList) -> Result<Vec<IpNet>, TargetNetFilterError> {
    values
        .iter()
        .map(|v| v.as_ref().trim())
        .filter(|v| !v.is_empty())
        .map(|v| {
            v.parse::<IpNet>()
                .map_err(|source| TargetNetFilterError::InvalidNetwork {
                    list,
                    value: v.to_string(),
                    source,
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(include: &[&str], exclude: &[&str]) -> TargetNetFilter {
        TargetNetFilter::new(include, exclude).unwrap_or_default()
    }

    fn matches(f: &TargetNetFilter, text: &str) -> bool {
        f.matches(&Target::from(text))
    }

    #[test]
    fn no_networks_keep_everything() {
        let f = filter(&[], &[]);
        assert!(!f.is_configured());
        assert!(matches(&f, "10.1.2.3") && matches(&f, "lb.example.com"));
    }

    #[test]
    fn filter_networks_keep_only_addresses_inside_them() {
        let f = filter(&["10.0.0.0/8", "2001:db8::/32"], &[]);
        assert!(matches(&f, "10.1.2.3"));
        assert!(matches(&f, "2001:db8::5"));
        assert!(!matches(&f, "34.1.2.3"));
    }

    #[test]
    fn hostnames_are_dropped_by_filter_networks_and_kept_by_exclusions() {
        assert!(!matches(&filter(&["10.0.0.0/8"], &[]), "lb.example.com"));
        assert!(matches(&filter(&[], &["10.0.0.0/8"]), "lb.example.com"));
    }

    #[test]
    fn exclusions_win_over_filters() {
        let f = filter(&["10.0.0.0/8"], &["10.1.0.0/16"]);
        assert!(matches(&f, "10.2.0.1"));
        assert!(!matches(&f, "10.1.0.1"));
    }

    #[test]
    fn an_invalid_network_is_an_error_naming_its_list_and_value() {
        let err = TargetNetFilter::new(&["10.0.0.0/33"], &[]).err();
        assert_eq!(err.as_ref().map(TargetNetFilterError::list), Some(NetworkList::Include));
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("filter network") && text.contains("10.0.0.0/33"),
            "{text}"
        );
        let err = TargetNetFilter::new(&["10.0.0.0/8"], &[" nope "]).err();
        assert_eq!(err.as_ref().map(TargetNetFilterError::list), Some(NetworkList::Exclude));
        assert!(
            err.as_ref().and_then(std::error::Error::source).is_some(),
            "the parse error is kept"
        );
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("excluded network \"nope\""), "{text}");
    }
}
