//! The compact form of the Kubernetes objects sources read. Only fields some source reads are kept, so
//! memory grows with what extdns uses, not with the size of the objects in the cluster. Names follow the
//! Kubernetes API; optional API fields stay `Option` where "absent" and "empty" mean different things.

pub use crate::dnsendpoint_entries::{DnsEndpointEntries, DnsEndpointEntry, EntriesBuilder, EntryTargets, RareFields};
use crate::index::Ref;
use crate::intern::Interner;
use crate::item::Item;
use crate::{ResourceKind, StrMap, Sym};
pub use extdns_object::TraefikKind;

/// Views that keep their metadata whole. The kind is a constant (`ResourceKind::Service`) or, for a view
/// serving several kinds, read from the view (`|route| ResourceKind::Route(route.kind)`).
macro_rules! item_with_meta {
    ($view:ty, |$this:pat_param| $kind:expr $(, group: $group:ident)? $(, template_fields: $fields:ident)? $(, selects: $selects:ident)? $(, refs: $refs:path)? $(, announces: $announces:path)? $(, values: $values:ident)? $(, own_status: $own:path)?) => {
        impl Item for $view {
            type Uid = Option<crate::Uid>;
            fn kind(&self) -> ResourceKind {
                let $this = self;
                $kind
            }
            fn name(&self) -> &str {
                &self.meta.name
            }
            fn namespace(&self) -> &str {
                &self.meta.namespace
            }
            fn intern_meta(&mut self, interner: &Interner) {
                self.meta.intern(interner);
            }
            $(fn group(&self) -> Option<&str> {
                self.$group.as_deref()
            })?
            $(fn template_fields_slot(&mut self) -> Option<&mut Option<Box<str>>> {
                Some(&mut self.$fields)
            })?
            $(fn selects(&self) -> Option<&StrMap> {
                self.$selects()
            })?
            $(fn refs(&self) -> Vec<crate::index::Ref> {
                $refs(self)
            })?
            $(fn announces(&self) -> Vec<crate::index::Ref> {
                $announces(self)
            })?
            $(fn intern_values(&mut self, interner: &Interner) {
                self.$values(interner)
            })?
            $(fn differs_only_in_own_status(&self, old: &Self) -> bool {
                $own(self, old)
            })?
        }
    };
    ($view:ty, $kind:path $(, $($rest:tt)*)?) => {
        item_with_meta!($view, |_| $kind $(, $($rest)*)?);
    };
}

item_with_meta!(Service, ResourceKind::Service, template_fields: template_fields, selects: pod_selector, refs: service_refs, announces: service_labels, values: intern_values);
item_with_meta!(EndpointSlice, ResourceKind::EndpointSlice, group: service_name, refs: slice_refs);
item_with_meta!(Gateway, ResourceKind::Gateway);
item_with_meta!(ListenerSet, ResourceKind::ListenerSet, refs: listener_set_refs);
item_with_meta!(Ingress, ResourceKind::Ingress, template_fields: template_fields);
item_with_meta!(DnsEndpoint, ResourceKind::DnsEndpoint, own_status: DnsEndpoint::differs_only_in_status);

item_with_meta!(Route, |route| ResourceKind::Route(route.kind), template_fields: template_fields, refs: route_refs);
item_with_meta!(IstioGateway, ResourceKind::IstioGateway, template_fields: template_fields, refs: istio_gateway_refs);
item_with_meta!(VirtualService, ResourceKind::VirtualService, template_fields: template_fields, refs: virtual_service_refs);

item_with_meta!(F5Server, |server| server.kind.resource_kind());
// --- contour-httpproxy and openshift-route sources ---
item_with_meta!(HttpProxy, ResourceKind::HttpProxy, template_fields: template_fields);
item_with_meta!(OpenShiftRoute, ResourceKind::OpenShiftRoute, template_fields: template_fields);
item_with_meta!(TraefikRoute, |route| ResourceKind::Traefik(route.kind));
// --- ambassador-host source ---
item_with_meta!(AmbassadorHost, ResourceKind::AmbassadorHost, refs: ambassador_host_refs);

impl Item for Pod {
    type Uid = ();
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
    fn labels(&self) -> Option<&StrMap> {
        Some(&self.labels)
    }
    fn template_fields_slot(&mut self) -> Option<&mut Option<Box<str>>> {
        Some(&mut self.template_fields)
    }
}

impl Item for Node {
    type Uid = ();
    fn kind(&self) -> ResourceKind {
        ResourceKind::Node
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn template_fields_slot(&mut self) -> Option<&mut Option<Box<str>>> {
        Some(&mut self.template_fields)
    }
}

impl Item for Namespace {
    type Uid = ();
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
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`, shared by every object of the namespace; empty for cluster-scoped kinds.
    pub namespace: Sym,
    /// `metadata.labels`, which label filters match.
    pub labels: StrMap,
    /// `metadata.annotations`, where the extdns annotations live.
    pub annotations: StrMap,
}

/// An object's identity and the metadata filters and templates read, borrowed from any view: most views
/// keep a [`Meta`], while Nodes and Pods keep their fields apart (a Pod's strings are interned and sized for
/// the store), and the filters and templates read all of them alike.
#[derive(Debug, Clone, Copy)]
pub struct MetaRef<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.namespace`; empty for cluster-scoped kinds.
    pub namespace: &'a str,
    /// `metadata.labels`.
    pub labels: &'a StrMap,
    /// `metadata.annotations` (a Pod's only those it keeps).
    pub annotations: &'a StrMap,
}

impl<'a> From<&'a Meta> for MetaRef<'a> {
    fn from(m: &'a Meta) -> Self {
        MetaRef {
            name: &m.name,
            namespace: &m.namespace,
            labels: &m.labels,
            annotations: &m.annotations,
        }
    }
}

impl Node {
    /// Its metadata, as filters and templates read it.
    pub fn meta(&self) -> MetaRef<'_> {
        MetaRef {
            name: &self.name,
            namespace: "",
            labels: &self.labels,
            annotations: &self.annotations,
        }
    }
}

impl Pod {
    /// Its metadata, as filters and templates read it (the annotations it keeps).
    pub fn meta(&self) -> MetaRef<'_> {
        MetaRef {
            name: &self.name,
            namespace: &self.namespace,
            labels: &self.labels,
            annotations: &self.annotations,
        }
    }
}

impl Meta {
    /// Shares the namespace and the label and annotation keys through the store's interner.
    pub(crate) fn intern(&mut self, interner: &Interner) {
        self.namespace = interner.intern(&self.namespace);
        self.labels = self.labels.with_keys(|k| interner.intern(k));
        self.annotations = self.annotations.with_keys(|k| interner.intern(k));
    }
}

// ---------------------------------------------------------------------------------------------- core/v1

/// A core/v1 Service: the fields the service source and `--fqdn-template` read.
///
/// Sized for the store, which keeps one per Service in the cluster: 240 bytes, so a shared `Service` (with
/// the `Arc`'s two counts) fills jemalloc's 256-byte class, not the 320-byte one. Strings the API fills from
/// a handful of values (type, policy, protocol) are shared through the store's interner, and strings nothing
/// edits are boxed (docs/performance.md, "A smaller Service view and desired index").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Service {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.type`; "ClusterIP" when the object does not say (the API server's default).
    pub service_type: Sym,
    /// `spec.clusterIP`; `None` (the string) marks a headless Service.
    pub cluster_ip: Option<Box<str>>,
    /// `spec.clusterIPs`.
    pub cluster_ips: Box<[Box<str>]>,
    /// `spec.externalIPs`.
    pub external_ips: Box<[Box<str>]>,
    /// `spec.externalName`, the target of an ExternalName Service.
    pub external_name: Option<Box<str>>,
    /// `spec.externalTrafficPolicy`; `Local` publishes only the nodes running its Pods.
    pub external_traffic_policy: Option<Sym>,
    /// `spec.publishNotReadyAddresses`.
    pub publish_not_ready_addresses: bool,
    /// `spec.selector`; empty selects every Pod of the namespace.
    pub selector: StrMap,
    /// `spec.ports`, for SRV records and NodePorts.
    pub ports: Box<[ServicePort]>,
    /// `status.loadBalancer.ingress`.
    pub load_balancer_ingress: Box<[LoadBalancerIngress]>,
    /// The fields templates read beyond the above: JSON text trimmed to their paths
    /// ([`crate::TemplateFields`]); text, as a decoded JSON tree costs ten times the bytes.
    pub template_fields: Option<Box<str>>,
}

impl Service {
    /// Whether the Service has no cluster IP, so its Pods' addresses are published instead.
    pub fn is_headless(&self) -> bool {
        self.cluster_ip.as_deref() == Some("None")
    }

    /// The selector of the Pods sources read for this Service: those of a headless Service (the Pods its
    /// EndpointSlices name, which must also match its selector) and of a NodePort Service with
    /// `externalTrafficPolicy: Local` (for their nodes); `None` for any other Service, whose Pods no source
    /// reads. The live view keeps only the Pods some Service selects ([`crate::pod_demand`]).
    pub(crate) fn pod_selector(&self) -> Option<&StrMap> {
        let reads_pods = match self.service_type.as_str() {
            "ClusterIP" => self.is_headless(),
            "NodePort" => self.external_traffic_policy.as_deref() == Some("Local"),
            _ => false,
        };
        reads_pods.then_some(&self.selector)
    }

    /// Shares the strings every Service repeats (the type, the traffic policy, the ports' protocols) through
    /// the store's interner.
    fn intern_values(&mut self, interner: &Interner) {
        self.service_type = interner.intern(&self.service_type);
        if let Some(p) = &mut self.external_traffic_policy {
            *p = interner.intern(p);
        }
        for port in &mut self.ports {
            if let Some(p) = &mut port.protocol {
                *p = interner.intern(p);
            }
        }
    }
}

/// One `spec.ports[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServicePort {
    /// The port's name, the SRV record's service label.
    pub name: Option<Box<str>>,
    /// `TCP`, `UDP` or `SCTP`; `None` means TCP.
    pub protocol: Option<Sym>,
    /// `port`.
    pub port: i32,
    /// `nodePort`, set on NodePort and LoadBalancer Services.
    pub node_port: Option<i32>,
    /// An int port or a named port, as written.
    pub target_port: Option<Box<str>>,
}

/// One `status.loadBalancer.ingress[]` entry of a Service or an Ingress.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadBalancerIngress {
    /// An address the load balancer answers on.
    pub ip: Option<Box<str>>,
    /// A name the load balancer answers on (published as a CNAME, or resolved).
    pub hostname: Option<Box<str>>,
}

/// A Pod, in the smallest form the service source can work with: the live informer keeps one per Pod in
/// the cluster, so every byte here is multiplied by the Pod count (see docs/performance.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pod {
    /// `metadata.name`.
    pub name: Box<str>,
    /// `metadata.namespace`, interned: thousands of Pods share a few namespaces.
    pub namespace: Sym,
    /// `metadata.labels`, which Service selectors match.
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
    /// `status.phase`.
    pub phase: PodPhase,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// `metadata.deletionTimestamp` is set (the Pod is terminating).
    pub terminating: bool,
    /// `spec.hostNetwork`: the pod source's `--ignore-non-host-network-pods` publishes only these.
    pub host_network: bool,
    /// The fields `--fqdn-template` reads beyond the view, as JSON trimmed to those paths
    /// ([`crate::TemplateFields`]); `None` without a template reading Pods, so only the pod source with a
    /// template pays for it.
    pub template_fields: Option<Box<str>>,
}

/// `status.phase`: only a Running Pod's addresses are published.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PodPhase {
    /// Absent or not one of the others.
    #[default]
    Unknown,
    /// Accepted, not running yet.
    Pending,
    /// Bound to a node, containers started.
    Running,
    /// Every container ended well.
    Succeeded,
    /// A container ended badly.
    Failed,
}

impl PodPhase {
    /// The phase as the API writes it; `Unknown` for an absent or unknown one (a template sees what the
    /// view knows).
    pub fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
            PodPhase::Unknown => "Unknown",
        }
    }

    /// The phase a `status.phase` string names; anything unknown is `Unknown`.
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

/// A core/v1 Node: what NodePort and headless Services publish of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: StrMap,
    /// `metadata.annotations`.
    pub annotations: StrMap,
    /// `status.addresses`, in order.
    pub addresses: Vec<NodeAddress>,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// The fields `--fqdn-template` reads beyond the view, as JSON trimmed to those paths
    /// ([`crate::TemplateFields`]).
    pub template_fields: Option<Box<str>>,
}

/// The address type of a Node's public addresses (`status.addresses[].type`), which the service, node and
/// pod sources publish.
pub const EXTERNAL_IP: &str = "ExternalIP";
/// The address type of a Node's cluster-internal addresses.
pub const INTERNAL_IP: &str = "InternalIP";

/// One `status.addresses[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeAddress {
    /// `ExternalIP`, `InternalIP`, `Hostname`, ...
    pub address_type: String,
    /// The address.
    pub address: String,
}

/// A core/v1 Namespace: its labels, which `allowedRoutes` selectors match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Namespace {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: StrMap,
}

// --------------------------------------------------------------------------------- discovery.k8s.io/v1

/// A discovery.k8s.io/v1 EndpointSlice: a headless Service's endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointSlice {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// The `kubernetes.io/service-name` label.
    pub service_name: Option<String>,
    /// `IPv4`, `IPv6` or `FQDN`.
    pub address_type: String,
    /// `endpoints`.
    pub endpoints: Vec<SliceEndpoint>,
}

/// One `endpoints[]` entry of an EndpointSlice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SliceEndpoint {
    /// `addresses`.
    pub addresses: Vec<String>,
    /// `conditions.ready`; `None` (unknown) counts as ready.
    pub ready: Option<bool>,
    /// `targetRef`: the Pod behind the endpoint, whose hostname and annotations count.
    pub target_ref: Option<ObjectReference>,
    /// `nodeName`.
    pub node_name: Option<String>,
}

/// A reference to another object (`targetRef`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectReference {
    /// `kind`.
    pub kind: Option<String>,
    /// `apiVersion`.
    pub api_version: Option<String>,
    /// `namespace`.
    pub namespace: Option<String>,
    /// `name`.
    pub name: Option<String>,
}

// ------------------------------------------------------------------------------ gateway.networking.k8s.io

pub use extdns_object::RouteKind;

/// A Gateway: its listeners and the addresses routes attached to it publish.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gateway {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.gatewayClassName`.
    pub gateway_class_name: String,
    /// `spec.listeners`.
    pub listeners: Vec<Listener>,
    /// `spec.allowedListeners` (which ListenerSets may attach).
    pub allowed_listeners: Option<AllowedListeners>,
    /// `status.addresses[].value`, in order.
    pub addresses: Vec<String>,
}

/// One listener of a Gateway or ListenerSet: which hostnames and routes it admits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listener {
    /// `name`, which a route's `sectionName` refers to.
    pub name: String,
    /// `hostname`; `None` admits any.
    pub hostname: Option<String>,
    /// `port`, which a route's parent `port` refers to.
    pub port: i32,
    /// `protocol`: which route kinds it admits by default.
    pub protocol: String,
    /// `allowedRoutes`.
    pub allowed_routes: Option<AllowedRoutes>,
}

/// A listener's `allowedRoutes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedRoutes {
    /// `namespaces.from`: `All`, `Same`, `Selector` (`None` = not set, which means `Same`).
    pub namespaces_from: Option<String>,
    /// `namespaces.selector`, read when `from` is `Selector`.
    pub namespaces_selector: Option<LabelSelector>,
    /// `kinds`; empty admits the protocol's default kinds.
    pub kinds: Vec<RouteGroupKind>,
}

/// A Gateway's `spec.allowedListeners`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedListeners {
    /// `namespaces.from`: `All`, `Same`, `Selector`, `None` (`None` = not set, which means `None`).
    pub namespaces_from: Option<String>,
    /// `namespaces.selector`, read when `from` is `Selector`.
    pub namespaces_selector: Option<LabelSelector>,
}

/// One `allowedRoutes.kinds[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteGroupKind {
    /// `group`; `None` is `gateway.networking.k8s.io`.
    pub group: Option<String>,
    /// `kind`.
    pub kind: String,
}

/// A Kubernetes `LabelSelector` as written in an object (allowedRoutes, allowedListeners).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// `matchLabels`.
    pub match_labels: Vec<(String, String)>,
    /// `matchExpressions`.
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelectorRequirement {
    /// `key`.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`; anything else makes the selector invalid.
    pub operator: String,
    /// `values`.
    pub values: Vec<String>,
}

/// A ListenerSet: listeners attached to a Gateway from another object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenerSet {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.parentRef`.
    pub parent_ref: ParentReference,
    /// `spec.listeners`.
    pub listeners: Vec<Listener>,
    /// `status.conditions` has `Accepted` = `True`.
    pub accepted: bool,
    /// Names of the listeners whose `status.listeners[]` entry has `Accepted` = `True`.
    pub accepted_listeners: Vec<String>,
}

/// A Gateway API route of any kind: what it asks to be published and where it is attached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Route {
    /// Which route kind.
    pub kind: RouteKind,
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.hostnames` (always empty for TCPRoute and UDPRoute).
    pub hostnames: Vec<String>,
    /// `spec.parentRefs`.
    pub parent_refs: Vec<ParentReference>,
    /// `status.parents`.
    pub parents: Vec<RouteParentStatus>,
    /// The fields templates read beyond the above: JSON text trimmed to their paths
    /// ([`crate::TemplateFields`]); text, as a decoded JSON tree costs ten times the bytes.
    pub template_fields: Option<Box<str>>,
}

/// A route's `parentRefs[]` entry (or a ListenerSet's `parentRef`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParentReference {
    /// `group`; `None` is `gateway.networking.k8s.io`.
    pub group: Option<String>,
    /// `kind`; `None` is `Gateway`.
    pub kind: Option<String>,
    /// `namespace`; `None` is the route's own.
    pub namespace: Option<String>,
    /// `name`.
    pub name: String,
    /// `sectionName`: one listener only.
    pub section_name: Option<String>,
    /// `port`: the listeners on this port only.
    pub port: Option<i32>,
}

/// One `status.parents[]` entry: whether a parent accepted the route.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteParentStatus {
    /// `parentRef`.
    pub parent_ref: ParentReference,
    /// The status of the first `Accepted` condition, if any (`"True"`, `"False"`, `"Unknown"`).
    pub accepted: Option<String>,
}

// ------------------------------------------------------------------------------ externaldns.k8s.io (CRD)

/// A DNSEndpoint: its entries as written (the CRD validates nothing; the `crd` source judges each), and
/// the generations its status is written from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsEndpoint {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `metadata.generation`, which the status's `observedGeneration` echoes.
    pub generation: Option<i64>,
    /// `status.observedGeneration`.
    pub observed_generation: Option<i64>,
    /// `status.conditions`; `None` when the status has none (v0.22's CRD prunes them).
    pub conditions: Option<Vec<DnsEndpointCondition>>,
    /// `spec.endpoints`, in order, `null` entries included (skipped, but they keep the indexes warnings
    /// name).
    pub endpoints: DnsEndpointEntries,
}

impl DnsEndpoint {
    /// Whether `self` and `old` differ in their status alone (`observedGeneration`, conditions), which
    /// extdns writes (`extdns-kube-sinks`' `CrdStatus`) and the `crd` source never reads. A new
    /// `generation` is a change of the spec, so it is not status: the sync it wakes writes the new
    /// `observedGeneration`.
    pub fn differs_only_in_status(&self, old: &DnsEndpoint) -> bool {
        // Destructured whole, so a field added later must be placed on one side or the other here.
        let DnsEndpoint {
            meta,
            generation,
            observed_generation,
            conditions,
            endpoints,
        } = self;
        let status_differs = *observed_generation != old.observed_generation || *conditions != old.conditions;
        status_differs && *meta == old.meta && *generation == old.generation && *endpoints == old.endpoints
    }
}

/// One `status.conditions[]` entry of a DNSEndpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsEndpointCondition {
    /// `type`.
    pub type_: String,
    /// `status`.
    pub status: String,
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
}

// ------------------------------------------------------------------------------- networking.k8s.io/v1

/// A networking.k8s.io/v1 Ingress: its hosts and load balancer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ingress {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.ingressClassName`.
    pub ingress_class_name: Option<String>,
    /// `spec.rules[].host`, in order, empty ones included (the source skips them).
    pub rule_hosts: Vec<String>,
    /// `spec.tls[].hosts[]`, in order.
    pub tls_hosts: Vec<String>,
    /// `status.loadBalancer.ingress`.
    pub load_balancer_ingress: Box<[LoadBalancerIngress]>,
    /// The fields templates read beyond the above: JSON text trimmed to their paths
    /// ([`crate::TemplateFields`]).
    pub template_fields: Option<Box<str>>,
}

// ------------------------------------------------------------------------------------------ cis.f5.com

/// Which F5 kind an [`F5Server`] is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum F5Kind {
    /// A VirtualServer (HTTP; has `hostAliases`).
    #[default]
    VirtualServer,
    /// A TransportServer (TCP/UDP; one `host`).
    TransportServer,
}

impl F5Kind {
    /// The kind of the table this is.
    pub fn resource_kind(self) -> ResourceKind {
        match self {
            F5Kind::VirtualServer => ResourceKind::F5VirtualServer,
            F5Kind::TransportServer => ResourceKind::F5TransportServer,
        }
    }
}

/// An F5 VirtualServer or TransportServer: the names it asks for and its addresses. Absent strings are
/// empty: the source treats both alike.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct F5Server {
    /// Which of the two kinds.
    pub kind: F5Kind,
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.host`.
    pub host: String,
    /// `spec.hostAliases` (VirtualServers only; empty for TransportServers).
    pub host_aliases: Vec<String>,
    /// `spec.virtualServerAddress`.
    pub virtual_server_address: String,
    /// `status.vsAddress`.
    pub vs_address: String,
}

// ----------------------------------------------------------------- projectcontour.io, route.openshift.io

/// A Contour HTTPProxy (projectcontour.io/v1): the name it serves and where Contour's Envoy answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpProxy {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.virtualhost.fqdn`; `None` when absent or empty (a proxy only included by another).
    pub fqdn: Option<Box<str>>,
    /// `status.loadBalancer.ingress`, which Contour copies from its Envoy Service.
    pub load_balancer_ingress: Box<[LoadBalancerIngress]>,
    /// The fields templates read beyond the above: JSON text trimmed to their paths
    /// ([`crate::TemplateFields`]).
    pub template_fields: Option<Box<str>>,
}

/// An OpenShift Route (route.openshift.io/v1): what each router made of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenShiftRoute {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `status.ingress`, in order: one entry per router.
    pub ingress: Box<[RouterIngress]>,
    /// The fields templates read beyond the above: JSON text trimmed to their paths
    /// ([`crate::TemplateFields`]).
    pub template_fields: Option<Box<str>>,
}

/// One `status.ingress[]` entry of an OpenShift Route.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouterIngress {
    /// `host`: the name the router serves the route under.
    pub host: Box<str>,
    /// `routerName`.
    pub router_name: Box<str>,
    /// `routerCanonicalHostname`: the router's own DNS name.
    pub router_canonical_hostname: Box<str>,
    /// The first `Admitted` condition is `True`.
    pub admitted: bool,
}

// ------------------------------------------------------------------ traefik.io, traefik.containo.us (CRDs)

/// A Traefik router (IngressRoute, IngressRouteTCP, IngressRouteUDP, of either group): its rules, which
/// name its hosts; nothing else of it is read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraefikRoute {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// Which of the six kinds.
    pub kind: TraefikKind,
    /// `spec.routes[].match`, in order (empty for a route without one); none for IngressRouteUDP, whose
    /// routes have no rule.
    pub rules: Box<[Box<str>]>,
}

/// The Service groups of the reverse index: every NodePort Service reads every Node; some headless
/// Services read Nodes (`endpoints-type: NodeExternalIP`); a NodePort Service with the `Local` traffic
/// policy reads its namespace's Pods.
pub(crate) const NODE_PORT: &str = "node-port-services";
pub(crate) const HEADLESS: &str = "headless-services";
pub(crate) const LOCAL_NODE_PORT: &str = "local-node-port-services";

/// A parent reference with the defaults the API server fills in: kind `Gateway`, the referrer's namespace.
/// Parents of other kinds (a Service for GAMMA) are not indexed: no change of them is followed.
fn parent(r: &ParentReference, own_namespace: &str) -> Option<Ref> {
    fn set(v: &Option<String>) -> Option<&str> {
        v.as_deref().filter(|s| !s.is_empty())
    }
    let kind = match set(&r.kind).unwrap_or("Gateway") {
        "Gateway" => ResourceKind::Gateway,
        "ListenerSet" => ResourceKind::ListenerSet,
        _ => return None,
    };
    let ns = set(&r.namespace).unwrap_or(own_namespace);
    Some(Ref::Object(kind, ns.into(), r.name.as_str().into()))
}

pub(crate) fn service_refs(svc: &Service) -> Vec<Ref> {
    let mut out = Vec::new();
    match svc.service_type.as_str() {
        "NodePort" => {
            out.push(Ref::Group(NODE_PORT));
            if svc.external_traffic_policy.as_deref() == Some("Local") {
                out.push(Ref::GroupIn(LOCAL_NODE_PORT, svc.meta.namespace.as_str().into()));
            }
        }
        "ClusterIP" if svc.is_headless() => out.push(Ref::Group(HEADLESS)),
        _ => {}
    }
    out
}

pub(crate) fn slice_refs(slice: &EndpointSlice) -> Vec<Ref> {
    let ns = slice.meta.namespace.as_str();
    let mut pods: Vec<Ref> = slice
        .endpoints
        .iter()
        .filter_map(|ep| ep.target_ref.as_ref())
        .filter(|t| t.kind.as_deref().is_none_or(|k| k == "Pod"))
        .filter_map(|t| t.name.as_deref())
        .map(|name| Ref::Object(ResourceKind::Pod, ns.into(), name.into()))
        .collect();
    pods.dedup();
    pods
}

pub(crate) fn route_refs(route: &Route) -> Vec<Ref> {
    let ns = route.meta.namespace.as_str();
    route.parent_refs.iter().filter_map(|r| parent(r, ns)).collect()
}

pub(crate) fn listener_set_refs(ls: &ListenerSet) -> Vec<Ref> {
    let ns = ls.meta.namespace.as_str();
    let gw_ns = ls
        .parent_ref
        .namespace
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or(ns);
    vec![Ref::Object(
        ResourceKind::Gateway,
        gw_ns.into(),
        ls.parent_ref.name.as_str().into(),
    )]
}

/// What a Service's change announces: its selector's labels, which Istio Gateways select it by
/// ([`Ref::Selects`]).
pub(crate) fn service_labels(svc: &Service) -> Vec<Ref> {
    svc.selector
        .iter()
        .map(|(k, v)| Ref::Selects(ResourceKind::Service, k.into(), v.into()))
        .collect()
}

// ------------------------------------------------------------------------------------ networking.istio.io

/// The annotation on an Istio Gateway naming the Ingress (`namespace/name`, or `name` in the Gateway's
/// namespace) whose load balancer it publishes. external-dns reads it at its default prefix only, whatever
/// `--annotation-prefix` says (the key is fixed when its package loads).
pub const ISTIO_INGRESS_ANNOTATION: &str = "external-dns.kubernetes.io/ingress";

/// [`ISTIO_INGRESS_ANNOTATION`] under the legacy prefix, read where the legacy prefix is
/// (`--enable-legacy-annotation-prefix`, extdns's default), as external-dns copies legacy keys then.
pub const ISTIO_INGRESS_ANNOTATION_LEGACY: &str = "external-dns.alpha.kubernetes.io/ingress";

/// The group of the reverse index holding the Istio Gateways with an empty `spec.selector`, which select
/// every Service.
pub(crate) const SELECTS_EVERY_SERVICE: &str = "istio-gateways-selecting-every-service";

/// The mesh pseudo-gateway a VirtualService names for its sidecars: no Gateway object.
pub const ISTIO_MESH_GATEWAY: &str = "mesh";

/// An Istio Gateway (networking.istio.io, any version): the hosts its servers serve and the labels of the
/// ingress gateway Pods it runs on, which its Services' selectors name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IstioGateway {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.selector`; empty selects every Service.
    pub selector: StrMap,
    /// `spec.servers[].hosts[]`, every server's in order (`namespace/host` as written).
    pub hosts: Vec<String>,
    /// The fields templates read beyond the above ([`crate::TemplateFields`]).
    pub template_fields: Option<Box<str>>,
}

/// An Istio VirtualService (networking.istio.io, any version): its hosts and the Gateways it binds to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VirtualService {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.hosts`.
    pub hosts: Vec<String>,
    /// `spec.gateways`: `namespace/name`, `name` (its own namespace) or `mesh`.
    pub gateways: Vec<String>,
    /// `spec.exportTo`: the namespaces it is visible in (`*`, `.`, or a name); empty is everywhere.
    pub export_to: Vec<String>,
    /// The fields templates read beyond the above ([`crate::TemplateFields`]).
    pub template_fields: Option<Box<str>>,
}

/// A reference written `namespace/name` or `name` (in `own_namespace`), as the Istio sources read the
/// Ingress annotation and `spec.gateways`; `None` for more than one `/`.
pub fn namespaced_name<'a>(reference: &'a str, own_namespace: &'a str) -> Option<(&'a str, &'a str)> {
    let mut parts = reference.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Some((own_namespace, name)),
        (Some(ns), Some(name), None) => Some((if ns.is_empty() { own_namespace } else { ns }, name)),
        _ => None,
    }
}

/// An Istio Gateway refers to the Services its selector selects (by each label, or all when empty) and to
/// the Ingress its annotation names.
pub(crate) fn istio_gateway_refs(gw: &IstioGateway) -> Vec<Ref> {
    let mut out: Vec<Ref> = if gw.selector.is_empty() {
        vec![Ref::Group(SELECTS_EVERY_SERVICE)]
    } else {
        gw.selector
            .iter()
            .map(|(k, v)| Ref::Selects(ResourceKind::Service, k.into(), v.into()))
            .collect()
    };
    // Both keys: which one the source reads depends on the prefixes configured, and a reference too many
    // only re-evaluates the Gateway for nothing.
    for key in [ISTIO_INGRESS_ANNOTATION, ISTIO_INGRESS_ANNOTATION_LEGACY] {
        let ingress = gw.meta.annotations.get(key).filter(|s| !s.is_empty());
        if let Some((ns, name)) = ingress.and_then(|i| namespaced_name(i, &gw.meta.namespace)) {
            let r = Ref::Object(ResourceKind::Ingress, ns.into(), name.into());
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out
}

/// A VirtualService refers to the Gateways of its `spec.gateways` (not `mesh`).
pub(crate) fn virtual_service_refs(vs: &VirtualService) -> Vec<Ref> {
    let ns = vs.meta.namespace.as_str();
    let mut out: Vec<Ref> = vs
        .gateways
        .iter()
        .filter(|g| !g.is_empty() && g.as_str() != ISTIO_MESH_GATEWAY)
        .filter_map(|g| namespaced_name(g, ns))
        .map(|(ns, name)| Ref::Object(ResourceKind::IstioGateway, ns.into(), name.into()))
        .collect();
    out.sort();
    out.dedup();
    out
}

// --- ambassador-host source ---
// ------------------------------------------------------------------------------------ getambassador.io

/// The annotation of an Emissary Host naming the Service whose load-balancer address is the Host's target.
/// A fixed key, not under the annotation prefix: external-dns reads it as written here.
pub const AMBASSADOR_SERVICE_ANNOTATION: &str = "external-dns.ambassador-service";

/// An Emissary-ingress (Ambassador) Host (getambassador.io): the name it serves; its annotations name the
/// Service it is reached through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AmbassadorHost {
    /// Identity, labels and annotations.
    pub meta: Meta,
    /// `spec.hostname`; empty when absent.
    pub hostname: Box<str>,
}

impl AmbassadorHost {
    /// The value of [`AMBASSADOR_SERVICE_ANNOTATION`], `None` when the Host has none (it then publishes
    /// nothing).
    pub fn service_annotation(&self) -> Option<&str> {
        self.meta.annotations.get(AMBASSADOR_SERVICE_ANNOTATION)
    }
}

/// The `(namespace, name)` of the Service an [`AMBASSADOR_SERVICE_ANNOTATION`] value names, as Emissary
/// spells cross-namespace references: `namespace/name`, else `name.namespace` (split at the first dot, so
/// `svc.foo.bar` is `svc` in `foo.bar`), else `name` in `default`. `None` for more than one `/`, which
/// external-dns reports as an invalid service.
pub fn ambassador_service(value: &str) -> Option<(&str, &str)> {
    let mut slashes = value.split('/');
    match (slashes.next(), slashes.next(), slashes.next()) {
        (Some(namespace), Some(name), None) => Some((namespace, name)),
        (Some(_), Some(_), Some(_)) => None,
        _ => Some(match value.split_once('.') {
            Some((name, namespace)) => (namespace, name),
            None => ("default", value),
        }),
    }
}

/// A Host refers to the Service its annotation names, so a change of that Service re-evaluates it.
pub(crate) fn ambassador_host_refs(host: &AmbassadorHost) -> Vec<Ref> {
    host.service_annotation()
        .and_then(ambassador_service)
        .map(|(ns, name)| Ref::Object(ResourceKind::Service, ns.into(), name.into()))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn istio_references_default_to_the_own_namespace_and_refuse_more_than_one_slash() {
        assert_eq!(namespaced_name("gw", "apps"), Some(("apps", "gw")));
        assert_eq!(namespaced_name("infra/gw", "apps"), Some(("infra", "gw")));
        assert_eq!(namespaced_name("a/b/c", "apps"), None);
        let vs = VirtualService {
            meta: Meta {
                name: "vs".into(),
                namespace: "apps".into(),
                ..Meta::default()
            },
            gateways: vec![
                "mesh".into(),
                "gw".into(),
                "infra/gw".into(),
                "apps/gw".into(),
                "".into(),
            ],
            ..VirtualService::default()
        };
        assert_eq!(
            virtual_service_refs(&vs),
            [
                Ref::Object(ResourceKind::IstioGateway, "apps".into(), "gw".into()),
                Ref::Object(ResourceKind::IstioGateway, "infra".into(), "gw".into()),
            ]
        );
    }

    #[test]
    fn an_istio_gateway_refers_to_its_selector_labels_and_its_ingress() {
        let mut gw = IstioGateway {
            meta: Meta {
                name: "gw".into(),
                namespace: "istio-system".into(),
                annotations: [(ISTIO_INGRESS_ANNOTATION, "lb")].into_iter().collect(),
                ..Meta::default()
            },
            selector: [("istio", "ingressgateway")].into_iter().collect(),
            ..IstioGateway::default()
        };
        assert_eq!(
            istio_gateway_refs(&gw),
            [
                Ref::Selects(ResourceKind::Service, "istio".into(), "ingressgateway".into()),
                Ref::Object(ResourceKind::Ingress, "istio-system".into(), "lb".into()),
            ]
        );
        gw.selector = StrMap::default();
        gw.meta.annotations = StrMap::default();
        assert_eq!(istio_gateway_refs(&gw), [Ref::Group(SELECTS_EVERY_SERVICE)]);
        let svc = Service {
            selector: [("istio", "ingressgateway")].into_iter().collect(),
            ..Service::default()
        };
        assert_eq!(
            svc.announces(),
            [Ref::Selects(
                ResourceKind::Service,
                "istio".into(),
                "ingressgateway".into()
            )]
        );
    }

    fn svc(service_type: &str, headless: bool, policy: Option<&str>) -> Service {
        Service {
            service_type: service_type.into(),
            cluster_ip: Some(if headless { "None" } else { "10.0.0.1" }.into()),
            external_traffic_policy: policy.map(Into::into),
            selector: [("app", "db")].into_iter().collect(),
            ..Service::default()
        }
    }

    #[test]
    fn only_headless_and_local_node_port_services_read_pods() {
        let reads = |s: Service| s.pod_selector().is_some();
        assert!(reads(svc("ClusterIP", true, None)));
        assert!(reads(svc("NodePort", false, Some("Local"))));
        assert!(!reads(svc("ClusterIP", false, None)));
        assert!(!reads(svc("NodePort", false, Some("Cluster"))));
        assert!(!reads(svc("LoadBalancer", false, Some("Local"))));
        let headless = svc("ClusterIP", true, None);
        assert_eq!(
            headless.selects(),
            Some(&headless.selector),
            "the store reads the same rule"
        );
    }

    // --- ambassador-host source ---
    #[test]
    fn an_ambassador_service_reference_is_parsed_as_emissary_spells_it() {
        for (value, want) in [
            ("svc", Some(("default", "svc"))),
            ("ns/svc", Some(("ns", "svc"))),
            ("svc.ns", Some(("ns", "svc"))),
            ("svc.ns.foo.bar", Some(("ns.foo.bar", "svc"))),
            ("ns/svc.qualified", Some(("ns", "svc.qualified"))),
            ("ns/svc/foo/bar", None),
            ("ns/svc/foo.bar", None),
            ("ns.foo/svc/bar", None),
        ] {
            assert_eq!(ambassador_service(value), want, "{value}");
        }
    }

    #[test]
    fn an_ambassador_host_refers_to_the_service_its_annotation_names() {
        let host = |value: &str| AmbassadorHost {
            meta: Meta {
                name: "h".into(),
                namespace: "web".into(),
                annotations: [(AMBASSADOR_SERVICE_ANNOTATION, value)].into_iter().collect(),
                ..Meta::default()
            },
            hostname: "h.example.org".into(),
        };
        assert_eq!(
            ambassador_host_refs(&host("emissary/edge")),
            vec![Ref::Object(ResourceKind::Service, "emissary".into(), "edge".into())]
        );
        assert!(ambassador_host_refs(&host("a/b/c")).is_empty());
        assert!(ambassador_host_refs(&AmbassadorHost::default()).is_empty());
    }
}
