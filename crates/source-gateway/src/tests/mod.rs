//! The rules of the Gateway route sources, one test per rule, on clusters built directly from views.

use extdns_endpoint::{Endpoint, RecordType, Ttl};
use extdns_informer::ClusterStore;
use extdns_informer::view::{
    AllowedListeners, AllowedRoutes, Gateway, LabelSelector, LabelSelectorRequirement, Listener, ListenerSet, Meta,
    Namespace, ParentReference, Route, RouteGroupKind, RouteKind, RouteParentStatus,
};
use extdns_source::pipeline::testing::lines;
use extdns_source::{Annotations, Selector, SelectorError, SourceConfig, SourceExt, SourceOutput};
use extdns_test_support::cli::assert_mentions;
use extdns_test_support::logs::warnings;

use super::*;

mod incremental;
mod listeners;
mod parents;
mod routes;
mod targets;

const GA: &str = "external-dns.kubernetes.io/";
const ALPHA: &str = "external-dns.alpha.kubernetes.io/";

// ------------------------------------------------------------------------------------------------ builders

fn meta(ns: &str, name: &str) -> Meta {
    Meta {
        name: name.into(),
        namespace: ns.into(),
        ..Meta::default()
    }
}

/// Setting the labels and annotations of the test objects in place or while building them.
trait Labelled: Sized {
    fn meta_mut(&mut self) -> &mut Meta;

    fn annotate(&mut self, annotations: &[(&str, &str)]) {
        self.meta_mut().annotations = annotations.iter().copied().collect();
    }

    fn labelled(mut self, labels: &[(&str, &str)]) -> Self {
        self.meta_mut().labels = labels.iter().copied().collect();
        self
    }

    fn annotated(mut self, annotations: &[(&str, &str)]) -> Self {
        self.annotate(annotations);
        self
    }

    /// Built with the annotation `key` under `prefix` (`GA` or `ALPHA`) set to `value`, beside those it has.
    fn with_annotation(mut self, prefix: &str, key: &str, value: &str) -> Self {
        let key = format!("{prefix}{key}");
        let meta = self.meta_mut();
        meta.annotations = meta.annotations.iter().chain([(key.as_str(), value)]).collect();
        self
    }
}

impl Labelled for Route {
    fn meta_mut(&mut self) -> &mut Meta {
        &mut self.meta
    }
}

impl Labelled for Gateway {
    fn meta_mut(&mut self) -> &mut Meta {
        &mut self.meta
    }
}

impl Labelled for ListenerSet {
    fn meta_mut(&mut self) -> &mut Meta {
        &mut self.meta
    }
}

fn listener(name: &str, protocol: &str, port: i32, hostname: Option<&str>) -> Listener {
    Listener {
        name: name.into(),
        protocol: protocol.into(),
        port,
        hostname: hostname.map(str::to_string),
        allowed_routes: Some(AllowedRoutes {
            namespaces_from: Some("All".into()),
            ..AllowedRoutes::default()
        }),
    }
}

fn http(name: &str, hostname: Option<&str>) -> Listener {
    listener(name, "HTTP", 80, hostname)
}

fn allowing(mut l: Listener, from: Option<&str>, selector: Option<LabelSelector>, kinds: &[&str]) -> Listener {
    l.allowed_routes = Some(AllowedRoutes {
        namespaces_from: from.map(str::to_string),
        namespaces_selector: selector,
        kinds: kinds
            .iter()
            .map(|k| RouteGroupKind {
                group: None,
                kind: k.to_string(),
            })
            .collect(),
    });
    l
}

fn gateway(ns: &str, name: &str, listeners: Vec<Listener>, addresses: &[&str]) -> Gateway {
    Gateway {
        meta: meta(ns, name),
        gateway_class_name: "example".into(),
        listeners,
        allowed_listeners: None,
        addresses: addresses.iter().map(|s| s.to_string()).collect(),
    }
}

/// The usual Gateway, `infra/gw` at 1.2.3.4, with `listeners`.
fn infra_gw(listeners: Vec<Listener>) -> Gateway {
    gateway("infra", "gw", listeners, &["1.2.3.4"])
}

/// A ListenerSet on `parent`, accepted with all its listeners.
fn listener_set(ns: &str, name: &str, parent: ParentReference, listeners: Vec<Listener>) -> ListenerSet {
    let accepted_listeners = listeners.iter().map(|l| l.name.clone()).collect();
    ListenerSet {
        meta: meta(ns, name),
        parent_ref: parent,
        listeners,
        accepted: true,
        accepted_listeners,
    }
}

/// A reference to a Gateway in the referring object's own namespace.
fn local_ref(name: &str) -> ParentReference {
    ParentReference {
        name: name.into(),
        ..ParentReference::default()
    }
}

fn gw_ref(ns: &str, name: &str) -> ParentReference {
    ParentReference {
        namespace: Some(ns.into()),
        name: name.into(),
        ..ParentReference::default()
    }
}

fn accepted(r: ParentReference) -> RouteParentStatus {
    RouteParentStatus {
        parent_ref: r,
        accepted: Some("True".into()),
    }
}

/// A route attached (spec and status, Accepted) to each given parent.
fn route(kind: RouteKind, ns: &str, name: &str, hostnames: &[&str], parents: &[ParentReference]) -> Route {
    Route {
        kind,
        meta: meta(ns, name),
        hostnames: hostnames.iter().map(|s| s.to_string()).collect(),
        parent_refs: parents.to_vec(),
        parents: parents.iter().cloned().map(accepted).collect(),
        template_fields: None,
    }
}

fn httproute(ns: &str, name: &str, hostnames: &[&str], parents: &[ParentReference]) -> Route {
    route(RouteKind::Http, ns, name, hostnames, parents)
}

/// HTTPRoute `apps/web` for `hostname` on `parent` (spec and status).
fn web_on(hostname: &str, parent: ParentReference) -> Route {
    httproute("apps", "web", &[hostname], &[parent])
}

/// A route of `kind` attached to the usual Gateway `infra/gw`.
fn attached_kind(kind: RouteKind, ns: &str, name: &str, hostnames: &[&str]) -> Route {
    route(kind, ns, name, hostnames, &[gw_ref("infra", "gw")])
}

/// An HTTPRoute attached to the usual Gateway `infra/gw`, named `hostnames` in its spec and `annotation` by
/// the hostname annotation.
fn named_by_annotation(ns: &str, name: &str, hostnames: &[&str], annotation: &str) -> Route {
    attached(ns, name, hostnames).with_annotation(GA, "hostname", annotation)
}

/// An HTTPRoute attached to the usual Gateway `infra/gw`.
fn attached(ns: &str, name: &str, hostnames: &[&str]) -> Route {
    attached_kind(RouteKind::Http, ns, name, hostnames)
}

fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    Namespace {
        name: name.into(),
        labels: labels.iter().copied().collect(),
    }
}

fn selector(labels: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        match_expressions: vec![],
    }
}

/// The usual world: Gateway `infra/gw` with one HTTP listener (any hostname, routes from all namespaces)
/// at 1.2.3.4.
fn world() -> ClusterStore {
    world_with(vec![http("http", None)])
}

/// A world of the usual Gateway alone, with `listeners`.
fn world_with(listeners: Vec<Listener>) -> ClusterStore {
    let mut c = ClusterStore::new();
    c.add(infra_gw(listeners));
    c
}

fn config() -> GatewaySourceConfig {
    GatewaySourceConfig::default()
}

/// `cfg` with what every source shares changed by `f`.
fn sharing(mut cfg: GatewaySourceConfig, f: impl FnOnce(&mut SourceConfig)) -> GatewaySourceConfig {
    f(&mut cfg.common);
    cfg
}

fn run_kind(kind: RouteKind, cfg: GatewaySourceConfig, c: &ClusterStore) -> Vec<Endpoint> {
    match collect(&GatewayRouteSource::new(kind, cfg), c) {
        Ok(out) => out.endpoints,
        Err(e) => panic!("source failed: {e}"),
    }
}

/// The whole cluster's evaluation, as the pipeline makes it.
fn collect(source: &GatewayRouteSource, c: &ClusterStore) -> Result<SourceOutput, SourceError> {
    incremental::block_on(source.evaluate_all(c))
}

fn run(cfg: GatewaySourceConfig, c: &ClusterStore) -> Vec<Endpoint> {
    run_kind(RouteKind::Http, cfg, c)
}

/// The default source's endpoints in `c` and the warnings it logged on the way.
fn run_warned(c: &ClusterStore) -> (Vec<Endpoint>, String) {
    warnings(|| run(config(), c))
}

/// The default source's endpoints for `routes` in the usual world.
fn published(routes: impl IntoIterator<Item = Route>) -> Vec<Endpoint> {
    let mut c = world();
    c.extend(routes);
    run(config(), &c)
}

/// `cfg` with `--label-filter`.
fn label_filtered(cfg: GatewaySourceConfig, selector: &str) -> Result<GatewaySourceConfig, SelectorError> {
    let label_filter = Selector::parse(selector)?;
    Ok(sharing(cfg, |c| c.label_filter = label_filter))
}

/// `cfg` with `--annotation-filter`.
fn annotation_filtered(cfg: GatewaySourceConfig, selector: &str) -> Result<GatewaySourceConfig, SelectorError> {
    let annotation_filter = Selector::parse(selector)?;
    Ok(sharing(cfg, |c| c.annotation_filter = annotation_filter))
}

fn names(eps: &[Endpoint]) -> Vec<String> {
    let mut v: Vec<String> = eps.iter().map(|e| e.dns_name.clone()).collect();
    v.sort();
    v.dedup();
    v
}

fn ls_ref(ns: &str, name: &str) -> ParentReference {
    ParentReference {
        kind: Some("ListenerSet".into()),
        ..gw_ref(ns, name)
    }
}

fn with_listener_sets() -> GatewaySourceConfig {
    GatewaySourceConfig {
        listener_sets: true,
        ..config()
    }
}
