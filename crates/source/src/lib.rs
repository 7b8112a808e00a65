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

use async_trait::async_trait;
use extdns_endpoint::Endpoint;
use extdns_informer::{ClusterStore, ResourceKind};

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
