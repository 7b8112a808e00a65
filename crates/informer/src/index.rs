//! Reverse indexes: from what a change names (a Pod, a Node, a Gateway, a ListenerSet) to the objects that
//! read it, kept up to date as objects are stored, so that a source asks for the few objects a change
//! affects instead of walking every object of a kind. Each view says what it refers to ([`Item::refs`]);
//! the store's index of its kind keeps `reference → objects` beside its lists. Sources stay stateless:
//! the index belongs to the view of the cluster, and sources only query it.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::store::Item;
use crate::view::{EndpointSlice, ListenerSet, ParentReference, Route, RouteKind, Service};
use crate::{ClusterStore, ResourceKind, Sym};

/// The kinds of parent a route or ListenerSet names (`parentRefs[].kind`, `Gateway` when unset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParentKind {
    Gateway,
    ListenerSet,
}

/// What an object refers to, as the reverse index keys it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ref {
    /// A Pod (namespace, name), named by an EndpointSlice endpoint's `targetRef`.
    Pod(Box<str>, Box<str>),
    /// A Gateway or ListenerSet (namespace, name), named by a route's `spec.parentRefs` or a ListenerSet's
    /// `spec.parentRef` (indexed as a Gateway, the only kind a ListenerSet attaches to).
    Parent(ParentKind, Box<str>, Box<str>),
    /// Every NodePort Service: each reads every Node.
    NodePortService,
    /// Every headless ClusterIP Service: some read Nodes (`endpoints-type: NodeExternalIP`).
    HeadlessService,
    /// The NodePort Services with the `Local` traffic policy of a namespace: they read its Pods.
    LocalNodePortService(Box<str>),
}

/// `reference → (namespace, name)` of the objects of one kind that refer to it.
#[derive(Debug, Default)]
pub(crate) struct Refs(HashMap<Ref, BTreeSet<(Sym, Box<str>)>>);

impl Refs {
    pub(crate) fn add(&mut self, ns: &Sym, name: &str, refs: Vec<Ref>) {
        for r in refs {
            self.0.entry(r).or_default().insert((ns.clone(), Box::from(name)));
        }
    }

    pub(crate) fn remove(&mut self, ns: &str, name: &str, refs: Vec<Ref>) {
        for r in refs {
            if let Some(set) = self.0.get_mut(&r) {
                set.remove(&(Sym::new(ns), Box::from(name)));
                if set.is_empty() {
                    self.0.remove(&r);
                }
            }
        }
    }

    pub(crate) fn get(&self, r: &Ref) -> impl Iterator<Item = (&Sym, &str)> {
        self.0
            .get(r)
            .into_iter()
            .flatten()
            .map(|(ns, name)| (ns, name.as_ref()))
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

/// A parent reference with the defaults the API server fills in: kind `Gateway`, the referrer's namespace.
/// Parents of other kinds (a Service for GAMMA) are not indexed: no change of them is followed.
fn parent(r: &ParentReference, own_namespace: &str) -> Option<Ref> {
    fn set(v: &Option<String>) -> Option<&str> {
        v.as_deref().filter(|s| !s.is_empty())
    }
    let kind = match set(&r.kind).unwrap_or("Gateway") {
        "Gateway" => ParentKind::Gateway,
        "ListenerSet" => ParentKind::ListenerSet,
        _ => return None,
    };
    let ns = set(&r.namespace).unwrap_or(own_namespace);
    Some(Ref::Parent(kind, ns.into(), r.name.as_str().into()))
}

pub(crate) fn service_refs(svc: &Service) -> Vec<Ref> {
    let mut out = Vec::new();
    match svc.service_type.as_str() {
        "NodePort" => {
            out.push(Ref::NodePortService);
            if svc.external_traffic_policy.as_deref() == Some("Local") {
                out.push(Ref::LocalNodePortService(svc.meta.namespace.as_str().into()));
            }
        }
        "ClusterIP" if svc.is_headless() => out.push(Ref::HeadlessService),
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
        .map(|name| Ref::Pod(ns.into(), name.into()))
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
    vec![Ref::Parent(
        ParentKind::Gateway,
        gw_ns.into(),
        ls.parent_ref.name.as_str().into(),
    )]
}

/// The lookups the incremental path makes, each costing what it returns.
impl ClusterStore {
    fn referring<V: Item>(&self, kind: ResourceKind, r: &Ref) -> Vec<Arc<V>> {
        self.index::<V>(kind).map(|i| i.referring(r)).unwrap_or_default()
    }

    /// The EndpointSlices of `namespace` with an endpoint whose `targetRef` names the Pod `name`.
    pub fn endpoint_slices_naming_pod(&self, namespace: &str, name: &str) -> Vec<Arc<EndpointSlice>> {
        self.referring(ResourceKind::EndpointSlice, &Ref::Pod(namespace.into(), name.into()))
    }

    /// Every NodePort Service.
    pub fn node_port_services(&self) -> Vec<Arc<Service>> {
        self.referring(ResourceKind::Service, &Ref::NodePortService)
    }

    /// Every headless ClusterIP Service.
    pub fn headless_services(&self) -> Vec<Arc<Service>> {
        self.referring(ResourceKind::Service, &Ref::HeadlessService)
    }

    /// The NodePort Services with the `Local` traffic policy of `namespace`.
    pub fn local_node_port_services(&self, namespace: &str) -> Vec<Arc<Service>> {
        self.referring(ResourceKind::Service, &Ref::LocalNodePortService(namespace.into()))
    }

    /// The routes of `kind` whose `spec.parentRefs` name the parent (kind, namespace, name).
    pub fn routes_of_parent(
        &self,
        kind: RouteKind,
        parent: ParentKind,
        namespace: &str,
        name: &str,
    ) -> Vec<Arc<Route>> {
        self.referring(
            ResourceKind::Route(kind),
            &Ref::Parent(parent, namespace.into(), name.into()),
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
            &Ref::Parent(ParentKind::Gateway, namespace.into(), name.into()),
        )
    }

    /// The ListenerSets in `namespace`.
    pub fn listener_sets_in(&self, namespace: &str) -> Vec<Arc<ListenerSet>> {
        self.index::<ListenerSet>(ResourceKind::ListenerSet)
            .map(|i| i.in_namespace(namespace))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{Meta, ObjectReference, SliceEndpoint};

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
        slices(&c).upsert(Sym::new("default"), slice("api-a", "api", &["api-0"]));
        assert_eq!(names(&c.endpoint_slices_naming_pod("default", "web-1")), ["web-a"]);
        slices(&c).remove("default", "web-a");
        assert!(c.endpoint_slices_naming_pod("default", "web-1").is_empty());
        assert!(c.endpoint_slices_naming_pod("default", "web-0").is_empty());
        // A re-list replaces the index with what it lists.
        slices(&c).begin_relist();
        slices(&c).relist_add(Sym::new("default"), Ok(slice("new", "web", &["web-9"])));
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
            names(&c.routes_of_parent(http, ParentKind::Gateway, "apps", "gw")),
            ["same-ns"]
        );
        assert_eq!(
            names(&c.routes_of_parent(http, ParentKind::Gateway, "infra", "gw")),
            ["other-ns"]
        );
        assert_eq!(
            names(&c.routes_of_parent(http, ParentKind::ListenerSet, "apps", "ls")),
            ["via-ls"]
        );
        assert!(
            c.routes_of_parent(RouteKind::Grpc, ParentKind::Gateway, "apps", "gw")
                .is_empty()
        );
        assert_eq!(names(&c.listener_sets_of_gateway("infra", "gw")), ["ls"]);
        assert_eq!(c.routes_in(http, "apps").len(), 4);
    }
}
