//! Sources tried in order, and the one error that names every source tried.

use async_trait::async_trait;

/// What the chain asks of a source's error beyond its text: whether asking again later may help (no answer,
/// a 429 or 5xx from a token endpoint), so a provider retries a transient failure and reports the others as
/// an authentication failure.
pub trait FetchError: std::error::Error + Send + Sync + 'static {
    /// Whether the same fetch may succeed later.
    fn is_transient(&self) -> bool;
}

/// Why a source gave no credential: it is not configured here (the chain goes on to the next source), or it
/// is and failed (the chain stops: a configured source that fails is not replaced by another).
#[derive(Debug)]
pub enum Miss<E> {
    /// The source is absent (a variable unset, no file, metadata disabled); the error says what is missing.
    NotConfigured(E),
    /// The source is configured but gave no credential.
    Failed(E),
}

/// Whether a source tried was passed over or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Not configured here.
    NotConfigured,
    /// Configured, and failed: the chain stopped at it.
    Failed,
}

/// One place credentials may come from.
#[async_trait]
pub trait Source<C>: Send + Sync {
    /// The error it gives when it has no credential.
    type Error: FetchError;

    /// How errors name it (`environment`, `web identity (AWS_ROLE_ARN …)`, `the metadata server at …`).
    fn name(&self) -> String;

    /// The credential, or why not.
    async fn fetch(&self) -> Result<C, Miss<Self::Error>>;
}

/// Anything that fetches a credential with a chain's error: a [`Chain`], or a provider's step around one
/// (AWS assumes `--aws-assume-role` with what its chain gave).
#[async_trait]
pub trait Fetch<C, E>: Send + Sync {
    /// A fresh credential, or every source tried and why.
    async fn fetch(&self) -> Result<C, NoCredentials<E>>;
}

/// One source that gave nothing, and why.
#[derive(Debug)]
#[non_exhaustive]
pub struct Tried<E> {
    /// The source, as it names itself.
    pub from: String,
    /// Passed over or failed.
    pub outcome: Outcome,
    /// Why it gave nothing.
    pub source: E,
}

impl<E> Tried<E> {
    /// A source passed over because it is not configured.
    pub fn not_configured(from: impl Into<String>, source: E) -> Tried<E> {
        Tried {
            from: from.into(),
            outcome: Outcome::NotConfigured,
            source,
        }
    }

    /// A configured source that failed.
    pub fn failed(from: impl Into<String>, source: E) -> Tried<E> {
        Tried {
            from: from.into(),
            outcome: Outcome::Failed,
            source,
        }
    }
}

impl<E: std::fmt::Display> std::fmt::Display for Tried<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.from, self.source)
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Tried<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// No credential: every source tried, in order, each with why it gave nothing. Its text is
/// `<headline>; tried <source>: <why>; …`; its `source()` is the source the chain stopped at (the one that
/// failed, or the last one passed over).
#[derive(Debug)]
#[non_exhaustive]
pub struct NoCredentials<E> {
    /// What is missing, as the provider says it (`no AWS credentials`).
    pub headline: &'static str,
    /// The sources tried, in order.
    pub tried: Vec<Tried<E>>,
}

impl<E> NoCredentials<E> {
    /// The error of a chain whose text begins with `headline`, after trying `tried`.
    pub fn new(headline: &'static str, tried: Vec<Tried<E>>) -> NoCredentials<E> {
        NoCredentials { headline, tried }
    }

    /// The error of the source that failed, if one did (rather than every source being absent).
    pub fn failure(&self) -> Option<&E> {
        self.tried
            .iter()
            .find(|t| t.outcome == Outcome::Failed)
            .map(|t| &t.source)
    }
}

impl<E: FetchError> NoCredentials<E> {
    /// Whether asking again later may help: the source that failed failed transiently.
    pub fn is_transient(&self) -> bool {
        self.failure().is_some_and(FetchError::is_transient)
    }
}

impl<E: std::fmt::Display> std::fmt::Display for NoCredentials<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; tried ", self.headline)?;
        for (i, t) in self.tried.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl<E: std::error::Error + 'static> std::error::Error for NoCredentials<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let failed = self.tried.iter().find(|t| t.outcome == Outcome::Failed);
        failed
            .or(self.tried.last())
            .map(|t| t as &(dyn std::error::Error + 'static))
    }
}

/// Sources tried in order; the first credential wins.
pub struct Chain<C, E> {
    headline: &'static str,
    sources: Vec<Box<dyn Source<C, Error = E>>>,
}

impl<C, E: FetchError> std::fmt::Debug for Chain<C, E> {
    /// Names the sources, never a credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("headline", &self.headline)
            .field("sources", &self.sources.iter().map(|s| s.name()).collect::<Vec<_>>())
            .finish()
    }
}

impl<C: Send + 'static, E: FetchError> Chain<C, E> {
    /// An empty chain whose error begins with `headline` (`no AWS credentials`).
    pub fn new(headline: &'static str) -> Chain<C, E> {
        Chain {
            headline,
            sources: Vec::new(),
        }
    }

    /// The chain with `source` tried after the ones before it.
    pub fn then(mut self, source: impl Source<C, Error = E> + 'static) -> Chain<C, E> {
        self.sources.push(Box::new(source));
        self
    }

    /// The first source's credential; a source not configured is passed over, one that fails ends the search.
    pub async fn first(&self) -> Result<C, NoCredentials<E>> {
        let mut tried = Vec::new();
        for source in &self.sources {
            match source.fetch().await {
                Ok(credential) => {
                    tracing::debug!(source = %source.name(), "credential fetched");
                    return Ok(credential);
                }
                Err(Miss::NotConfigured(e)) => tried.push(Tried::not_configured(source.name(), e)),
                Err(Miss::Failed(e)) => {
                    tried.push(Tried::failed(source.name(), e));
                    break;
                }
            }
        }
        Err(NoCredentials {
            headline: self.headline,
            tried,
        })
    }
}

#[async_trait]
impl<C: Send + 'static, E: FetchError> Fetch<C, E> for Chain<C, E> {
    async fn fetch(&self) -> Result<C, NoCredentials<E>> {
        self.first().await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{what}")]
    struct Why {
        what: &'static str,
        transient: bool,
    }

    impl FetchError for Why {
        fn is_transient(&self) -> bool {
            self.transient
        }
    }

    /// A source that answers as told and counts its fetches.
    struct Fixed {
        name: &'static str,
        answer: fn() -> Result<u32, Miss<Why>>,
        fetches: Arc<AtomicUsize>,
    }

    #[async_trait]
    impl Source<u32> for Fixed {
        type Error = Why;

        fn name(&self) -> String {
            self.name.to_string()
        }

        async fn fetch(&self) -> Result<u32, Miss<Why>> {
            self.fetches.fetch_add(1, Ordering::SeqCst);
            (self.answer)()
        }
    }

    fn absent() -> Result<u32, Miss<Why>> {
        Err(Miss::NotConfigured(Why {
            what: "not set",
            transient: false,
        }))
    }

    fn refused() -> Result<u32, Miss<Why>> {
        Err(Miss::Failed(Why {
            what: "HTTP 403",
            transient: false,
        }))
    }

    fn unreachable() -> Result<u32, Miss<Why>> {
        Err(Miss::Failed(Why {
            what: "connection refused",
            transient: true,
        }))
    }

    fn source(name: &'static str, answer: fn() -> Result<u32, Miss<Why>>) -> (Fixed, Arc<AtomicUsize>) {
        let fetches = Arc::new(AtomicUsize::new(0));
        let s = Fixed {
            name,
            answer,
            fetches: fetches.clone(),
        };
        (s, fetches)
    }

    #[tokio::test]
    async fn sources_are_tried_in_order_and_the_first_credential_wins() {
        let (a, a_fetches) = source("a", absent);
        let (b, _) = source("b", || Ok(2));
        let (c, c_fetches) = source("c", || Ok(3));
        let chain = Chain::new("no credentials").then(a).then(b).then(c);
        assert_eq!(chain.first().await.ok(), Some(2));
        assert_eq!(a_fetches.load(Ordering::SeqCst), 1, "the absent source was asked first");
        assert_eq!(
            c_fetches.load(Ordering::SeqCst),
            0,
            "nothing is asked after the first credential"
        );
    }

    #[tokio::test]
    async fn a_configured_source_that_fails_ends_the_search() {
        let (a, _) = source("a", absent);
        let (b, _) = source("b", refused);
        let (c, c_fetches) = source("c", || Ok(3));
        let chain = Chain::new("no credentials").then(a).then(b).then(c);
        let Err(e) = chain.first().await else {
            panic!("a failed source is not replaced by the next");
        };
        assert_eq!(c_fetches.load(Ordering::SeqCst), 0);
        assert_eq!(e.failure().map(|w| w.what), Some("HTTP 403"));
        assert!(!e.is_transient());
    }

    #[tokio::test]
    async fn the_error_names_every_source_tried_and_why() {
        let (a, _) = source("environment", absent);
        let (b, _) = source("shared files", absent);
        let (c, _) = source("instance metadata", unreachable);
        let chain = Chain::new("no test credentials").then(a).then(b).then(c);
        let Err(e) = chain.first().await else {
            panic!("nothing configured");
        };
        assert_eq!(
            e.to_string(),
            "no test credentials; tried environment: not set; shared files: not set; \
             instance metadata: connection refused"
        );
        let outcomes: Vec<Outcome> = e.tried.iter().map(|t| t.outcome).collect();
        assert_eq!(
            outcomes,
            [Outcome::NotConfigured, Outcome::NotConfigured, Outcome::Failed]
        );
        assert!(e.is_transient(), "the failure was a connection refused");
        // The cause is kept: the failed source, then its own error.
        let cause = std::error::Error::source(&e).and_then(std::error::Error::source);
        assert_eq!(
            cause.and_then(|c| c.downcast_ref::<Why>()).map(|w| w.what),
            Some("connection refused")
        );
    }

    #[tokio::test]
    async fn when_every_source_is_absent_nothing_failed() {
        let (a, _) = source("a", absent);
        let chain = Chain::new("none").then(a);
        let Err(e) = chain.first().await else {
            panic!("absent");
        };
        assert!(e.failure().is_none() && !e.is_transient());
        assert_eq!(e.to_string(), "none; tried a: not set");
        assert!(std::error::Error::source(&e).is_some(), "the last source passed over");
    }
}
