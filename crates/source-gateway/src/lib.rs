//! The Gateway API route sources: `gateway-httproute`, `gateway-grpcroute`, `gateway-tlsroute`,
//! `gateway-tcproute` and `gateway-udproute`.
//!
//! A route publishes the names it asks for (spec hostnames, the hostname annotation, the FQDN template, or
//! its listeners' hostnames), narrowed by the hostnames of the listeners it is actually attached to, pointing
//! at the addresses of the Gateways that accepted it. Attachment is read from the route's `status.parents`,
//! checked against its `spec.parentRefs` and against each Gateway's listeners (protocol, port, section name,
//! `allowedRoutes`), so a route never publishes through a Gateway that would not serve it.
//!
//! Each sync prepares the admitted Gateways once (listener hostnames parsed, namespace selectors compiled,
//! targets checked), so the work per route is a few hash lookups and no route ever scans all Gateways.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_informer::view::RouteKind;
//! use extdns_source::SourceExt;
//! use extdns_source_gateway::{GatewayRouteSource, GatewaySourceConfig};
//!
//! let yaml = r#"
//! apiVersion: gateway.networking.k8s.io/v1
//! kind: Gateway
//! metadata: {name: gw, namespace: infra}
//! spec:
//!   gatewayClassName: example
//!   listeners:
//!   - {name: http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}
//! status:
//!   addresses: [{type: IPAddress, value: 192.0.2.7}]
//! ---
//! apiVersion: gateway.networking.k8s.io/v1
//! kind: HTTPRoute
//! metadata: {name: shop, namespace: default}
//! spec:
//!   hostnames: [shop.example.org]
//!   parentRefs: [{name: gw, namespace: infra}]
//! status:
//!   parents:
//!   - parentRef: {name: gw, namespace: infra}
//!     controllerName: example.com/gateway
//!     conditions:
//!     - {type: Accepted, status: "True", reason: Accepted, message: "", lastTransitionTime: "2026-01-01T00:00:00Z"}
//! "#;
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = GatewayRouteSource::new(RouteKind::Http, GatewaySourceConfig::default());
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "shop.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "192.0.2.7");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod hostname;
mod listener;
mod parents;
mod route;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, Target, Ttl, merge_endpoints};
use extdns_informer::view::{Gateway, ListenerSet, Route, RouteKind};
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::annotations::key;
use extdns_source::{Evaluation, ObjectEndpoints, Objects, Selector, Source, SourceConfig, SourceError};

pub use hostname::{Hostname, HostnameError};
pub use listener::protocol_matches;

use hostname::narrow;
use listener::NamespaceCache;
use parents::{ListenerHost, ParentKey, Parents, in_spec};
use route::route_names;

/// The configuration of the Gateway route sources.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct GatewaySourceConfig {
    /// Route-level flags: `--namespace`, `--label-filter`, `--annotation-filter`, annotation prefixes,
    /// `--fqdn-template`, `--combine-fqdn-annotation`, `--ignore-hostname-annotation`.
    pub common: SourceConfig,
    /// `--gateway-name`: only Gateways with this name (and ListenerSets attached to them).
    pub gateway_name: Option<String>,
    /// `--gateway-namespace`: only Gateways in this namespace.
    pub gateway_namespace: Option<String>,
    /// `--gateway-label-filter`: only Gateways whose labels match.
    pub gateway_label_filter: Selector,
    /// `--gateway-listener-sets`: routes may also attach to ListenerSets.
    pub listener_sets: bool,
}

/// One `gateway-<kind>route` source.
#[derive(Clone, Debug)]
pub struct GatewayRouteSource {
    kind: RouteKind,
    config: GatewaySourceConfig,
}

impl GatewayRouteSource {
    /// The source of one route kind.
    pub fn new(kind: RouteKind, config: GatewaySourceConfig) -> Self {
        GatewayRouteSource { kind, config }
    }

    /// The route kind it reads.
    pub fn kind(&self) -> RouteKind {
        self.kind
    }

    /// What [`Source::evaluate`] returns, without the async wrapper (nothing here waits): the endpoints of
    /// each admitted route among `objects` in object order (namespace, then name), before the merge across
    /// routes. Undecodable routes (among `objects`) are failed.
    pub fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        let kind = ResourceKind::Route(self.kind);
        let (routes, gateways, listener_sets) = match objects.of_kind(kind) {
            None => {
                let routes: Vec<(ObjectKey, Arc<Route>)> = cluster
                    .routes(self.kind)
                    .into_iter()
                    .map(|r| (ObjectKey::new(kind, &r.meta.namespace, &r.meta.name), r))
                    .collect();
                let listener_sets = if self.config.listener_sets {
                    cluster.listener_sets()
                } else {
                    Vec::new()
                };
                (routes, cluster.gateways(), listener_sets)
            }
            Some(keys) => {
                let routes: Vec<(ObjectKey, Arc<Route>)> =
                    keys.filter_map(|k| Some((k.clone(), cluster.get(k)?))).collect();
                // Only the parents these routes name are prepared: a change costs what it touches.
                let (gateways, listener_sets) = self.parents_named(cluster, routes.iter().map(|(_, r)| r));
                (routes, gateways, listener_sets)
            }
        };
        let mut namespaces = NamespaceCache::new(cluster);
        let parents = Parents::build(&self.config, self.kind, &gateways, &listener_sets, &mut namespaces);

        let mut out = Vec::with_capacity(routes.len());
        let mut failed = extdns_source::undecodable(cluster, kind, objects);
        for (object, route) in routes {
            if route.kind != self.kind || !self.config.common.admits(kind, &route.meta) {
                continue;
            }
            let mut endpoints = Vec::new();
            if let Err(why) = self.route_endpoints(&route, &object, &parents, &mut namespaces, &mut endpoints) {
                failed.insert(object.clone(), Some(why));
            }
            if !endpoints.is_empty() {
                out.push(ObjectEndpoints::new(object, endpoints));
            }
        }
        Ok(Evaluation::new(out, failed))
    }

    /// The Gateways and ListenerSets `routes` name in their `spec.parentRefs`, with the Gateways those
    /// ListenerSets attach to, each once, in namespace and name order (the order of a full evaluation).
    fn parents_named<'r>(
        &self,
        cluster: &ClusterStore,
        routes: impl Iterator<Item = &'r Arc<Route>>,
    ) -> (Vec<Arc<Gateway>>, Vec<Arc<ListenerSet>>) {
        let mut gateways: BTreeMap<(String, String), Arc<Gateway>> = BTreeMap::new();
        let mut listener_sets: BTreeMap<(String, String), Arc<ListenerSet>> = BTreeMap::new();
        let mut add_gateway = |ns: &str, name: &str| {
            if let Some(gw) = cluster.gateway(ns, name) {
                gateways.entry((ns.to_string(), name.to_string())).or_insert(gw);
            }
        };
        for route in routes {
            let ns = route.meta.namespace.as_str();
            for r in &route.parent_refs {
                let key = ParentKey::of(r, ns);
                match key.kind {
                    parents::GATEWAY_KIND => add_gateway(key.namespace, key.name),
                    parents::LISTENER_SET_KIND if self.config.listener_sets => {
                        let Some(ls) = cluster.listener_set(key.namespace, key.name) else {
                            continue;
                        };
                        let gw_ns = ls
                            .parent_ref
                            .namespace
                            .as_deref()
                            .filter(|s| !s.is_empty())
                            .unwrap_or(key.namespace);
                        add_gateway(gw_ns, &ls.parent_ref.name);
                        listener_sets
                            .entry((key.namespace.to_string(), key.name.to_string()))
                            .or_insert(ls);
                    }
                    _ => {}
                }
            }
        }
        (gateways.into_values().collect(), listener_sets.into_values().collect())
    }

    /// The admitted routes a change of `changes` may alter: the changed routes;
    /// routes with a parent reference to a changed Gateway or ListenerSet, or to a ListenerSet attached to
    /// a changed Gateway or living in a changed Namespace (`allowedListeners` selectors read its labels);
    /// and every route of a changed Namespace (`allowedRoutes` selectors read its labels).
    fn affected_routes(&self, cluster: &ClusterStore, changes: &ChangeSet) -> BTreeSet<ObjectKey> {
        let kind = ResourceKind::Route(self.kind);
        let mut out: BTreeSet<ObjectKey> = changes.of_kind(kind).cloned().collect();
        // The store's reverse indexes name the routes and ListenerSets of a parent, so a change costs
        // what attaches to it, not every route, Gateway and ListenerSet.
        let mut listener_sets: BTreeSet<(String, String)> = BTreeSet::new();
        let mut routes: Vec<Arc<Route>> = Vec::new();
        for gw in changes.of_kind(ResourceKind::Gateway) {
            routes.extend(cluster.routes_of_parent(self.kind, ResourceKind::Gateway, &gw.namespace, &gw.name));
            if self.config.listener_sets {
                let attached = cluster.listener_sets_of_gateway(&gw.namespace, &gw.name);
                listener_sets.extend(attached.iter().map(|ls| pair(&ls.meta.namespace, &ls.meta.name)));
            }
        }
        for ns in changes.of_kind(ResourceKind::Namespace) {
            routes.extend(cluster.routes_in(self.kind, &ns.name));
            if self.config.listener_sets {
                let living = cluster.listener_sets_in(&ns.name);
                listener_sets.extend(living.iter().map(|ls| pair(&ls.meta.namespace, &ls.meta.name)));
            }
        }
        if self.config.listener_sets {
            listener_sets.extend(
                changes
                    .of_kind(ResourceKind::ListenerSet)
                    .map(|k| pair(&k.namespace, &k.name)),
            );
        }
        for (ns, name) in &listener_sets {
            routes.extend(cluster.routes_of_parent(self.kind, ResourceKind::ListenerSet, ns, name));
        }
        out.extend(
            routes
                .iter()
                .filter(|r| r.kind == self.kind && self.config.common.admits(kind, &r.meta))
                .map(|r| ObjectKey::new(kind, &r.meta.namespace, &r.meta.name)),
        );
        out
    }

    /// The endpoints of `route` (`object`), appended to `out`; `Err` with why when the route could not be
    /// evaluated whole (what it could evaluate is still appended).
    fn route_endpoints(
        &self,
        route: &Route,
        object: &ObjectKey,
        parents: &Parents<'_>,
        namespaces: &mut NamespaceCache<'_>,
        out: &mut Vec<Endpoint>,
    ) -> Result<(), String> {
        let source_name = self.kind.source_name();
        let route_ns = route.meta.namespace.as_str();
        if route.parent_refs.is_empty() {
            tracing::debug!(%object, "no parentRefs: nothing to publish");
            return Ok(());
        }
        // A template that cannot run on this route skips the route, like any other bad input on one object:
        // the rest of the cluster still syncs, and the route's records stay as they are.
        let names = match route_names(&self.config, route, object, source_name) {
            Ok(names) => names,
            Err(e) => {
                tracing::warn!(
                    %object,
                    field = "FQDN template",
                    "template failed, route skipped; its records are kept as they are: {e}"
                );
                return Err(e.to_string());
            }
        };
        let evaluated = names.invalid.clone().map_or(Ok(()), Err);
        if names.names.is_empty() && !names.listener_fallback {
            return evaluated;
        }

        // Name → the target lists (one per parent) of every parent and listener the route is attached to.
        let mut hosts: BTreeMap<&str, Vec<&[Target]>> = BTreeMap::new();
        for status in &route.parents {
            let key = ParentKey::of(&status.parent_ref, route_ns);
            if !in_spec(route, &status.parent_ref) {
                tracing::debug!(
                    %object,
                    parent = key.name,
                    "status parent is not in spec.parentRefs; ignored"
                );
                continue;
            }
            let Some(parent) = parents.get(&key) else { continue };
            if status.accepted.as_deref() != Some("True") {
                continue;
            }
            let section = status.parent_ref.section_name.as_deref().filter(|s| !s.is_empty());
            for l in &parent.listeners {
                if !l.usable
                    || section.is_some_and(|s| s != l.name)
                    || status.parent_ref.port.is_some_and(|p| p != l.port)
                    || !l.namespaces.allows(route_ns, l.owner_namespace, namespaces)
                {
                    continue;
                }
                let listener_host = match &l.host {
                    ListenerHost::Invalid => continue,
                    ListenerHost::Any => None,
                    ListenerHost::Name(h) => Some(h),
                };
                // Without names of its own (fallback), the route takes the listener's hostname; else each
                // of its names narrowed by the listener's.
                let fallback = listener_host.filter(|_| names.listener_fallback);
                let narrowed = names.names.iter().filter_map(|n| narrow(listener_host, n));
                for h in fallback.into_iter().chain(narrowed) {
                    let lists = hosts.entry(h.as_str()).or_default();
                    if !lists.iter().any(|l| std::ptr::eq(*l, &*parent.targets)) {
                        lists.push(&parent.targets);
                    }
                }
            }
        }
        if hosts.is_empty() {
            return evaluated;
        }

        let annotations = &self.config.common.annotations;
        // The object's name is only spelled out for the warning an invalid TTL gives.
        let ttl = match annotations.get(&route.meta.annotations, key::TTL) {
            Some(_) => annotations.ttl(&route.meta.annotations, object),
            None => Ttl(0),
        };
        let (provider_specific, set_identifier) = annotations.provider_specific(&route.meta.annotations);
        // One key shared by every endpoint of the route.
        let shared = Arc::new(object.clone());
        let mut union: Vec<Target> = Vec::new();
        for (host, lists) in hosts {
            // Each parent's list is already sorted and deduplicated; only a union of several needs work.
            let targets: &[Target] = match lists.as_slice() {
                [one] => one,
                many => {
                    union.clear();
                    union.extend(many.iter().flat_map(|l| l.iter().cloned()));
                    union.sort_unstable();
                    union.dedup();
                    &union
                }
            };
            for e in Endpoint::for_hostname(host, targets, ttl, &provider_specific, &set_identifier) {
                out.push(e.with_ref_object(Arc::clone(&shared)));
            }
        }
        evaluated
    }
}

fn pair(namespace: &str, name: &str) -> (String, String) {
    (namespace.to_string(), name.to_string())
}

/// The merge across routes: targets of one name joined, then the endpoint with a configured TTL first.
/// Both treat each name on its own.
fn merge_routes(endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    extdns_source::tie::configured_ttl_first(merge_endpoints(endpoints))
}

#[async_trait]
impl Source for GatewayRouteSource {
    fn name(&self) -> &str {
        self.kind.source_name()
    }

    fn watched_kinds(&self) -> Vec<ResourceKind> {
        let mut kinds = vec![
            ResourceKind::Route(self.kind),
            ResourceKind::Gateway,
            ResourceKind::Namespace,
        ];
        if self.config.listener_sets {
            kinds.push(ResourceKind::ListenerSet);
        }
        kinds
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        self.evaluate_now(cluster, objects)
    }

    fn affected(&self, cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        if changes.is_everything() {
            return None;
        }
        Some(self.affected_routes(cluster, changes))
    }

    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        merge_routes(endpoints)
    }
}

#[cfg(test)]
mod tests;
