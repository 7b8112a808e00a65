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
pub mod resolver;
pub mod selector;
pub mod template;
pub mod wrappers;

pub use annotations::{AnnotationError, Annotations, DurationError, PREFIX_ALPHA, PREFIX_GA, TtlError};
pub use config::SourceConfig;
pub use resolver::{ResolveError, Resolver, StaticResolver, SystemResolver};
pub use selector::{Selector, SelectorError};
pub use template::{FqdnTemplate, TemplateError, TemplateObject};
pub use wrappers::{Pipeline, PipelineConfig, PipelineOutput};

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use extdns_endpoint::Endpoint;
use extdns_informer::{ClusterStore, ObjectKey, ResourceKind};

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
