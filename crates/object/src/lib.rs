//! The Kubernetes objects extdns reads, named once for every layer.
//!
//! [`KINDS`] is the one table of the kinds extdns can watch: for each, its API kind and group, the versions
//! extdns reads (the one it watches first), its plural, where it is watched and how its changes count. The
//! rows are data only: the informer decides how each kind is decoded, watched and stored by dispatching on
//! [`ResourceKind`], so this crate depends on nothing and sits below the informer, the sources, the endpoint
//! model and the controller alike.
//!
//! [`ObjectKey`] is the one identity of an object: the watcher stores objects by it, sources name the objects
//! they evaluate by it, endpoints refer to the objects that made them by it, and Events and DNSEndpoint
//! status find their object by it. The `resource` label external-dns writes (`service/default/web`) is that
//! key rendered at the edge ([`ObjectKey::resource_label`]) and parsed only where records come back from DNS
//! ([`ObjectKey::from_resource_label`]). The object's [`Uid`] is kept by the store beside its key, so what
//! reports on an object names it without a read from the API server.
//!
//! ```
//! use extdns_object::{ObjectKey, ResourceKind, RouteKind};
//!
//! let web = ObjectKey::new(ResourceKind::Service, "default", "web");
//! assert_eq!(web.resource_label(), "service/default/web");
//! assert_eq!(ObjectKey::from_resource_label("service/default/web"), Some(web));
//!
//! let route = ResourceKind::Route(RouteKind::Http);
//! assert_eq!(route.spec().api_version_of(route.spec().preferred_version()), "gateway.networking.k8s.io/v1");
//! assert_eq!(ResourceKind::from_lowercase("crd"), Some(ResourceKind::DnsEndpoint));
//! ```

use std::borrow::Cow;
use std::fmt;

mod uid;

pub use uid::Uid;

/// The kinds of Kubernetes objects extdns can watch. A source lists the kinds it reads, and the live
/// cluster starts watchers for those kinds only. The order is the order of [`KINDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKind {
    /// core/v1 Service.
    Service,
    /// discovery.k8s.io/v1 EndpointSlice.
    EndpointSlice,
    /// core/v1 Pod.
    Pod,
    /// core/v1 Node.
    Node,
    /// core/v1 Namespace.
    Namespace,
    /// gateway.networking.k8s.io Gateway.
    Gateway,
    /// gateway.networking.k8s.io ListenerSet.
    ListenerSet,
    /// A Gateway API route; one index per route kind.
    Route(RouteKind),
    /// networking.k8s.io/v1 Ingress.
    Ingress,
    /// external-dns's DNSEndpoint; its group, version and kind may be configured (the informer's
    /// `KindOverrides`).
    DnsEndpoint,
    /// F5 CIS's cis.f5.com VirtualServer (`--source=f5-virtualserver`).
    F5VirtualServer,
    /// F5 CIS's cis.f5.com TransportServer (`--source=f5-transportserver`).
    F5TransportServer,
    // --- contour-httpproxy and openshift-route sources ---
    /// projectcontour.io/v1 HTTPProxy (`--source=contour-httpproxy`).
    HttpProxy,
    /// route.openshift.io/v1 Route (`--source=openshift-route`); not a Gateway API route.
    OpenShiftRoute,
    // Istio (networking.istio.io).
    /// networking.istio.io Gateway (`--source=istio-gateway`); its `resource` label is external-dns's
    /// `gateway/<ns>/<name>`.
    IstioGateway,
    /// networking.istio.io VirtualService (`--source=istio-virtualservice`).
    VirtualService,
    /// A Traefik router (IngressRoute, IngressRouteTCP, IngressRouteUDP) of either API group.
    Traefik(TraefikKind),
    // --- ambassador-host source ---
    /// Emissary-ingress's (Ambassador's) getambassador.io Host (`--source=ambassador-host`).
    AmbassadorHost,
}

/// Traefik's router kinds, each in the two API groups external-dns v0.23 reads: `traefik.io` (Traefik v3,
/// and v2 from 2.10) and the legacy `traefik.containo.us` (Traefik v2), which published the same schema.
/// Two groups are two kinds: each is listed, watched and found missing on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TraefikKind {
    /// traefik.io IngressRoute (HTTP routers).
    #[default]
    IngressRoute,
    /// traefik.io IngressRouteTCP.
    IngressRouteTcp,
    /// traefik.io IngressRouteUDP.
    IngressRouteUdp,
    /// traefik.containo.us IngressRoute.
    LegacyIngressRoute,
    /// traefik.containo.us IngressRouteTCP.
    LegacyIngressRouteTcp,
    /// traefik.containo.us IngressRouteUDP.
    LegacyIngressRouteUdp,
}

/// The Gateway API route kinds extdns has sources for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RouteKind {
    /// HTTPRoute.
    #[default]
    Http,
    /// GRPCRoute.
    Grpc,
    /// TLSRoute.
    Tls,
    /// TCPRoute.
    Tcp,
    /// UDPRoute.
    Udp,
}

/// Where the objects of a kind live and are watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Cluster-scoped: no namespace, watched cluster-wide.
    Cluster,
    /// Namespaced, watched in the namespace this names.
    Namespaced(WatchIn),
}

/// The namespace a namespaced kind is watched in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchIn {
    /// `--namespace` (all when not set): the objects sources publish from.
    Sources,
    /// `--gateway-namespace` (all when not set).
    Gateways,
    /// Every namespace, whatever is configured (ListenerSets attach to Gateways across namespaces).
    All,
}

/// How a change of an object enters the informer's change set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKey {
    /// The object itself.
    Own,
    /// The group it is stored in (an EndpointSlice's Service), both the one it left and the one it joined:
    /// that is all a source can do with it.
    Group,
}

/// One kind extdns can watch: one row of [`KINDS`].
#[derive(Debug)]
pub struct KindSpec {
    /// Which kind this row declares.
    pub kind: ResourceKind,
    /// The API kind: `Service`, `HTTPRoute`, ...
    pub name: &'static str,
    /// The API group; empty for the core group.
    pub group: &'static str,
    /// The versions extdns can read, the one it watches first. Versions of one kind share one schema as
    /// far as the views read, so an object of any of them decodes into the same type.
    pub versions: &'static [&'static str],
    /// The resource name in URLs: `services`, `httproutes`, ...
    pub plural: &'static str,
    /// Namespaced or cluster-wide; decides how watches and keys are scoped.
    pub scope: Scope,
    /// Which objects a change of this kind marks changed.
    pub changes: ChangeKey,
    /// Kept by the live view only while an object of this kind selects it (by labels, in its namespace):
    /// sources read no other object of the kind (Pods, selected by Services).
    pub kept_while_selected_by: Option<ResourceKind>,
}

const GATEWAY_API: &str = "gateway.networking.k8s.io";
const ISTIO: &str = "networking.istio.io";

/// F5 Container Ingress Services' API group.
const F5: &str = "cis.f5.com";

/// Traefik's API group since v2.10.
pub const TRAEFIK_GROUP: &str = "traefik.io";
/// Traefik v2's API group, which Traefik v3 no longer serves.
pub const TRAEFIK_LEGACY_GROUP: &str = "traefik.containo.us";

// --- ambassador-host source ---
/// Emissary-ingress's (Ambassador's) API group.
pub const AMBASSADOR_GROUP: &str = "getambassador.io";

/// The table: every kind extdns can watch, in [`ResourceKind`] order. Each row: the kind, its API kind and
/// group, the versions extdns reads (the one it watches first), its plural, where it is watched and how its
/// changes enter the change set.
#[rustfmt::skip]
pub static KINDS: [KindSpec; 27] = {
    use ChangeKey::{Group, Own};
    use ResourceKind as K;
    use Scope::{Cluster, Namespaced};
    use WatchIn::{All, Gateways, Sources};
    const GW: &str = GATEWAY_API;
    [
        row(K::Service, "Service", "", &["v1"], "services", Namespaced(Sources), Own),
        row(K::EndpointSlice, "EndpointSlice", "discovery.k8s.io", &["v1"], "endpointslices", Namespaced(Sources), Group),
        row(K::Pod, "Pod", "", &["v1"], "pods", Namespaced(Sources), Own).kept_while_selected_by(K::Service),
        row(K::Node, "Node", "", &["v1"], "nodes", Cluster, Own),
        row(K::Namespace, "Namespace", "", &["v1"], "namespaces", Cluster, Own),
        row(K::Gateway, "Gateway", GW, &["v1", "v1beta1"], "gateways", Namespaced(Gateways), Own),
        row(K::ListenerSet, "ListenerSet", GW, &["v1"], "listenersets", Namespaced(All), Own),
        row(K::Route(RouteKind::Http), "HTTPRoute", GW, &["v1", "v1beta1"], "httproutes", Namespaced(Sources), Own),
        row(K::Route(RouteKind::Grpc), "GRPCRoute", GW, &["v1"], "grpcroutes", Namespaced(Sources), Own),
        row(K::Route(RouteKind::Tls), "TLSRoute", GW, &["v1", "v1alpha3", "v1alpha2"], "tlsroutes", Namespaced(Sources), Own),
        row(K::Route(RouteKind::Tcp), "TCPRoute", GW, &["v1", "v1alpha2"], "tcproutes", Namespaced(Sources), Own),
        row(K::Route(RouteKind::Udp), "UDPRoute", GW, &["v1", "v1alpha2"], "udproutes", Namespaced(Sources), Own),
        row(K::Ingress, "Ingress", "networking.k8s.io", &["v1"], "ingresses", Namespaced(Sources), Own),
        row(K::DnsEndpoint, "DNSEndpoint", "externaldns.k8s.io", &["v1alpha1"], "dnsendpoints", Namespaced(Sources), Own),
        // F5 Container Ingress Services.
        row(K::F5VirtualServer, "VirtualServer", F5, &["v1"], "virtualservers", Namespaced(Sources), Own),
        row(K::F5TransportServer, "TransportServer", F5, &["v1"], "transportservers", Namespaced(Sources), Own),
        // --- contour-httpproxy and openshift-route sources ---
        row(K::HttpProxy, "HTTPProxy", "projectcontour.io", &["v1"], "httpproxies", Namespaced(Sources), Own),
        row(K::OpenShiftRoute, "Route", "route.openshift.io", &["v1"], "routes", Namespaced(Sources), Own),
        // Istio: every version Istio serves, v1 first (Istio 1.22 and later), as one schema.
        row(K::IstioGateway, "Gateway", ISTIO, &["v1", "v1beta1", "v1alpha3"], "gateways", Namespaced(Sources), Own),
        row(K::VirtualService, "VirtualService", ISTIO, &["v1", "v1beta1", "v1alpha3"], "virtualservices", Namespaced(Sources), Own),
        // Traefik (traefik-proxy)
        row(K::Traefik(TraefikKind::IngressRoute), "IngressRoute", TRAEFIK_GROUP, &["v1alpha1"], "ingressroutes", Namespaced(Sources), Own),
        row(K::Traefik(TraefikKind::IngressRouteTcp), "IngressRouteTCP", TRAEFIK_GROUP, &["v1alpha1"], "ingressroutetcps", Namespaced(Sources), Own),
        row(K::Traefik(TraefikKind::IngressRouteUdp), "IngressRouteUDP", TRAEFIK_GROUP, &["v1alpha1"], "ingressrouteudps", Namespaced(Sources), Own),
        row(K::Traefik(TraefikKind::LegacyIngressRoute), "IngressRoute", TRAEFIK_LEGACY_GROUP, &["v1alpha1"], "ingressroutes", Namespaced(Sources), Own),
        row(K::Traefik(TraefikKind::LegacyIngressRouteTcp), "IngressRouteTCP", TRAEFIK_LEGACY_GROUP, &["v1alpha1"], "ingressroutetcps", Namespaced(Sources), Own),
        row(K::Traefik(TraefikKind::LegacyIngressRouteUdp), "IngressRouteUDP", TRAEFIK_LEGACY_GROUP, &["v1alpha1"], "ingressrouteudps", Namespaced(Sources), Own),
        // --- ambassador-host source ---
        // v3alpha1 is what external-dns reads; Emissary 3 serves v2 too (its storage version), as one schema
        // for the fields the source reads.
        row(K::AmbassadorHost, "Host", AMBASSADOR_GROUP, &["v3alpha1", "v2"], "hosts", Namespaced(Sources), Own),
    ]
};

/// One row of [`KINDS`].
const fn row(
    kind: ResourceKind,
    name: &'static str,
    group: &'static str,
    versions: &'static [&'static str],
    plural: &'static str,
    scope: Scope,
    changes: ChangeKey,
) -> KindSpec {
    KindSpec {
        kind,
        name,
        group,
        versions,
        plural,
        scope,
        changes,
        kept_while_selected_by: None,
    }
}

impl KindSpec {
    /// This row, its objects kept only while an object of `kind` selects them.
    const fn kept_while_selected_by(mut self, kind: ResourceKind) -> KindSpec {
        self.kept_while_selected_by = Some(kind);
        self
    }

    /// `group/version` of `version` (`version` alone for the core group).
    pub fn api_version_of(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// The version extdns watches unless told otherwise: the first it reads.
    pub fn preferred_version(&self) -> &'static str {
        self.versions.first().copied().unwrap_or_default()
    }
}

impl ResourceKind {
    /// Every kind, in table order.
    pub fn all() -> impl Iterator<Item = ResourceKind> {
        KINDS.iter().map(|s| s.kind)
    }

    /// This kind's entry in [`KINDS`].
    pub fn spec(self) -> &'static KindSpec {
        &KINDS[self.slot()]
    }

    /// This kind's position in [`KINDS`] (and of its index in the informer's store).
    pub fn slot(self) -> usize {
        match self {
            ResourceKind::Service => 0,
            ResourceKind::EndpointSlice => 1,
            ResourceKind::Pod => 2,
            ResourceKind::Node => 3,
            ResourceKind::Namespace => 4,
            ResourceKind::Gateway => 5,
            ResourceKind::ListenerSet => 6,
            ResourceKind::Route(r) => 7 + r as usize,
            ResourceKind::Ingress => 12,
            ResourceKind::DnsEndpoint => 13,
            ResourceKind::F5VirtualServer => 14,
            ResourceKind::F5TransportServer => 15,
            // --- contour-httpproxy and openshift-route sources ---
            ResourceKind::HttpProxy => 16,
            ResourceKind::OpenShiftRoute => 17,
            ResourceKind::IstioGateway => 18,
            ResourceKind::VirtualService => 19,
            ResourceKind::Traefik(t) => 20 + t as usize,
            // --- ambassador-host source ---
            ResourceKind::AmbassadorHost => 26,
        }
    }

    /// The API kind: `Service`, `HTTPRoute`, ...
    pub fn kind(self) -> &'static str {
        self.spec().name
    }

    /// Nodes and Namespaces have no namespace; everything else extdns reads is namespaced.
    pub fn cluster_scoped(self) -> bool {
        self.spec().scope == Scope::Cluster
    }

    /// The kind whose API kind is `name` (`Service`, `HTTPRoute`, ...); of two kinds of one name, the first
    /// in the table (`Gateway`: the Gateway API's).
    pub fn from_kind(name: &str) -> Option<ResourceKind> {
        KINDS.iter().find(|s| s.name == name).map(|s| s.kind)
    }

    /// The kind `kind` in `apiVersion` names, if extdns reads that version of it.
    pub fn from_api_version(api_version: &str, kind: &str) -> Option<ResourceKind> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        KINDS
            .iter()
            .find(|s| s.name == kind && s.group == group && s.versions.contains(&version))
            .map(|s| s.kind)
    }

    /// How the `resource` label external-dns writes names this kind: the API kind in lower case, except
    /// DNSEndpoints, which external-dns labels `crd` whatever their kind, HTTPProxies, which its contour
    /// source labels with the API kind as spelled (`HTTPProxy/ns/name`), and the kinds whose source writes its
    /// own name there (`f5-virtualserver`).
    pub fn label_name(self) -> Cow<'static, str> {
        match self.label_spelling() {
            LabelSpelling::Exact(s) => Cow::Borrowed(s),
            LabelSpelling::Lower(kind) => Cow::Owned(kind.to_ascii_lowercase()),
        }
    }

    /// [`label_name`](Self::label_name) before lower-casing.
    fn label_spelling(self) -> LabelSpelling {
        match self {
            ResourceKind::DnsEndpoint => LabelSpelling::Exact("crd"),
            ResourceKind::HttpProxy => LabelSpelling::Exact("HTTPProxy"),
            ResourceKind::F5VirtualServer => LabelSpelling::Exact("f5-virtualserver"),
            ResourceKind::F5TransportServer => LabelSpelling::Exact("f5-transportserver"),
            k => LabelSpelling::Lower(k.kind()),
        }
    }

    /// The kind the `resource` label spells `lower` (`service`, `httproute`, `crd`, `f5-virtualserver`).
    /// `gateway` is the Istio Gateway: external-dns's istio-gateway source writes it, and no source publishes
    /// records of a Gateway API Gateway (routes do).
    pub fn from_lowercase(lower: &str) -> Option<ResourceKind> {
        if lower == "gateway" {
            return Some(ResourceKind::IstioGateway);
        }
        ResourceKind::all().find(|k| k.label_spelling().text().eq_ignore_ascii_case(lower))
    }
}

/// How the `resource` label spells a kind: as given, or the given API kind lower-cased.
#[derive(Debug, Clone, Copy)]
enum LabelSpelling {
    Exact(&'static str),
    Lower(&'static str),
}

impl LabelSpelling {
    fn text(self) -> &'static str {
        match self {
            LabelSpelling::Exact(s) | LabelSpelling::Lower(s) => s,
        }
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

impl RouteKind {
    /// Every route kind, in `--source` order.
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

    /// The route kind an API kind names (`HTTPRoute`, ...).
    pub fn from_kind(kind: &str) -> Option<RouteKind> {
        RouteKind::ALL.into_iter().find(|k| k.kind() == kind)
    }

    /// The route kind a `--source` name names (`gateway-httproute`, ...).
    pub fn from_source_name(name: &str) -> Option<RouteKind> {
        RouteKind::ALL.into_iter().find(|k| k.source_name() == name)
    }
}

impl TraefikKind {
    /// Every Traefik kind, the `traefik.io` ones first.
    pub const ALL: [TraefikKind; 6] = [
        TraefikKind::IngressRoute,
        TraefikKind::IngressRouteTcp,
        TraefikKind::IngressRouteUdp,
        TraefikKind::LegacyIngressRoute,
        TraefikKind::LegacyIngressRouteTcp,
        TraefikKind::LegacyIngressRouteUdp,
    ];

    /// The API kind: `IngressRoute`, `IngressRouteTCP`, `IngressRouteUDP`.
    pub fn kind(self) -> &'static str {
        ResourceKind::Traefik(self).kind()
    }

    /// Whether this is the legacy `traefik.containo.us` group's kind.
    pub fn is_legacy(self) -> bool {
        matches!(
            self,
            TraefikKind::LegacyIngressRoute | TraefikKind::LegacyIngressRouteTcp | TraefikKind::LegacyIngressRouteUdp
        )
    }

    /// The kind whose `resource` label this one shares: a traefik.io kind's legacy twin (external-dns labels
    /// both groups alike, and the label reads back as the traefik.io kind), `None` for a legacy kind.
    pub fn legacy_twin(self) -> Option<TraefikKind> {
        (!self.is_legacy()).then(|| TraefikKind::ALL[self as usize + 3])
    }

    /// Whether its routers are UDP ones, which have no rule to read names from.
    pub fn is_udp(self) -> bool {
        matches!(self, TraefikKind::IngressRouteUdp | TraefikKind::LegacyIngressRouteUdp)
    }
}

/// Every kind extdns reads and the versions it reads them in, for messages (`Service (v1), ...`).
pub fn readable() -> String {
    KINDS
        .iter()
        .map(|s| {
            let versions: Vec<String> = s.versions.iter().map(|v| s.api_version_of(v)).collect();
            format!("{} ({})", s.name, versions.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The identity of an object extdns reads: its kind, namespace (empty for cluster-scoped kinds) and name.
/// The store keeps objects by it (and the identity of objects that exist but could not be decoded, so the
/// records they published are told apart from records of objects that are gone), the change set names what
/// changed by it, sources name the objects they evaluate by it, endpoints refer to the objects that made
/// them by it, and Events and DNSEndpoint status find their object by it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The kind, so keys of two kinds never collide.
    pub kind: ResourceKind,
    /// Empty for cluster-scoped kinds.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl ObjectKey {
    /// The key of one object.
    pub fn new(kind: ResourceKind, namespace: &str, name: &str) -> Self {
        ObjectKey {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The `resource` label external-dns writes for a record of this object: `service/default/web`,
    /// `httproute/default/app`, `crd/default/records` (see [`ResourceKind::label_name`]); a cluster-scoped
    /// object has no namespace part (`node/worker-1`, as external-dns's node source writes it).
    pub fn resource_label(&self) -> String {
        if self.kind.cluster_scoped() {
            format!("{}/{}", self.kind.label_name(), self.name)
        } else {
            format!("{}/{}/{}", self.kind.label_name(), self.namespace, self.name)
        }
    }

    /// How this key's [`resource_label`](Self::resource_label) sorts against `other`'s, without rendering
    /// either: external-dns orders records by that string (the first Service in it owns a shared name), and
    /// it is not the keys' own order where one namespace is a prefix of another (`a-b/` sorts before `a/`).
    pub fn cmp_resource_label(&self, other: &ObjectKey) -> std::cmp::Ordering {
        self.label_bytes().cmp(other.label_bytes())
    }

    /// The bytes of [`resource_label`](Self::resource_label), one at a time.
    fn label_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let namespace = (!self.kind.cluster_scoped()).then(|| self.namespace.bytes().chain(std::iter::once(b'/')));
        let (spelling, lower) = match self.kind.label_spelling() {
            LabelSpelling::Exact(s) => (s, false),
            LabelSpelling::Lower(s) => (s, true),
        };
        spelling
            .bytes()
            .map(move |b| if lower { b.to_ascii_lowercase() } else { b })
            .chain(std::iter::once(b'/'))
            .chain(namespace.into_iter().flatten())
            .chain(self.name.bytes())
    }

    /// The object a `resource` label read from DNS names, if it names a kind extdns reads. Records other
    /// external-dns sources wrote (`istio-gateway/...`) name kinds it does not; so do labels of another shape.
    pub fn from_resource_label(label: &str) -> Option<ObjectKey> {
        let (kind, rest) = label.split_once('/')?;
        let kind = ResourceKind::from_lowercase(kind)?;
        let (namespace, name) = if kind.cluster_scoped() {
            ("", rest)
        } else {
            rest.split_once('/')?
        };
        if name.is_empty() {
            return None;
        }
        Some(ObjectKey::new(kind, namespace, name))
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_finds_its_own_entry() {
        for (i, spec) in KINDS.iter().enumerate() {
            assert_eq!(spec.kind.spec().kind, spec.kind, "{}", spec.name);
            assert_eq!(spec.kind.slot(), i, "{}", spec.name);
            // A legacy Traefik kind shares its API kind with the traefik.io one, found first.
            let first_of_name = match spec.kind {
                ResourceKind::Traefik(t) if t.is_legacy() => ResourceKind::Traefik(TraefikKind::ALL[t as usize - 3]),
                k => k,
            };
            if spec.kind != ResourceKind::IstioGateway {
                assert_eq!(ResourceKind::from_kind(spec.name), Some(first_of_name));
            }
            assert!(
                i == 0 || KINDS[i - 1].kind < spec.kind,
                "table out of order at {}",
                spec.name
            );
        }
        for r in RouteKind::ALL {
            assert_eq!(ResourceKind::Route(r).kind(), r.kind());
            assert_eq!(RouteKind::from_source_name(r.source_name()), Some(r));
        }
    }

    #[test]
    fn versions_are_read_as_the_table_says() {
        let found = |v, k| ResourceKind::from_api_version(v, k);
        assert_eq!(found("v1", "Service"), Some(ResourceKind::Service));
        assert_eq!(found("v2", "Service"), None);
        assert_eq!(
            found("gateway.networking.k8s.io/v1alpha3", "TLSRoute"),
            Some(ResourceKind::Route(RouteKind::Tls))
        );
        assert_eq!(
            found("gateway.networking.k8s.io/v1", "TCPRoute"),
            Some(ResourceKind::Route(RouteKind::Tcp))
        );
        assert_eq!(
            found("gateway.networking.k8s.io/v1alpha2", "UDPRoute"),
            Some(ResourceKind::Route(RouteKind::Udp))
        );
        assert_eq!(found("gateway.networking.k8s.io/v1alpha3", "TCPRoute"), None);
        assert_eq!(found("apps/v1", "Deployment"), None);
        for v in ["v1", "v1beta1", "v1alpha3"] {
            let istio = format!("networking.istio.io/{v}");
            let read = |kind| ResourceKind::from_api_version(&istio, kind);
            assert_eq!(read("Gateway"), Some(ResourceKind::IstioGateway));
            assert_eq!(read("VirtualService"), Some(ResourceKind::VirtualService));
        }
        assert_eq!(
            found("gateway.networking.k8s.io/v1", "Gateway"),
            Some(ResourceKind::Gateway)
        );
        assert_eq!(
            ResourceKind::from_lowercase("httproute"),
            Some(ResourceKind::Route(RouteKind::Http))
        );
        assert_eq!(ResourceKind::DnsEndpoint.label_name(), "crd");
        assert_eq!(ResourceKind::from_lowercase("crd"), Some(ResourceKind::DnsEndpoint));
    }

    #[test]
    fn f5_kinds_are_labelled_by_their_source_name_as_external_dns_writes_them() {
        let vs = ObjectKey::new(ResourceKind::F5VirtualServer, "default", "web");
        assert_eq!(vs.resource_label(), "f5-virtualserver/default/web");
        assert_eq!(ObjectKey::from_resource_label("f5-virtualserver/default/web"), Some(vs));
        let ts = ObjectKey::new(ResourceKind::F5TransportServer, "default", "db");
        assert_eq!(ts.resource_label(), "f5-transportserver/default/db");
        assert_eq!(ObjectKey::from_resource_label("virtualserver/default/web"), None);
        assert_eq!(
            ResourceKind::from_api_version("cis.f5.com/v1", "TransportServer"),
            Some(ResourceKind::F5TransportServer)
        );
    }

    #[test]
    fn traefik_kinds_are_read_in_both_groups_and_labelled_as_external_dns_does() {
        let found = |v, k| ResourceKind::from_api_version(v, k);
        assert_eq!(
            found("traefik.io/v1alpha1", "IngressRoute"),
            Some(ResourceKind::Traefik(TraefikKind::IngressRoute))
        );
        assert_eq!(
            found("traefik.containo.us/v1alpha1", "IngressRouteTCP"),
            Some(ResourceKind::Traefik(TraefikKind::LegacyIngressRouteTcp))
        );
        assert_eq!(found("traefik.io/v1", "IngressRoute"), None);
        let labels: Vec<String> = TraefikKind::ALL
            .iter()
            .map(|&t| ObjectKey::new(ResourceKind::Traefik(t), "ns", "r").resource_label())
            .collect();
        assert_eq!(
            labels,
            [
                "ingressroute/ns/r",
                "ingressroutetcp/ns/r",
                "ingressrouteudp/ns/r",
                "ingressroute/ns/r",
                "ingressroutetcp/ns/r",
                "ingressrouteudp/ns/r"
            ]
        );
        assert!(TraefikKind::LegacyIngressRouteUdp.is_legacy() && TraefikKind::LegacyIngressRouteUdp.is_udp());
        assert!(!TraefikKind::IngressRouteTcp.is_legacy() && !TraefikKind::IngressRouteTcp.is_udp());
    }

    #[test]
    fn resource_labels_compare_as_the_strings_they_render() {
        let keys: Vec<ObjectKey> = ResourceKind::all()
            .flat_map(|kind| {
                [("a", "web"), ("a-b", "web"), ("a", "web-1"), ("", "node-1")]
                    .map(|(ns, name)| ObjectKey::new(kind, ns, name))
            })
            .collect();
        for a in &keys {
            for b in &keys {
                assert_eq!(
                    a.cmp_resource_label(b),
                    a.resource_label().cmp(&b.resource_label()),
                    "{a} against {b}"
                );
            }
        }
        // The case the keys' own order gets wrong: a namespace that is a prefix of another.
        let (a, ab) = (&keys[0], &keys[1]);
        assert!(a < ab && a.cmp_resource_label(ab) == std::cmp::Ordering::Greater);
    }

    #[test]
    fn contour_and_openshift_labels_are_spelled_as_external_dns_writes_them() {
        let proxy = ObjectKey::new(ResourceKind::HttpProxy, "web", "shop");
        assert_eq!(proxy.resource_label(), "HTTPProxy/web/shop");
        let route = ObjectKey::new(ResourceKind::OpenShiftRoute, "web", "shop");
        assert_eq!(route.resource_label(), "route/web/shop");
        assert_eq!(ObjectKey::from_resource_label("HTTPProxy/web/shop"), Some(proxy));
        assert_eq!(ObjectKey::from_resource_label("route/web/shop"), Some(route));
        assert_eq!(
            ResourceKind::from_api_version("route.openshift.io/v1", "Route"),
            Some(ResourceKind::OpenShiftRoute)
        );
    }

    #[test]
    fn resource_labels_round_trip_for_every_kind_and_refuse_other_shapes() {
        // A Gateway API Gateway publishes nothing itself; `gateway/...` is the Istio Gateway's label.
        for kind in ResourceKind::all().filter(|k| *k != ResourceKind::Gateway) {
            let namespace = if kind.cluster_scoped() { "" } else { "team-a" };
            let key = ObjectKey::new(kind, namespace, "web");
            let back = ObjectKey::from_resource_label(&key.resource_label());
            if matches!(kind, ResourceKind::Traefik(t) if t.is_legacy()) {
                // external-dns labels both Traefik groups alike: the label names the traefik.io kind.
                assert_eq!(back.map(|k| k.resource_label()), Some(key.resource_label()));
            } else {
                assert_eq!(back, Some(key));
            }
        }
        // A cluster-scoped object's label has no namespace part, as external-dns writes it.
        let node = ObjectKey::new(ResourceKind::Node, "", "worker-1");
        assert_eq!(node.resource_label(), "node/worker-1");
        assert_eq!(ObjectKey::from_resource_label("node/worker-1"), Some(node));
        assert_eq!(
            ObjectKey::from_resource_label("ingress/default/web"),
            Some(ObjectKey::new(ResourceKind::Ingress, "default", "web"))
        );
        // A name with a slash is kept whole: only the first two separate.
        assert_eq!(
            ObjectKey::from_resource_label("crd/default/a/b").map(|k| k.name),
            Some("a/b".to_string())
        );
        assert_eq!(
            ObjectKey::from_resource_label("gateway/istio-system/public"),
            Some(ObjectKey::new(ResourceKind::IstioGateway, "istio-system", "public"))
        );
        assert_eq!(
            ObjectKey::from_resource_label("virtualservice/shop/web").map(|k| k.kind),
            Some(ResourceKind::VirtualService)
        );
        for other in [
            "istio-gateway/default/gw",
            "service/default",
            "service/default/",
            "",
            "service",
        ] {
            assert_eq!(ObjectKey::from_resource_label(other), None, "{other}");
        }
    }

    // --- ambassador-host source ---
    #[test]
    fn ambassador_hosts_are_read_in_both_served_versions_and_labelled_host_as_external_dns_does() {
        for version in ["getambassador.io/v3alpha1", "getambassador.io/v2"] {
            assert_eq!(
                ResourceKind::from_api_version(version, "Host"),
                Some(ResourceKind::AmbassadorHost),
                "{version}"
            );
        }
        assert_eq!(ResourceKind::from_api_version("getambassador.io/v1", "Host"), None);
        assert_eq!(ResourceKind::AmbassadorHost.spec().preferred_version(), "v3alpha1");
        let host = ObjectKey::new(ResourceKind::AmbassadorHost, "default", "www");
        assert_eq!(host.resource_label(), "host/default/www");
        assert_eq!(ObjectKey::from_resource_label("host/default/www"), Some(host));
    }
}
