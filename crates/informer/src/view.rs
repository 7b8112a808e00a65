//! The compact form of the Kubernetes objects sources read. Only fields some source reads are kept, so
//! memory grows with what extdns uses, not with the size of the objects in the cluster. Names follow the
//! Kubernetes API; optional API fields stay `Option` where "absent" and "empty" mean different things.

use std::sync::Arc;

use crate::intern::Interner;
use crate::store::Item;
use crate::{ClusterStore, ResourceKind, StrMap, Sym};

/// The lookups sources use, by view.
impl ClusterStore {
    /// All Services in scope (the namespace and server-side label selector the live view watches with).
    pub fn services(&self) -> Vec<Arc<Service>> {
        self.all(ResourceKind::Service)
    }

    pub fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>> {
        self.index::<Service>(ResourceKind::Service)?.get(namespace, name)
    }

    /// The EndpointSlices labelled `kubernetes.io/service-name=<service>` in `namespace`.
    pub fn endpoint_slices(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>> {
        self.index::<EndpointSlice>(ResourceKind::EndpointSlice)
            .map(|i| i.group(namespace, service))
            .unwrap_or_default()
    }

    /// All Pods of a namespace.
    pub fn pods(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.index::<Pod>(ResourceKind::Pod)
            .map(|i| i.in_namespace(namespace))
            .unwrap_or_default()
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.index::<Pod>(ResourceKind::Pod)?.get(namespace, name)
    }

    pub fn nodes(&self) -> Vec<Arc<Node>> {
        self.all(ResourceKind::Node)
    }

    pub fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.index::<Node>(ResourceKind::Node)?.get("", name)
    }

    pub fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.index::<Namespace>(ResourceKind::Namespace)?.get("", name)
    }

    pub fn gateways(&self) -> Vec<Arc<Gateway>> {
        self.all(ResourceKind::Gateway)
    }

    pub fn gateway(&self, namespace: &str, name: &str) -> Option<Arc<Gateway>> {
        self.index::<Gateway>(ResourceKind::Gateway)?.get(namespace, name)
    }

    pub fn listener_sets(&self) -> Vec<Arc<ListenerSet>> {
        self.all(ResourceKind::ListenerSet)
    }

    pub fn listener_set(&self, namespace: &str, name: &str) -> Option<Arc<ListenerSet>> {
        self.index::<ListenerSet>(ResourceKind::ListenerSet)?
            .get(namespace, name)
    }

    pub fn routes(&self, kind: RouteKind) -> Vec<Arc<Route>> {
        self.all(ResourceKind::Route(kind))
    }

    pub fn dns_endpoints(&self) -> Vec<Arc<DnsEndpoint>> {
        self.all(ResourceKind::DnsEndpoint)
    }

    pub fn dns_endpoint(&self, namespace: &str, name: &str) -> Option<Arc<DnsEndpoint>> {
        self.index::<DnsEndpoint>(ResourceKind::DnsEndpoint)?
            .get(namespace, name)
    }

    pub fn ingresses(&self) -> Vec<Arc<Ingress>> {
        self.all(ResourceKind::Ingress)
    }

    pub fn ingress(&self, namespace: &str, name: &str) -> Option<Arc<Ingress>> {
        self.index::<Ingress>(ResourceKind::Ingress)?.get(namespace, name)
    }
}

/// Views that keep their metadata whole.
macro_rules! item_with_meta {
    ($view:ty, $kind:expr $(, group: $group:ident)? $(, template_fields: $fields:ident)? $(, refs: $refs:path)?) => {
        impl Item for $view {
            fn kind(&self) -> ResourceKind {
                $kind
            }
            fn name(&self) -> &str {
                &self.meta.name
            }
            fn namespace(&self) -> &str {
                &self.meta.namespace
            }
            fn meta_mut(&mut self) -> Option<&mut Meta> {
                Some(&mut self.meta)
            }
            $(fn group(&self) -> Option<&str> {
                self.$group.as_deref()
            })?
            $(fn template_fields_slot(&mut self) -> Option<&mut Option<Box<str>>> {
                Some(&mut self.$fields)
            })?
            $(fn refs(&self) -> Vec<crate::index::Ref> {
                $refs(self)
            })?
        }
    };
}

item_with_meta!(Service, ResourceKind::Service, template_fields: template_fields, refs: crate::index::service_refs);
item_with_meta!(EndpointSlice, ResourceKind::EndpointSlice, group: service_name, refs: crate::index::slice_refs);
item_with_meta!(Gateway, ResourceKind::Gateway);
item_with_meta!(ListenerSet, ResourceKind::ListenerSet, refs: crate::index::listener_set_refs);
item_with_meta!(Ingress, ResourceKind::Ingress, template_fields: template_fields);
item_with_meta!(DnsEndpoint, ResourceKind::DnsEndpoint);

impl Item for Route {
    fn kind(&self) -> ResourceKind {
        ResourceKind::Route(self.kind)
    }
    fn refs(&self) -> Vec<crate::index::Ref> {
        crate::index::route_refs(self)
    }
    fn name(&self) -> &str {
        &self.meta.name
    }
    fn namespace(&self) -> &str {
        &self.meta.namespace
    }
    fn meta_mut(&mut self) -> Option<&mut Meta> {
        Some(&mut self.meta)
    }
    fn template_fields_slot(&mut self) -> Option<&mut Option<Box<str>>> {
        Some(&mut self.template_fields)
    }
}

impl Item for Pod {
    fn kind(&self) -> ResourceKind {
        ResourceKind::Pod
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn namespace(&self) -> &str {
        &self.namespace
    }
    /// The conversion shares a Pod's strings as it makes the view; a view made elsewhere (tests) shares
    /// its namespace.
    fn intern(&mut self, interner: &Interner) {
        self.namespace = interner.intern(&self.namespace);
    }
}

impl Item for Node {
    fn kind(&self) -> ResourceKind {
        ResourceKind::Node
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl Item for Namespace {
    fn kind(&self) -> ResourceKind {
        ResourceKind::Namespace
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// Identity and the metadata sources read. `annotations` never holds
/// `kubectl.kubernetes.io/last-applied-configuration`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    pub name: String,
    pub namespace: String,
    pub labels: StrMap,
    pub annotations: StrMap,
}

// ---------------------------------------------------------------------------------------------- core/v1

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Service {
    pub meta: Meta,
    /// `spec.type`; "ClusterIP" when the object does not say (the API server's default).
    pub service_type: String,
    pub cluster_ip: Option<String>,
    /// Boxed slices rather than vectors: 16 bytes less each, which keeps a shared `Service` in a smaller
    /// allocation class (docs/performance.md, "Where the heap goes at scale").
    pub cluster_ips: Box<[String]>,
    pub external_ips: Box<[String]>,
    pub external_name: Option<String>,
    pub external_traffic_policy: Option<String>,
    pub publish_not_ready_addresses: bool,
    /// `spec.selector`; empty selects every Pod of the namespace.
    pub selector: StrMap,
    pub ports: Vec<ServicePort>,
    /// `status.loadBalancer.ingress`.
    pub load_balancer_ingress: Vec<LoadBalancerIngress>,
    /// The fields templates read beyond the above: JSON text trimmed to their paths
    /// ([`crate::TemplateFields`]); text, as a decoded JSON tree costs ten times the bytes.
    pub template_fields: Option<Box<str>>,
}

impl Service {
    pub fn is_headless(&self) -> bool {
        self.cluster_ip.as_deref() == Some("None")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServicePort {
    pub name: Option<String>,
    /// `TCP`, `UDP` or `SCTP`; `None` means TCP.
    pub protocol: Option<String>,
    pub port: i32,
    pub node_port: Option<i32>,
    /// An int port or a named port, as written.
    pub target_port: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadBalancerIngress {
    pub ip: Option<String>,
    pub hostname: Option<String>,
}

/// A Pod, in the smallest form the service source can work with: the live informer keeps one per Pod in
/// the cluster, so every byte here is multiplied by the Pod count (see docs/performance.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pod {
    pub name: Box<str>,
    pub namespace: Sym,
    pub labels: StrMap,
    /// Only the annotations sources read (those under the extdns annotation prefixes).
    pub annotations: StrMap,
    /// `spec.hostname`.
    pub hostname: Option<Box<str>>,
    /// `spec.nodeName`.
    pub node_name: Option<Sym>,
    /// `status.hostIP`.
    pub host_ip: Option<Box<str>>,
    /// `status.podIPs` (or `status.podIP` when the list is absent).
    pub pod_ips: Box<[Box<str>]>,
    pub phase: PodPhase,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// `metadata.deletionTimestamp` is set (the Pod is terminating).
    pub terminating: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PodPhase {
    #[default]
    Unknown,
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl PodPhase {
    pub fn parse(s: &str) -> PodPhase {
        match s {
            "Pending" => PodPhase::Pending,
            "Running" => PodPhase::Running,
            "Succeeded" => PodPhase::Succeeded,
            "Failed" => PodPhase::Failed,
            _ => PodPhase::Unknown,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub labels: StrMap,
    pub annotations: StrMap,
    /// `status.addresses`, in order.
    pub addresses: Vec<NodeAddress>,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeAddress {
    /// `ExternalIP`, `InternalIP`, `Hostname`, ...
    pub address_type: String,
    pub address: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Namespace {
    pub name: String,
    pub labels: StrMap,
}

// --------------------------------------------------------------------------------- discovery.k8s.io/v1

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointSlice {
    pub meta: Meta,
    /// The `kubernetes.io/service-name` label.
    pub service_name: Option<String>,
    /// `IPv4`, `IPv6` or `FQDN`.
    pub address_type: String,
    pub endpoints: Vec<SliceEndpoint>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SliceEndpoint {
    pub addresses: Vec<String>,
    /// `conditions.ready`; `None` (unknown) counts as ready.
    pub ready: Option<bool>,
    pub target_ref: Option<ObjectReference>,
    pub node_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectReference {
    pub kind: Option<String>,
    pub api_version: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

// ------------------------------------------------------------------------------ gateway.networking.k8s.io

/// The Gateway API route kinds extdns has sources for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RouteKind {
    #[default]
    Http,
    Grpc,
    Tls,
    Tcp,
    Udp,
}

impl RouteKind {
    pub const ALL: [RouteKind; 5] = [
        RouteKind::Http,
        RouteKind::Grpc,
        RouteKind::Tls,
        RouteKind::Tcp,
        RouteKind::Udp,
    ];

    /// The API kind: `HTTPRoute`, `GRPCRoute`, ...
    pub fn kind(self) -> &'static str {
        ResourceKind::Route(self).kind()
    }

    /// The `--source` name: `gateway-httproute`, ...
    pub fn source_name(self) -> &'static str {
        match self {
            RouteKind::Http => "gateway-httproute",
            RouteKind::Grpc => "gateway-grpcroute",
            RouteKind::Tls => "gateway-tlsroute",
            RouteKind::Tcp => "gateway-tcproute",
            RouteKind::Udp => "gateway-udproute",
        }
    }

    /// The API version extdns watches this kind in (`gateway.networking.k8s.io/v1`).
    pub fn api_version(self) -> String {
        let spec = ResourceKind::Route(self).spec();
        spec.api_version_of(spec.preferred_version())
    }

    pub fn from_kind(kind: &str) -> Option<RouteKind> {
        RouteKind::ALL.into_iter().find(|k| k.kind() == kind)
    }

    pub fn from_source_name(name: &str) -> Option<RouteKind> {
        RouteKind::ALL.into_iter().find(|k| k.source_name() == name)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gateway {
    pub meta: Meta,
    pub gateway_class_name: String,
    pub listeners: Vec<Listener>,
    /// `spec.allowedListeners` (which ListenerSets may attach).
    pub allowed_listeners: Option<AllowedListeners>,
    /// `status.addresses[].value`, in order.
    pub addresses: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub hostname: Option<String>,
    pub port: i32,
    pub protocol: String,
    pub allowed_routes: Option<AllowedRoutes>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedRoutes {
    /// `namespaces.from`: `All`, `Same`, `Selector` (`None` = not set, which means `Same`).
    pub namespaces_from: Option<String>,
    pub namespaces_selector: Option<LabelSelector>,
    pub kinds: Vec<RouteGroupKind>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedListeners {
    /// `namespaces.from`: `All`, `Same`, `Selector`, `None` (`None` = not set, which means `None`).
    pub namespaces_from: Option<String>,
    pub namespaces_selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteGroupKind {
    pub group: Option<String>,
    pub kind: String,
}

/// A Kubernetes `LabelSelector` as written in an object (allowedRoutes, allowedListeners).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub match_labels: Vec<(String, String)>,
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelectorRequirement {
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`; anything else makes the selector invalid.
    pub operator: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenerSet {
    pub meta: Meta,
    /// `spec.parentRef`.
    pub parent_ref: ParentReference,
    pub listeners: Vec<Listener>,
    /// `status.conditions` has `Accepted` = `True`.
    pub accepted: bool,
    /// Names of the listeners whose `status.listeners[]` entry has `Accepted` = `True`.
    pub accepted_listeners: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Route {
    pub kind: RouteKind,
    pub meta: Meta,
    /// `spec.hostnames` (always empty for TCPRoute and UDPRoute).
    pub hostnames: Vec<String>,
    pub parent_refs: Vec<ParentReference>,
    /// `status.parents`.
    pub parents: Vec<RouteParentStatus>,
    /// The fields templates read beyond the above: JSON text trimmed to their paths
    /// ([`crate::TemplateFields`]); text, as a decoded JSON tree costs ten times the bytes.
    pub template_fields: Option<Box<str>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParentReference {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteParentStatus {
    pub parent_ref: ParentReference,
    /// The status of the first `Accepted` condition, if any (`"True"`, `"False"`, `"Unknown"`).
    pub accepted: Option<String>,
}

// ------------------------------------------------------------------------------ externaldns.k8s.io (CRD)

/// A DNSEndpoint: its entries as written (the CRD validates nothing; the `crd` source judges each), and
/// the generations its status is written from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsEndpoint {
    pub meta: Meta,
    pub generation: Option<i64>,
    /// `status.observedGeneration`.
    pub observed_generation: Option<i64>,
    /// `status.conditions`; `None` when the status has none (v0.22's CRD prunes them).
    pub conditions: Option<Vec<DnsEndpointCondition>>,
    /// `spec.endpoints`, in order; `None` for a `null` entry (skipped, but it keeps the indexes warnings name).
    pub endpoints: Vec<Option<DnsEndpointEntry>>,
}

/// One `spec.endpoints[]` entry; absent fields are empty (zero for the TTL).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsEndpointEntry {
    pub dns_name: String,
    pub targets: Vec<String>,
    pub record_type: String,
    pub set_identifier: String,
    pub record_ttl: i64,
    pub labels: Vec<(String, String)>,
    pub provider_specific: Vec<(String, String)>,
}

/// One `status.conditions[]` entry of a DNSEndpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsEndpointCondition {
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

// ------------------------------------------------------------------------------- networking.k8s.io/v1

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ingress {
    pub meta: Meta,
    /// `spec.ingressClassName`.
    pub ingress_class_name: Option<String>,
    /// `spec.rules[].host`, in order, empty ones included (the source skips them).
    pub rule_hosts: Vec<String>,
    /// `spec.tls[].hosts[]`, in order.
    pub tls_hosts: Vec<String>,
    /// `status.loadBalancer.ingress`.
    pub load_balancer_ingress: Vec<LoadBalancerIngress>,
    /// The fields templates read beyond the above: JSON text trimmed to their paths
    /// ([`crate::TemplateFields`]).
    pub template_fields: Option<Box<str>>,
}
