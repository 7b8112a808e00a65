//! Where a Host points when it has no target annotation: the Service its `external-dns.ambassador-service`
//! annotation names, read from the store as external-dns reads it from the API (`extractLoadBalancerTargets`
//! without hostname resolution): its `spec.externalIPs` if it has any, else its load balancer's IPs and
//! hostnames.

use extdns_endpoint::Target;
use extdns_informer::ClusterStore;
use extdns_informer::view::ambassador_service;

/// Why a Host's Service gives no targets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ServiceError {
    /// The annotation has more than one `/`.
    #[error("invalid external-dns service: {0}")]
    Invalid(String),
    /// No Service of that name in the store (absent, or outside the watched namespace).
    #[error("service {namespace}/{name} not found")]
    NotFound {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

/// The targets of the Service `annotation` names.
pub(crate) fn of_service(cluster: &ClusterStore, annotation: &str) -> Result<Vec<Target>, ServiceError> {
    let (namespace, name) = ambassador_service(annotation).ok_or_else(|| ServiceError::Invalid(annotation.into()))?;
    let service = cluster.service(namespace, name).ok_or_else(|| ServiceError::NotFound {
        namespace: namespace.into(),
        name: name.into(),
    })?;
    if !service.external_ips.is_empty() {
        return Ok(service.external_ips.iter().map(|ip| Target::from(&**ip)).collect());
    }
    Ok(extdns_source::load_balancer_targets(&service.load_balancer_ingress))
}
