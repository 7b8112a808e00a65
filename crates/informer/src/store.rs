//! The one store of cluster objects, whoever fills it: the live watchers ([`crate::LiveCluster`]) or the
//! manifest loader ([`crate::manifests`]), and tests through the `add_*` builders.
//!
//! Every kind is held by the same generic [`Index`]: objects by namespace (empty for cluster-scoped kinds)
//! and name, plus an optional secondary key within the namespace (EndpointSlices by Service). Ordered maps
//! throughout, so every list a lookup returns is sorted by namespace, then name, however and in whatever
//! order the objects arrived; sources that keep the first of two equal endpoints therefore decide the same
//! way on every run and on both paths.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::intern::Interner;
use crate::view::{EndpointSlice, Gateway, ListenerSet, Meta, Namespace, Node, Pod, Route, RouteKind, Service};
use crate::{ResourceKind, Sym};

/// An object extdns watches but could not read (a field of a shape the typed model does not accept).
/// The store keeps its identity so that the DNS records it published can be told apart from records of
/// objects that are gone.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub kind: ResourceKind,
    /// Empty for cluster-scoped kinds.
    pub namespace: String,
    pub name: String,
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

/// The objects sources read, indexed the way they look them up. Lists are sorted by namespace and name.
///
/// Lookups take `&self` and hand out shared handles, never copies of the objects. The live cluster updates
/// the store in place while sources read it (each kind has its own lock, held only for the lookup); a
/// store filled once (manifests, tests) is built through the `add_*` methods.
#[derive(Debug)]
pub struct ClusterStore {
    interner: Interner,
    pub(crate) services: Index<Service>,
    pub(crate) slices: Index<EndpointSlice>,
    pub(crate) pods: Index<Pod>,
    pub(crate) nodes: Index<Node>,
    pub(crate) namespaces: Index<Namespace>,
    pub(crate) gateways: Index<Gateway>,
    pub(crate) listener_sets: Index<ListenerSet>,
    /// In [`RouteKind::ALL`] order.
    routes: [Index<Route>; 5],
}

impl Default for ClusterStore {
    fn default() -> Self {
        ClusterStore {
            interner: Interner::new(),
            services: Index::new(ResourceKind::Service),
            slices: Index::new(ResourceKind::EndpointSlice),
            pods: Index::new(ResourceKind::Pod),
            nodes: Index::new(ResourceKind::Node),
            namespaces: Index::new(ResourceKind::Namespace),
            gateways: Index::new(ResourceKind::Gateway),
            listener_sets: Index::new(ResourceKind::ListenerSet),
            routes: RouteKind::ALL.map(|k| Index::new(ResourceKind::Route(k))),
        }
    }
}

impl ClusterStore {
    pub fn new() -> Self {
        Self::default()
    }

    // ------------------------------------------------------------------------------------------ lookups

    /// All Services in scope (the namespace and server-side label selector the live view watches with).
    pub fn services(&self) -> Vec<Arc<Service>> {
        self.services.all()
    }

    /// The EndpointSlices labelled `kubernetes.io/service-name=<service>` in `namespace`.
    pub fn endpoint_slices(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>> {
        self.slices.group(namespace, service)
    }

    /// All Pods of a namespace.
    pub fn pods(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.pods.in_namespace(namespace)
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.pods.get(namespace, name)
    }

    pub fn nodes(&self) -> Vec<Arc<Node>> {
        self.nodes.all()
    }

    pub fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.nodes.get("", name)
    }

    pub fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.namespaces.get("", name)
    }

    pub fn gateways(&self) -> Vec<Arc<Gateway>> {
        self.gateways.all()
    }

    pub fn gateway(&self, namespace: &str, name: &str) -> Option<Arc<Gateway>> {
        self.gateways.get(namespace, name)
    }

    pub fn listener_sets(&self) -> Vec<Arc<ListenerSet>> {
        self.listener_sets.all()
    }

    pub fn listener_set(&self, namespace: &str, name: &str) -> Option<Arc<ListenerSet>> {
        self.listener_sets.get(namespace, name)
    }

    pub fn routes(&self, kind: RouteKind) -> Vec<Arc<Route>> {
        self.route_index(kind).all()
    }

    /// The objects that exist but could not be decoded, sorted by kind, namespace and name. None of them is
    /// in the lists above.
    pub fn undecodable(&self) -> Vec<ObjectKey> {
        let mut out = Vec::new();
        self.services.undecodable_into(&mut out);
        self.slices.undecodable_into(&mut out);
        self.pods.undecodable_into(&mut out);
        self.nodes.undecodable_into(&mut out);
        self.namespaces.undecodable_into(&mut out);
        self.gateways.undecodable_into(&mut out);
        self.listener_sets.undecodable_into(&mut out);
        for r in &self.routes {
            r.undecodable_into(&mut out);
        }
        out.sort();
        out
    }

    /// The shared strings of stored Pods, for memory accounting.
    pub fn interner(&self) -> &Interner {
        &self.interner
    }

    // ----------------------------------------------------------------------------------------- builders

    /// A later object with the same namespace and name replaces an earlier one.
    pub fn add_service(&mut self, s: Service) -> &mut Self {
        let ns = self.interner.intern(&s.meta.namespace);
        self.services.insert_mut(ns, s);
        self
    }

    /// Indexed by its `kubernetes.io/service-name` label; a slice without one belongs to no Service.
    pub fn add_endpoint_slice(&mut self, s: EndpointSlice) -> &mut Self {
        let ns = self.interner.intern(&s.meta.namespace);
        self.slices.insert_mut(ns, s);
        self
    }

    pub fn add_pod(&mut self, mut p: Pod) -> &mut Self {
        p.namespace = self.interner.intern(&p.namespace);
        self.pods.insert_mut(p.namespace.clone(), p);
        self
    }

    pub fn add_node(&mut self, n: Node) -> &mut Self {
        self.nodes.insert_mut(Sym::default(), n);
        self
    }

    pub fn add_namespace(&mut self, n: Namespace) -> &mut Self {
        self.namespaces.insert_mut(Sym::default(), n);
        self
    }

    pub fn add_gateway(&mut self, g: Gateway) -> &mut Self {
        let ns = self.interner.intern(&g.meta.namespace);
        self.gateways.insert_mut(ns, g);
        self
    }

    pub fn add_listener_set(&mut self, l: ListenerSet) -> &mut Self {
        let ns = self.interner.intern(&l.meta.namespace);
        self.listener_sets.insert_mut(ns, l);
        self
    }

    pub fn add_route(&mut self, r: Route) -> &mut Self {
        let ns = self.interner.intern(&r.meta.namespace);
        let kind = r.kind;
        self.route_index_mut(kind).insert_mut(ns, r);
        self
    }

    /// Records an object that exists but could not be decoded; an object of that kind and name added
    /// earlier is dropped (a later one replaces the record again).
    pub fn add_undecodable(&mut self, kind: ResourceKind, namespace: &str, name: &str) -> &mut Self {
        let ns = self.interner.intern(namespace);
        let index: &mut dyn Undecodable = match kind {
            ResourceKind::Service => &mut self.services,
            ResourceKind::EndpointSlice => &mut self.slices,
            ResourceKind::Pod => &mut self.pods,
            ResourceKind::Node => &mut self.nodes,
            ResourceKind::Namespace => &mut self.namespaces,
            ResourceKind::Gateway => &mut self.gateways,
            ResourceKind::ListenerSet => &mut self.listener_sets,
            ResourceKind::Route(k) => self.route_index_mut(k),
        };
        index.mark_mut(ns, name);
        self
    }

    pub(crate) fn route_index(&self, kind: RouteKind) -> &Index<Route> {
        &self.routes[route_slot(kind)]
    }

    fn route_index_mut(&mut self, kind: RouteKind) -> &mut Index<Route> {
        &mut self.routes[route_slot(kind)]
    }
}

fn route_slot(kind: RouteKind) -> usize {
    RouteKind::ALL.iter().position(|k| *k == kind).unwrap_or_default()
}

/// What an index needs from a view.
pub trait Item: PartialEq + Send + Sync + 'static {
    fn name(&self) -> &str;
    /// The secondary key within the namespace, if the kind has one.
    fn group(&self) -> Option<&str> {
        None
    }
    /// Where the fields templates read are kept, for the kinds templates run on.
    fn template_fields_slot(&mut self) -> Option<&mut Option<Box<str>>> {
        None
    }
    /// The metadata, for the kinds that keep it whole.
    fn meta_mut(&mut self) -> Option<&mut Meta> {
        None
    }
}

impl Item for Service {
    fn name(&self) -> &str {
        &self.meta.name
    }
    fn meta_mut(&mut self) -> Option<&mut Meta> {
        Some(&mut self.meta)
    }
    fn template_fields_slot(&mut self) -> Option<&mut Option<Box<str>>> {
        Some(&mut self.template_fields)
    }
}
impl Item for EndpointSlice {
    fn name(&self) -> &str {
        &self.meta.name
    }
    fn meta_mut(&mut self) -> Option<&mut Meta> {
        Some(&mut self.meta)
    }
    fn group(&self) -> Option<&str> {
        self.service_name.as_deref()
    }
}
impl Item for Pod {
    fn name(&self) -> &str {
        &self.name
    }
}
impl Item for Node {
    fn name(&self) -> &str {
        &self.name
    }
}
impl Item for Namespace {
    fn name(&self) -> &str {
        &self.name
    }
}
impl Item for Gateway {
    fn name(&self) -> &str {
        &self.meta.name
    }
    fn meta_mut(&mut self) -> Option<&mut Meta> {
        Some(&mut self.meta)
    }
}
impl Item for ListenerSet {
    fn name(&self) -> &str {
        &self.meta.name
    }
    fn meta_mut(&mut self) -> Option<&mut Meta> {
        Some(&mut self.meta)
    }
}
impl Item for Route {
    fn name(&self) -> &str {
        &self.meta.name
    }
    fn meta_mut(&mut self) -> Option<&mut Meta> {
        Some(&mut self.meta)
    }
    fn template_fields_slot(&mut self) -> Option<&mut Option<Box<str>>> {
        Some(&mut self.template_fields)
    }
}

/// A stored object ordered and found by its name: the set holds the `Arc` only, so names are not stored
/// twice (Pods are by far the most numerous objects; see docs/performance.md).
struct ByName<V>(Arc<V>);

impl<V: Item> Borrow<str> for ByName<V> {
    fn borrow(&self) -> &str {
        self.0.name()
    }
}
impl<V: Item> PartialEq for ByName<V> {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}
impl<V: Item> Eq for ByName<V> {}
impl<V: Item> PartialOrd for ByName<V> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<V: Item> Ord for ByName<V> {
    // Must agree with `str`'s order, which `Borrow<str>` lookups rely on.
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.name().cmp(other.0.name())
    }
}

/// One entry of a list in progress: the view, or the name of an object that could not be decoded.
pub type Listed<V> = (Sym, Result<V, Box<str>>);

/// The objects of one kind, by namespace and name.
pub struct Index<V> {
    kind: ResourceKind,
    state: RwLock<IndexState<V>>,
}

struct IndexState<V> {
    by_ns: BTreeMap<Sym, BTreeSet<ByName<V>>>,
    /// namespace → group (e.g. Service name) → objects, sorted by name.
    groups: BTreeMap<Sym, BTreeMap<Box<str>, Vec<Arc<V>>>>,
    /// Objects that exist but could not be decoded: namespace, name.
    undecodable: BTreeSet<(Sym, Box<str>)>,
    /// Entries of a (re-)list in progress; they replace the index when it completes.
    relist: Option<Vec<Listed<V>>>,
}

impl<V> fmt::Debug for Index<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl<V: Item> Index<V> {
    fn new(kind: ResourceKind) -> Self {
        Index {
            kind,
            state: RwLock::new(IndexState {
                by_ns: BTreeMap::new(),
                groups: BTreeMap::new(),
                undecodable: BTreeSet::new(),
                relist: None,
            }),
        }
    }

    // A poisoned lock means a panic elsewhere mid-update; every update leaves the maps consistent before
    // anything that could panic, so reading on is safe and better than taking the controller down.
    fn read(&self) -> RwLockReadGuard<'_, IndexState<V>> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, IndexState<V>> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn state_mut(&mut self) -> &mut IndexState<V> {
        self.state.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    fn insert_mut(&mut self, ns: Sym, v: V) {
        self.state_mut().upsert(ns, v);
    }

    /// Inserts or replaces; false when the view is unchanged (a status heartbeat or a field no source
    /// reads), so such updates wake nobody.
    pub(crate) fn upsert(&self, ns: Sym, v: V) -> bool {
        self.write().upsert(ns, v)
    }

    /// Records the object as undecodable, dropping its earlier view; false when it was already recorded.
    pub(crate) fn mark_undecodable(&self, ns: Sym, name: &str) -> bool {
        self.write().mark_undecodable(ns, name)
    }

    /// Forgets the object, whether stored or recorded undecodable; false when it was neither.
    pub(crate) fn remove(&self, ns: &str, name: &str) -> bool {
        let mut st = self.write();
        let recorded = !st.undecodable.is_empty() && st.undecodable.remove(&(Sym::new(ns), Box::from(name)));
        st.remove(ns, name).is_some() || recorded
    }

    /// Starts a list that will replace the index; until [`finish_relist`](Self::finish_relist) the old
    /// content keeps serving lookups.
    pub(crate) fn begin_relist(&self) {
        self.write().relist = Some(Vec::new());
    }

    pub(crate) fn relist_add(&self, ns: Sym, entry: Result<V, Box<str>>) {
        let mut st = self.write();
        match st.relist.as_mut() {
            Some(buf) => buf.push((ns, entry)),
            None => {
                // A list item with no list started: apply it as a plain update.
                match entry {
                    Ok(v) => st.upsert(ns, v),
                    Err(name) => st.mark_undecodable(ns, &name),
                };
            }
        }
    }

    /// Forgets every stored object `keep` rejects (given its namespace); returns how many went. Objects of a
    /// list in progress are not looked at.
    pub(crate) fn retain(&self, keep: impl Fn(&str, &V) -> bool) -> usize {
        let mut st = self.write();
        let gone: Vec<(Sym, Box<str>)> = st
            .by_ns
            .iter()
            .flat_map(|(ns, set)| set.iter().map(move |o| (ns, &o.0)))
            .filter(|(ns, v)| !keep(ns, v))
            .map(|(ns, v)| (ns.clone(), Box::from(v.name())))
            .collect();
        for (ns, name) in &gone {
            st.remove(ns, name);
        }
        gone.len()
    }

    /// A list that will replace the index is in progress.
    pub(crate) fn is_relisting(&self) -> bool {
        self.read().relist.is_some()
    }

    pub(crate) fn finish_relist(&self) {
        let mut st = self.write();
        let Some(buf) = st.relist.take() else { return };
        st.by_ns.clear();
        st.groups.clear();
        st.undecodable.clear();
        for (ns, entry) in buf {
            match entry {
                Ok(v) => st.upsert(ns, v),
                Err(name) => st.mark_undecodable(ns, &name),
            };
        }
    }

    /// The group (the Service of an EndpointSlice) the stored object is in, if any.
    pub(crate) fn group_of(&self, ns: &str, name: &str) -> Option<Box<str>> {
        self.get(ns, name).and_then(|v| v.group().map(Box::from))
    }

    pub(crate) fn get(&self, ns: &str, name: &str) -> Option<Arc<V>> {
        self.read().by_ns.get(ns)?.get(name).map(|b| Arc::clone(&b.0))
    }

    fn in_namespace(&self, ns: &str) -> Vec<Arc<V>> {
        self.read()
            .by_ns
            .get(ns)
            .map(|s| s.iter().map(|b| Arc::clone(&b.0)).collect())
            .unwrap_or_default()
    }

    /// Every object, sorted by namespace and name.
    pub(crate) fn all(&self) -> Vec<Arc<V>> {
        let st = self.read();
        let mut out = Vec::with_capacity(st.by_ns.values().map(BTreeSet::len).sum());
        out.extend(st.by_ns.values().flatten().map(|b| Arc::clone(&b.0)));
        out
    }

    fn group(&self, ns: &str, group: &str) -> Vec<Arc<V>> {
        self.read()
            .groups
            .get(ns)
            .and_then(|g| g.get(group))
            .cloned()
            .unwrap_or_default()
    }

    pub(crate) fn len(&self) -> usize {
        self.read().by_ns.values().map(BTreeSet::len).sum()
    }

    #[cfg(test)]
    pub(crate) fn namespace_count(&self) -> usize {
        self.read().by_ns.len()
    }

    fn undecodable_into(&self, out: &mut Vec<ObjectKey>) {
        out.extend(self.read().undecodable.iter().map(|(ns, name)| ObjectKey {
            kind: self.kind,
            namespace: ns.to_string(),
            name: name.to_string(),
        }));
    }
}

/// Recording an undecodable object needs no view type; this lets the builder pick the index by kind.
trait Undecodable {
    fn mark_mut(&mut self, ns: Sym, name: &str);
}

impl<V: Item> Undecodable for Index<V> {
    fn mark_mut(&mut self, ns: Sym, name: &str) {
        self.state_mut().mark_undecodable(ns, name);
    }
}

impl<V: Item> IndexState<V> {
    fn upsert(&mut self, ns: Sym, v: V) -> bool {
        let set = self.by_ns.entry(ns.clone()).or_default();
        if set.get(v.name()).is_some_and(|old| *old.0 == v) {
            return false;
        }
        let new = Arc::new(v);
        let old = set.replace(ByName(Arc::clone(&new)));
        if let Some(old) = old {
            self.unindex(&ns, &old.0);
        } else if !self.undecodable.is_empty() {
            // It decodes now: no longer a record of an unreadable object.
            self.undecodable.remove(&(ns.clone(), Box::from(new.name())));
        }
        self.index(&ns, new);
        true
    }

    fn mark_undecodable(&mut self, ns: Sym, name: &str) -> bool {
        let dropped = self.remove(&ns, name).is_some();
        self.undecodable.insert((ns, Box::from(name))) || dropped
    }

    fn remove(&mut self, ns: &str, name: &str) -> Option<Arc<V>> {
        let set = self.by_ns.get_mut(ns)?;
        let old = set.take(name)?;
        if set.is_empty() {
            self.by_ns.remove(ns);
        }
        self.unindex(ns, &old.0);
        Some(old.0)
    }

    fn index(&mut self, ns: &Sym, v: Arc<V>) {
        if let Some(g) = v.group() {
            let list = self.groups.entry(ns.clone()).or_default().entry(g.into()).or_default();
            let at = list.partition_point(|x| x.name() < v.name());
            list.insert(at, v);
        }
    }

    fn unindex(&mut self, ns: &str, v: &Arc<V>) {
        let Some(g) = v.group() else { return };
        let Some(groups) = self.groups.get_mut(ns) else { return };
        if let Some(list) = groups.get_mut(g) {
            list.retain(|x| !Arc::ptr_eq(x, v));
            if list.is_empty() {
                groups.remove(g);
            }
        }
        if groups.is_empty() {
            self.groups.remove(ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Meta;

    fn meta(ns: &str, name: &str) -> Meta {
        Meta {
            name: name.into(),
            namespace: ns.into(),
            ..Meta::default()
        }
    }

    fn slice(ns: &str, name: &str, service: &str) -> EndpointSlice {
        EndpointSlice {
            meta: meta(ns, name),
            service_name: Some(service.into()),
            ..EndpointSlice::default()
        }
    }

    fn names<T: Item>(list: &[Arc<T>]) -> Vec<&str> {
        list.iter().map(|x| x.name()).collect()
    }

    #[test]
    fn lists_are_sorted_by_namespace_then_name_whatever_the_insertion_order() {
        let mut c = ClusterStore::new();
        for (ns, name) in [("b", "x"), ("a", "z"), ("b", "a"), ("a", "b")] {
            c.add_service(Service {
                meta: meta(ns, name),
                ..Service::default()
            });
        }
        let order: Vec<(String, String)> = c
            .services()
            .iter()
            .map(|s| (s.meta.namespace.clone(), s.meta.name.clone()))
            .collect();
        let expected = [("a", "b"), ("a", "z"), ("b", "a"), ("b", "x")];
        assert_eq!(order, expected.map(|(n, m)| (n.to_string(), m.to_string())).to_vec());
    }

    #[test]
    fn slices_are_found_by_their_service_sorted_by_name() {
        let mut c = ClusterStore::new();
        c.add_endpoint_slice(slice("default", "web-b", "web"))
            .add_endpoint_slice(slice("default", "web-a", "web"))
            .add_endpoint_slice(slice("other", "web-c", "web"));
        assert_eq!(names(&c.endpoint_slices("default", "web")), vec!["web-a", "web-b"]);
        assert_eq!(names(&c.endpoint_slices("other", "web")), vec!["web-c"]);
        assert!(c.endpoint_slices("default", "api").is_empty());
    }

    #[test]
    fn a_relabelled_slice_moves_to_its_new_service() {
        let c = ClusterStore::new();
        let ns = Sym::new("a");
        c.slices.upsert(ns.clone(), slice("a", "s1", "web"));
        c.slices.upsert(ns.clone(), slice("a", "s1", "api"));
        assert!(c.endpoint_slices("a", "web").is_empty());
        assert_eq!(names(&c.endpoint_slices("a", "api")), vec!["s1"]);
        assert!(c.slices.remove("a", "s1"));
        assert!(c.endpoint_slices("a", "api").is_empty());
        assert!(
            !c.slices.read().groups.contains_key("a"),
            "no empty group is left behind"
        );
    }

    #[test]
    fn the_same_name_replaces_and_an_unchanged_view_is_no_change() {
        let c = ClusterStore::new();
        let svc = |label: &str| Service {
            meta: Meta {
                labels: [("v", label)].into_iter().collect(),
                ..meta("a", "web")
            },
            ..Service::default()
        };
        assert!(c.services.upsert(Sym::new("a"), svc("1")));
        assert!(!c.services.upsert(Sym::new("a"), svc("1")));
        assert!(c.services.upsert(Sym::new("a"), svc("2")));
        let all = c.services();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].meta.labels.get("v"), Some("2"));
    }

    #[test]
    fn pods_are_found_by_namespace_and_name() {
        let mut c = ClusterStore::new();
        c.add_pod(Pod {
            name: "p".into(),
            namespace: "ns".into(),
            ..Pod::default()
        });
        assert!(c.pod("ns", "p").is_some());
        assert_eq!(c.pods("ns").len(), 1);
        assert!(c.pod("other", "p").is_none());
    }

    #[test]
    fn undecodable_objects_are_recorded_apart_and_cleared_when_they_decode_again() {
        let c = ClusterStore::new();
        let ns = Sym::new("apps");
        let route = Route {
            kind: RouteKind::Tls,
            meta: meta("apps", "r"),
            ..Route::default()
        };
        let tls = c.route_index(RouteKind::Tls);
        tls.upsert(ns.clone(), route.clone());
        assert!(tls.mark_undecodable(ns.clone(), "r"));
        assert!(c.routes(RouteKind::Tls).is_empty(), "the stale view is not served");
        assert!(!tls.mark_undecodable(ns.clone(), "r"), "already recorded");
        assert_eq!(
            c.undecodable(),
            vec![ObjectKey {
                kind: ResourceKind::Route(RouteKind::Tls),
                namespace: "apps".into(),
                name: "r".into()
            }]
        );
        assert_eq!(c.undecodable()[0].to_string(), "TLSRoute apps/r");

        tls.upsert(ns.clone(), route);
        assert!(c.undecodable().is_empty());
        assert_eq!(c.routes(RouteKind::Tls).len(), 1);

        tls.mark_undecodable(ns, "r");
        assert!(tls.remove("apps", "r"), "a deleted object leaves no record");
        assert!(c.undecodable().is_empty());
    }

    #[test]
    fn a_relist_replaces_views_and_undecodable_records() {
        let c = ClusterStore::new();
        let ns = Sym::new("a");
        c.services.upsert(
            ns.clone(),
            Service {
                meta: meta("a", "old"),
                ..Service::default()
            },
        );
        c.services.mark_undecodable(ns.clone(), "was-bad");
        c.services.begin_relist();
        c.services.relist_add(
            ns.clone(),
            Ok(Service {
                meta: meta("a", "new"),
                ..Service::default()
            }),
        );
        c.services.relist_add(ns, Err("bad".into()));
        assert_eq!(
            names(&c.services()),
            vec!["old"],
            "the old content serves until the list completes"
        );
        c.services.finish_relist();
        assert_eq!(names(&c.services()), vec!["new"]);
        let bad: Vec<String> = c.undecodable().into_iter().map(|k| k.name).collect();
        assert_eq!(bad, vec!["bad"]);
    }

    #[test]
    fn the_builder_records_undecodable_objects_of_any_kind() {
        let mut c = ClusterStore::new();
        c.add_node(Node {
            name: "n1".into(),
            ..Node::default()
        })
        .add_undecodable(ResourceKind::Node, "", "n1")
        .add_undecodable(ResourceKind::Route(RouteKind::Udp), "x", "u");
        assert!(c.node("n1").is_none());
        let keys: Vec<String> = c.undecodable().iter().map(ToString::to_string).collect();
        assert_eq!(keys, vec!["Node n1", "UDPRoute x/u"]);
    }
}
