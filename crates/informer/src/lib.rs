//! The Kubernetes layer of extdns.
//!
//! Sources never talk to the API server: they read a [`ClusterStore`], the one indexed store of the objects
//! they need, in a compact form ([`view`]). Every kind extdns can watch is declared once, in the table of
//! [`kinds`]. Two things fill the store, through the same ingest path: [`LiveCluster`], whose kube-runtime
//! watchers decode and convert each object on arrival ([`convert`]) so that only the fields sources read are
//! kept, and the [`manifests`] loader. Either way the lookups and their order (namespace, then name) are the
//! same.
//! The controller sees a [`Cluster`]: the store plus whether it is complete and when it changes.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//!
//! let yaml = "
//! apiVersion: v1
//! kind: Service
//! metadata: {name: web, namespace: default}
//! spec: {type: ClusterIP, clusterIP: 10.96.0.10}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//! let services = store.services();
//! assert_eq!(services.len(), 1);
//! assert_eq!(services[0].meta.name.as_str(), "web");
//! # Ok::<(), extdns_informer::ManifestError>(())
//! ```

pub mod availability;
mod changes;
pub mod client;
pub mod convert;
mod decode;
pub mod dnsendpoint;
mod dnsendpoint_entries;
pub mod f5;
mod fanout;
mod fields;
pub mod index;
mod intern;
pub mod istio;
mod item;
pub mod kinds;
pub mod live;
mod lookup;
mod manifest_cluster;
mod manifest_files;
pub mod manifests;
mod pod_demand;
mod store;
mod strmap;
pub mod traefik;
pub mod view;
mod watched;
// --- contour-httpproxy and openshift-route sources ---
pub mod contour;
mod crd_type;
pub mod openshift;
// --- ambassador-host source ---
pub mod ambassador;

pub use availability::{Unavailable, UnavailableReason};
pub use changes::ChangeSet;
pub use convert::PodAnnotationPrefixes;
pub use decode::DecodeError;
pub use extdns_object::Uid;
pub use fanout::ClusterFanout;
pub use fields::{FieldTree, PathStep, TemplateFields};
pub use intern::Interner;
pub use kinds::{ApiResourceOf, KINDS, KindOverrides, KindSpec, OverrideError, ResourceKind, Watched};
pub use live::{InformerError, LiveCluster, LiveOptions, status_of};
pub use manifest_cluster::ManifestCluster;
pub use manifests::{
    LoadOptions, Loaded, ManifestError, ManifestWarning, SkippedKinds, load, load_counting_skipped, load_keeping,
    load_lenient,
};
pub use store::{ClusterStore, ObjectKey};
pub use strmap::{StrMap, Sym};

use std::sync::Arc;

use tokio::sync::watch;

/// The cluster as the controller sees it: the objects, whether the view is complete, and when it changes.
/// Sources only ever get the [`ClusterStore`].
pub trait Cluster: Send + Sync {
    /// The objects. A shared handle rather than a borrow so that a view may swap in a freshly built store
    /// (manifest files read again) while a sync still reads the previous one.
    fn store(&self) -> Arc<ClusterStore>;

    /// Whether every watched kind has been listed at least once or found unavailable
    /// ([`ClusterStore::unavailable`]: not served, forbidden, its CRD absent). Until then the view is
    /// incomplete and nothing may be deleted because of what it lacks; an unavailable kind is not
    /// incomplete but known missing, and the records of what needs it are held instead.
    fn synced(&self) -> bool;

    /// A counter that increases whenever a watched object changes; the controller waits on it to run
    /// event-driven syncs.
    fn changes(&self) -> watch::Receiver<u64>;

    /// The objects that changed since the last call, and forgets them: what an incremental sync must look
    /// at. Take them *before* reading the store, so a change that lands meanwhile is seen again next time.
    /// A view that does not track single objects says everything changed.
    fn take_changes(&self) -> ChangeSet {
        ChangeSet::everything()
    }
}
