//! What every extdns source shares.
//!
//! A [`Source`] turns a read-only [`ClusterStore`] view into desired [`Endpoint`]s. Sources are pure: they never
//! call the API server, a provider or the clock. The only network access a source may need, resolving a load
//! balancer hostname, goes through the injected [`resolver::Resolver`].
//!
//! ```
//! use extdns_informer::StrMap;
//! use extdns_source::Selector;
//!
//! // `--label-filter` and friends use Kubernetes label selector syntax.
//! let selector = Selector::parse("app=web,tier notin (db)")?;
//! let frontend: StrMap = [("app", "web"), ("tier", "frontend")].into_iter().collect();
//! let database: StrMap = [("app", "web"), ("tier", "db")].into_iter().collect();
//! assert!(selector.matches(&frontend));
//! assert!(!selector.matches(&database));
//! # Ok::<(), extdns_source::SelectorError>(())
//! ```

pub mod annotations;
pub mod config;
pub mod index;
pub mod resolver;
pub mod selector;
pub mod template;
pub mod wrappers;

pub use annotations::{AnnotationError, Annotations, DurationError, PREFIX_ALPHA, PREFIX_GA, TtlError};
pub use config::SourceConfig;
pub use index::{ChangedOutput, DesiredIndex};
pub use resolver::{ResolveError, Resolver, StaticResolver, SystemResolver};
pub use selector::{Selector, SelectorError};
pub use template::{FqdnTemplate, TemplateError, TemplateObject};
pub use wrappers::{Pipeline, PipelineConfig, PipelineOutput};

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use extdns_endpoint::Endpoint;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};

/// A producer of desired endpoints.
#[async_trait]
pub trait Source: Send + Sync {
    /// The `--source` name (`service`, `gateway-httproute`, ...).
    fn name(&self) -> &str;

    /// The kinds of objects this source reads, so the live cluster watches only those.
    fn watched_kinds(&self) -> Vec<ResourceKind>;

    /// The endpoints the cluster asks for. Bad input on one object (including a template that cannot run on
    /// it) is a warning naming the object and the field, and that piece is skipped. An error here means the
    /// whole result is unusable, and the controller then plans nothing that sync.
    async fn endpoints(&self, cluster: &ClusterStore) -> Result<Vec<Endpoint>, SourceError>;

    /// The endpoints and the objects that could not be evaluated this sync. The controller keeps the records
    /// those objects published before (it drops deletes and updates of records whose `resource` label names
    /// one), so a template or annotation that starts failing on one object cannot take its names offline.
    /// Sources that never fail on one object keep the default.
    async fn evaluate(&self, cluster: &ClusterStore) -> Result<SourceOutput, SourceError> {
        Ok(SourceOutput {
            endpoints: self.endpoints(cluster).await?,
            failed: BTreeSet::new(),
            why: BTreeMap::new(),
        })
    }

    /// The `resource` keys of this source's objects whose endpoints `changes` may have changed, or `None`
    /// when the source cannot tell (it is then evaluated whole). Over-approximating is safe (an object
    /// evaluated again for nothing plans nothing); missing one is not. The default only knows that changes
    /// to kinds the source does not read affect none of its objects.
    fn affected(&self, _cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<String>> {
        if self.watched_kinds().into_iter().any(|k| changes.touches(k)) {
            None
        } else {
            Some(BTreeSet::new())
        }
    }

    /// The endpoints of the objects whose `resource` keys are in `only` (every object for `None`), object by
    /// object and before [`merge`](Source::merge): what incremental reconcile keeps per object. Objects in
    /// `only` that are gone, or no longer admitted by the filters, are simply absent. `None` from a source
    /// that cannot split its result by object; every change to its kinds then re-evaluates everything.
    ///
    /// `merge` over the objects' endpoints, concatenated in order, must equal [`evaluate`](Source::evaluate).
    async fn evaluate_objects(
        &self,
        _cluster: &ClusterStore,
        _only: Option<&BTreeSet<String>>,
    ) -> Result<Option<PerObject>, SourceError> {
        Ok(None)
    }

    /// What this source does to the endpoints of several objects that share a name (in object order), as
    /// [`evaluate`](Source::evaluate) does it. It must treat each name on its own: an incremental sync
    /// merges only the names a change touched.
    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        endpoints
    }
}

/// The endpoints one object asks for, before its source merges names several objects share.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectEndpoints {
    /// Where the object comes in its source's order (merging depends on which object comes first).
    pub order: String,
    /// The object's `resource` key (`service/default/web`).
    pub resource: String,
    pub endpoints: Vec<Endpoint>,
}

/// What a source made of (some of) its objects, object by object; see [`Source::evaluate_objects`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct PerObject {
    /// Sorted by [`ObjectEndpoints::order`].
    pub objects: Vec<ObjectEndpoints>,
    /// As [`SourceOutput::failed`], for the objects evaluated.
    pub failed: BTreeSet<String>,
    /// As [`SourceOutput::why`].
    pub why: BTreeMap<String, String>,
}

impl PerObject {
    pub fn new(objects: Vec<ObjectEndpoints>, failed: BTreeSet<String>, why: BTreeMap<String, String>) -> Self {
        PerObject { objects, failed, why }
    }
}

/// What one source made of the cluster.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SourceOutput {
    pub endpoints: Vec<Endpoint>,
    /// The `resource` keys (`service/default/web`, `httproute/shop/cart`) of the objects this source could
    /// not evaluate: their published records stay as they are until they evaluate again.
    pub failed: BTreeSet<String>,
    /// Why some of the `failed` objects failed (`resource` key → the field and the problem), for the
    /// Warning events `--events-emit` sends; objects without an entry are reported without a reason.
    pub why: BTreeMap<String, String>,
}

impl SourceOutput {
    pub fn new(endpoints: Vec<Endpoint>, failed: BTreeSet<String>) -> Self {
        SourceOutput {
            endpoints,
            failed,
            why: BTreeMap::new(),
        }
    }

    /// Says why failed objects failed (see [`SourceOutput::why`]).
    pub fn with_why(mut self, why: BTreeMap<String, String>) -> Self {
        self.why = why;
        self
    }
}

/// The longest value a warning repeats in full; longer ones are cut (a whole object or a megabyte of
/// annotation in a log line helps nobody and can flood the log).
pub const WARN_VALUE_MAX: usize = 200;

/// `value` for a warning: as is up to [`WARN_VALUE_MAX`] characters, else its start and an ellipsis.
pub fn shorten(value: &str) -> std::borrow::Cow<'_, str> {
    match value.char_indices().nth(WARN_VALUE_MAX) {
        None => std::borrow::Cow::Borrowed(value),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}…", &value[..cut])),
    }
}

/// The `resource` key of an object, as the `resource` label of its records spells it: the kind in lower
/// case, the namespace and the name (`service/default/web`).
pub fn resource_key(kind: ResourceKind, namespace: &str, name: &str) -> String {
    format!("{}/{namespace}/{name}", kind.kind().to_ascii_lowercase())
}

/// The `resource` keys of the stored objects of `kind` that could not be decoded: what a source reading
/// that kind knows about them is that they exist, so their records must be kept.
pub fn undecodable_of(cluster: &ClusterStore, kind: ResourceKind) -> impl Iterator<Item = String> {
    cluster
        .undecodable()
        .into_iter()
        .filter(move |k: &ObjectKey| k.kind == kind)
        .map(|k| resource_key(k.kind, &k.namespace, &k.name))
}

/// Why a source produced no usable result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    #[error("{source_name}: {source}")]
    Template {
        source_name: String,
        #[source]
        source: TemplateError,
    },
    #[error("{source_name}: {message}")]
    Other { source_name: String, message: String },
}
