//! extdns only (`--traefik-service`): the address of Traefik's own LoadBalancer Service, published for
//! routers that carry no target annotation. Traefik writes no address into its routers' status, so
//! external-dns v0.23 publishes such routers nowhere, and its users write a target on every object.

use std::fmt;
use std::str::FromStr;

use extdns_endpoint::Target;
use extdns_informer::{ClusterStore, ObjectKey, ResourceKind};

/// The Service Traefik receives traffic through: `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraefikService {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

/// A `--traefik-service` value that does not name one Service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} does not name a Service as namespace/name")]
pub struct ServiceRefError {
    /// The value as given.
    pub value: String,
}

impl FromStr for TraefikService {
    type Err = ServiceRefError;

    /// `namespace/name`, both non-empty, no further `/`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let refused = || ServiceRefError { value: s.to_string() };
        let (namespace, name) = s.split_once('/').ok_or_else(refused)?;
        if namespace.is_empty() || name.is_empty() || name.contains('/') {
            return Err(refused());
        }
        Ok(TraefikService {
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for TraefikService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl TraefikService {
    /// The Service's key, which a change of it is recorded under.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(ResourceKind::Service, &self.namespace, &self.name)
    }

    /// The Service's load balancer addresses (`status.loadBalancer.ingress`: each entry's IP, then its
    /// hostname), as the service source publishes a LoadBalancer Service; none while the Service is absent
    /// or has no address yet.
    pub fn targets(&self, cluster: &ClusterStore) -> Vec<Target> {
        match cluster.service(&self.namespace, &self.name) {
            Some(svc) => extdns_source::load_balancer_targets(&svc.load_balancer_ingress),
            None => {
                tracing::debug!(service = %self, "the Traefik Service is not in the cluster view");
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_is_named_as_namespace_slash_name() {
        let s: Result<TraefikService, _> = "traefik/traefik-lb".parse();
        assert_eq!(
            s,
            Ok(TraefikService {
                namespace: "traefik".into(),
                name: "traefik-lb".into()
            })
        );
        for bad in ["traefik", "/x", "x/", "a/b/c", ""] {
            let e = bad.parse::<TraefikService>();
            assert_eq!(e, Err(ServiceRefError { value: bad.into() }), "{bad}");
        }
        let e = "traefik".parse::<TraefikService>().err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("\"traefik\" does not name a Service as namespace/name")
        );
    }
}
