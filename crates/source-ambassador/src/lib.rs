//! The Emissary-ingress (Ambassador) source (`--source=ambassador-host`): DNS records for
//! `getambassador.io` Hosts.
//!
//! A Host publishes only when its `external-dns.ambassador-service` annotation names a Service (Emissary's
//! spelling: `namespace/name`, `name.namespace` or `name` in `default`); without it the Host is skipped. It
//! publishes its `spec.hostname` at the `target` annotation, else at that Service's `spec.externalIPs`,
//! else at its `status.loadBalancer.ingress` (IPs and hostnames); a Service that cannot be found skips the
//! Host. The `ttl`, `set-identifier` and provider-specific annotations apply. As external-dns v0.23, the
//! source reads no hostname annotation, no `--fqdn-template` and no `controller` annotation: only the
//! namespace, the label filter and the annotation filter choose Hosts. See docs/sources/ambassador-host.md.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::SourceExt;
//! use extdns_source_ambassador::AmbassadorHostSource;
//!
//! let yaml = "
//! apiVersion: getambassador.io/v3alpha1
//! kind: Host
//! metadata:
//!   name: shop
//!   namespace: default
//!   annotations: {external-dns.ambassador-service: emissary/edge}
//! spec: {hostname: shop.example.org}
//! ---
//! apiVersion: v1
//! kind: Service
//! metadata: {name: edge, namespace: emissary}
//! spec: {type: LoadBalancer}
//! status: {loadBalancer: {ingress: [{ip: 192.0.2.8}]}}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = AmbassadorHostSource::new(Default::default());
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "shop.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "192.0.2.8");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, merge_endpoints};
use extdns_informer::view::{AmbassadorHost, MetaRef};
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::own_hosts::OwnKind;
use extdns_source::{Evaluation, ObjectEndpoints, Objects, Source, SourceConfig, SourceError};

mod targets;

/// The `--source` name.
pub const SOURCE_NAME: &str = "ambassador-host";

/// The kind the source reads.
const KIND: ResourceKind = ResourceKind::AmbassadorHost;

/// How the source reads Hosts from the store.
const HOSTS: OwnKind<AmbassadorHost> = extdns_source::own_kind!(KIND);

/// The ambassador-host source. Its configuration is only what every source shares: external-dns has no
/// flag of its own for it.
#[derive(Clone, Debug, Default)]
pub struct AmbassadorHostSource {
    common: SourceConfig,
}

impl AmbassadorHostSource {
    /// The source over Hosts in `common`'s scope (`--namespace`, the label and annotation filters, the
    /// annotation prefixes).
    pub fn new(common: SourceConfig) -> Self {
        AmbassadorHostSource { common }
    }

    /// Its configuration.
    pub fn config(&self) -> &SourceConfig {
        &self.common
    }

    /// What [`Source::evaluate`] returns, without the async wrapper (nothing here waits).
    pub fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        let hosts = HOSTS.views(cluster, objects);
        let failed = extdns_source::undecodable(cluster, KIND, objects);
        let mut out = Vec::with_capacity(hosts.len());
        for (object, host) in hosts {
            if !self.admits(&host) {
                tracing::debug!(%object, "not admitted by the filters");
                continue;
            }
            let endpoints = self.host_endpoints(cluster, &host, &object);
            if endpoints.is_empty() {
                tracing::debug!(%object, "no endpoints");
            } else {
                out.push(ObjectEndpoints::new(object, endpoints));
            }
        }
        Evaluation::new(out, failed)
    }

    /// Whether the Host is in scope: the shared filters, except that a `controller` annotation does not
    /// exclude it (external-dns's ambassador-host source never reads that annotation). The annotation
    /// filter sees every annotation, the `controller` one included, as external-dns's does.
    fn admits(&self, host: &AmbassadorHost) -> bool {
        self.common.admits_meta_any_controller(KIND, MetaRef::from(&host.meta))
    }

    /// The endpoints of one admitted Host: none without the Service annotation, a hostname or targets.
    fn host_endpoints(&self, cluster: &ClusterStore, host: &AmbassadorHost, object: &ObjectKey) -> Vec<Endpoint> {
        let Some(service) = host.service_annotation() else {
            tracing::debug!(
                %object,
                "Host ignored: no annotation {:?}",
                extdns_informer::view::AMBASSADOR_SERVICE_ANNOTATION
            );
            return Vec::new();
        };
        let annotations = &self.common.annotations;
        let a = &host.meta.annotations;
        let mut targets = annotations.targets(a);
        if targets.is_empty() {
            match targets::of_service(cluster, service) {
                Ok(found) => targets = found,
                Err(why) => {
                    tracing::warn!(%object, "could not find targets for service {service:?}: {why}; Host skipped");
                    return Vec::new();
                }
            }
        }
        if host.hostname.is_empty() {
            return Vec::new();
        }
        let ttl = annotations.ttl(a, object);
        let (provider_specific, set_identifier) = annotations.provider_specific(a);
        let shared = Arc::new(object.clone());
        Endpoint::for_hostname(&host.hostname, &targets, ttl, &provider_specific, &set_identifier)
            .into_iter()
            .map(|e| e.with_ref_object(Arc::clone(&shared)))
            .collect()
    }
}

#[async_trait]
impl Source for AmbassadorHostSource {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    /// Hosts, and the Services their annotation names.
    fn watched_kinds(&self) -> Vec<ResourceKind> {
        vec![KIND, ResourceKind::Service]
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        Ok(self.evaluate_now(cluster, objects))
    }

    /// The changed Hosts, and those whose annotation names a changed Service (found through the store's
    /// reverse index: a Service change costs the Hosts naming it, not a walk over every Host).
    fn affected(&self, cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        if changes.is_everything() {
            return None;
        }
        let mut out: BTreeSet<ObjectKey> = changes.of_kind(KIND).cloned().collect();
        for service in changes.of_kind(ResourceKind::Service) {
            let naming = cluster.ambassador_hosts_of_service(&service.namespace, &service.name);
            out.extend(
                naming
                    .iter()
                    .map(|h| ObjectKey::new(KIND, &h.meta.namespace, &h.meta.name)),
            );
        }
        Some(out)
    }

    /// Targets of one record joined across Hosts (external-dns's `MergeEndpoints`); then, among equal
    /// records that differ only in TTL, the one with a configured TTL first ([`extdns_source::tie`]).
    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        extdns_source::tie::configured_ttl_first(merge_endpoints(endpoints))
    }
}

#[cfg(test)]
mod tests;
