//! The Traefik source (`--source=traefik-proxy`): DNS records for Traefik's routers, IngressRoute,
//! IngressRouteTCP and IngressRouteUDP, as external-dns v0.23 publishes them.
//!
//! A router publishes the hosts its rules name (`Host`, `HostHeader`, `HostSNI`; not for IngressRouteUDP,
//! whose routes have no rule) and its hostname annotation, pointed at its `target` annotation. Traefik
//! writes no address into a router's status, so without the annotation external-dns publishes nothing;
//! extdns can instead publish the address of Traefik's own LoadBalancer Service (`--traefik-service`,
//! extdns only) and follows it when it changes. The `traefik.io` group is read unless
//! `--traefik-disable-new`, the legacy `traefik.containo.us` group with `--traefik-enable-legacy`.
//! See docs/sources/traefik-proxy.md.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::SourceExt;
//! use extdns_source_traefik::{TraefikSource, TraefikSourceConfig};
//!
//! let yaml = "
//! apiVersion: traefik.io/v1alpha1
//! kind: IngressRoute
//! metadata:
//!   name: shop
//!   namespace: default
//!   annotations: {external-dns.kubernetes.io/target: 192.0.2.8}
//! spec:
//!   routes: [{match: Host(`shop.example.org`), kind: Rule}]
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = TraefikSource::new(TraefikSourceConfig::default());
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "shop.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "192.0.2.8");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod rules;
mod service;

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, merge_endpoints};
use extdns_informer::view::{TraefikKind, TraefikRoute};
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::own_hosts::OwnKind;
use extdns_source::{Evaluation, Objects, Source, SourceConfig, SourceError};

pub use rules::hosts;
pub use service::{ServiceRefError, TraefikService};

/// The `--source` name.
pub const SOURCE_NAME: &str = "traefik-proxy";

/// The configuration of the Traefik source.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct TraefikSourceConfig {
    /// `--namespace`, `--label-filter`, `--annotation-filter`, annotation prefixes,
    /// `--ignore-hostname-annotation`. The FQDN template is not run: external-dns v0.23 makes a Traefik
    /// router's template records from `--target-template` alone, which extdns does not have, so without
    /// it the template adds nothing.
    pub common: SourceConfig,
    /// `--traefik-enable-legacy`: read the `traefik.containo.us` group too.
    pub enable_legacy: bool,
    /// `--traefik-disable-new`: do not read the `traefik.io` group.
    pub disable_new: bool,
    /// `--traefik-service` (extdns only): the Service whose load balancer addresses routers without a
    /// target annotation publish.
    pub service: Option<TraefikService>,
}

impl TraefikSourceConfig {
    /// The configuration from what every source shares and the `--traefik-*` flags.
    pub fn new(common: SourceConfig, enable_legacy: bool, disable_new: bool, service: Option<TraefikService>) -> Self {
        TraefikSourceConfig {
            common,
            enable_legacy,
            disable_new,
            service,
        }
    }

    /// The router kinds read: `traefik.io`'s unless disabled, then the legacy group's when enabled (the
    /// order external-dns concatenates them in, kind by kind, is not kept: records are merged by name).
    pub fn kinds(&self) -> Vec<TraefikKind> {
        TraefikKind::ALL
            .into_iter()
            .filter(|k| {
                if k.is_legacy() {
                    self.enable_legacy
                } else {
                    !self.disable_new
                }
            })
            .collect()
    }
}

/// The Traefik source.
#[derive(Clone, Debug)]
pub struct TraefikSource {
    config: TraefikSourceConfig,
}

impl TraefikSource {
    /// The source over the routers in `config`'s scope.
    pub fn new(config: TraefikSourceConfig) -> Self {
        TraefikSource { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &TraefikSourceConfig {
        &self.config
    }

    /// The endpoints of one admitted router, pointed at `service_targets` when it has no target
    /// annotation.
    fn route_endpoints(
        &self,
        route: &TraefikRoute,
        object: &ObjectKey,
        service_targets: &dyn Fn() -> Vec<extdns_endpoint::Target>,
    ) -> Vec<Endpoint> {
        let common = &self.config.common;
        let annotations = &common.annotations;
        let a = &route.meta.annotations;
        let mut targets = annotations.targets(a);
        if targets.is_empty() {
            targets = service_targets();
        }
        if targets.is_empty() {
            tracing::debug!(%object, "no target annotation and no Traefik Service address: nothing published");
            return Vec::new();
        }
        let ttl = annotations.ttl(a, object);
        let (provider_specific, set_identifier) = annotations.provider_specific(a);
        let for_host = |host: &str| Endpoint::for_hostname(host, &targets, ttl, &provider_specific, &set_identifier);

        let mut endpoints = Vec::new();
        if !common.ignore_hostname_annotation {
            for host in annotations.hostnames(a) {
                endpoints.extend(for_host(&host));
            }
        }
        for rule in route.rules.iter() {
            for host in rules::hosts(rule) {
                endpoints.extend(for_host(host));
            }
        }
        let shared = Arc::new(object.clone());
        endpoints
            .into_iter()
            .map(|e| e.with_ref_object(Arc::clone(&shared)))
            .collect()
    }

    /// What [`Source::evaluate`] returns, without the async wrapper (nothing here waits).
    pub fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        let service_targets = || {
            self.config
                .service
                .as_ref()
                .map(|s| s.targets(cluster))
                .unwrap_or_default()
        };
        // Read once, and only if some router needs it.
        let cached = std::cell::OnceCell::new();
        let service_targets = || cached.get_or_init(service_targets).clone();
        let mut evaluation = Evaluation::new(Vec::new(), extdns_source::Failures::new());
        for t in self.config.kinds() {
            let routes: OwnKind<TraefikRoute> = extdns_source::own_kind!(ResourceKind::Traefik(t));
            let of_kind = routes.evaluate(cluster, objects, &self.config.common, |route, object| {
                Ok::<_, std::convert::Infallible>(self.route_endpoints(route, object, &service_targets))
            });
            evaluation.objects.extend(of_kind.objects);
            evaluation.failed.extend(of_kind.failed);
        }
        evaluation
    }

    /// The routers whose target is the Traefik Service's: those without a target annotation.
    fn taking_the_service_target(&self, cluster: &ClusterStore) -> impl Iterator<Item = ObjectKey> {
        let annotations = &self.config.common.annotations;
        let mut keys = Vec::new();
        for t in self.config.kinds() {
            for r in cluster.traefik_routes(t) {
                if annotations.targets(&r.meta.annotations).is_empty() {
                    keys.push(ObjectKey::new(
                        ResourceKind::Traefik(t),
                        &r.meta.namespace,
                        &r.meta.name,
                    ));
                }
            }
        }
        keys.into_iter()
    }
}

#[async_trait]
impl Source for TraefikSource {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    /// The enabled groups' router kinds, and Services when a router may take its target from Traefik's.
    fn watched_kinds(&self) -> Vec<ResourceKind> {
        let mut kinds: Vec<ResourceKind> = self.config.kinds().into_iter().map(ResourceKind::Traefik).collect();
        if self.config.service.is_some() {
            kinds.push(ResourceKind::Service);
        }
        kinds
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        Ok(self.evaluate_now(cluster, objects))
    }

    /// A router reads nothing but itself, and, without a target annotation, the Traefik Service: a
    /// change of that Service re-evaluates the routers taking their target from it (those without the
    /// annotation; the Service names them all, so no per-object index is kept for it), other Services
    /// nothing.
    fn affected(&self, cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        if changes.is_everything() {
            return None;
        }
        let mut keys: BTreeSet<ObjectKey> = self
            .config
            .kinds()
            .into_iter()
            .flat_map(|t| changes.of_kind(ResourceKind::Traefik(t)).cloned())
            .collect();
        if let Some(service) = &self.config.service {
            let key = service.key();
            if changes.of_kind(ResourceKind::Service).any(|k| *k == key) {
                keys.extend(self.taking_the_service_target(cluster));
            }
        }
        Some(keys)
    }

    /// Targets of one record joined across routers (external-dns's `MergeEndpoints`).
    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        merge_endpoints(endpoints)
    }
}

#[cfg(test)]
mod tests;
