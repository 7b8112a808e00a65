use std::net::IpAddr;

use ipnet::IpNet;

use crate::endpoint::parse_ip;

/// `--target-net-filter` / `--exclude-target-net`: keep only targets inside the filter networks (when any are
/// given) and outside the excluded ones. A hostname target is never inside a network, so it is dropped when
/// filter networks are set and kept when only exclusions are.
#[derive(Debug, Clone, Default)]
pub struct TargetNetFilter {
    include: Vec<IpNet>,
    exclude: Vec<IpNet>,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid network {value:?} in {flag}: expected a CIDR such as 10.0.0.0/8 or 2001:db8::/32")]
pub struct TargetNetFilterError {
    pub flag: &'static str,
    pub value: String,
}

impl TargetNetFilter {
    pub fn new<S: AsRef<str>>(include: &[S], exclude: &[S]) -> Result<Self, TargetNetFilterError> {
        Ok(TargetNetFilter {
            include: parse_nets(include, "--target-net-filter")?,
            exclude: parse_nets(exclude, "--exclude-target-net")?,
        })
    }

    pub fn is_configured(&self) -> bool {
        !self.include.is_empty() || !self.exclude.is_empty()
    }

    pub fn matches(&self, target: &str) -> bool {
        let ip = parse_ip(target);
        let inside = |nets: &[IpNet], ip: Option<IpAddr>| ip.is_some_and(|ip| nets.iter().any(|n| n.contains(&ip)));
        (self.include.is_empty() || inside(&self.include, ip)) && !inside(&self.exclude, ip)
    }
}

fn parse_nets<S: AsRef<str>>(values: &[S], flag: &'static str) -> Result<Vec<IpNet>, TargetNetFilterError> {
    values
        .iter()
        .map(|v| v.as_ref().trim())
        .filter(|v| !v.is_empty())
        .map(|v| {
            v.parse::<IpNet>().map_err(|_| TargetNetFilterError {
                flag,
                value: v.to_string(),
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

    #[test]
    fn no_networks_keep_everything() {
        let f = filter(&[], &[]);
        assert!(!f.is_configured());
        assert!(f.matches("10.1.2.3") && f.matches("lb.example.com"));
    }

    #[test]
    fn filter_networks_keep_only_addresses_inside_them() {
        let f = filter(&["10.0.0.0/8", "2001:db8::/32"], &[]);
        assert!(f.matches("10.1.2.3"));
        assert!(f.matches("2001:db8::5"));
        assert!(!f.matches("34.1.2.3"));
    }

    #[test]
    fn hostnames_are_dropped_by_filter_networks_and_kept_by_exclusions() {
        assert!(!filter(&["10.0.0.0/8"], &[]).matches("lb.example.com"));
        assert!(filter(&[], &["10.0.0.0/8"]).matches("lb.example.com"));
    }

    #[test]
    fn exclusions_win_over_filters() {
        let f = filter(&["10.0.0.0/8"], &["10.1.0.0/16"]);
        assert!(f.matches("10.2.0.1"));
        assert!(!f.matches("10.1.0.1"));
    }

    #[test]
    fn an_invalid_network_is_an_error_naming_the_flag() {
        let err = TargetNetFilter::new(&["10.0.0.0/33"], &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("--target-net-filter") && err.contains("10.0.0.0/33"));
    }
}
