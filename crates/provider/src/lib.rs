//! The provider side of extdns: the [`Provider`] trait every DNS backend implements, the toolkit they
//! share, and the in-memory provider.
//!
//! The toolkit: [`zone`] (is a name in a zone, the closest zone, zones a domain filter selects), [`batch`]
//! (batches by changes, bytes and values; a refused batch split until the bad change is named), [`gather`]
//! (endpoints from backends that store one record per target), [`pace`] (requests kept under a rate),
//! [`backoff`] (retries with backoff and jitter, honouring `Retry-After`), [`http`] (the one HTTP client
//! builder and send path) and [`tls`] (TLS files read once, errors naming the file).
//!
//! ```
//! use extdns_endpoint::{Change, Endpoint, RecordType};
//! use extdns_provider::{InMemoryProvider, Provider, apply_changes};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), extdns_provider::ProviderError> {
//! let provider = InMemoryProvider::new(vec!["example.org".to_string()]);
//! let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.10"]);
//! apply_changes(&provider, &[Change::Create(web)]).await?;
//!
//! let read = provider.records().await?;
//! assert_eq!(read.endpoints.len(), 1);
//! assert_eq!(read.endpoints[0].dns_name, "web.example.org");
//! # Ok(())
//! # }
//! ```

pub mod backoff;
pub mod batch;
pub mod credentials;
pub mod gather;
pub mod http;
pub mod inmemory;
pub mod pace;
pub mod tls;
pub mod zone;

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint};

pub use backoff::{Backoff, Retry};
pub use batch::{Failures, Unit, apply_split, split};
pub use http::HttpClient;
pub use inmemory::InMemoryProvider;
pub use tls::TlsOptions;

/// A DNS backend. Providers know nothing about ownership (the registry adds and hides TXT records) nor about
/// dry runs (the controller never calls [`Provider::apply`] in one).
///
/// A provider keeps no state between [`Provider::records`] and [`Provider::apply`]: what it needs from the
/// read to write back exactly what it read travels in the returned [`Records`], which the caller hands back.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Every record in the zones this provider manages.
    async fn records(&self) -> Result<Records, ProviderError>;

    /// Apply the units, each whole or not at all. `read` is the state of the [`Records`] the changes were
    /// planned from (or [`ReadState::default`] when there was no read). A provider writes what it can:
    /// when some units fail it still applies the others and reports the failed ones in
    /// [`ProviderError::Partial`].
    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError>;

    /// Canonicalise desired endpoints the way this provider stores them, so the plan does not see a
    /// difference that is only a spelling (e.g. a TTL the provider clamps).
    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, ProviderError> {
        Ok(endpoints)
    }

    /// The names this provider can manage (its zones); the plan ignores records outside it.
    fn domain_filter(&self) -> DomainFilter {
        DomainFilter::default()
    }

    /// Whether the [`ReadState`] of a read still serves [`apply`](Provider::apply) after changes were
    /// applied on top of that read, so a caller may keep a read current by folding in what it applied
    /// instead of reading the zones again (incremental reconcile). False, the safe default, for providers
    /// whose read state describes single records (ids, keys, record sets): a record created since has none.
    fn read_state_outlives_writes(&self) -> bool {
        false
    }
}

/// What [`Provider::records`] read.
#[derive(Debug, Default)]
pub struct Records {
    /// Every record the provider manages in its zones, ownership records included.
    pub endpoints: Vec<Endpoint>,
    /// Opaque to every other layer; handed back to the same provider's [`Provider::apply`].
    pub state: ReadState,
}

impl Records {
    /// Endpoints and what the read learnt about them, for the same provider's [`Provider::apply`].
    pub fn with_state<T: Any + Send + Sync>(endpoints: Vec<Endpoint>, state: T) -> Self {
        Records {
            endpoints,
            state: ReadState::new(state),
        }
    }
}

impl From<Vec<Endpoint>> for Records {
    fn from(endpoints: Vec<Endpoint>) -> Self {
        Records {
            endpoints,
            state: ReadState::default(),
        }
    }
}

/// What a provider learnt in a read and needs when it writes (RFC 2136 keeps how TXT records were split
/// into character-strings, so a delete matches them byte for byte). Cheap to clone; empty by default.
#[derive(Clone, Default)]
pub struct ReadState(Option<Arc<dyn Any + Send + Sync>>);

impl ReadState {
    /// Wraps a provider's own state type; only the same type can get it back.
    pub fn new<T: Any + Send + Sync>(state: T) -> Self {
        ReadState(Some(Arc::new(state)))
    }

    /// The state, if this provider stored one of type `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_deref().and_then(|s| s.downcast_ref())
    }
}

impl ReadState {
    /// The state of type `T` this holds or, when it holds none (a caller that wrote without reading first,
    /// such as the webhook server), the state `read` reads now.
    pub async fn get_or_read<T, Fut>(&self, read: impl FnOnce() -> Fut) -> Result<Held<'_, T>, ProviderError>
    where
        T: Any,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        match self.get::<T>() {
            Some(state) => Ok(Held::Handed(state)),
            None => read().await.map(Held::Read),
        }
    }
}

/// A provider's read state for one write: handed back by the caller, or read for this write.
#[derive(Debug)]
pub enum Held<'a, T> {
    /// The caller handed back the state of its last read.
    Handed(&'a T),
    /// Nothing was handed back, so the provider read it for this write.
    Read(T),
}

impl<T> std::ops::Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Held::Handed(state) => state,
            Held::Read(state) => state,
        }
    }
}

impl std::fmt::Debug for ReadState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = if self.0.is_some() { ".." } else { "empty" };
        write!(f, "ReadState({held})")
    }
}

/// Apply plain changes, each its own unit, with no read state: for callers without a registry in front of
/// the provider (a webhook server, tests).
pub async fn apply_changes(provider: &dyn Provider, changes: &[Change]) -> Result<(), ProviderError> {
    let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
    provider.apply(&ReadState::default(), &units).await
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

/// What a provider's own call error says about itself, so every provider turns it into a [`ProviderError`]
/// the same way ([`ProviderError::from_call`]).
pub trait CallError: std::error::Error + Send + Sync + 'static {
    /// The same call may succeed later (no answer, a rate limit, a 5xx).
    fn is_transient(&self) -> bool;
    /// The backend refused the credentials.
    fn is_auth(&self) -> bool;
}

/// A boxed cause, kept as an error's source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a provider call failed. Each message is complete on its own (it includes its cause's text); the
/// cause is kept as `source()` for callers that need to inspect it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// Worth retrying later: a timeout, a refused connection, a rate limit, a 5xx.
    #[error("transient provider error: {message}")]
    Transient {
        /// The whole message, cause included.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// The backend rejected our credentials (a wrong TSIG key, a bad API key). Retrying will not help until
    /// the configuration changes, but the loop keeps running.
    #[error("authentication failed: {message}")]
    Auth {
        /// The whole message, cause included.
        message: String,
        /// The underlying error (the backend's refusal, the call that failed), when there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// Some changes were applied, these were not.
    #[error("{} change(s) failed: {}", failures.len(), failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Partial {
        /// One entry per change that was not applied, naming the record and why.
        failures: Vec<ChangeFailure>,
    },
    /// A change this provider cannot express (a record outside its zones, an unsupported type).
    #[error("invalid change: {0}")]
    Invalid(String),
    /// The backend refused a batch as a whole without naming the change at fault (an RFC 2136 rcode, an
    /// HTTP 400 to a batch): one of its changes may be the cause, so [`batch::apply_split`] splits the
    /// batch to find it. Nothing else is split on.
    #[error("refused: {message}")]
    Refused {
        /// The whole message, cause included.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// The backend answered something we cannot use.
    #[error("provider error: {message}")]
    Other {
        /// The whole message, cause included.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
}

impl ProviderError {
    /// Whether the same call may succeed later without any change of configuration.
    pub fn is_transient(&self) -> bool {
        matches!(self, ProviderError::Transient { .. })
    }

    /// A failed call: transient, refused credentials, or else final; `context` says what was being done.
    pub fn from_call(context: impl std::fmt::Display, error: impl CallError) -> Self {
        if error.is_transient() {
            ProviderError::transient_from(context, error)
        } else if error.is_auth() {
            ProviderError::auth_from(context, error)
        } else {
            ProviderError::other_from(context, error)
        }
    }

    /// A transient failure described by `message`.
    pub fn transient(message: impl Into<String>) -> Self {
        let (message, source) = (message.into(), None);
        ProviderError::Transient { message, source }
    }

    /// A transient failure caused by `source`; `context` says what was being done, the message ends with
    /// the cause's own text.
    pub fn transient_from(context: impl std::fmt::Display, source: impl Into<BoxError>) -> Self {
        let (message, source) = caused(context, source);
        ProviderError::Transient { message, source }
    }

    /// Refused credentials described by `message`.
    pub fn auth(message: impl Into<String>) -> Self {
        let (message, source) = (message.into(), None);
        ProviderError::Auth { message, source }
    }

    /// Refused credentials, as `source` says; `context` says what was being done, the message ends with
    /// the cause's own text.
    pub fn auth_from(context: impl std::fmt::Display, source: impl Into<BoxError>) -> Self {
        let (message, source) = caused(context, source);
        ProviderError::Auth { message, source }
    }

    /// A refusal of a whole batch described by `message`: split it ([`ProviderError::Refused`]).
    pub fn refused(message: impl Into<String>) -> Self {
        let (message, source) = (message.into(), None);
        ProviderError::Refused { message, source }
    }

    /// A refusal of a whole batch caused by `source`; `context` says what was being done.
    pub fn refused_from(context: impl std::fmt::Display, source: impl Into<BoxError>) -> Self {
        let (message, source) = caused(context, source);
        ProviderError::Refused { message, source }
    }

    /// An unusable answer described by `message`.
    pub fn other(message: impl Into<String>) -> Self {
        let (message, source) = (message.into(), None);
        ProviderError::Other { message, source }
    }

    /// A failure caused by `source` that retrying will not mend; `context` says what was being done, the
    /// message ends with the cause's own text.
    pub fn other_from(context: impl std::fmt::Display, source: impl Into<BoxError>) -> Self {
        let (message, source) = caused(context, source);
        ProviderError::Other { message, source }
    }
}

/// A message that ends with its cause's text, and the cause kept.
fn caused(context: impl std::fmt::Display, source: impl Into<BoxError>) -> (String, Option<BoxError>) {
    let source = source.into();
    (format!("{context}: {source}"), Some(source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_write_uses_the_read_state_it_is_handed_or_reads_one() {
        let handed = ReadState::new(7u32);
        let mut reads = 0;
        let held = handed
            .get_or_read(|| {
                reads += 1;
                std::future::ready(Ok(1u32))
            })
            .await;
        assert!(matches!(held, Ok(Held::Handed(7))), "{held:?}");
        let none = ReadState::default();
        let held = none
            .get_or_read(|| {
                reads += 1;
                std::future::ready(Ok(1u32))
            })
            .await;
        assert_eq!(held.map(|h| *h).ok(), Some(1));
        assert_eq!(reads, 1, "only the empty state reads");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("backend said {0}")]
    struct Call(&'static str);

    impl CallError for Call {
        fn is_transient(&self) -> bool {
            self.0 == "503"
        }
        fn is_auth(&self) -> bool {
            self.0 == "401"
        }
    }

    #[test]
    fn call_errors_map_by_what_they_say() {
        let e = ProviderError::from_call("listing zones", Call("503"));
        assert!(
            e.is_transient() && e.to_string().contains("listing zones: backend said 503"),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some(), "the cause is kept");
        let auth = ProviderError::from_call("x", Call("401"));
        assert!(
            matches!(&auth, ProviderError::Auth { message, .. } if message == "x: backend said 401"),
            "{auth:?}"
        );
        assert_eq!(auth.to_string(), "authentication failed: x: backend said 401");
        let cause = std::error::Error::source(&auth).and_then(|c| c.downcast_ref::<Call>());
        assert_eq!(cause.map(|c| c.0), Some("401"), "the refusal is kept as the source");
        assert!(matches!(
            ProviderError::from_call("x", Call("400")),
            ProviderError::Other { .. }
        ));
    }
}
