//! The F5 sources (`--source=f5-virtualserver`, `--source=f5-transportserver`): DNS records for F5 Container
//! Ingress Services' `cis.f5.com/v1` VirtualServers and TransportServers.
//!
//! An object publishes only once the BIG-IP has an address for it: while its `status.vsAddress` is empty or
//! `None` (any case) it publishes nothing. It then publishes `spec.host` (and a VirtualServer each non-empty
//! `spec.hostAliases` entry) at the `target` annotation, else at `spec.virtualServerAddress`, else at
//! `status.vsAddress`, with the `ttl` annotation. As external-dns v0.23, these sources read no hostname,
//! set-identifier or provider-specific annotation, and `--fqdn-template` gives them no record: external-dns
//! takes a template record's targets from `--target-template` only, which extdns does not run
//! (docs/migration.md). See docs/sources/f5-virtualserver.md and docs/sources/f5-transportserver.md.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_informer::view::F5Kind;
//! use extdns_source::SourceExt;
//! use extdns_source_f5::{F5Source, F5SourceConfig};
//!
//! let yaml = "
//! apiVersion: cis.f5.com/v1
//! kind: VirtualServer
//! metadata: {name: shop, namespace: default}
//! spec: {host: shop.example.org, virtualServerAddress: 192.0.2.8}
//! status: {vsAddress: 192.0.2.8}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = F5Source::new(F5Kind::VirtualServer, F5SourceConfig::default());
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "shop.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "192.0.2.8");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, ProviderSpecific, Target, merge_endpoints};
use extdns_informer::ResourceKind;
use extdns_informer::view::{F5Kind, F5Server};
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey};
use extdns_source::own_hosts::OwnKind;
use extdns_source::{Evaluation, Objects, Source, SourceConfig, SourceError};

/// The `--source` name of the VirtualServer source.
pub const VIRTUAL_SERVER_SOURCE: &str = "f5-virtualserver";
/// The `--source` name of the TransportServer source.
pub const TRANSPORT_SERVER_SOURCE: &str = "f5-transportserver";

/// The `--source` name of the source over `kind`.
pub fn source_name(kind: F5Kind) -> &'static str {
    match kind {
        F5Kind::VirtualServer => VIRTUAL_SERVER_SOURCE,
        F5Kind::TransportServer => TRANSPORT_SERVER_SOURCE,
    }
}

/// The configuration of the F5 sources: only what every source shares (`--namespace`, `--label-filter`,
/// `--annotation-filter`, the annotation prefixes); external-dns gives them no flag of their own.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct F5SourceConfig {
    /// What every source shares.
    pub common: SourceConfig,
}

impl F5SourceConfig {
    /// The configuration from what every source shares.
    pub fn new(common: SourceConfig) -> Self {
        F5SourceConfig { common }
    }
}

/// The source over one of the two F5 kinds.
#[derive(Clone, Debug)]
pub struct F5Source {
    kind: F5Kind,
    config: F5SourceConfig,
}

impl F5Source {
    /// The source over the objects of `kind` in `config`'s scope.
    pub fn new(kind: F5Kind, config: F5SourceConfig) -> Self {
        F5Source { kind, config }
    }

    /// Its configuration.
    pub fn config(&self) -> &F5SourceConfig {
        &self.config
    }

    /// How the source reads its kind: an object reads nothing but itself (the pattern of
    /// [`extdns_source::own_hosts`]).
    fn servers(&self) -> OwnKind<F5Server> {
        extdns_source::own_kind!(self.kind.resource_kind())
    }

    /// The endpoints of one admitted object: nothing until the BIG-IP gave it an address.
    fn server_endpoints(&self, server: &F5Server, object: &ObjectKey) -> Vec<Endpoint> {
        if !has_address(server) {
            tracing::warn!(%object, "F5 object has no valid IP address in status.vsAddress yet; it publishes nothing");
            return Vec::new();
        }
        let annotations = &self.config.common.annotations;
        let a = &server.meta.annotations;
        let ttl = annotations.ttl(a, object);
        let targets = targets(annotations.targets(a), server);
        // external-dns passes an empty host on to the plan, where a name in no zone publishes nothing;
        // extdns drops it here to the same effect. Aliases that are empty are skipped by external-dns too.
        let no_options = ProviderSpecific::default();
        let shared = Arc::new(object.clone());
        std::iter::once(&server.host)
            .chain(&server.host_aliases)
            .filter(|h| !h.is_empty())
            .flat_map(|host| Endpoint::for_hostname(host, &targets, ttl, &no_options, ""))
            .map(|e| e.with_ref_object(Arc::clone(&shared)))
            .collect()
    }

    /// What [`Source::evaluate`] returns, without the async wrapper (nothing here waits).
    pub fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        self.servers()
            .evaluate(cluster, objects, &self.config.common, |server, object| {
                Ok::<_, std::convert::Infallible>(self.server_endpoints(server, object))
            })
    }
}

/// Whether the BIG-IP gave the object an address: `status.vsAddress` neither empty nor `None` (any case).
fn has_address(server: &F5Server) -> bool {
    !server.vs_address.is_empty() && !server.vs_address.eq_ignore_ascii_case("none")
}

/// The targets: the annotation's, else `spec.virtualServerAddress`, else `status.vsAddress`.
fn targets(annotated: Vec<Target>, server: &F5Server) -> Vec<Target> {
    if !annotated.is_empty() {
        return annotated;
    }
    [&server.virtual_server_address, &server.vs_address]
        .into_iter()
        .find(|a| !a.is_empty())
        .map(|a| vec![Target::from(a.as_str())])
        .unwrap_or_default()
}

#[async_trait]
impl Source for F5Source {
    fn name(&self) -> &str {
        source_name(self.kind)
    }

    fn watched_kinds(&self) -> Vec<ResourceKind> {
        vec![self.kind.resource_kind()]
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        Ok(self.evaluate_now(cluster, objects))
    }

    /// An F5 object reads nothing but itself: a change re-evaluates the changed objects only.
    fn affected(&self, _cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        self.servers().affected(changes)
    }

    /// Targets of one record joined across objects (external-dns's `MergeEndpoints`); then, among equal
    /// records that differ only in TTL, the one with a configured TTL first ([`extdns_source::tie`]).
    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        extdns_source::tie::configured_ttl_first(merge_endpoints(endpoints))
    }
}

#[cfg(test)]
mod tests;
