//! The provider side of extdns: the [`Provider`] trait every DNS backend implements, the toolkit they
//! share, and the in-memory provider.
//!
//! The toolkit: [`api_client`] (what a JSON cloud API client is: HTTP client, base URL, retry, pacing),
//! [`zone`] (is a name in a zone, the closest zone, zones a domain filter selects), [`batch`]
//! (batches by changes, bytes and values; a refused batch split until the bad change is named), [`gather`]
//! (endpoints from backends that store one record per target), [`pace`] (requests kept under a rate),
//! [`backoff`] (retries with backoff and jitter, honouring `Retry-After`), [`settings`] (the groups of
//! settings every provider's configuration shares: which zones, how writes are batched), [`indexed`] (a provider whose read yields endpoints and the index
//! its writes need, made a [`Provider`]), [`failure`] (one classification of
//! a failed call, which retry, pacing and batch splitting read), [`http`] (the one HTTP client
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

pub mod api_client;
pub mod as_read;
pub mod backoff;
pub mod batch;
pub mod budget;
pub mod credentials;
pub mod failure;
pub mod gather;
pub mod http;
pub mod indexed;
pub mod inmemory;
pub mod metadata;
pub mod pace;
pub mod settings;
pub mod tls;
pub mod zone;

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, EndpointKey, RecordType};

pub use api_client::{ApiClient, ApiSettings, Call};
pub use backoff::Backoff;
pub use batch::{Failures, Unit, apply_split, split};
pub use failure::{FailureKind, HttpAnswer, Retry};
pub use http::HttpClient;
pub use indexed::IndexedProvider;
pub use inmemory::InMemoryProvider;
pub use settings::{Batching, CallSettings, ZoneSelection};
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

    /// Where a record named `name` would be written, as the read whose state is `read` knows the zones
    /// (see [`zone::Placement`]). The registry asks before it pairs a record with its ownership record, so a
    /// pair two zones hold, or one no zone holds, is written as the backend can take it. Unknown by default
    /// (a provider without zones of its own, or a read without state).
    fn placement(&self, _read: &ReadState, _name: &str) -> zone::Placement {
        zone::Placement::Unknown
    }

    /// Whether the [`ReadState`] of a read still serves [`apply`](Provider::apply) after changes were
    /// applied on top of that read, so a caller may keep a read current by folding in what it applied
    /// instead of reading the zones again (incremental reconcile). False, the safe default, for providers
    /// whose read state describes single records (ids, keys, record sets): a record created since has none.
    fn read_state_outlives_writes(&self) -> bool {
        false
    }

    /// How many characters of ownership payload (see [`metadata`]) a record written as `endpoint` can
    /// carry in its own metadata, beside what the user keeps there (a Cloudflare comment's own text);
    /// `None` for a provider whose records keep no metadata, the default. The registry writing ownership
    /// there refuses a record whose payload does not fit rather than cut the user's text or the payload.
    fn ownership_room(&self, _endpoint: &Endpoint) -> Option<usize> {
        None
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

/// One change a provider could not apply: which record, and why, typed so a consumer (the controller's
/// Events and metrics, the CRD registry's per-record status) reads it without parsing a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeFailure {
    /// The record's identity: name, type and set identifier.
    pub key: EndpointKey,
    /// Why it was not applied.
    pub reason: FailureReason,
}

impl ChangeFailure {
    /// A failure of the change to `endpoint`'s record, of `kind`, as `message` says.
    pub fn new(endpoint: &Endpoint, kind: FailureKind, message: impl Into<String>) -> Self {
        ChangeFailure {
            key: endpoint.key(),
            reason: FailureReason {
                kind,
                message: message.into(),
            },
        }
    }

    /// Whether this is a failure of `endpoint`'s record.
    pub fn is_for(&self, endpoint: &Endpoint) -> bool {
        let k = &self.key;
        k.dns_name == endpoint.dns_name
            && k.record_type == endpoint.record_type
            && k.set_identifier == endpoint.set_identifier
    }
}

/// The records some failures name, each with its failure, to tell which changes of a set failed (and why)
/// with one lookup a change, without building a key per change.
#[derive(Debug, Default)]
pub struct FailedRecords<'a>(std::collections::HashMap<(&'a str, &'a RecordType, &'a str), &'a ChangeFailure>);

impl<'a> FailedRecords<'a> {
    /// The records `failures` name (the first failure of a record when several name it).
    pub fn of(failures: &'a [ChangeFailure]) -> Self {
        let mut map = std::collections::HashMap::with_capacity(failures.len());
        for f in failures {
            let k = &f.key;
            map.entry((k.dns_name.as_str(), &k.record_type, k.set_identifier.as_str()))
                .or_insert(f);
        }
        FailedRecords(map)
    }

    /// The failure of `endpoint`'s record, if a change of it failed.
    pub fn get(&self, endpoint: &Endpoint) -> Option<&'a ChangeFailure> {
        let e = endpoint;
        self.0
            .get(&(e.dns_name.as_str(), &e.record_type, e.set_identifier.as_str()))
            .copied()
    }

    /// Whether a change of `endpoint`'s record failed.
    pub fn contains(&self, endpoint: &Endpoint) -> bool {
        self.get(endpoint).is_some()
    }

    /// Whether nothing failed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for ChangeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let k = &self.key;
        write!(f, "{} {}", k.dns_name, k.record_type)?;
        if !k.set_identifier.is_empty() {
            write!(f, " set-identifier={}", k.set_identifier)?;
        }
        write!(f, ": {}", self.reason.message)
    }
}

/// Why one change failed: the kind of failure and what the backend (or the provider's own validation)
/// said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureReason {
    /// What kind of failure it was ([`FailureKind::Refused`] for a record the backend would not take).
    pub kind: FailureKind,
    /// What the backend said (an rcode, an HTTP status and message, a validation rule).
    pub message: String,
}

impl std::fmt::Display for FailureReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a provider's own call error says about itself, so every provider turns it into a [`ProviderError`]
/// the same way ([`ProviderError::from_call`]) and retries it the same way ([`Backoff::retry`]).
pub trait CallError: std::error::Error + Send + Sync + 'static {
    /// The kind of the failure, as [`failure::classify`] (or [`failure::unanswered`]) named it.
    fn kind(&self) -> FailureKind;
}

/// A boxed cause, kept as an error's source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a provider call failed. Each message is complete on its own (it includes its cause's text); the
/// cause is kept as `source()` for callers that need to inspect it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// A call failed; `kind` says whether it is worth retrying, splitting, or neither, and is the only
    /// thing retry, pacing and [`batch::apply_split`] read.
    #[error("{}: {message}", headline(*kind))]
    Failed {
        /// What kind of failure it was.
        kind: FailureKind,
        /// The whole message, cause included.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// Some changes were applied, these were not.
    #[error("{} change(s) failed: {}", failures.len(), failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Partial {
        /// One entry per change that was not applied, naming the record and why.
        failures: Vec<ChangeFailure>,
    },
}

/// How a failure's message starts, by kind.
fn headline(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Throttled { .. } => "throttled by the provider",
        FailureKind::Transient => "transient provider error",
        FailureKind::Refused => "refused",
        FailureKind::Auth => "authentication failed",
        FailureKind::Fatal => "provider error",
    }
}

impl ProviderError {
    /// The kind of a failed call; `None` for a partial failure (each failed change has its own).
    pub fn kind(&self) -> Option<FailureKind> {
        match self {
            ProviderError::Failed { kind, .. } => Some(*kind),
            ProviderError::Partial { .. } => None,
        }
    }

    /// Whether the same call may succeed later without any change of configuration.
    pub fn is_transient(&self) -> bool {
        self.kind().is_some_and(FailureKind::is_transient)
    }

    /// Whether the backend refused the credentials.
    pub fn is_auth(&self) -> bool {
        self.kind() == Some(FailureKind::Auth)
    }

    /// A failure of `kind` described by `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        ProviderError::Failed {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// A failure of `kind` caused by `source`; `context` says what was being done, the message ends with
    /// the cause's own text.
    pub fn caused(kind: FailureKind, context: impl std::fmt::Display, source: impl Into<BoxError>) -> Self {
        let source = source.into();
        ProviderError::Failed {
            kind,
            message: format!("{context}: {source}"),
            source: Some(source),
        }
    }

    /// A failed call, of the kind it names itself; `context` says what was being done.
    pub fn from_call(context: impl std::fmt::Display, error: impl CallError) -> Self {
        ProviderError::caused(error.kind(), context, error)
    }

    /// A transient failure described by `message`.
    pub fn transient(message: impl Into<String>) -> Self {
        ProviderError::new(FailureKind::Transient, message)
    }

    /// A transient failure caused by `source`.
    pub fn transient_from(context: impl std::fmt::Display, source: impl Into<BoxError>) -> Self {
        ProviderError::caused(FailureKind::Transient, context, source)
    }

    /// Refused credentials described by `message`.
    pub fn auth(message: impl Into<String>) -> Self {
        ProviderError::new(FailureKind::Auth, message)
    }

    /// A refusal of a whole batch described by `message`: [`batch::apply_split`] splits it.
    pub fn refused(message: impl Into<String>) -> Self {
        ProviderError::new(FailureKind::Refused, message)
    }

    /// A failure that neither retrying nor splitting mends, described by `message`.
    pub fn fatal(message: impl Into<String>) -> Self {
        ProviderError::new(FailureKind::Fatal, message)
    }

    /// A failure caused by `source` that neither retrying nor splitting mends.
    pub fn fatal_from(context: impl std::fmt::Display, source: impl Into<BoxError>) -> Self {
        ProviderError::caused(FailureKind::Fatal, context, source)
    }
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
        fn kind(&self) -> FailureKind {
            match self.0 {
                "503" => FailureKind::Transient,
                "401" => FailureKind::Auth,
                _ => FailureKind::Fatal,
            }
        }
    }

    #[test]
    fn call_errors_map_by_their_kind() {
        let e = ProviderError::from_call("listing zones", Call("503"));
        assert!(
            e.is_transient() && e.to_string().contains("listing zones: backend said 503"),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some(), "the cause is kept");
        let auth = ProviderError::from_call("x", Call("401"));
        assert!(auth.is_auth(), "{auth:?}");
        assert_eq!(auth.to_string(), "authentication failed: x: backend said 401");
        let cause = std::error::Error::source(&auth).and_then(|c| c.downcast_ref::<Call>());
        assert_eq!(cause.map(|c| c.0), Some("401"), "the refusal is kept as the source");
        assert_eq!(
            ProviderError::from_call("x", Call("400")).kind(),
            Some(FailureKind::Fatal)
        );
    }

    #[test]
    fn a_change_failure_names_its_record_and_keeps_its_kind() {
        let e = Endpoint::new("a.example.org", extdns_endpoint::RecordType::A, ["192.0.2.1"]).with_set_identifier("eu");
        let f = ChangeFailure::new(&e, FailureKind::Refused, "no");
        assert_eq!(f.to_string(), "a.example.org A set-identifier=eu: no");
        assert_eq!(f.key, e.key());
        assert!(f.is_for(&e) && !f.is_for(&e.clone().with_set_identifier("us")));
        assert_eq!(f.reason.kind, FailureKind::Refused);
        let p = ProviderError::Partial { failures: vec![f] };
        assert_eq!(p.kind(), None);
        assert_eq!(
            p.to_string(),
            "1 change(s) failed: a.example.org A set-identifier=eu: no"
        );
        let ProviderError::Partial { failures } = &p else {
            panic!("{p:?}")
        };
        let failed = FailedRecords::of(failures);
        assert!(failed.contains(&e));
        assert_eq!(failed.get(&e).map(|f| f.reason.message.as_str()), Some("no"));
        assert!(
            !failed.contains(&e.clone().with_set_identifier("us")),
            "the set identifier tells records apart"
        );
        assert!(FailedRecords::of(&[]).is_empty());
    }
}
