//! The API resource behind each kind extdns watches, and the namespace it is watched in: what RBAC must grant.

use extdns_informer::ResourceKind;
use extdns_informer::view::{RouteKind, TraefikKind};

/// Where extdns watches a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// In `--namespace` (every namespace when it is empty).
    Source,
    /// In `--gateway-namespace` (every namespace when it is empty).
    Gateway,
    /// Everywhere: a cluster-scoped kind, or one extdns always lists across namespaces.
    Cluster,
}

/// The API group, resource and watch scope of a kind. The match is exhaustive, so a new kind fails to compile
/// here until the manifests' RBAC is checked for it.
pub fn api_resource(kind: ResourceKind) -> (&'static str, &'static str, Scope) {
    match kind {
        ResourceKind::Service => ("", "services", Scope::Source),
        ResourceKind::EndpointSlice => ("discovery.k8s.io", "endpointslices", Scope::Source),
        ResourceKind::Pod => ("", "pods", Scope::Source),
        ResourceKind::Node => ("", "nodes", Scope::Cluster),
        ResourceKind::Namespace => ("", "namespaces", Scope::Cluster),
        ResourceKind::Gateway => ("gateway.networking.k8s.io", "gateways", Scope::Gateway),
        ResourceKind::ListenerSet => ("gateway.networking.k8s.io", "listenersets", Scope::Cluster),
        ResourceKind::Route(RouteKind::Http) => ("gateway.networking.k8s.io", "httproutes", Scope::Source),
        ResourceKind::Route(RouteKind::Grpc) => ("gateway.networking.k8s.io", "grpcroutes", Scope::Source),
        ResourceKind::Route(RouteKind::Tls) => ("gateway.networking.k8s.io", "tlsroutes", Scope::Source),
        ResourceKind::Route(RouteKind::Tcp) => ("gateway.networking.k8s.io", "tcproutes", Scope::Source),
        ResourceKind::Route(RouteKind::Udp) => ("gateway.networking.k8s.io", "udproutes", Scope::Source),
        ResourceKind::Ingress => ("networking.k8s.io", "ingresses", Scope::Source),
        ResourceKind::DnsEndpoint => ("externaldns.k8s.io", "dnsendpoints", Scope::Source),
        ResourceKind::F5VirtualServer => ("cis.f5.com", "virtualservers", Scope::Source),
        ResourceKind::F5TransportServer => ("cis.f5.com", "transportservers", Scope::Source),
        // --- contour-httpproxy and openshift-route sources ---
        ResourceKind::HttpProxy => ("projectcontour.io", "httpproxies", Scope::Source),
        ResourceKind::OpenShiftRoute => ("route.openshift.io", "routes", Scope::Source),
        ResourceKind::IstioGateway => ("networking.istio.io", "gateways", Scope::Source),
        ResourceKind::VirtualService => ("networking.istio.io", "virtualservices", Scope::Source),
        ResourceKind::Traefik(t) => {
            let spec = ResourceKind::Traefik(t).spec();
            (spec.group, spec.plural, Scope::Source)
        }
        // --- ambassador-host source ---
        ResourceKind::AmbassadorHost => ("getambassador.io", "hosts", Scope::Source),
    }
}

pub const ALL_KINDS: [ResourceKind; 27] = [
    ResourceKind::Service,
    ResourceKind::EndpointSlice,
    ResourceKind::Pod,
    ResourceKind::Node,
    ResourceKind::Namespace,
    ResourceKind::Gateway,
    ResourceKind::ListenerSet,
    ResourceKind::Route(RouteKind::Http),
    ResourceKind::Route(RouteKind::Grpc),
    ResourceKind::Route(RouteKind::Tls),
    ResourceKind::Route(RouteKind::Tcp),
    ResourceKind::Route(RouteKind::Udp),
    ResourceKind::Ingress,
    ResourceKind::DnsEndpoint,
    ResourceKind::F5VirtualServer,
    ResourceKind::F5TransportServer,
    // --- contour-httpproxy and openshift-route sources ---
    ResourceKind::HttpProxy,
    ResourceKind::OpenShiftRoute,
    ResourceKind::IstioGateway,
    ResourceKind::VirtualService,
    // Traefik (traefik-proxy)
    ResourceKind::Traefik(TraefikKind::IngressRoute),
    ResourceKind::Traefik(TraefikKind::IngressRouteTcp),
    ResourceKind::Traefik(TraefikKind::IngressRouteUdp),
    ResourceKind::Traefik(TraefikKind::LegacyIngressRoute),
    ResourceKind::Traefik(TraefikKind::LegacyIngressRouteTcp),
    ResourceKind::Traefik(TraefikKind::LegacyIngressRouteUdp),
    // --- ambassador-host source ---
    ResourceKind::AmbassadorHost,
];

/// The strings of a JSON array (empty for anything else).
pub fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default()
}
