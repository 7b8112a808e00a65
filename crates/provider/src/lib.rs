//! The provider side of extdns: the [`Provider`] trait every DNS backend implements, helpers they share,
//! and the in-memory provider.

pub mod backoff;
pub mod batch;
pub mod inmemory;

use async_trait::async_trait;
use extdns_endpoint::{Changes, DomainFilter, Endpoint};

pub use backoff::Backoff;
pub use batch::{Change, apply_in_batches, apply_split, split};
pub use inmemory::InMemoryProvider;

/// A DNS backend. Providers know nothing about ownership (the registry adds and hides TXT records) nor about
/// dry runs (the controller never calls `apply_changes` in one).
#[async_trait]
pub trait Provider: Send + Sync {
    /// Every record in the zones this provider manages.
    async fn records(&self) -> Result<Vec<Endpoint>, ProviderError>;

    /// Apply creates, updates and deletes. A provider writes what it can: when some changes fail it still
    /// applies the others and reports the failed ones in [`ProviderError::Partial`].
    async fn apply_changes(&self, changes: &Changes) -> Result<(), ProviderError>;

    /// Canonicalise desired endpoints the way this provider stores them, so the plan does not see a
    /// difference that is only a spelling (e.g. a TTL the provider clamps).
    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, ProviderError> {
        Ok(endpoints)
    }

    /// The names this provider can manage (its zones); the plan ignores records outside it.
    fn domain_filter(&self) -> DomainFilter {
        DomainFilter::default()
    }
}

/// One change a provider could not apply, named so the user can find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeFailure {
    /// `<name> <type>` of the record.
    pub record: String,
    /// What the backend said (an rcode, an HTTP status and message, a validation rule).
    pub reason: String,
}

impl std::fmt::Display for ChangeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.record, self.reason)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// Worth retrying later: a timeout, a refused connection, a rate limit, a 5xx.
    #[error("transient provider error: {0}")]
    Transient(String),
    /// The backend rejected our credentials (a wrong TSIG key, a bad API key). Retrying will not help until
    /// the configuration changes, but the loop keeps running.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// Some changes were applied, these were not.
    #[error("{} change(s) failed: {}", failures.len(), failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Partial { failures: Vec<ChangeFailure> },
    /// A change this provider cannot express (a record outside its zones, an unsupported type).
    #[error("invalid change: {0}")]
    Invalid(String),
    #[error("provider error: {0}")]
    Other(String),
}

impl ProviderError {
    /// Whether the same call may succeed later without any change of configuration.
    pub fn is_transient(&self) -> bool {
        matches!(self, ProviderError::Transient(_))
    }
}
