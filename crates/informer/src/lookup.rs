//! The typed lookups sources make on the store, per view: by name, by namespace, and through the reverse
//! indexes ([`crate::index`]). Apart from the views ([`crate::view`]) and the generic store, as the store
//! reaches the views (making its indexes through the dispatch of [`crate::kinds`], whose API types convert
//! to them): beside the views they would make the two import each other.

use std::sync::Arc;

use crate::ClusterStore;
use crate::ResourceKind;
use crate::index::Ref;
use crate::item::Item;
use crate::view::{
    DnsEndpoint, EndpointSlice, Gateway, HEADLESS, Ingress, IstioGateway, LOCAL_NODE_PORT, ListenerSet, NODE_PORT,
    Namespace, Node, Pod, Route, RouteKind, SELECTS_EVERY_SERVICE, Service, TraefikKind, TraefikRoute, VirtualService,
};
// --- ambassador-host source ---
use crate::view::AmbassadorHost;

/// The lookups sources use, by view.
impl ClusterStore {
    /// All Services in scope (the namespace and server-side label selector the live view watches with).
    pub fn services(&self) -> Vec<Arc<Service>> {
        self.all(ResourceKind::Service)
    }

    /// One Service by name, for sources that follow a reference (an EndpointSlice's, a change's).
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

    /// Every stored Pod, of every namespace (the pod source reads them all).
    pub fn all_pods(&self) -> Vec<Arc<Pod>> {
        self.all(ResourceKind::Pod)
    }

    /// One Pod by name, for a slice endpoint's `targetRef`.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.index::<Pod>(ResourceKind::Pod)?.get(namespace, name)
    }

    /// All Nodes (NodePort Services publish their addresses).
    pub fn nodes(&self) -> Vec<Arc<Node>> {
        self.all(ResourceKind::Node)
    }

    /// One Node by name, for a Pod's or an endpoint's `nodeName`.
    pub fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.index::<Node>(ResourceKind::Node)?.get("", name)
    }

    /// One Namespace, whose labels a Gateway's `allowedRoutes` selector reads.
    pub fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.index::<Namespace>(ResourceKind::Namespace)?.get("", name)
    }

    /// All Gateways in scope.
    pub fn gateways(&self) -> Vec<Arc<Gateway>> {
        self.all(ResourceKind::Gateway)
    }

    /// One Gateway, for a route's `parentRefs`.
    pub fn gateway(&self, namespace: &str, name: &str) -> Option<Arc<Gateway>> {
        self.index::<Gateway>(ResourceKind::Gateway)?.get(namespace, name)
    }

    /// All ListenerSets in scope.
    pub fn listener_sets(&self) -> Vec<Arc<ListenerSet>> {
        self.all(ResourceKind::ListenerSet)
    }

    /// One ListenerSet, for a route's `parentRefs`.
    pub fn listener_set(&self, namespace: &str, name: &str) -> Option<Arc<ListenerSet>> {
        self.index::<ListenerSet>(ResourceKind::ListenerSet)?
            .get(namespace, name)
    }

    /// All routes of one kind in scope.
    pub fn routes(&self, kind: RouteKind) -> Vec<Arc<Route>> {
        self.all(ResourceKind::Route(kind))
    }

    /// All DNSEndpoints in scope.
    pub fn dns_endpoints(&self) -> Vec<Arc<DnsEndpoint>> {
        self.all(ResourceKind::DnsEndpoint)
    }

    /// One DNSEndpoint, for an incremental evaluation.
    pub fn dns_endpoint(&self, namespace: &str, name: &str) -> Option<Arc<DnsEndpoint>> {
        self.index::<DnsEndpoint>(ResourceKind::DnsEndpoint)?
            .get(namespace, name)
    }

    /// All Ingresses in scope.
    pub fn ingresses(&self) -> Vec<Arc<Ingress>> {
        self.all(ResourceKind::Ingress)
    }

    /// One Ingress, for an incremental evaluation.
    pub fn ingress(&self, namespace: &str, name: &str) -> Option<Arc<Ingress>> {
        self.index::<Ingress>(ResourceKind::Ingress)?.get(namespace, name)
    }

    // The F5, Contour and OpenShift kinds are read through the generic `ClusterStore::all` and
    // `ClusterStore::get` (the sources' `own_hosts::OwnKind`).

    /// All Traefik routers of one kind in scope.
    pub fn traefik_routes(&self, kind: TraefikKind) -> Vec<Arc<TraefikRoute>> {
        self.all(ResourceKind::Traefik(kind))
    }

    // --- ambassador-host source ---

    /// All Emissary Hosts in scope.
    pub fn ambassador_hosts(&self) -> Vec<Arc<AmbassadorHost>> {
        self.all(ResourceKind::AmbassadorHost)
    }

    /// One Emissary Host, for an incremental evaluation.
    pub fn ambassador_host(&self, namespace: &str, name: &str) -> Option<Arc<AmbassadorHost>> {
        self.index::<AmbassadorHost>(ResourceKind::AmbassadorHost)?
            .get(namespace, name)
    }

    /// The Emissary Hosts whose `external-dns.ambassador-service` annotation names the Service
    /// `namespace/name`.
    pub fn ambassador_hosts_of_service(&self, namespace: &str, name: &str) -> Vec<Arc<AmbassadorHost>> {
        self.referring(
            ResourceKind::AmbassadorHost,
            &Ref::Object(ResourceKind::Service, namespace.into(), name.into()),
        )
    }
}

/// The lookups the incremental path makes through the reverse indexes ([`crate::index`]), each costing
/// what it returns.
impl ClusterStore {
    fn referring<V: Item>(&self, kind: ResourceKind, r: &Ref) -> Vec<Arc<V>> {
        self.index::<V>(kind).map(|i| i.referring(r)).unwrap_or_default()
    }

    /// The EndpointSlices of `namespace` with an endpoint whose `targetRef` names the Pod `name`.
    pub fn endpoint_slices_naming_pod(&self, namespace: &str, name: &str) -> Vec<Arc<EndpointSlice>> {
        self.referring(
            ResourceKind::EndpointSlice,
            &Ref::Object(ResourceKind::Pod, namespace.into(), name.into()),
        )
    }

    /// Every NodePort Service.
    pub fn node_port_services(&self) -> Vec<Arc<Service>> {
        self.referring(ResourceKind::Service, &Ref::Group(NODE_PORT))
    }

    /// Every headless ClusterIP Service.
    pub fn headless_services(&self) -> Vec<Arc<Service>> {
        self.referring(ResourceKind::Service, &Ref::Group(HEADLESS))
    }

    /// The NodePort Services with the `Local` traffic policy of `namespace`.
    pub fn local_node_port_services(&self, namespace: &str) -> Vec<Arc<Service>> {
        self.referring(ResourceKind::Service, &Ref::GroupIn(LOCAL_NODE_PORT, namespace.into()))
    }

    /// The routes of `kind` whose `spec.parentRefs` name the parent (kind, namespace, name).
    pub fn routes_of_parent(
        &self,
        kind: RouteKind,
        parent: ResourceKind,
        namespace: &str,
        name: &str,
    ) -> Vec<Arc<Route>> {
        self.referring(
            ResourceKind::Route(kind),
            &Ref::Object(parent, namespace.into(), name.into()),
        )
    }

    /// The routes of `kind` in `namespace`.
    pub fn routes_in(&self, kind: RouteKind, namespace: &str) -> Vec<Arc<Route>> {
        self.index::<Route>(ResourceKind::Route(kind))
            .map(|i| i.in_namespace(namespace))
            .unwrap_or_default()
    }

    /// The ListenerSets whose `spec.parentRef` names the Gateway `namespace/name`.
    pub fn listener_sets_of_gateway(&self, namespace: &str, name: &str) -> Vec<Arc<ListenerSet>> {
        self.referring(
            ResourceKind::ListenerSet,
            &Ref::Object(ResourceKind::Gateway, namespace.into(), name.into()),
        )
    }

    /// The ListenerSets in `namespace`.
    pub fn listener_sets_in(&self, namespace: &str) -> Vec<Arc<ListenerSet>> {
        self.index::<ListenerSet>(ResourceKind::ListenerSet)
            .map(|i| i.in_namespace(namespace))
            .unwrap_or_default()
    }
}

/// The lookups of the Istio sources (networking.istio.io).
impl ClusterStore {
    /// All Istio Gateways in scope.
    pub fn istio_gateways(&self) -> Vec<Arc<IstioGateway>> {
        self.all(ResourceKind::IstioGateway)
    }

    /// One Istio Gateway, for a VirtualService's `spec.gateways`.
    pub fn istio_gateway(&self, namespace: &str, name: &str) -> Option<Arc<IstioGateway>> {
        self.index::<IstioGateway>(ResourceKind::IstioGateway)?
            .get(namespace, name)
    }

    /// All VirtualServices in scope.
    pub fn virtual_services(&self) -> Vec<Arc<VirtualService>> {
        self.all(ResourceKind::VirtualService)
    }

    /// One VirtualService, for an incremental evaluation.
    pub fn virtual_service(&self, namespace: &str, name: &str) -> Option<Arc<VirtualService>> {
        self.index::<VirtualService>(ResourceKind::VirtualService)?
            .get(namespace, name)
    }

    /// The Istio Gateways whose `spec.selector` requires the label `key=value` of a Service's selector.
    pub fn istio_gateways_selecting(&self, key: &str, value: &str) -> Vec<Arc<IstioGateway>> {
        self.referring(
            ResourceKind::IstioGateway,
            &Ref::Selects(ResourceKind::Service, key.into(), value.into()),
        )
    }

    /// The Istio Gateways with an empty `spec.selector`, which select every Service.
    pub fn istio_gateways_selecting_every_service(&self) -> Vec<Arc<IstioGateway>> {
        self.referring(ResourceKind::IstioGateway, &Ref::Group(SELECTS_EVERY_SERVICE))
    }

    /// The Istio Gateways whose Ingress annotation names the Ingress `namespace/name`.
    pub fn istio_gateways_of_ingress(&self, namespace: &str, name: &str) -> Vec<Arc<IstioGateway>> {
        self.referring(
            ResourceKind::IstioGateway,
            &Ref::Object(ResourceKind::Ingress, namespace.into(), name.into()),
        )
    }

    /// The VirtualServices whose `spec.gateways` name the Istio Gateway `namespace/name`.
    pub fn virtual_services_of_gateway(&self, namespace: &str, name: &str) -> Vec<Arc<VirtualService>> {
        self.referring(
            ResourceKind::VirtualService,
            &Ref::Object(ResourceKind::IstioGateway, namespace.into(), name.into()),
        )
    }
}

#[cfg(test)]
mod index_tests {
    use super::*;
    use crate::Sym;
    use crate::view::{Meta, ObjectReference, ParentReference, SliceEndpoint};

    fn meta(ns: &str, name: &str) -> Meta {
        Meta {
            namespace: ns.into(),
            name: name.into(),
            ..Meta::default()
        }
    }

    fn slice(name: &str, service: &str, pods: &[&str]) -> EndpointSlice {
        EndpointSlice {
            meta: meta("default", name),
            service_name: Some(service.into()),
            endpoints: pods
                .iter()
                .map(|p| SliceEndpoint {
                    target_ref: Some(ObjectReference {
                        kind: Some("Pod".into()),
                        name: Some(p.to_string()),
                        ..ObjectReference::default()
                    }),
                    ..SliceEndpoint::default()
                })
                .collect(),
            ..EndpointSlice::default()
        }
    }

    fn service(ns: &str, name: &str, kind: &str, policy: Option<&str>, cluster_ip: Option<&str>) -> Service {
        Service {
            meta: meta(ns, name),
            service_type: kind.into(),
            external_traffic_policy: policy.map(Into::into),
            cluster_ip: cluster_ip.map(Into::into),
            ..Service::default()
        }
    }

    fn names<V: Item>(v: &[Arc<V>]) -> Vec<&str> {
        v.iter().map(|o| o.name()).collect()
    }

    fn slices(c: &ClusterStore) -> &crate::store::Index<EndpointSlice> {
        c.index(ResourceKind::EndpointSlice)
            .unwrap_or_else(|| panic!("no slice index"))
    }

    #[test]
    fn a_pod_finds_the_slices_naming_it_as_they_change() {
        let mut c = ClusterStore::new();
        c.add(slice("web-a", "web", &["web-0", "web-1"]))
            .add(slice("api-a", "api", &["api-0", "web-1"]));
        assert_eq!(
            names(&c.endpoint_slices_naming_pod("default", "web-1")),
            ["api-a", "web-a"]
        );
        assert_eq!(names(&c.endpoint_slices_naming_pod("default", "web-0")), ["web-a"]);
        assert!(
            c.endpoint_slices_naming_pod("other", "web-0").is_empty(),
            "another namespace's Pod"
        );
        // The slice stops naming web-1, then goes.
        slices(&c).upsert(Sym::new("default"), slice("api-a", "api", &["api-0"]), None);
        assert_eq!(names(&c.endpoint_slices_naming_pod("default", "web-1")), ["web-a"]);
        slices(&c).remove("default", "web-a");
        assert!(c.endpoint_slices_naming_pod("default", "web-1").is_empty());
        assert!(c.endpoint_slices_naming_pod("default", "web-0").is_empty());
        // A re-list replaces the index with what it lists.
        slices(&c).begin_relist();
        slices(&c).relist_add(Sym::new("default"), Ok((slice("new", "web", &["web-9"]), None)));
        assert_eq!(
            names(&c.endpoint_slices_naming_pod("default", "api-0")),
            ["api-a"],
            "served until done"
        );
        slices(&c).finish_relist();
        assert!(c.endpoint_slices_naming_pod("default", "api-0").is_empty());
        assert_eq!(names(&c.endpoint_slices_naming_pod("default", "web-9")), ["new"]);
    }

    #[test]
    fn services_are_found_by_the_shape_that_makes_them_read_pods_or_nodes() {
        let mut c = ClusterStore::new();
        c.add(service("a", "np", "NodePort", None, Some("10.0.0.1")))
            .add(service("a", "local", "NodePort", Some("Local"), Some("10.0.0.2")))
            .add(service("b", "local", "NodePort", Some("Local"), Some("10.0.0.3")))
            .add(service("a", "headless", "ClusterIP", None, Some("None")))
            .add(service("a", "plain", "ClusterIP", None, Some("10.0.0.4")))
            .add(service("a", "lb", "LoadBalancer", None, Some("10.0.0.5")));
        assert_eq!(names(&c.node_port_services()), ["local", "np", "local"]);
        assert_eq!(names(&c.headless_services()), ["headless"]);
        assert_eq!(names(&c.local_node_port_services("a")), ["local"]);
        assert_eq!(names(&c.local_node_port_services("b")), ["local"]);
        // A Service that changes type moves.
        let index = c
            .index::<Service>(ResourceKind::Service)
            .unwrap_or_else(|| panic!("no service index"));
        index.upsert(
            Sym::new("a"),
            service("a", "local", "LoadBalancer", Some("Local"), Some("10.0.0.2")),
            None,
        );
        assert!(c.local_node_port_services("a").is_empty());
        assert_eq!(names(&c.node_port_services()), ["np", "local"]);
    }

    #[test]
    fn routes_and_listener_sets_are_found_by_their_parents_with_the_defaults_filled_in() {
        let parent = |kind: Option<&str>, ns: Option<&str>, name: &str| ParentReference {
            kind: kind.map(Into::into),
            namespace: ns.map(Into::into),
            name: name.into(),
            ..ParentReference::default()
        };
        let route = |ns: &str, name: &str, parents: Vec<ParentReference>| Route {
            kind: RouteKind::Http,
            meta: meta(ns, name),
            parent_refs: parents,
            ..Route::default()
        };
        let mut c = ClusterStore::new();
        c.add(route("apps", "same-ns", vec![parent(None, None, "gw")]))
            .add(route(
                "apps",
                "other-ns",
                vec![parent(Some("Gateway"), Some("infra"), "gw")],
            ))
            .add(route(
                "apps",
                "via-ls",
                vec![parent(Some("ListenerSet"), Some(""), "ls")],
            ))
            .add(route("apps", "gamma", vec![parent(Some("Service"), None, "gw")]))
            .add(ListenerSet {
                meta: meta("team", "ls"),
                parent_ref: parent(None, Some("infra"), "gw"),
                ..ListenerSet::default()
            });
        let http = RouteKind::Http;
        assert_eq!(
            names(&c.routes_of_parent(http, ResourceKind::Gateway, "apps", "gw")),
            ["same-ns"]
        );
        assert_eq!(
            names(&c.routes_of_parent(http, ResourceKind::Gateway, "infra", "gw")),
            ["other-ns"]
        );
        assert_eq!(
            names(&c.routes_of_parent(http, ResourceKind::ListenerSet, "apps", "ls")),
            ["via-ls"]
        );
        assert!(
            c.routes_of_parent(RouteKind::Grpc, ResourceKind::Gateway, "apps", "gw")
                .is_empty()
        );
        assert_eq!(names(&c.listener_sets_of_gateway("infra", "gw")), ["ls"]);
        assert_eq!(c.routes_in(http, "apps").len(), 4);
    }
}
