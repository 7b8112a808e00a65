//! What the service source is told by the flags. The binary parses argv; this crate only sees typed values.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use extdns_source::config::SourceConfig;
use extdns_source::template::FqdnTemplate;

/// The Service types `--service-type-filter` accepts.
pub const SERVICE_TYPES: [&str; 4] = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];

/// The `--compatibility` modes: how older DNS controllers named Services, used only when the annotations
/// produced nothing, so clusters migrating from them keep their records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compatibility {
    /// Zalando's mate: the `zalando.org/dnsname` annotation.
    Mate,
    /// Molecule: the `domainName` annotation on Services labelled `dns=route53`.
    Molecule,
    /// kOps' dns-controller: `dns.alpha.kubernetes.io/external` and `/internal`.
    KopsDnsController,
}

impl Compatibility {
    /// The `--compatibility` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Compatibility::Mate => "mate",
            Compatibility::Molecule => "molecule",
            Compatibility::KopsDnsController => "kops-dns-controller",
        }
    }
}

impl fmt::Display for Compatibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Compatibility {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "mate" => Ok(Compatibility::Mate),
            "molecule" => Ok(Compatibility::Molecule),
            "kops-dns-controller" => Ok(Compatibility::KopsDnsController),
            other => Err(ConfigError::UnknownCompatibility(other.to_string())),
        }
    }
}

/// A service-source setting that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--service-type-filter` names no Service type.
    #[error("the service type filter names {0:?}, which is not one of ClusterIP, NodePort, LoadBalancer, ExternalName")]
    UnknownServiceType(String),
    /// `--compatibility` names no mode.
    #[error("the compatibility mode {0:?} is not one of mate, molecule, kops-dns-controller")]
    UnknownCompatibility(String),
}

/// The configuration of the service source (`--source=service`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServiceSourceConfig {
    /// What every source shares: namespace, filters, annotation prefixes, `--fqdn-template`,
    /// `--combine-fqdn-annotation`, `--ignore-hostname-annotation`.
    pub common: SourceConfig,
    /// `--service-type-filter`: the `spec.type`s considered. Empty, or containing "", means every type.
    pub service_type_filter: Vec<String>,
    /// `--publish-internal-services`: non-headless ClusterIP Services publish their cluster IP.
    pub publish_internal_services: bool,
    /// `--publish-host-ip`: headless Services publish each Pod's `status.hostIP`.
    pub publish_host_ip: bool,
    /// `--always-publish-not-ready-addresses`: headless Services publish not-ready endpoints too.
    pub always_publish_not_ready_addresses: bool,
    /// `--resolve-service-load-balancer-hostname`: load balancer hostnames become their addresses.
    pub resolve_load_balancer_hostname: bool,
    /// `--expose-internal-ipv6`: IPv6 `InternalIP` node addresses count as public.
    pub expose_internal_ipv6: bool,
    /// `--[no-]exclude-unschedulable` (default on): cordoned nodes are not NodePort targets.
    pub exclude_unschedulable: bool,
    /// `--compatibility`.
    pub compatibility: Option<Compatibility>,
    /// `--fqdn-target-template`: a template producing `host:target` pairs.
    pub fqdn_target_template: Option<Arc<FqdnTemplate>>,
}

impl Default for ServiceSourceConfig {
    fn default() -> Self {
        ServiceSourceConfig {
            common: SourceConfig::default(),
            service_type_filter: Vec::new(),
            publish_internal_services: false,
            publish_host_ip: false,
            always_publish_not_ready_addresses: false,
            resolve_load_balancer_hostname: false,
            expose_internal_ipv6: false,
            exclude_unschedulable: true,
            compatibility: None,
            fqdn_target_template: None,
        }
    }
}

impl ServiceSourceConfig {
    /// Reject what external-dns rejects at startup: unknown Service types in `--service-type-filter`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self
            .service_type_filter
            .iter()
            .find(|t| !t.is_empty() && !SERVICE_TYPES.contains(&t.as_str()))
        {
            Some(t) => Err(ConfigError::UnknownServiceType(t.clone())),
            None => Ok(()),
        }
    }

    /// Whether `--service-type-filter` lets Services of this type through.
    pub fn allows_type(&self, service_type: &str) -> bool {
        self.service_type_filter.is_empty()
            || self
                .service_type_filter
                .iter()
                .any(|t| t.is_empty() || t == service_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_type_filter_empty_allows_every_type() {
        let c = ServiceSourceConfig::default();
        assert!(SERVICE_TYPES.iter().all(|t| c.allows_type(t)));
    }

    #[test]
    fn service_type_filter_is_repeatable_and_exact() {
        let c = ServiceSourceConfig {
            service_type_filter: vec!["NodePort".into(), "LoadBalancer".into()],
            ..ServiceSourceConfig::default()
        };
        assert!(c.allows_type("NodePort"));
        assert!(c.allows_type("LoadBalancer"));
        assert!(!c.allows_type("ClusterIP"));
        assert!(!c.allows_type("loadbalancer"));
    }

    #[test]
    fn service_type_filter_with_an_empty_entry_allows_every_type() {
        let c = ServiceSourceConfig {
            service_type_filter: vec!["ClusterIP".into(), String::new()],
            ..Default::default()
        };
        assert!(c.allows_type("ExternalName"));
    }

    #[test]
    fn service_type_filter_rejects_unknown_types() {
        let c = ServiceSourceConfig {
            service_type_filter: vec!["Headless".into()],
            ..Default::default()
        };
        assert_eq!(c.validate(), Err(ConfigError::UnknownServiceType("Headless".into())));
        let ok = ServiceSourceConfig {
            service_type_filter: vec!["ExternalName".into()],
            ..Default::default()
        };
        assert_eq!(ok.validate(), Ok(()));
    }

    #[test]
    fn compatibility_parses_the_three_modes() {
        assert_eq!("mate".parse(), Ok(Compatibility::Mate));
        assert_eq!("molecule".parse(), Ok(Compatibility::Molecule));
        assert_eq!("kops-dns-controller".parse(), Ok(Compatibility::KopsDnsController));
        assert!("kops".parse::<Compatibility>().is_err());
    }

    #[test]
    fn exclude_unschedulable_defaults_to_true() {
        assert!(ServiceSourceConfig::default().exclude_unschedulable);
    }
}
