//! The cluster view backed by the API server: one kube-runtime watcher per kind the enabled sources read.
//!
//! Objects are converted to their compact view as they arrive and only the view is kept, never the API
//! object, so memory grows with the fields extdns reads (docs/performance.md has the figures). Each kind has
//! its own store, indexed the way sources look objects up (EndpointSlices by Service, Pods by namespace).

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::pin::pin;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::convert::{self, PodAnnotationPrefixes};
use crate::intern::Interner;
use crate::view::{EndpointSlice, Gateway, ListenerSet, Namespace, Node, Pod, Route, RouteKind, Service};
use crate::{Cluster, ResourceKind, Sym};

/// What to watch, beyond the kinds.
#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    /// `--namespace`: the namespace Services, EndpointSlices, Pods and routes are watched in; `None` or
    /// empty means all namespaces.
    pub namespace: Option<String>,
    /// `--gateway-namespace`: the namespace Gateways are watched in; `None` or empty means all.
    pub gateway_namespace: Option<String>,
    /// Label selectors sent to the API server, per kind (e.g. `--label-filter` for Services and routes,
    /// `--gateway-label-filter` for Gateways), in the Kubernetes string syntax. Filtering server-side
    /// means objects that can never match are neither sent nor stored.
    pub label_selectors: BTreeMap<ResourceKind, String>,
    /// The annotations Pods keep.
    pub pod_annotation_prefixes: PodAnnotationPrefixes,
}

#[derive(Debug, thiserror::Error)]
pub enum InformerError {
    #[error("the live cluster must be started inside a Tokio runtime")]
    NoRuntime,
    #[error("the initial list of {pending:?} did not complete within {timeout:?}")]
    SyncTimeout {
        pending: Vec<ResourceKind>,
        timeout: Duration,
    },
}

/// A cluster view kept up to date by watchers. Dropping it stops the watchers.
#[derive(Debug)]
pub struct LiveCluster {
    inner: Arc<state::Inner>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for LiveCluster {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl LiveCluster {
    /// Starts one watcher per kind in `kinds` (duplicates are watched once). The view is not
    /// [`synced`](Cluster::synced) until every watcher has completed its first list. Watch errors (an
    /// unreachable API server, missing RBAC, an absent CRD) are logged and retried with backoff; they keep
    /// the view unsynced rather than failing here.
    pub fn start(client: Client, kinds: &[ResourceKind], opts: LiveOptions) -> Result<LiveCluster, InformerError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| InformerError::NoRuntime)?;
        let kinds: BTreeSet<ResourceKind> = kinds.iter().copied().collect();
        let mut cluster = LiveCluster::detached(&kinds.iter().copied().collect::<Vec<_>>(), opts);
        for kind in kinds {
            let task = cluster.spawn(&runtime, client.clone(), kind);
            cluster.tasks.push(task);
        }
        Ok(cluster)
    }

    /// A cluster with the same stores and transforms but no watchers: events are fed with
    /// [`apply_event`](Self::apply_event). For benchmarks, and for tests that want the live behaviour
    /// without an API server. `kinds` are the kinds that must see `InitDone` before the view is synced.
    pub fn detached(kinds: &[ResourceKind], opts: LiveOptions) -> LiveCluster {
        LiveCluster {
            inner: Arc::new(state::Inner::new(kinds, opts)),
            tasks: Vec::new(),
        }
    }

    /// Feeds one watcher event, exactly as the watcher of that kind would.
    pub fn apply_event<K: Watched>(&self, event: Event<K>) {
        K::ingest(&self.inner, event);
    }

    /// Waits until every watcher has completed its first list, or fails naming the kinds still listing.
    pub async fn wait_until_synced(&self, timeout: Duration) -> Result<(), InformerError> {
        let mut changes = self.changes();
        let wait = async {
            while !self.synced() {
                if changes.changed().await.is_err() {
                    // The sender lives as long as `self`; unreachable in practice, and not a reason to spin.
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| InformerError::SyncTimeout {
                pending: self.inner.unsynced_kinds(),
                timeout,
            })
    }

    /// The kinds whose first list has not completed yet.
    pub fn unsynced_kinds(&self) -> Vec<ResourceKind> {
        self.inner.unsynced_kinds()
    }

    /// The shared strings of stored Pods, for memory accounting.
    pub fn interner(&self) -> &Interner {
        &self.inner.interner
    }

    fn spawn(&self, runtime: &tokio::runtime::Handle, client: Client, kind: ResourceKind) -> JoinHandle<()> {
        let inner = Arc::clone(&self.inner);
        let opts = &self.inner.opts;
        let ns = opts.namespace.as_deref().filter(|n| !n.is_empty());
        let gw_ns = opts.gateway_namespace.as_deref().filter(|n| !n.is_empty());
        let mut cfg = watcher::Config::default().any_semantic();
        if let Some(sel) = opts.label_selectors.get(&kind).filter(|s| !s.is_empty()) {
            cfg = cfg.labels(sel);
        }
        use gateway_api::experimental::{tcproutes::TcpRoute, udproutes::UdpRoute};
        use gateway_api::{grpcroutes::GrpcRoute, httproutes::HttpRoute, tlsroutes::TlsRoute};
        use k8s_openapi::api::{core::v1 as core, discovery::v1 as discovery};
        match kind {
            ResourceKind::Service => runtime.spawn(run::<core::Service>(scoped(client, ns), cfg, inner)),
            ResourceKind::EndpointSlice => {
                runtime.spawn(run::<discovery::EndpointSlice>(scoped(client, ns), cfg, inner))
            }
            ResourceKind::Pod => runtime.spawn(run::<core::Pod>(scoped(client, ns), cfg, inner)),
            ResourceKind::Node => runtime.spawn(run::<core::Node>(Api::all(client), cfg, inner)),
            ResourceKind::Namespace => runtime.spawn(run::<core::Namespace>(Api::all(client), cfg, inner)),
            ResourceKind::Gateway => {
                runtime.spawn(run::<gateway_api::gateways::Gateway>(scoped(client, gw_ns), cfg, inner))
            }
            ResourceKind::ListenerSet => runtime.spawn(run::<gateway_api::listenersets::ListenerSet>(
                Api::all(client),
                cfg,
                inner,
            )),
            ResourceKind::Route(RouteKind::Http) => runtime.spawn(run::<HttpRoute>(scoped(client, ns), cfg, inner)),
            ResourceKind::Route(RouteKind::Grpc) => runtime.spawn(run::<GrpcRoute>(scoped(client, ns), cfg, inner)),
            ResourceKind::Route(RouteKind::Tls) => runtime.spawn(run::<TlsRoute>(scoped(client, ns), cfg, inner)),
            ResourceKind::Route(RouteKind::Tcp) => runtime.spawn(run::<TcpRoute>(scoped(client, ns), cfg, inner)),
            ResourceKind::Route(RouteKind::Udp) => runtime.spawn(run::<UdpRoute>(scoped(client, ns), cfg, inner)),
        }
    }
}

fn scoped<K>(client: Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    }
}

async fn run<K: Watched>(api: Api<K>, cfg: watcher::Config, inner: Arc<state::Inner>) {
    let kind = K::resource_kind();
    let mut events = pin!(watcher::watcher(api, cfg).default_backoff());
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => K::ingest(&inner, event),
            Err(e) => tracing::warn!(?kind, error = %e, "watch failed; retrying with backoff"),
        }
    }
}

impl Cluster for LiveCluster {
    fn services(&self) -> Vec<Arc<Service>> {
        self.inner.services.all()
    }

    fn endpoint_slices(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>> {
        self.inner.slices.group(namespace, service)
    }

    fn pods(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.inner.pods.in_namespace(namespace)
    }

    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.inner.pods.get(namespace, name)
    }

    fn nodes(&self) -> Vec<Arc<Node>> {
        self.inner.nodes.all()
    }

    fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.inner.nodes.get("", name)
    }

    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.inner.namespaces.get("", name)
    }

    fn gateways(&self) -> Vec<Arc<Gateway>> {
        self.inner.gateways.all()
    }

    fn gateway(&self, namespace: &str, name: &str) -> Option<Arc<Gateway>> {
        self.inner.gateways.get(namespace, name)
    }

    fn listener_sets(&self) -> Vec<Arc<ListenerSet>> {
        self.inner.listener_sets.all()
    }

    fn listener_set(&self, namespace: &str, name: &str) -> Option<Arc<ListenerSet>> {
        self.inner.listener_sets.get(namespace, name)
    }

    fn routes(&self, kind: RouteKind) -> Vec<Arc<Route>> {
        self.inner.routes(kind).all()
    }

    fn synced(&self) -> bool {
        self.inner.unsynced_kinds().is_empty()
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }
}

/// The API types extdns watches, each tied to its view and store.
pub trait Watched:
    state::Sealed + Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static
{
    fn resource_kind() -> ResourceKind;
}

macro_rules! watched {
    ($ty:ty, $kind:expr, |$inner:ident| $store:expr, |$obj:ident| $convert:expr) => {
        impl state::Sealed for $ty {
            fn ingest($inner: &state::Inner, event: Event<Self>) {
                $inner.ingest($kind, &$store, event, |$obj: &$ty| $convert);
            }
        }
        impl Watched for $ty {
            fn resource_kind() -> ResourceKind {
                $kind
            }
        }
    };
}

watched!(
    k8s_openapi::api::core::v1::Service,
    ResourceKind::Service,
    |i| i.services,
    |o| Service::from(o)
);
watched!(
    k8s_openapi::api::discovery::v1::EndpointSlice,
    ResourceKind::EndpointSlice,
    |i| i.slices,
    |o| EndpointSlice::from(o)
);
watched!(k8s_openapi::api::core::v1::Pod, ResourceKind::Pod, |i| i.pods, |o| {
    convert::pod(o, &i.opts.pod_annotation_prefixes, &i.interner)
});
watched!(k8s_openapi::api::core::v1::Node, ResourceKind::Node, |i| i.nodes, |o| {
    Node::from(o)
});
watched!(
    k8s_openapi::api::core::v1::Namespace,
    ResourceKind::Namespace,
    |i| i.namespaces,
    |o| Namespace::from(o)
);
watched!(
    gateway_api::gateways::Gateway,
    ResourceKind::Gateway,
    |i| i.gateways,
    |o| Gateway::from(o)
);
watched!(
    gateway_api::listenersets::ListenerSet,
    ResourceKind::ListenerSet,
    |i| i.listener_sets,
    |o| ListenerSet::from(o)
);
watched!(
    gateway_api::httproutes::HttpRoute,
    ResourceKind::Route(RouteKind::Http),
    |i| i.routes[0],
    |o| Route::from(o)
);
watched!(
    gateway_api::grpcroutes::GrpcRoute,
    ResourceKind::Route(RouteKind::Grpc),
    |i| i.routes[1],
    |o| Route::from(o)
);
watched!(
    gateway_api::tlsroutes::TlsRoute,
    ResourceKind::Route(RouteKind::Tls),
    |i| i.routes[2],
    |o| Route::from(o)
);
watched!(
    gateway_api::experimental::tcproutes::TcpRoute,
    ResourceKind::Route(RouteKind::Tcp),
    |i| i.routes[3],
    |o| Route::from(o)
);
watched!(
    gateway_api::experimental::udproutes::UdpRoute,
    ResourceKind::Route(RouteKind::Udp),
    |i| i.routes[4],
    |o| Route::from(o)
);

/// What a store needs from a view.
pub(crate) trait Item: PartialEq + Send + Sync + 'static {
    fn name(&self) -> &str;
    /// The secondary index key within the namespace, if the kind has one.
    fn group(&self) -> Option<&str> {
        None
    }
}

impl Item for Service {
    fn name(&self) -> &str {
        &self.meta.name
    }
}
impl Item for EndpointSlice {
    fn name(&self) -> &str {
        &self.meta.name
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
}
impl Item for ListenerSet {
    fn name(&self) -> &str {
        &self.meta.name
    }
}
impl Item for Route {
    fn name(&self) -> &str {
        &self.meta.name
    }
}

/// A stored object found by its name: the set holds the `Arc` only, so names are not stored twice.
struct ByName<V>(Arc<V>);

impl<V: Item> Borrow<str> for ByName<V> {
    fn borrow(&self) -> &str {
        self.0.name()
    }
}
impl<V: Item> Hash for ByName<V> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name().hash(state);
    }
}
impl<V: Item> PartialEq for ByName<V> {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}
impl<V: Item> Eq for ByName<V> {}

/// The objects of one kind, by namespace (empty for cluster-scoped kinds) and name.
pub(crate) struct Store<V> {
    state: RwLock<StoreState<V>>,
}

struct StoreState<V> {
    by_ns: HashMap<Sym, HashSet<ByName<V>>>,
    /// namespace → group (e.g. Service name) → objects.
    groups: HashMap<Sym, HashMap<Box<str>, Vec<Arc<V>>>>,
    /// Objects of a (re-)list in progress; they replace the store when it completes.
    relist: Option<Vec<(Sym, V)>>,
}

impl<V> Debug for Store<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl<V: Item> Store<V> {
    fn new() -> Self {
        Store {
            state: RwLock::new(StoreState {
                by_ns: HashMap::new(),
                groups: HashMap::new(),
                relist: None,
            }),
        }
    }

    // A poisoned lock means a panic elsewhere mid-update; every update leaves the maps consistent before
    // anything that could panic, so reading on is safe and better than taking the controller down.
    fn read(&self) -> RwLockReadGuard<'_, StoreState<V>> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, StoreState<V>> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Inserts or replaces; false when the view is unchanged (a status heartbeat or a field no source
    /// reads), so such updates wake nobody.
    fn upsert(&self, ns: Sym, v: V) -> bool {
        let mut st = self.write();
        let set = st.by_ns.entry(ns.clone()).or_default();
        if set.get(v.name()).is_some_and(|old| *old.0 == v) {
            return false;
        }
        let new = Arc::new(v);
        let old = set.replace(ByName(Arc::clone(&new)));
        if let Some(old) = old {
            st.unindex(&ns, &old.0);
        }
        st.index(&ns, new);
        true
    }

    fn remove(&self, ns: &str, name: &str) -> bool {
        let mut st = self.write();
        let Some(set) = st.by_ns.get_mut(ns) else { return false };
        let Some(old) = set.take(name) else { return false };
        if set.is_empty() {
            st.by_ns.remove(ns);
        }
        st.unindex(ns, &old.0);
        true
    }

    fn begin_relist(&self) {
        self.write().relist = Some(Vec::new());
    }

    fn relist_add(&self, ns: Sym, v: V) {
        let mut st = self.write();
        match st.relist.as_mut() {
            Some(buf) => buf.push((ns, v)),
            None => {
                drop(st);
                self.upsert(ns, v);
            }
        }
    }

    fn finish_relist(&self) {
        let mut st = self.write();
        let Some(buf) = st.relist.take() else { return };
        st.by_ns.clear();
        st.groups.clear();
        for (ns, v) in buf {
            let v = Arc::new(v);
            if let Some(old) = st.by_ns.entry(ns.clone()).or_default().replace(ByName(Arc::clone(&v))) {
                st.unindex(&ns, &old.0);
            }
            st.index(&ns, v);
        }
        st.by_ns.shrink_to_fit();
    }

    fn get(&self, ns: &str, name: &str) -> Option<Arc<V>> {
        self.read().by_ns.get(ns)?.get(name).map(|b| Arc::clone(&b.0))
    }

    fn in_namespace(&self, ns: &str) -> Vec<Arc<V>> {
        let mut out: Vec<Arc<V>> = self
            .read()
            .by_ns
            .get(ns)
            .map(|s| s.iter().map(|b| Arc::clone(&b.0)).collect())
            .unwrap_or_default();
        out.sort_by(|a, b| a.name().cmp(b.name()));
        out
    }

    /// Every object, sorted by namespace and name so callers see a stable order.
    fn all(&self) -> Vec<Arc<V>> {
        let st = self.read();
        let mut out: Vec<(&Sym, Arc<V>)> = st
            .by_ns
            .iter()
            .flat_map(|(ns, s)| s.iter().map(move |b| (ns, Arc::clone(&b.0))))
            .collect();
        out.sort_by(|a, b| (a.0, a.1.name()).cmp(&(b.0, b.1.name())));
        out.into_iter().map(|(_, v)| v).collect()
    }

    fn group(&self, ns: &str, group: &str) -> Vec<Arc<V>> {
        let mut out = self
            .read()
            .groups
            .get(ns)
            .and_then(|g| g.get(group))
            .cloned()
            .unwrap_or_default();
        out.sort_by(|a, b| a.name().cmp(b.name()));
        out
    }

    pub(crate) fn len(&self) -> usize {
        self.read().by_ns.values().map(HashSet::len).sum()
    }
}

impl<V: Item> StoreState<V> {
    fn index(&mut self, ns: &Sym, v: Arc<V>) {
        if let Some(g) = v.group() {
            self.groups
                .entry(ns.clone())
                .or_default()
                .entry(g.into())
                .or_default()
                .push(v);
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

mod state {
    use super::*;

    /// Sealed: only the kinds below can be watched; the method is how events reach their store.
    pub trait Sealed {
        #[doc(hidden)]
        fn ingest(inner: &Inner, event: Event<Self>)
        where
            Self: Sized;
    }

    /// Everything the watcher tasks and the view share.
    #[derive(Debug)]
    pub struct Inner {
        pub(crate) opts: LiveOptions,
        pub(crate) interner: Interner,
        pub(crate) services: Store<Service>,
        pub(crate) slices: Store<EndpointSlice>,
        pub(crate) pods: Store<Pod>,
        pub(crate) nodes: Store<Node>,
        pub(crate) namespaces: Store<Namespace>,
        pub(crate) gateways: Store<Gateway>,
        pub(crate) listener_sets: Store<ListenerSet>,
        /// In [`RouteKind::ALL`] order.
        pub(crate) routes: [Store<Route>; 5],
        pub(crate) changes: watch::Sender<u64>,
        unsynced: Mutex<BTreeSet<ResourceKind>>,
    }

    impl Inner {
        pub(crate) fn new(kinds: &[ResourceKind], opts: LiveOptions) -> Self {
            Inner {
                opts,
                interner: Interner::new(),
                services: Store::new(),
                slices: Store::new(),
                pods: Store::new(),
                nodes: Store::new(),
                namespaces: Store::new(),
                gateways: Store::new(),
                listener_sets: Store::new(),
                routes: std::array::from_fn(|_| Store::new()),
                changes: watch::Sender::new(0),
                unsynced: Mutex::new(kinds.iter().copied().collect()),
            }
        }

        pub(crate) fn routes(&self, kind: RouteKind) -> &Store<Route> {
            let i = RouteKind::ALL.iter().position(|k| *k == kind).unwrap_or_default();
            &self.routes[i]
        }

        pub(crate) fn unsynced_kinds(&self) -> Vec<ResourceKind> {
            self.unsynced
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .copied()
                .collect()
        }

        fn is_synced(&self, kind: ResourceKind) -> bool {
            !self.unsynced.lock().unwrap_or_else(|e| e.into_inner()).contains(&kind)
        }

        /// Marks a kind listed; true when it was the last one, i.e. the whole view just became synced.
        fn mark_synced(&self, kind: ResourceKind) -> bool {
            let mut unsynced = self.unsynced.lock().unwrap_or_else(|e| e.into_inner());
            unsynced.remove(&kind) && unsynced.is_empty()
        }

        fn bump(&self) {
            self.changes.send_modify(|c| *c = c.wrapping_add(1));
        }

        /// Applies one watcher event to `store`. Changes bump the counter once the kind has been listed;
        /// the first list bumps it once, when the last kind completes, so a waiter sees the view become
        /// synced.
        pub(crate) fn ingest<K, V, F>(&self, kind: ResourceKind, store: &Store<V>, event: Event<K>, convert: F)
        where
            K: Resource,
            V: Item,
            F: Fn(&K) -> V,
        {
            let ns = |o: &K| self.interner.intern(o.meta().namespace.as_deref().unwrap_or_default());
            let changed = match event {
                Event::Apply(o) => store.upsert(ns(&o), convert(&o)),
                Event::Delete(o) => store.remove(o.meta().namespace.as_deref().unwrap_or_default(), &o.name_any()),
                Event::Init => {
                    store.begin_relist();
                    false
                }
                Event::InitApply(o) => {
                    store.relist_add(ns(&o), convert(&o));
                    false
                }
                Event::InitDone => {
                    store.finish_relist();
                    let was_synced = self.is_synced(kind);
                    let now_all_synced = self.mark_synced(kind);
                    tracing::debug!(?kind, objects = store.len(), "list complete");
                    // A re-list after a watch desync may have changed anything.
                    was_synced || now_all_synced
                }
            };
            if changed && self.is_synced(kind) {
                self.bump();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::api::discovery::v1 as discovery;
    use serde_json::json;

    fn slice(name: &str, ns: &str, service: &str) -> discovery::EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]
        }))
        .expect("slice")
    }

    fn pod(name: &str, ns: &str) -> core::Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns}})).expect("pod")
    }

    fn listed<K: Watched>(c: &LiveCluster, objects: Vec<K>) {
        c.apply_event(Event::<K>::Init);
        for o in objects {
            c.apply_event(Event::InitApply(o));
        }
        c.apply_event(Event::<K>::InitDone);
    }

    #[test]
    fn endpoint_slices_are_indexed_by_namespace_and_service_label() {
        let c = LiveCluster::detached(&[ResourceKind::EndpointSlice], LiveOptions::default());
        listed(
            &c,
            vec![
                slice("web-1", "a", "web"),
                slice("web-2", "a", "web"),
                slice("web-3", "b", "web"),
            ],
        );
        let names = |ns, svc| {
            c.endpoint_slices(ns, svc)
                .iter()
                .map(|s| s.meta.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names("a", "web"), vec!["web-1", "web-2"]);
        assert_eq!(names("b", "web"), vec!["web-3"]);

        // Relabelled to another Service: it moves index entries, it is not found twice.
        c.apply_event(Event::Apply(slice("web-2", "a", "api")));
        assert_eq!(names("a", "web"), vec!["web-1"]);
        assert_eq!(names("a", "api"), vec!["web-2"]);

        c.apply_event(Event::Delete(slice("web-1", "a", "web")));
        assert!(names("a", "web").is_empty());
    }

    #[test]
    fn a_relist_replaces_the_store_and_counts_as_a_change() {
        let c = LiveCluster::detached(&[ResourceKind::Pod], LiveOptions::default());
        listed(&c, vec![pod("p1", "a"), pod("p2", "a")]);
        assert!(c.synced());
        let before = *c.changes().borrow();
        // After a watch desync the watcher lists again; p1 went away meanwhile.
        listed(&c, vec![pod("p2", "a"), pod("p3", "b")]);
        assert!(c.pod("a", "p1").is_none());
        assert!(c.pod("a", "p2").is_some());
        assert_eq!(c.pods("b").len(), 1);
        assert!(*c.changes().borrow() > before);
    }

    #[test]
    fn objects_stay_visible_while_a_relist_is_in_progress() {
        let c = LiveCluster::detached(&[ResourceKind::Pod], LiveOptions::default());
        listed(&c, vec![pod("p1", "a")]);
        c.apply_event(Event::<core::Pod>::Init);
        c.apply_event(Event::InitApply(pod("p2", "a")));
        assert!(
            c.pod("a", "p1").is_some(),
            "the old view serves until the new list is complete"
        );
        assert!(c.pod("a", "p2").is_none());
        c.apply_event(Event::<core::Pod>::InitDone);
        assert!(c.pod("a", "p1").is_none());
        assert!(c.pod("a", "p2").is_some());
    }

    #[test]
    fn pods_are_found_by_namespace_and_deleted_namespaces_leave_no_entry() {
        let c = LiveCluster::detached(&[ResourceKind::Pod], LiveOptions::default());
        listed(&c, vec![pod("p1", "a"), pod("p2", "b")]);
        assert_eq!(c.pods("a").len(), 1);
        c.apply_event(Event::Delete(pod("p1", "a")));
        assert!(c.pods("a").is_empty());
        assert!(!c.inner.pods.read().by_ns.contains_key("a"));
    }

    #[test]
    fn unwatched_kinds_are_empty_and_do_not_block_sync() {
        let c = LiveCluster::detached(&[ResourceKind::Node], LiveOptions::default());
        assert!(!c.synced());
        listed::<core::Node>(&c, vec![]);
        assert!(c.synced());
        assert!(c.services().is_empty());
        assert!(c.routes(RouteKind::Http).is_empty());
    }

    #[test]
    fn routes_are_stored_per_kind() {
        let c = LiveCluster::detached(&[], LiveOptions::default());
        let r: gateway_api::grpcroutes::GrpcRoute =
            serde_json::from_value(json!({"metadata": {"name": "r", "namespace": "n"}, "spec": {}})).expect("route");
        c.apply_event(Event::Apply(r));
        assert_eq!(c.routes(RouteKind::Grpc).len(), 1);
        assert!(c.routes(RouteKind::Http).is_empty());
    }
}
