//! From the API types (k8s-openapi, gateway-api) to the compact views sources read.
//!
//! Both the live informer and the manifest loader go through these conversions (each API type's
//! [`Watched`](crate::Watched) implementation, used by the one ingest path, `watched.rs`), so a
//! field a source needs is read the same way whichever backs the cluster. Only what some source reads is copied; the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation (a full copy of the object) never is.

use std::collections::BTreeMap;

use gateway_api::experimental::tcproutes::TcpRoute;
use gateway_api::experimental::udproutes::UdpRoute;
use gateway_api::gateways::{
    Gateway as GwGateway, GatewayAllowedListenersNamespacesFrom, GatewayListenersAllowedRoutesNamespacesFrom,
};
use gateway_api::grpcroutes::GrpcRoute;
use gateway_api::httproutes::HttpRoute;
use gateway_api::listenersets::{ListenerSet as GwListenerSet, ListenerSetListenersAllowedRoutesNamespacesFrom};
use gateway_api::tlsroutes::TlsRoute;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::networking::v1 as networking;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::ResourceKind;
use crate::decode::{default_spec_list, drop_route_rules, fill_gateway_status_defaults};
use crate::intern::Interner;
use crate::view::{
    AllowedListeners, AllowedRoutes, EndpointSlice, Gateway, Ingress, LabelSelector, LabelSelectorRequirement,
    Listener, ListenerSet, LoadBalancerIngress, Meta, Namespace, Node, NodeAddress, ObjectReference, ParentReference,
    Pod, PodPhase, Route, RouteKind, RouteParentStatus, Service, ServicePort, SliceEndpoint,
};
use crate::watched::Convert;
/// Also here, beside the Pod conversion that reads it; its home is the ingest path's `Convert`.
pub use crate::watched::PodAnnotationPrefixes;
use crate::watched::sealed::Sealed;
use crate::{StrMap, Sym};

/// The annotation `kubectl apply` writes: a full JSON copy of the object, never read by a source.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// extdns's own status annotation on Ingresses and routes (`--status-updates`), never read by a source:
/// dropped from the views so that writing it leaves the view unchanged and wakes no sync.
pub const STATUS_ANNOTATION: &str = "externaldns.k8s.io/status";

/// The label linking an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

// ----------------------------------------------------------------------------------------------- meta

/// Views live as long as their objects, so their vectors hold exactly their items: collecting from an
/// iterator that cannot tell its length (an optional list flattened) reserves room for four, which made a
/// LoadBalancer Service's view 40% larger than its content (docs/performance.md).
trait CollectExact: Iterator + Sized {
    fn collect_exact(self) -> Vec<Self::Item> {
        let mut items: Vec<Self::Item> = self.collect();
        items.shrink_to_fit();
        items
    }
}

impl<I: Iterator> CollectExact for I {}

fn opt_map(m: &Option<BTreeMap<String, String>>) -> impl Iterator<Item = (&String, &String)> {
    m.iter().flatten()
}

fn labels(m: &ObjectMeta) -> StrMap {
    opt_map(&m.labels).collect()
}

fn annotations(m: &ObjectMeta) -> StrMap {
    opt_map(&m.annotations)
        .filter(|(k, _)| k.as_str() != LAST_APPLIED_ANNOTATION && k.as_str() != STATUS_ANNOTATION)
        .collect()
}

/// The metadata every view keeps. The namespace is copied as given (empty when the object has none).
pub fn meta(m: &ObjectMeta) -> Meta {
    Meta {
        name: m.name.clone().unwrap_or_default(),
        namespace: m.namespace.as_deref().unwrap_or_default().into(),
        labels: labels(m),
        annotations: annotations(m),
    }
}

/// The status of the first condition of this type (later duplicates are ignored, as external-dns does).
fn first_condition_status<'a>(conditions: impl IntoIterator<Item = &'a Condition>, type_: &str) -> Option<String> {
    conditions
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

fn condition_is_true<'a>(conditions: impl IntoIterator<Item = &'a Condition>, type_: &str) -> bool {
    first_condition_status(conditions, type_).as_deref() == Some("True")
}

// -------------------------------------------------------------------------------------------- core/v1

/// One `status.loadBalancer.ingress[]` entry: Services and Ingresses have a type each, with the same fields.
pub(crate) trait LoadBalancerAddress {
    fn ip(&self) -> &Option<String>;
    fn hostname(&self) -> &Option<String>;
}

impl LoadBalancerAddress for core::LoadBalancerIngress {
    fn ip(&self) -> &Option<String> {
        &self.ip
    }
    fn hostname(&self) -> &Option<String> {
        &self.hostname
    }
}

impl LoadBalancerAddress for networking::IngressLoadBalancerIngress {
    fn ip(&self) -> &Option<String> {
        &self.ip
    }
    fn hostname(&self) -> &Option<String> {
        &self.hostname
    }
}

/// `status.loadBalancer.ingress` of a Service or an Ingress, in order.
pub(crate) fn load_balancer_ingress<A: LoadBalancerAddress>(entries: Option<&Vec<A>>) -> Box<[LoadBalancerIngress]> {
    entries
        .into_iter()
        .flatten()
        .map(|a| LoadBalancerIngress {
            ip: boxed(a.ip()),
            hostname: boxed(a.hostname()),
        })
        .collect()
}

fn boxed(s: &Option<String>) -> Option<Box<str>> {
    s.as_deref().map(Box::from)
}

fn boxed_all(list: &Option<Vec<String>>) -> Box<[Box<str>]> {
    list.iter().flatten().map(|s| Box::from(s.as_str())).collect()
}

impl From<&core::Service> for Service {
    fn from(s: &core::Service) -> Service {
        let spec = s.spec.as_ref();
        let ports = spec.and_then(|s| s.ports.as_ref()).into_iter().flatten();
        let status = s.status.as_ref();
        let ingress = status.and_then(|s| s.load_balancer.as_ref()?.ingress.as_ref());
        Service {
            meta: meta(&s.metadata),
            service_type: spec.and_then(|s| s.type_.as_deref()).unwrap_or("ClusterIP").into(),
            cluster_ip: spec.and_then(|s| boxed(&s.cluster_ip)),
            cluster_ips: spec.map(|s| boxed_all(&s.cluster_ips)).unwrap_or_default(),
            external_ips: spec.map(|s| boxed_all(&s.external_ips)).unwrap_or_default(),
            external_name: spec.and_then(|s| boxed(&s.external_name)),
            external_traffic_policy: spec.and_then(|s| s.external_traffic_policy.as_deref()).map(Sym::from),
            publish_not_ready_addresses: spec.and_then(|s| s.publish_not_ready_addresses).unwrap_or(false),
            selector: spec.map(|s| opt_map(&s.selector).collect()).unwrap_or_default(),
            ports: ports
                .map(|p| ServicePort {
                    name: boxed(&p.name),
                    protocol: p.protocol.as_deref().map(Sym::from),
                    port: p.port,
                    node_port: p.node_port,
                    target_port: p.target_port.as_ref().map(|t| match t {
                        IntOrString::Int(i) => i.to_string().into(),
                        IntOrString::String(s) => s.as_str().into(),
                    }),
                })
                .collect(),
            load_balancer_ingress: load_balancer_ingress(ingress),
            template_fields: None,
        }
    }
}

/// The kinds whose view needs nothing shared (the generic path interns their label keys).
macro_rules! plain {
    ($ty:ty, $kind:expr, $view:ty) => {
        plain!($ty, $kind, $view, |_value| {});
    };
    ($ty:ty, $kind:expr, $view:ty, |$value:ident| $prepare:expr) => {
        impl Sealed for $ty {
            type View = $view;
            const KIND: ResourceKind = $kind;
            fn view(&self, _: &Convert<'_>) -> $view {
                <$view>::from(self)
            }
            fn prepare($value: &mut serde_json::Value) {
                $prepare
            }
        }
    };
}

plain!(core::Service, ResourceKind::Service, Service);

/// Pods keep only the configured annotations and share their repeated strings through the store's interner.
impl Sealed for core::Pod {
    type View = Pod;
    const KIND: ResourceKind = ResourceKind::Pod;
    fn view(&self, c: &Convert<'_>) -> Pod {
        pod(self, c.pod_annotation_prefixes, c.interner)
    }
}

/// Converts a Pod, keeping only the annotations under `prefixes` and sharing the strings Pods repeat
/// through `interner`.
pub fn pod(p: &core::Pod, prefixes: &PodAnnotationPrefixes, interner: &Interner) -> Pod {
    let m = &p.metadata;
    let spec = p.spec.as_ref();
    let status = p.status.as_ref();
    let sym_map = |entries: Vec<(Sym, Sym)>| StrMap::from_syms(entries);
    let pod_ips: Vec<Box<str>> = match status.and_then(|s| s.pod_ips.as_ref()) {
        Some(ips) if !ips.is_empty() => ips.iter().map(|i| Box::from(i.ip.as_str())).collect(),
        _ => status
            .and_then(|s| s.pod_ip.as_deref())
            .map(Box::from)
            .into_iter()
            .collect(),
    };
    Pod {
        name: m.name.as_deref().unwrap_or_default().into(),
        namespace: interner.intern(m.namespace.as_deref().unwrap_or_default()),
        labels: sym_map(
            opt_map(&m.labels)
                .map(|(k, v)| (interner.intern(k), interner.intern(v)))
                .collect(),
        ),
        annotations: sym_map(
            opt_map(&m.annotations)
                .filter(|(k, _)| prefixes.keeps(k) && k.as_str() != LAST_APPLIED_ANNOTATION)
                .map(|(k, v)| (interner.intern(k), Sym::new(v)))
                .collect(),
        ),
        hostname: spec.and_then(|s| s.hostname.as_deref()).map(Box::from),
        node_name: spec.and_then(|s| s.node_name.as_deref()).map(|n| interner.intern(n)),
        host_ip: status.and_then(|s| s.host_ip.as_deref()).map(Box::from),
        pod_ips: pod_ips.into_boxed_slice(),
        phase: status
            .and_then(|s| s.phase.as_deref())
            .map(PodPhase::parse)
            .unwrap_or_default(),
        ready: status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| condition_ready(c)),
        terminating: m.deletion_timestamp.is_some(),
        host_network: spec.and_then(|s| s.host_network).unwrap_or(false),
        template_fields: None,
    }
}

fn condition_ready(conditions: &[core::PodCondition]) -> bool {
    conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .is_some_and(|c| c.status == "True")
}

/// With the default annotation prefixes and no sharing of strings between Pods; the live informer and the
/// manifest loader use [`pod`] instead.
impl From<&core::Pod> for Pod {
    fn from(p: &core::Pod) -> Pod {
        pod(p, &PodAnnotationPrefixes::default(), &Interner::new())
    }
}

impl From<&core::Node> for Node {
    fn from(n: &core::Node) -> Node {
        let status = n.status.as_ref();
        let addresses = status.and_then(|s| s.addresses.as_ref()).into_iter().flatten();
        Node {
            name: n.metadata.name.clone().unwrap_or_default(),
            labels: labels(&n.metadata),
            annotations: annotations(&n.metadata),
            addresses: addresses
                .map(|a| NodeAddress {
                    address_type: a.type_.clone(),
                    address: a.address.clone(),
                })
                .collect_exact(),
            unschedulable: n.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false),
            template_fields: None,
        }
    }
}

plain!(core::Node, ResourceKind::Node, Node);
plain!(core::Namespace, ResourceKind::Namespace, Namespace);

impl From<&core::Namespace> for Namespace {
    fn from(n: &core::Namespace) -> Namespace {
        Namespace {
            name: n.metadata.name.clone().unwrap_or_default(),
            labels: labels(&n.metadata),
        }
    }
}

// --------------------------------------------------------------------------------- discovery.k8s.io/v1

impl From<&discovery::EndpointSlice> for EndpointSlice {
    fn from(s: &discovery::EndpointSlice) -> EndpointSlice {
        let meta = meta(&s.metadata);
        EndpointSlice {
            service_name: meta.labels.get(SERVICE_NAME_LABEL).map(str::to_string),
            meta,
            address_type: s.address_type.clone(),
            endpoints: s
                .endpoints
                .iter()
                .map(|e| SliceEndpoint {
                    addresses: e.addresses.clone(),
                    ready: e.conditions.as_ref().and_then(|c| c.ready),
                    target_ref: e.target_ref.as_ref().map(|r| ObjectReference {
                        kind: r.kind.clone(),
                        api_version: r.api_version.clone(),
                        namespace: r.namespace.clone(),
                        name: r.name.clone(),
                    }),
                    node_name: e.node_name.clone(),
                })
                .collect_exact(),
        }
    }
}

plain!(discovery::EndpointSlice, ResourceKind::EndpointSlice, EndpointSlice);

// ------------------------------------------------------------------------------- networking.k8s.io/v1

impl From<&networking::Ingress> for Ingress {
    fn from(i: &networking::Ingress) -> Ingress {
        let spec = i.spec.as_ref();
        let status = i.status.as_ref();
        let lb = status.and_then(|s| s.load_balancer.as_ref()?.ingress.as_ref());
        Ingress {
            meta: meta(&i.metadata),
            ingress_class_name: spec.and_then(|s| s.ingress_class_name.clone()),
            rule_hosts: spec
                .and_then(|s| s.rules.as_ref())
                .into_iter()
                .flatten()
                .map(|r| r.host.clone().unwrap_or_default())
                .collect_exact(),
            tls_hosts: spec
                .and_then(|s| s.tls.as_ref())
                .into_iter()
                .flatten()
                .flat_map(|t| t.hosts.iter().flatten().cloned())
                .collect_exact(),
            load_balancer_ingress: load_balancer_ingress(lb),
            template_fields: None,
        }
    }
}

plain!(networking::Ingress, ResourceKind::Ingress, Ingress);

// ------------------------------------------------------------------------------ gateway.networking.k8s.io

plain!(GwGateway, ResourceKind::Gateway, Gateway, |value| {
    fill_gateway_status_defaults(value)
});
plain!(GwListenerSet, ResourceKind::ListenerSet, ListenerSet, |value| {
    fill_gateway_status_defaults(value)
});

/// The generated selector types differ per field, with the same shape.
macro_rules! label_selector {
    ($sel:expr) => {{
        let sel = $sel;
        LabelSelector {
            match_labels: sel
                .match_labels
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            match_expressions: sel
                .match_expressions
                .iter()
                .flatten()
                .map(|e| LabelSelectorRequirement {
                    key: e.key.clone(),
                    operator: e.operator.clone(),
                    values: e.values.clone().unwrap_or_default(),
                })
                .collect_exact(),
        }
    }};
}

/// Listeners of Gateways and of ListenerSets have the same shape but distinct generated types.
macro_rules! listener {
    ($l:expr, $from:ident) => {{
        let l = $l;
        Listener {
            name: l.name.clone(),
            hostname: l.hostname.clone(),
            port: l.port,
            protocol: l.protocol.clone(),
            allowed_routes: l.allowed_routes.as_ref().map(|a| {
                let ns = a.namespaces.as_ref();
                AllowedRoutes {
                    namespaces_from: ns.and_then(|n| n.from.as_ref()).map(|f| {
                        match f {
                            $from::All => "All",
                            $from::Same => "Same",
                            $from::Selector => "Selector",
                        }
                        .to_string()
                    }),
                    namespaces_selector: ns.and_then(|n| n.selector.as_ref()).map(|s| label_selector!(s)),
                    kinds: a
                        .kinds
                        .iter()
                        .flatten()
                        .map(|k| crate::view::RouteGroupKind {
                            group: k.group.clone(),
                            kind: k.kind.clone(),
                        })
                        .collect_exact(),
                }
            }),
        }
    }};
}

impl From<&GwGateway> for Gateway {
    fn from(g: &GwGateway) -> Gateway {
        let status = g.status.as_ref();
        let addresses = status.and_then(|s| s.addresses.as_ref()).into_iter().flatten();
        Gateway {
            meta: meta(&g.metadata),
            gateway_class_name: g.spec.gateway_class_name.clone(),
            listeners: g
                .spec
                .listeners
                .iter()
                .map(|l| listener!(l, GatewayListenersAllowedRoutesNamespacesFrom))
                .collect_exact(),
            allowed_listeners: g.spec.allowed_listeners.as_ref().map(|a| {
                let ns = a.namespaces.as_ref();
                AllowedListeners {
                    namespaces_from: ns.and_then(|n| n.from.as_ref()).map(|f| {
                        match f {
                            GatewayAllowedListenersNamespacesFrom::All => "All",
                            GatewayAllowedListenersNamespacesFrom::Same => "Same",
                            GatewayAllowedListenersNamespacesFrom::Selector => "Selector",
                            GatewayAllowedListenersNamespacesFrom::None => "None",
                        }
                        .to_string()
                    }),
                    namespaces_selector: ns.and_then(|n| n.selector.as_ref()).map(|s| label_selector!(s)),
                }
            }),
            addresses: addresses.map(|a| a.value.clone()).collect_exact(),
        }
    }
}

impl From<&GwListenerSet> for ListenerSet {
    fn from(l: &GwListenerSet) -> ListenerSet {
        let status = l.status.as_ref();
        let p = &l.spec.parent_ref;
        ListenerSet {
            meta: meta(&l.metadata),
            parent_ref: ParentReference {
                group: p.group.clone(),
                kind: p.kind.clone(),
                namespace: p.namespace.clone(),
                name: p.name.clone(),
                section_name: None,
                port: None,
            },
            listeners: l
                .spec
                .listeners
                .iter()
                .map(|x| listener!(x, ListenerSetListenersAllowedRoutesNamespacesFrom))
                .collect_exact(),
            accepted: condition_is_true(
                status.and_then(|s| s.conditions.as_ref()).into_iter().flatten(),
                "Accepted",
            ),
            accepted_listeners: status
                .and_then(|s| s.listeners.as_ref())
                .into_iter()
                .flatten()
                .filter(|x| condition_is_true(&x.conditions, "Accepted"))
                .map(|x| x.name.clone())
                .collect_exact(),
        }
    }
}

/// Parent references of every route kind have the same fields but distinct generated types.
macro_rules! parent_ref {
    ($p:expr) => {{
        let p = $p;
        ParentReference {
            group: p.group.clone(),
            kind: p.kind.clone(),
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            section_name: p.section_name.clone(),
            port: p.port,
        }
    }};
}

/// Every route kind: its view, and what its JSON needs before decoding (status defaults, and no rules:
/// no source reads them, and their filter types grow with every Gateway API release).
macro_rules! route_from {
    ($ty:ty, $kind:expr, |$spec:ident| $hostnames:expr) => {
        route_from!($ty, $kind, |$spec| $hostnames, |_value| {});
    };
    ($ty:ty, $kind:expr, |$spec:ident| $hostnames:expr, |$value:ident| $prepare:expr) => {
        impl From<&$ty> for Route {
            fn from(r: &$ty) -> Route {
                let $spec = &r.spec;
                Route {
                    kind: $kind,
                    meta: meta(&r.metadata),
                    hostnames: $hostnames,
                    parent_refs: r
                        .spec
                        .parent_refs
                        .iter()
                        .flatten()
                        .map(|p| parent_ref!(p))
                        .collect_exact(),
                    parents: r
                        .status
                        .iter()
                        .flat_map(|s| s.parents.iter())
                        .map(|s| RouteParentStatus {
                            parent_ref: parent_ref!(&s.parent_ref),
                            accepted: first_condition_status(&s.conditions, "Accepted"),
                        })
                        .collect_exact(),
                    template_fields: None,
                }
            }
        }
        impl Sealed for $ty {
            type View = Route;
            const KIND: ResourceKind = ResourceKind::Route($kind);
            fn view(&self, _: &Convert<'_>) -> Route {
                Route::from(self)
            }
            fn prepare($value: &mut serde_json::Value) {
                fill_gateway_status_defaults($value);
                drop_route_rules($value);
                $prepare
            }
        }
    };
}

route_from!(HttpRoute, RouteKind::Http, |spec| spec
    .hostnames
    .clone()
    .unwrap_or_default());
route_from!(GrpcRoute, RouteKind::Grpc, |spec| spec
    .hostnames
    .clone()
    .unwrap_or_default());
// Optional in TLSRoute v1alpha2 and v1alpha3, required in v1; objects stored through the older versions are
// served through v1 without it. Absent and empty mean the same: the listener's hostname.
route_from!(TlsRoute, RouteKind::Tls, |spec| spec.hostnames.clone(), |value| {
    default_spec_list(value, "hostnames")
});
route_from!(TcpRoute, RouteKind::Tcp, |_spec| Vec::new());
route_from!(UdpRoute, RouteKind::Udp, |_spec| Vec::new());

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).expect("test object parses")
    }

    #[test]
    fn service_type_defaults_to_cluster_ip() {
        let s: core::Service = parse(json!({"metadata": {"name": "web", "namespace": "default"}}));
        let v = Service::from(&s);
        assert_eq!(v.service_type, "ClusterIP");
        assert_eq!(v.meta.name, "web");
        assert!(v.ports.is_empty());
    }

    /// The store keeps one `Arc<Service>` per Service: the view plus the `Arc`'s two counts must stay within
    /// jemalloc's 256-byte class.
    #[test]
    fn a_shared_service_view_fits_a_256_byte_allocation() {
        let shared = std::mem::size_of::<Service>() + 2 * std::mem::size_of::<usize>();
        assert!(shared <= 256, "Arc<Service> needs {shared} bytes");
    }

    #[test]
    fn service_keeps_every_field_sources_read() {
        let s: core::Service = parse(json!({
            "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web"},
                "annotations": {"external-dns.alpha.kubernetes.io/hostname": "web.example.com",
                    "kubectl.kubernetes.io/last-applied-configuration": "{...}"}},
            "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1", "fd00::1"],
                "externalIPs": ["1.2.3.4"], "externalTrafficPolicy": "Local", "publishNotReadyAddresses": true,
                "selector": {"app": "web"},
                "ports": [{"name": "http", "port": 80, "nodePort": 30080, "targetPort": "http", "protocol": "TCP"},
                          {"port": 53, "protocol": "UDP", "targetPort": 5353}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}, {"hostname": "lb.example.com"}]}}
        }));
        let v = Service::from(&s);
        assert_eq!(v.service_type, "LoadBalancer");
        assert_eq!(v.meta.namespace, "prod");
        assert_eq!(v.meta.labels.get("app"), Some("web"));
        assert_eq!(
            v.meta.annotations.get("external-dns.alpha.kubernetes.io/hostname"),
            Some("web.example.com")
        );
        assert_eq!(v.cluster_ip.as_deref(), Some("10.0.0.1"));
        assert_eq!(*v.cluster_ips, [Box::from("10.0.0.1"), Box::from("fd00::1")]);
        assert_eq!(*v.external_ips, [Box::from("1.2.3.4")]);
        assert_eq!(v.external_traffic_policy.as_deref(), Some("Local"));
        assert!(v.publish_not_ready_addresses);
        assert_eq!(v.selector.get("app"), Some("web"));
        assert_eq!(v.ports.len(), 2);
        assert_eq!(v.ports[0].name.as_deref(), Some("http"));
        assert_eq!(v.ports[0].node_port, Some(30080));
        assert_eq!(v.ports[0].target_port.as_deref(), Some("http"));
        assert_eq!(v.ports[1].target_port.as_deref(), Some("5353"));
        assert_eq!(v.ports[1].protocol.as_deref(), Some("UDP"));
        assert_eq!(
            *v.load_balancer_ingress,
            [
                LoadBalancerIngress {
                    ip: Some("5.6.7.8".into()),
                    hostname: None
                },
                LoadBalancerIngress {
                    ip: None,
                    hostname: Some("lb.example.com".into())
                },
            ]
        );
    }

    #[test]
    fn our_status_annotation_is_dropped_so_writing_it_wakes_no_sync() {
        let i: networking::Ingress = parse(json!({"metadata": {"name": "web", "annotations": {
            "externaldns.k8s.io/status": "{}", "other": "x"}}}));
        let with = meta(&i.metadata);
        assert!(!with.annotations.contains_key(STATUS_ANNOTATION));
        assert_eq!(with.annotations.get("other"), Some("x"));
        let without: networking::Ingress = parse(json!({"metadata": {"name": "web", "annotations": {"other": "x"}}}));
        assert_eq!(
            with,
            meta(&without.metadata),
            "a status write leaves the view as it was"
        );
    }

    #[test]
    fn last_applied_configuration_annotation_is_dropped() {
        let s: core::Service = parse(json!({"metadata": {"name": "web", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{}", "other": "x"}}}));
        let v = Service::from(&s);
        assert!(!v.meta.annotations.contains_key(LAST_APPLIED_ANNOTATION));
        assert_eq!(v.meta.annotations.get("other"), Some("x"));
        let n: core::Node = parse(json!({"metadata": {"name": "n1", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{}"}}}));
        assert!(Node::from(&n).annotations.is_empty());
    }

    fn sample_pod() -> core::Pod {
        parse(json!({
            "metadata": {"name": "web-0", "namespace": "prod", "labels": {"app": "web", "tier": "front"},
                "annotations": {"external-dns.alpha.kubernetes.io/target": "1.2.3.4",
                    "external-dns.kubernetes.io/ttl": "60",
                    "prometheus.io/scrape": "true",
                    "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"hostname": "web-0", "nodeName": "node-1", "containers": []},
            "status": {"phase": "Running", "hostIP": "192.168.0.10", "podIP": "10.1.0.5",
                "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd00::5"}],
                "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}
        }))
    }

    #[test]
    fn pod_keeps_only_annotations_under_the_given_prefixes() {
        let v = pod(&sample_pod(), &PodAnnotationPrefixes::default(), &Interner::new());
        let keys: Vec<&str> = v.annotations.iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            vec![
                "external-dns.alpha.kubernetes.io/target",
                "external-dns.kubernetes.io/ttl"
            ]
        );

        let only_alpha = PodAnnotationPrefixes::new(["external-dns.alpha.kubernetes.io/"]);
        let v = pod(&sample_pod(), &only_alpha, &Interner::new());
        assert_eq!(v.annotations.len(), 1);
        assert_eq!(
            v.annotations.get("external-dns.alpha.kubernetes.io/target"),
            Some("1.2.3.4")
        );
    }

    #[test]
    fn pod_keeps_identity_placement_and_readiness() {
        let v = pod(&sample_pod(), &PodAnnotationPrefixes::default(), &Interner::new());
        assert_eq!(&*v.name, "web-0");
        assert_eq!(&*v.namespace, "prod");
        assert_eq!(v.labels.get("tier"), Some("front"));
        assert_eq!(v.hostname.as_deref(), Some("web-0"));
        assert_eq!(v.node_name.as_deref(), Some("node-1"));
        assert_eq!(v.host_ip.as_deref(), Some("192.168.0.10"));
        assert_eq!(
            v.pod_ips.iter().map(|s| &**s).collect::<Vec<_>>(),
            vec!["10.1.0.5", "fd00::5"]
        );
        assert_eq!(v.phase, PodPhase::Running);
        assert!(v.ready);
        assert!(!v.terminating);
    }

    #[test]
    fn pod_ips_fall_back_to_pod_ip() {
        let p: core::Pod = parse(json!({"metadata": {"name": "p"}, "status": {"podIP": "10.0.0.9"}}));
        assert_eq!(
            Pod::from(&p).pod_ips.iter().map(|s| &**s).collect::<Vec<_>>(),
            vec!["10.0.0.9"]
        );
        let p: core::Pod = parse(json!({"metadata": {"name": "p"}}));
        assert!(Pod::from(&p).pod_ips.is_empty());
    }

    #[test]
    fn pod_ready_requires_the_ready_condition_true() {
        let p: core::Pod = parse(json!({"metadata": {"name": "p"}, "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "ContainersReady", "status": "True"}]}}));
        assert!(!Pod::from(&p).ready);
        let p: core::Pod = parse(json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}}));
        assert!(!Pod::from(&p).ready);
    }

    #[test]
    fn pod_with_deletion_timestamp_is_terminating() {
        let p: core::Pod = parse(json!({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"}}));
        let v = Pod::from(&p);
        assert!(v.terminating);
        assert_eq!(v.phase, PodPhase::Unknown);
    }

    #[test]
    fn pods_share_interned_namespace_node_and_labels() {
        let interner = Interner::new();
        let prefixes = PodAnnotationPrefixes::default();
        let a = pod(&sample_pod(), &prefixes, &interner);
        let mut other = sample_pod();
        other.metadata.name = Some("web-1".into());
        let b = pod(&other, &prefixes, &interner);
        assert!(std::sync::Arc::ptr_eq(a.namespace.as_arc(), b.namespace.as_arc()));
        let (na, nb) = (a.node_name.expect("node"), b.node_name.expect("node"));
        assert!(std::sync::Arc::ptr_eq(na.as_arc(), nb.as_arc()));
    }

    #[test]
    fn node_keeps_addresses_in_order_and_unschedulable() {
        let n: core::Node = parse(json!({
            "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/node": ""}},
            "spec": {"unschedulable": true},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "ExternalIP", "address": "1.2.3.4"}, {"type": "Hostname", "address": "n1"}]}
        }));
        let v = Node::from(&n);
        assert_eq!(v.name, "n1");
        assert!(v.unschedulable);
        assert!(v.labels.contains_key("node-role.kubernetes.io/node"));
        let addrs: Vec<(&str, &str)> = v
            .addresses
            .iter()
            .map(|a| (a.address_type.as_str(), a.address.as_str()))
            .collect();
        assert_eq!(
            addrs,
            vec![
                ("InternalIP", "10.0.0.1"),
                ("ExternalIP", "1.2.3.4"),
                ("Hostname", "n1")
            ]
        );
        let n: core::Node = parse(json!({"metadata": {"name": "n2"}}));
        assert!(!Node::from(&n).unschedulable);
    }

    #[test]
    fn namespace_keeps_name_and_labels() {
        let n: core::Namespace = parse(json!({"metadata": {"name": "team-a", "labels": {"team": "a"}}}));
        let v = Namespace::from(&n);
        assert_eq!(v.name, "team-a");
        assert_eq!(v.labels.get("team"), Some("a"));
    }

    #[test]
    fn endpoint_slice_service_name_comes_from_its_label() {
        let s: discovery::EndpointSlice = parse(json!({
            "metadata": {"name": "web-abc", "namespace": "prod", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.1.0.5"], "conditions": {"ready": true}, "nodeName": "node-1",
                 "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "prod"}},
                {"addresses": ["10.1.0.6"], "conditions": {"ready": false}},
                {"addresses": ["10.1.0.7"]}
            ]
        }));
        let v = EndpointSlice::from(&s);
        assert_eq!(v.service_name.as_deref(), Some("web"));
        assert_eq!(v.address_type, "IPv4");
        assert_eq!(v.endpoints.len(), 3);
        assert_eq!(v.endpoints[0].ready, Some(true));
        assert_eq!(v.endpoints[0].node_name.as_deref(), Some("node-1"));
        let r = v.endpoints[0].target_ref.as_ref().expect("target ref");
        assert_eq!(
            (r.kind.as_deref(), r.name.as_deref(), r.api_version.as_deref()),
            (Some("Pod"), Some("web-0"), None)
        );
        assert_eq!(v.endpoints[1].ready, Some(false));
        assert_eq!(v.endpoints[2].ready, None);
        let s: discovery::EndpointSlice =
            parse(json!({"metadata": {"name": "x"}, "addressType": "FQDN", "endpoints": []}));
        assert_eq!(EndpointSlice::from(&s).service_name, None);
    }

    #[test]
    fn gateway_keeps_listeners_allowed_routes_and_status_addresses() {
        let g: GwGateway = parse(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "gw", "namespace": "infra", "annotations": {"external-dns.alpha.kubernetes.io/target": "4.3.2.1"}},
            "spec": {"gatewayClassName": "cls",
                "allowedListeners": {"namespaces": {"from": "Selector", "selector": {"matchLabels": {"team": "a"}}}},
                "listeners": [
                    {"name": "http", "port": 80, "protocol": "HTTP", "hostname": "*.example.com",
                     "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {
                        "matchLabels": {"team": "a"},
                        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}},
                        "kinds": [{"kind": "HTTPRoute"}, {"group": "gateway.networking.k8s.io", "kind": "GRPCRoute"}]}},
                    {"name": "tls", "port": 443, "protocol": "TLS"}
                ]},
            "status": {"addresses": [{"type": "IPAddress", "value": "1.2.3.4"}, {"type": "Hostname", "value": "lb.example.com"}]}
        }));
        let v = Gateway::from(&g);
        assert_eq!(v.meta.namespace, "infra");
        assert_eq!(v.gateway_class_name, "cls");
        assert_eq!(v.addresses, vec!["1.2.3.4", "lb.example.com"]);
        let al = v.allowed_listeners.as_ref().expect("allowed listeners");
        assert_eq!(al.namespaces_from.as_deref(), Some("Selector"));
        assert_eq!(
            al.namespaces_selector.as_ref().map(|s| s.match_labels.clone()),
            Some(vec![("team".into(), "a".into())])
        );
        assert_eq!(v.listeners.len(), 2);
        let http = &v.listeners[0];
        assert_eq!(
            (http.name.as_str(), http.port, http.protocol.as_str()),
            ("http", 80, "HTTP")
        );
        assert_eq!(http.hostname.as_deref(), Some("*.example.com"));
        let ar = http.allowed_routes.as_ref().expect("allowed routes");
        assert_eq!(ar.namespaces_from.as_deref(), Some("Selector"));
        let sel = ar.namespaces_selector.as_ref().expect("selector");
        assert_eq!(sel.match_expressions[0].key, "env");
        assert_eq!(sel.match_expressions[0].operator, "In");
        assert_eq!(sel.match_expressions[0].values, vec!["prod"]);
        assert_eq!(ar.kinds.len(), 2);
        assert_eq!(ar.kinds[0].group, None);
        assert_eq!(ar.kinds[1].kind, "GRPCRoute");
        assert!(v.listeners[1].allowed_routes.is_none());
        assert!(v.listeners[1].hostname.is_none());
    }

    #[test]
    fn listener_set_accepted_and_accepted_listeners_come_from_status() {
        let l: GwListenerSet = parse(json!({
            "metadata": {"name": "ls", "namespace": "apps"},
            "spec": {"parentRef": {"name": "gw", "namespace": "infra", "kind": "Gateway"},
                "listeners": [{"name": "app", "port": 443, "protocol": "HTTPS", "hostname": "*.example.com",
                    "allowedRoutes": {"namespaces": {"from": "All"}}},
                    {"name": "other", "port": 80, "protocol": "HTTP"},
                    {"name": "third", "port": 81, "protocol": "HTTP"}]},
            "status": {
                "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "listeners": [
                    {"name": "app", "attachedRoutes": 1, "conditions": [{"type": "Accepted", "status": "True",
                        "reason": "Accepted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
                    {"name": "other", "attachedRoutes": 0, "conditions": [{"type": "Accepted", "status": "False",
                        "reason": "x", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
                ]}
        }));
        let v = ListenerSet::from(&l);
        assert!(v.accepted);
        assert_eq!(v.accepted_listeners, vec!["app"]);
        assert_eq!(v.parent_ref.name, "gw");
        assert_eq!(v.parent_ref.namespace.as_deref(), Some("infra"));
        assert_eq!(v.parent_ref.kind.as_deref(), Some("Gateway"));
        assert_eq!(v.listeners.len(), 3);
        assert_eq!(
            v.listeners[0]
                .allowed_routes
                .as_ref()
                .and_then(|a| a.namespaces_from.as_deref()),
            Some("All")
        );

        let mut unaccepted = l.clone();
        unaccepted.status = None;
        let v = ListenerSet::from(&unaccepted);
        assert!(!v.accepted);
        assert!(v.accepted_listeners.is_empty());
    }

    fn condition(type_: &str, status: &str) -> serde_json::Value {
        json!({"type": type_, "status": status, "reason": "r", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn route_parent_accepted_is_the_first_accepted_condition() {
        let r: HttpRoute = parse(json!({
            "metadata": {"name": "echo", "namespace": "apps"},
            "spec": {"hostnames": ["echo.example.com"],
                "parentRefs": [{"name": "gw", "namespace": "infra", "sectionName": "http", "port": 80}]},
            "status": {"parents": [
                {"controllerName": "c", "parentRef": {"name": "gw", "namespace": "infra", "sectionName": "http"},
                 "conditions": [condition("ResolvedRefs", "True"), condition("Accepted", "False"), condition("Accepted", "True")]},
                {"controllerName": "c", "parentRef": {"name": "gw2", "group": "gateway.networking.k8s.io", "kind": "Gateway"},
                 "conditions": [condition("ResolvedRefs", "True")]}
            ]}
        }));
        let v = Route::from(&r);
        assert_eq!(v.kind, RouteKind::Http);
        assert_eq!(v.hostnames, vec!["echo.example.com"]);
        assert_eq!(
            v.parent_refs,
            vec![ParentReference {
                group: None,
                kind: None,
                namespace: Some("infra".into()),
                name: "gw".into(),
                section_name: Some("http".into()),
                port: Some(80),
            }]
        );
        assert_eq!(v.parents.len(), 2);
        assert_eq!(v.parents[0].accepted.as_deref(), Some("False"));
        assert_eq!(v.parents[0].parent_ref.section_name.as_deref(), Some("http"));
        assert_eq!(v.parents[1].accepted, None);
        assert_eq!(v.parents[1].parent_ref.kind.as_deref(), Some("Gateway"));
    }

    #[test]
    fn every_route_kind_converts_with_its_kind_and_hostnames() {
        let base = |hostnames: bool| {
            let mut spec =
                json!({"parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": [{"name": "svc", "port": 80}]}]});
            if hostnames {
                spec["hostnames"] = json!(["h.example.com"]);
            }
            json!({"metadata": {"name": "r", "namespace": "ns"}, "spec": spec,
                "status": {"parents": [{"controllerName": "c", "parentRef": {"name": "gw"},
                    "conditions": [condition("Accepted", "True")]}]}})
        };
        let grpc = Route::from(&parse::<GrpcRoute>(base(true)));
        let tls = Route::from(&parse::<TlsRoute>(base(true)));
        let tcp = Route::from(&parse::<TcpRoute>(base(false)));
        let udp = Route::from(&parse::<UdpRoute>(base(false)));
        let http = Route::from(&parse::<HttpRoute>(base(false)));
        assert_eq!(
            (grpc.kind, grpc.hostnames.clone()),
            (RouteKind::Grpc, vec!["h.example.com".to_string()])
        );
        assert_eq!(
            (tls.kind, tls.hostnames.clone()),
            (RouteKind::Tls, vec!["h.example.com".to_string()])
        );
        assert_eq!(tcp.kind, RouteKind::Tcp);
        assert_eq!(udp.kind, RouteKind::Udp);
        assert!(tcp.hostnames.is_empty() && udp.hostnames.is_empty() && http.hostnames.is_empty());
        for r in [&grpc, &tls, &tcp, &udp, &http] {
            assert_eq!(r.meta.name, "r");
            assert_eq!(r.parent_refs.len(), 1);
            assert_eq!(r.parents[0].accepted.as_deref(), Some("True"));
        }
    }
}
