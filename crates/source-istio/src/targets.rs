//! Where an Istio Gateway points: its target annotation; else the load balancer of the Ingress its
//! `ingress` annotation names; else the addresses of the Services whose selectors its `spec.selector`
//! selects (the ingress gateway's Service). Both Istio sources read Gateways so, once per evaluation each
//! ([`GatewayTargets`]).

use std::collections::HashMap;
use std::sync::Arc;

use extdns_endpoint::Target;
use extdns_informer::view::{
    ISTIO_INGRESS_ANNOTATION, ISTIO_INGRESS_ANNOTATION_LEGACY, IstioGateway, LoadBalancerIngress, Service,
    namespaced_name,
};
use extdns_informer::{ClusterStore, StrMap};
use extdns_source::PREFIX_ALPHA;

use crate::{IstioError, IstioSourceConfig};

/// The targets of the Gateways one evaluation reads, each worked out once: a Gateway several
/// VirtualServices bind to costs one walk over the Services.
pub(crate) struct GatewayTargets<'c> {
    cluster: &'c ClusterStore,
    config: &'c IstioSourceConfig,
    /// The Services in scope, listed on first need.
    services: Option<Vec<Arc<Service>>>,
    known: HashMap<(String, String), Found>,
}

/// A Gateway's targets, or why they cannot be known.
type Found = Result<Arc<[Target]>, IstioError>;

impl<'c> GatewayTargets<'c> {
    pub(crate) fn new(cluster: &'c ClusterStore, config: &'c IstioSourceConfig) -> Self {
        GatewayTargets {
            cluster,
            config,
            services: None,
            known: HashMap::new(),
        }
    }

    /// The targets of `gw`, or why they cannot be known (an Ingress annotation that names nothing).
    pub(crate) fn of(&mut self, gw: &IstioGateway) -> Result<Arc<[Target]>, IstioError> {
        let key = (gw.meta.namespace.to_string(), gw.meta.name.clone());
        if let Some(known) = self.known.get(&key) {
            return known.clone();
        }
        let found = self.work_out(gw).map(Arc::from);
        self.known.insert(key, found.clone());
        found
    }

    fn work_out(&mut self, gw: &IstioGateway) -> Result<Vec<Target>, IstioError> {
        let annotations = &gw.meta.annotations;
        let own = self.config.common.annotations.targets(annotations);
        if !own.is_empty() {
            return Ok(own);
        }
        if let Some(reference) = self.ingress_annotation(annotations) {
            return self.ingress_targets(gw, reference);
        }
        Ok(self.service_targets(&gw.selector))
    }

    /// The Ingress annotation: external-dns's key at its default prefix, whatever `--annotation-prefix`
    /// says; where the legacy prefix is read, the legacy key when the other is absent (external-dns copies
    /// legacy keys over then). Empty is none.
    fn ingress_annotation<'a>(&self, annotations: &'a StrMap) -> Option<&'a str> {
        let legacy_read = self
            .config
            .common
            .annotations
            .prefixes()
            .iter()
            .any(|p| p == PREFIX_ALPHA);
        annotations
            .get(ISTIO_INGRESS_ANNOTATION)
            .or_else(|| {
                legacy_read
                    .then(|| annotations.get(ISTIO_INGRESS_ANNOTATION_LEGACY))
                    .flatten()
            })
            .filter(|s| !s.is_empty())
    }

    /// The load balancer of the Ingress `reference` names (`namespace/name`, or `name` in the Gateway's).
    fn ingress_targets(&self, gw: &IstioGateway, reference: &str) -> Result<Vec<Target>, IstioError> {
        let gateway = || format!("{}/{}", gw.meta.namespace, gw.meta.name);
        let Some((ns, name)) = namespaced_name(reference, &gw.meta.namespace) else {
            return Err(IstioError::InvalidIngressReference {
                gateway: gateway(),
                value: reference.to_string(),
            });
        };
        let Some(ingress) = self.cluster.ingress(ns, name) else {
            return Err(IstioError::IngressNotFound {
                gateway: gateway(),
                ingress: format!("{ns}/{name}"),
            });
        };
        Ok(load_balancer(&ingress.load_balancer_ingress).collect())
    }

    /// The addresses of every Service in scope whose `spec.selector` holds each label of `selector` (an
    /// empty one selects every Service): its external IPs when it has any, else its load balancer's
    /// addresses. Sorted and deduplicated, so the order Services are listed in does not show.
    fn service_targets(&mut self, selector: &StrMap) -> Vec<Target> {
        let (cluster, config) = (self.cluster, self.config);
        let services = self.services.get_or_insert_with(|| {
            let in_scope = config.common.namespace.as_deref().filter(|ns| !ns.is_empty());
            cluster
                .services()
                .into_iter()
                .filter(|s| in_scope.is_none_or(|ns| s.meta.namespace == ns))
                .collect()
        });
        let mut out: Vec<Target> = Vec::new();
        for svc in services.iter().filter(|s| selects(selector, &s.selector)) {
            if svc.external_ips.is_empty() {
                out.extend(load_balancer(&svc.load_balancer_ingress));
            } else {
                out.extend(svc.external_ips.iter().map(|ip| Target::from(&**ip)));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Whether a Gateway's `selector` selects a Service whose own selector is `service_selector`: every label
/// of the first is in the second (an empty selector selects every Service, one without a selector too).
pub(crate) fn selects(selector: &StrMap, service_selector: &StrMap) -> bool {
    selector.iter().all(|(k, v)| service_selector.get(k) == Some(v))
}

/// Each load balancer entry's IP, else its hostname; entries with neither are skipped.
fn load_balancer(entries: &[LoadBalancerIngress]) -> impl Iterator<Item = Target> + '_ {
    entries.iter().filter_map(|lb| {
        let ip = lb.ip.as_deref().filter(|s| !s.is_empty());
        ip.or(lb.hostname.as_deref().filter(|s| !s.is_empty()))
            .map(Target::from)
    })
}
