//! The Kubernetes layer of extdns.
//!
//! Sources never talk to the API server: they read a [`Cluster`], a read-only view of the objects they need
//! in a compact form ([`view`]). Two implementations exist: [`MemoryCluster`] (filled from manifest files, or
//! by tests) and [`LiveCluster`], fed by kube-runtime watchers whose objects are converted on arrival
//! ([`convert`]) so that only the fields sources read are kept.

pub mod convert;
mod intern;
pub mod live;
pub mod manifests;
mod memory;
mod strmap;
pub mod view;

pub use convert::PodAnnotationPrefixes;
pub use intern::Interner;
pub use live::{InformerError, LiveCluster, LiveOptions, Watched};
pub use manifests::{LoadOptions, ManifestError, load};
pub use memory::MemoryCluster;
pub use strmap::{StrMap, Sym};

use std::sync::Arc;

use tokio::sync::watch;

use view::{EndpointSlice, Gateway, ListenerSet, Namespace, Node, Pod, Route, RouteKind, Service};

/// The kinds of Kubernetes objects extdns can watch. A source lists the kinds it reads, and the live
/// cluster starts reflectors for those kinds only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKind {
    Service,
    EndpointSlice,
    Pod,
    Node,
    Namespace,
    Gateway,
    ListenerSet,
    Route(RouteKind),
}

/// A read-only view of the cluster, as sources see it. Lookups are cheap (indexed); lists return shared
/// handles, never copies of the objects.
pub trait Cluster: Send + Sync {
    /// All Services in scope (`--namespace`, server-side label selector where one was sent).
    fn services(&self) -> Vec<Arc<Service>>;
    /// The EndpointSlices labelled `kubernetes.io/service-name=<service>` in `namespace`.
    fn endpoint_slices(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>>;
    /// All Pods of a namespace.
    fn pods(&self, namespace: &str) -> Vec<Arc<Pod>>;
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>>;
    fn nodes(&self) -> Vec<Arc<Node>>;
    fn node(&self, name: &str) -> Option<Arc<Node>>;
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>>;
    fn gateways(&self) -> Vec<Arc<Gateway>>;
    fn gateway(&self, namespace: &str, name: &str) -> Option<Arc<Gateway>>;
    fn listener_sets(&self) -> Vec<Arc<ListenerSet>>;
    fn listener_set(&self, namespace: &str, name: &str) -> Option<Arc<ListenerSet>>;
    fn routes(&self, kind: RouteKind) -> Vec<Arc<Route>>;

    /// Whether every watched kind has been listed at least once. Until then the view is incomplete and
    /// nothing may be deleted because of what it lacks.
    fn synced(&self) -> bool;

    /// A counter that increases whenever a watched object changes; the controller waits on it to run
    /// event-driven syncs.
    fn changes(&self) -> watch::Receiver<u64>;
}
