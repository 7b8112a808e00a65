//! The OpenShift source (`--source=openshift-route`): DNS records for `route.openshift.io/v1` Routes.
//!
//! A Route publishes the host a router admitted it under and its hostname annotation (or the FQDN
//! template's names), pointed at the `target` annotation or else at that router's canonical hostname
//! (`status.ingress[].routerCanonicalHostname`). The router is the one `--openshift-router-name` names, or,
//! without it, the first in `status.ingress` that admitted the route and has a canonical hostname; as
//! external-dns, a Route no such router admitted publishes no host of its own, whatever its `spec.host`.
//! See docs/sources/openshift-route.md.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::SourceExt;
//! use extdns_source_openshift::{RouteSource, RouteSourceConfig};
//!
//! let yaml = "
//! apiVersion: route.openshift.io/v1
//! kind: Route
//! metadata: {name: shop, namespace: default}
//! spec: {host: shop.apps.example.org, to: {kind: Service, name: shop}}
//! status:
//!   ingress:
//!   - host: shop.apps.example.org
//!     routerName: default
//!     routerCanonicalHostname: router-default.apps.example.org
//!     conditions: [{type: Admitted, status: 'True'}]
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = RouteSource::new(RouteSourceConfig::default());
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "shop.apps.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "router-default.apps.example.org");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use extdns_endpoint::Target;
use extdns_informer::view::{OpenShiftRoute, RouterIngress};
use extdns_informer::{ClusterStore, ResourceKind};
use extdns_source::own_hosts::{OwnHosts, OwnKind, OwnKindSource, object_endpoints};
use extdns_source::{Evaluation, Objects, SourceConfig};

/// The `--source` name.
pub const SOURCE_NAME: &str = "openshift-route";

/// How the source reads Routes from the store.
const ROUTES: OwnKind<OpenShiftRoute> = extdns_source::own_kind!(ResourceKind::OpenShiftRoute);

/// The configuration of the openshift-route source.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct RouteSourceConfig {
    /// `--namespace`, the filters, the annotation prefixes, `--fqdn-template`,
    /// `--combine-fqdn-annotation`, `--ignore-hostname-annotation`.
    pub common: SourceConfig,
    /// `--openshift-router-name`: publish what this router admitted; `None` (or empty) takes the first
    /// router that admitted the Route.
    pub router_name: Option<String>,
}

impl RouteSourceConfig {
    /// The configuration from what every source shares and `--openshift-router-name`.
    pub fn new(common: SourceConfig, router_name: Option<String>) -> Self {
        RouteSourceConfig { common, router_name }
    }
}

/// The openshift-route source.
#[derive(Clone, Debug, Default)]
pub struct RouteSource {
    config: RouteSourceConfig,
}

impl RouteSource {
    /// The source over Routes in `config`'s scope.
    pub fn new(config: RouteSourceConfig) -> Self {
        RouteSource { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &RouteSourceConfig {
        &self.config
    }

    /// The `status.ingress` entry whose router publishes the Route: among those that admitted it and have a
    /// canonical hostname, the configured router's, or the first when none is configured.
    fn publishing_router<'a>(&self, route: &'a OpenShiftRoute) -> Option<&'a RouterIngress> {
        let wanted = self.config.router_name.as_deref().filter(|n| !n.is_empty());
        route
            .ingress
            .iter()
            .filter(|i| i.admitted && !i.router_canonical_hostname.is_empty())
            .find(|i| wanted.is_none_or(|w| *w == *i.router_name))
    }
}

impl OwnKindSource for RouteSource {
    type View = OpenShiftRoute;
    const NAME: &'static str = SOURCE_NAME;
    const KIND: OwnKind<OpenShiftRoute> = ROUTES;

    fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        let common = &self.config.common;
        ROUTES.evaluate(cluster, objects, common, |route, object| {
            let own = match self.publishing_router(route) {
                Some(router) => OwnHosts {
                    hosts: vec![&router.host],
                    status_targets: vec![Target::from(&*router.router_canonical_hostname)],
                },
                None => OwnHosts::default(),
            };
            object_endpoints(common, SOURCE_NAME, route, object, own)
        })
    }
}

#[cfg(test)]
mod tests;
