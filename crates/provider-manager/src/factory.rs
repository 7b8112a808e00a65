//! How the manager gets a pipeline built: the binary implements [`PipelineFactory`] (settings from its flags
//! with the object's applied, the provider, the registry, a `Controller`), so this crate depends on neither
//! the binary nor any provider crate.

use std::sync::Arc;

use async_trait::async_trait;
use extdns_controller::{CancellationToken, Metrics, SyncObserver};
use extdns_dnsprovider::{Credentials, ProviderObject};
use futures::future::BoxFuture;

/// A pipeline built and not started yet.
pub struct Built {
    /// Runs the pipeline until the token given to [`PipelineFactory::build`] is cancelled, its sync in
    /// progress finished; the manager spawns it as a task of its own, so a panic in it reaches no other.
    pub run: BoxFuture<'static, ()>,
    /// Its metrics: scraped under its provider label, and whose readiness counts for the manager's.
    pub metrics: Arc<Metrics>,
}

/// The error type a factory's causes are kept as.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Why a pipeline could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The object's settings or credentials are refused: built again only when the object or its Secret
    /// changes.
    #[error("{message}")]
    Invalid {
        /// What to fix, complete (the cause's text included).
        message: String,
        /// The cause.
        #[source]
        source: Cause,
    },
    /// What the build needs is not there now (a webhook server not answering): built again after a
    /// backoff with nothing changed.
    #[error("{message}")]
    Unavailable {
        /// What failed, complete.
        message: String,
        /// The cause.
        #[source]
        source: Cause,
    },
}

impl BuildError {
    /// A refused configuration, its message `message`.
    pub fn invalid(message: impl Into<String>, source: impl Into<Cause>) -> BuildError {
        BuildError::Invalid {
            message: message.into(),
            source: source.into(),
        }
    }

    /// A failure that may pass, its message `message`.
    pub fn unavailable(message: impl Into<String>, source: impl Into<Cause>) -> BuildError {
        BuildError::Unavailable {
            message: message.into(),
            source: source.into(),
        }
    }

    /// Whether building again with nothing changed may succeed.
    pub fn may_pass(&self) -> bool {
        matches!(self, BuildError::Unavailable { .. })
    }
}

/// What one provider object's pipeline is built from.
pub struct PipelineRequest<'a> {
    /// The provider object, its spec decoded.
    pub object: &'a ProviderObject,
    /// Its Secret's environment and flags.
    pub credentials: &'a Credentials,
    /// Told each sync's outcome (the object's status).
    pub observer: Arc<dyn SyncObserver>,
    /// Stops the pipeline when cancelled.
    pub cancel: CancellationToken,
}

/// Builds one provider object's pipeline.
#[async_trait]
pub trait PipelineFactory: Send + Sync {
    /// The pipeline the request asks for, reporting each sync to its observer and stopping when its
    /// `cancel` is.
    async fn build(&self, request: PipelineRequest<'_>) -> Result<Built, BuildError>;
}
