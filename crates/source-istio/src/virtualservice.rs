//! `--source=istio-virtualservice`: the hosts of VirtualServices, pointing at the Gateways they bind to.

use std::collections::BTreeSet;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, Target};
use extdns_informer::view::{ISTIO_MESH_GATEWAY, VirtualService, namespaced_name};
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::own_hosts::OwnKind;
use extdns_source::{Evaluation, Objects, Source, SourceError};

use crate::affected::affected_virtual_services;
use crate::gateway::with_object;
use crate::hosts::binds;
use crate::targets::GatewayTargets;
use crate::{IstioError, IstioSourceConfig, VIRTUAL_SERVICE_SOURCE_NAME};

const KIND: ResourceKind = ResourceKind::VirtualService;

/// How the source reads VirtualServices from the store.
const VIRTUAL_SERVICES: OwnKind<VirtualService> = extdns_source::own_kind!(KIND);

/// The `istio-virtualservice` source.
#[derive(Clone, Debug, Default)]
pub struct VirtualServiceSource {
    config: IstioSourceConfig,
}

impl VirtualServiceSource {
    /// The source over the VirtualServices in `config`'s scope.
    pub fn new(config: IstioSourceConfig) -> Self {
        VirtualServiceSource { config }
    }

    /// What [`Source::evaluate`] returns, without the async wrapper (nothing here waits).
    pub fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        let mut targets = GatewayTargets::new(cluster, &self.config);
        let namespace = self.config.common.namespace.as_deref().filter(|ns| !ns.is_empty());
        VIRTUAL_SERVICES.evaluate(cluster, objects, &self.config.common, |vs, object| {
            let mut bound = Bound {
                cluster,
                vs,
                object,
                namespace,
                targets: &mut targets,
            };
            self.virtual_service_endpoints(&mut bound).inspect_err(|why| {
                tracing::warn!(%object, "VirtualService skipped; its records are kept as they are: {why}");
            })
        })
    }

    /// The endpoints of one admitted VirtualService, or why it cannot be evaluated.
    fn virtual_service_endpoints(&self, bound: &mut Bound<'_, '_>) -> Result<Vec<Endpoint>, IstioError> {
        let common = &self.config.common;
        let annotations = &common.annotations;
        let (vs, object) = (bound.vs, bound.object);
        let a = &vs.meta.annotations;
        let ttl = annotations.ttl(a, object);
        let (provider_specific, set_identifier) = annotations.provider_specific(a);
        let own_targets = annotations.targets(a);
        let for_host = |host: &str, targets: &[Target]| -> Vec<Endpoint> {
            Endpoint::for_hostname(host, targets, ttl, &provider_specific, &set_identifier)
        };

        let mut hosts: Vec<String> = vs.hosts.iter().filter_map(|h| spec_host(h)).map(String::from).collect();
        if !common.ignore_hostname_annotation {
            hosts.extend(annotations.hostnames(a));
        }
        let mut endpoints = Vec::new();
        for host in &hosts {
            if own_targets.is_empty() {
                endpoints.extend(for_host(host, &bound.gateway_targets(host)?));
            } else {
                endpoints.extend(for_host(host, &own_targets));
            }
        }

        // The template gives the names when nothing else did, or adds to them with
        // `--combine-fqdn-annotation`. As external-dns, its names point at the Gateways' targets even
        // where the VirtualService has a target annotation.
        if let Some(template) = &common.fqdn_template
            && (common.combine_fqdn_annotation || endpoints.is_empty())
        {
            let names = template
                .execute(vs, VIRTUAL_SERVICE_SOURCE_NAME, annotations)
                .map_err(IstioError::Template)?;
            for host in &names {
                endpoints.extend(for_host(host, &bound.gateway_targets(host)?));
            }
        }
        Ok(with_object(endpoints, object))
    }
}

/// A `spec.hosts` entry as external-dns publishes it: empty and the bare `*` are skipped, then a
/// `namespace/` prefix is dropped (an entry that is nothing after it is skipped too).
fn spec_host(host: &str) -> Option<&str> {
    if host.is_empty() || host == "*" {
        return None;
    }
    let mut parts = host.split('/');
    let host = match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(name), None) => name,
        _ => host,
    };
    (!host.is_empty()).then_some(host)
}

/// One VirtualService and what it reads its Gateways through.
struct Bound<'v, 'c> {
    cluster: &'c ClusterStore,
    vs: &'v VirtualService,
    object: &'v ObjectKey,
    /// `--namespace`: Gateways outside it are not seen.
    namespace: Option<&'c str>,
    targets: &'v mut GatewayTargets<'c>,
}

impl Bound<'_, '_> {
    /// The targets of every Gateway of `spec.gateways` the VirtualService binds to for `host`, in the
    /// Gateways' order, each once. `mesh` is no Gateway; a Gateway that does not exist is passed over.
    fn gateway_targets(&mut self, host: &str) -> Result<Vec<Target>, IstioError> {
        let own_ns = self.vs.meta.namespace.as_str();
        let mut out: Vec<Target> = Vec::new();
        for reference in &self.vs.gateways {
            if reference.is_empty() || reference == ISTIO_MESH_GATEWAY {
                continue;
            }
            let Some((ns, name)) = namespaced_name(reference, own_ns) else {
                return Err(IstioError::InvalidGatewayReference {
                    value: reference.clone(),
                });
            };
            let gw = self
                .cluster
                .istio_gateway(ns, name)
                .filter(|_| self.namespace.is_none_or(|scope| scope == ns));
            let Some(gw) = gw else {
                tracing::warn!(object = %self.object, gateway = reference, "references a Gateway that does not exist");
                continue;
            };
            if !binds(self.vs, &gw, host) {
                continue;
            }
            for t in self.targets.of(&gw)?.iter() {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl Source for VirtualServiceSource {
    fn name(&self) -> &str {
        VIRTUAL_SERVICE_SOURCE_NAME
    }

    /// VirtualServices, the Gateways they bind to, and what those Gateways' targets come from.
    fn watched_kinds(&self) -> Vec<ResourceKind> {
        vec![
            KIND,
            ResourceKind::IstioGateway,
            ResourceKind::Service,
            ResourceKind::Ingress,
        ]
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        Ok(self.evaluate_now(cluster, objects))
    }

    /// The changed VirtualServices and those naming a Gateway whose targets or hosts a change may alter;
    /// each admitted by the filters.
    fn affected(&self, cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        if changes.is_everything() {
            return None;
        }
        let out = affected_virtual_services(cluster, changes);
        Some(out)
    }

    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        crate::merge(endpoints)
    }
}
