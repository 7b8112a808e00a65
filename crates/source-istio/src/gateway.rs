//! `--source=istio-gateway`: the hosts of Istio Gateways' servers.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::Endpoint;
use extdns_informer::view::IstioGateway;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::own_hosts::OwnKind;
use extdns_source::{Evaluation, Objects, Source, SourceError};

use crate::affected::affected_gateways;
use crate::hosts::published_host;
use crate::targets::GatewayTargets;
use crate::{GATEWAY_SOURCE_NAME, IstioError, IstioSourceConfig};

const KIND: ResourceKind = ResourceKind::IstioGateway;

/// How the source reads Gateways from the store.
const GATEWAYS: OwnKind<IstioGateway> = extdns_source::own_kind!(KIND);

/// The `istio-gateway` source.
#[derive(Clone, Debug, Default)]
pub struct IstioGatewaySource {
    config: IstioSourceConfig,
}

impl IstioGatewaySource {
    /// The source over the Istio Gateways in `config`'s scope.
    pub fn new(config: IstioSourceConfig) -> Self {
        IstioGatewaySource { config }
    }

    /// What [`Source::evaluate`] returns, without the async wrapper (nothing here waits).
    pub fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        let mut targets = GatewayTargets::new(cluster, &self.config);
        GATEWAYS.evaluate(cluster, objects, &self.config.common, |gw, object| {
            self.gateway_endpoints(gw, object, &mut targets).inspect_err(|why| {
                tracing::warn!(%object, "Gateway skipped; its records are kept as they are: {why}");
            })
        })
    }

    /// The endpoints of one admitted Gateway, or why it cannot be evaluated.
    fn gateway_endpoints(
        &self,
        gw: &IstioGateway,
        object: &ObjectKey,
        targets: &mut GatewayTargets<'_>,
    ) -> Result<Vec<Endpoint>, IstioError> {
        let common = &self.config.common;
        let annotations = &common.annotations;
        let a = &gw.meta.annotations;
        let targets = targets.of(gw)?;
        if targets.is_empty() {
            // external-dns makes nothing of a Gateway without targets, template names included.
            return Ok(Vec::new());
        }
        let ttl = annotations.ttl(a, object);
        let (provider_specific, set_identifier) = annotations.provider_specific(a);
        let for_host = |host: &str| -> Vec<Endpoint> {
            Endpoint::for_hostname(host, &targets, ttl, &provider_specific, &set_identifier)
        };

        let mut hosts: Vec<String> = gw
            .hosts
            .iter()
            .filter_map(|h| published_host(h))
            .map(String::from)
            .collect();
        if !common.ignore_hostname_annotation {
            hosts.extend(annotations.hostnames(a));
        }
        let mut endpoints: Vec<Endpoint> = hosts.iter().flat_map(|h| for_host(h)).collect();

        // The template gives the names when nothing else did, or adds to them with
        // `--combine-fqdn-annotation`.
        if let Some(template) = &common.fqdn_template
            && (common.combine_fqdn_annotation || endpoints.is_empty())
        {
            let names = template
                .execute(gw, GATEWAY_SOURCE_NAME, annotations)
                .map_err(IstioError::Template)?;
            endpoints.extend(names.iter().flat_map(|h| for_host(h)));
        }
        Ok(with_object(endpoints, object))
    }
}

/// `endpoints`, each naming `object` (one shared key).
pub(crate) fn with_object(endpoints: Vec<Endpoint>, object: &ObjectKey) -> Vec<Endpoint> {
    let shared = Arc::new(object.clone());
    endpoints
        .into_iter()
        .map(|e| e.with_ref_object(Arc::clone(&shared)))
        .collect()
}

#[async_trait]
impl Source for IstioGatewaySource {
    fn name(&self) -> &str {
        GATEWAY_SOURCE_NAME
    }

    /// Gateways, and what their targets come from: Services (the ingress gateway's) and Ingresses (the
    /// `ingress` annotation), both read by external-dns's source too.
    fn watched_kinds(&self) -> Vec<ResourceKind> {
        vec![KIND, ResourceKind::Service, ResourceKind::Ingress]
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        Ok(self.evaluate_now(cluster, objects))
    }

    /// The changed Gateways, those selecting a changed Service (by its labels before or after the change)
    /// and those naming a changed Ingress; each admitted by the filters.
    fn affected(&self, cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        if changes.is_everything() {
            return None;
        }
        let out = affected_gateways(cluster, changes);
        Some(out)
    }

    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        crate::merge(endpoints)
    }
}
