//! The one place a provider asks for its credential: kept until a margin before it expires, refreshed once
//! for every concurrent caller, dropped when the API refuses it.

use std::time::{Duration, SystemTime};

use tokio::sync::Mutex;

use super::chain::{Fetch, NoCredentials};

/// What a cache keeps: a credential that may say when it stops working.
pub trait Credential: Clone + PartialEq + Send + Sync + 'static {
    /// When it stops working; `None` for one that does not expire (static keys).
    fn expires(&self) -> Option<SystemTime>;
}

/// Where the cache reads the time; tests pass a clock they move by hand.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// How long before its expiry a credential is replaced: `before` (the SDKs' five minutes), or a share of the
/// credential's lifetime when that is longer, and at most half its lifetime when asked, so a short-lived
/// token is still used for a while. The rules of the three clouds' SDKs are all of this form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Margin {
    before: Duration,
    at_least_life_over: Option<u32>,
    at_most_half_life: bool,
}

impl Margin {
    /// Exactly `before` ahead of expiry, whatever the lifetime: a credential that lives shorter is fetched
    /// anew at every use.
    pub const fn fixed(before: Duration) -> Margin {
        Margin {
            before,
            at_least_life_over: None,
            at_most_half_life: false,
        }
    }

    /// And at least a `n`th of the lifetime, when that is longer than `before`.
    pub const fn at_least_life_over(self, n: u32) -> Margin {
        Margin {
            at_least_life_over: Some(n),
            ..self
        }
    }

    /// And never more than half the lifetime.
    pub const fn at_most_half_life(self) -> Margin {
        Margin {
            at_most_half_life: true,
            ..self
        }
    }

    /// The margin of a credential that lives `lifetime` from now.
    pub fn of(&self, lifetime: Duration) -> Duration {
        let mut margin = self.before;
        if let Some(n) = self.at_least_life_over.filter(|n| *n > 0) {
            margin = margin.max(lifetime / n);
        }
        if self.at_most_half_life {
            margin = margin.min(lifetime / 2);
        }
        margin
    }
}

/// A credential kept, and when to replace it.
struct Kept<C> {
    credential: C,
    /// `None`: it does not expire.
    refresh_at: Option<SystemTime>,
}

/// After a failed refresh, how soon the next call tries again (at most half the kept credential's time left).
const RETRY_FAILED_REFRESH: Duration = Duration::from_secs(30);

/// Fetches a credential through a chain and keeps it.
pub struct CredentialCache<C, E> {
    fetch: Box<dyn Fetch<C, E>>,
    margin: Margin,
    clock: Box<dyn Clock>,
    /// Held across a refresh: concurrent callers wait for the one fetch in flight and share its credential.
    current: Mutex<Option<Kept<C>>>,
}

impl<C, E> std::fmt::Debug for CredentialCache<C, E> {
    /// Never prints the credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialCache")
            .field("margin", &self.margin)
            .finish_non_exhaustive()
    }
}

impl<C: Credential, E: std::fmt::Display> CredentialCache<C, E> {
    /// A cache over `fetch` (a [`super::Chain`], or a step around one), replacing credentials `margin`
    /// before they expire.
    pub fn new(fetch: impl Fetch<C, E> + 'static, margin: Margin) -> CredentialCache<C, E> {
        CredentialCache {
            fetch: Box::new(fetch),
            margin,
            clock: Box::new(SystemClock),
            current: Mutex::new(None),
        }
    }

    /// The same cache reading the time from `clock`.
    pub fn with_clock(self, clock: impl Clock + 'static) -> CredentialCache<C, E> {
        CredentialCache {
            clock: Box::new(clock),
            ..self
        }
    }

    /// A valid credential: the kept one, or a new one once it is within the margin of expiring. A failed
    /// refresh keeps using a credential that has not expired yet.
    pub async fn get(&self) -> Result<C, NoCredentials<E>> {
        let mut current = self.current.lock().await;
        let now = self.clock.now();
        if let Some(kept) = current.as_ref()
            && kept.refresh_at.is_none_or(|at| now < at)
        {
            return Ok(kept.credential.clone());
        }
        match self.fetch.fetch().await {
            Ok(fresh) => {
                let now = self.clock.now();
                let refresh_at = fresh.expires().map(|expires| {
                    let lifetime = expires.duration_since(now).unwrap_or_default();
                    expires.checked_sub(self.margin.of(lifetime)).unwrap_or(now)
                });
                tracing::debug!(expires = ?fresh.expires(), ?refresh_at, "credential kept");
                *current = Some(Kept {
                    credential: fresh.clone(),
                    refresh_at,
                });
                Ok(fresh)
            }
            Err(e) => {
                // Read again: the failed fetch may have taken long enough for the kept one to expire.
                let now = self.clock.now();
                let left = current
                    .as_ref()
                    .and_then(|kept| kept.credential.expires())
                    .and_then(|at| at.duration_since(now).ok())
                    .filter(|left| !left.is_zero());
                match (current.as_mut(), left) {
                    (Some(kept), Some(left)) => {
                        // Try again in a while, not at every call: callers would all queue behind a fetch
                        // that keeps failing while a valid credential is in hand.
                        kept.refresh_at = Some(now + (left / 2).min(RETRY_FAILED_REFRESH));
                        tracing::warn!(error = %e, "cannot refresh the credential; using the current one until it expires");
                        Ok(kept.credential.clone())
                    }
                    _ => Err(e),
                }
            }
        }
    }

    /// `call` with a valid credential. When its outcome says the API refused the credential (`refused`: a
    /// 401, an expired token), the credential is dropped and `call` runs once more with a fresh one: a
    /// token revoked or expired early is mended at once, rather than failing the call as an
    /// authentication error until the next sync. A second refusal is returned as it is (the configuration
    /// is at fault then), its credential dropped too.
    pub async fn call<O, Fut>(
        &self,
        call: impl Fn(C) -> Fut,
        refused: impl Fn(&O) -> bool,
    ) -> Result<O, NoCredentials<E>>
    where
        Fut: std::future::Future<Output = O>,
    {
        let credential = self.get().await?;
        let outcome = call(credential.clone()).await;
        if !refused(&outcome) {
            return Ok(outcome);
        }
        self.refused(&credential).await;
        tracing::debug!("credential refused; calling once more with a fresh one");
        let fresh = self.get().await?;
        let outcome = call(fresh.clone()).await;
        if refused(&outcome) {
            self.refused(&fresh).await;
        }
        Ok(outcome)
    }

    /// The API refused `credential` (HTTP 401): it is dropped, unless another caller has replaced it
    /// already, so the next call fetches anew.
    pub async fn refused(&self, credential: &C) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|kept| kept.credential == *credential) {
            tracing::debug!("credential refused; dropped");
            *current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::Mutex as StdMutex;
    use std::sync::atomic::{AtomicU64, Ordering};

    use async_trait::async_trait;

    use super::*;
    use crate::credentials::chain::Tried;

    const T0: Duration = Duration::from_secs(1_000_000);

    /// A clock at `T0` plus the seconds it was moved by.
    #[derive(Clone, Default)]
    struct HandClock(Arc<AtomicU64>);

    impl HandClock {
        fn advance(&self, secs: u64) {
            self.0.fetch_add(secs, Ordering::SeqCst);
        }
    }

    impl Clock for HandClock {
        fn now(&self) -> SystemTime {
            SystemTime::UNIX_EPOCH + T0 + Duration::from_secs(self.0.load(Ordering::SeqCst))
        }
    }

    #[derive(Debug, Clone, PartialEq)]
    struct Token {
        n: u64,
        expires: Option<SystemTime>,
    }

    impl Credential for Token {
        fn expires(&self) -> Option<SystemTime> {
            self.expires
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("the endpoint is down")]
    struct Down;

    /// Issues token 1, 2, ... lasting `lifetime` on the clock (or forever), or fails while `down`.
    #[derive(Clone)]
    struct Issuer {
        clock: HandClock,
        lifetime: Option<u64>,
        issued: Arc<AtomicU64>,
        down: Arc<StdMutex<bool>>,
    }

    impl Issuer {
        fn new(clock: &HandClock, lifetime: Option<u64>) -> Issuer {
            Issuer {
                clock: clock.clone(),
                lifetime,
                issued: Arc::default(),
                down: Arc::default(),
            }
        }

        fn issued(&self) -> u64 {
            self.issued.load(Ordering::SeqCst)
        }

        fn set_down(&self, down: bool) {
            *self.down.lock().unwrap_or_else(|p| p.into_inner()) = down;
        }
    }

    #[async_trait]
    impl Fetch<Token, Down> for Issuer {
        async fn fetch(&self) -> Result<Token, NoCredentials<Down>> {
            // Let concurrent callers run up to the cache's lock while this fetch is in flight.
            tokio::task::yield_now().await;
            if *self.down.lock().unwrap_or_else(|p| p.into_inner()) {
                return Err(NoCredentials {
                    headline: "no test credentials",
                    tried: vec![Tried::failed("issuer", Down)],
                });
            }
            let n = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
            let expires = self.lifetime.map(|l| self.clock.now() + Duration::from_secs(l));
            Ok(Token { n, expires })
        }
    }

    fn cache(issuer: &Issuer, margin: Margin) -> CredentialCache<Token, Down> {
        CredentialCache::new(issuer.clone(), margin).with_clock(issuer.clock.clone())
    }

    /// A hand clock, an issuer of credentials lasting `lifetime` on it, and a cache over the issuer that
    /// replaces a credential five minutes before it expires.
    fn five_minutes_early(lifetime: Option<u64>) -> (HandClock, Issuer, CredentialCache<Token, Down>) {
        let clock = HandClock::default();
        let issuer = Issuer::new(&clock, lifetime);
        let cache = cache(&issuer, Margin::fixed(Duration::from_secs(300)));
        (clock, issuer, cache)
    }

    async fn n(cache: &CredentialCache<Token, Down>) -> Option<u64> {
        cache.get().await.ok().map(|t| t.n)
    }

    /// A call the API answers 401 with the first token is made once more with a fresh one and succeeds;
    /// one refused whatever the token is made twice, and the refusal returned.
    #[tokio::test]
    async fn a_refused_credential_is_replaced_and_the_call_made_once_more() {
        let issuer = Issuer::new(&HandClock::default(), None);
        let cache = cache(&issuer, Margin::fixed(Duration::ZERO));
        let calls = AtomicU64::new(0);
        let first_refused = |t: Token| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { if t.n == 1 { 401 } else { 200 } }
        };
        let outcome = cache.call(first_refused, |status| *status == 401).await.ok();
        assert_eq!((outcome, calls.load(Ordering::SeqCst)), (Some(200), 2));
        assert_eq!(n(&cache).await, Some(2), "the fresh token is kept");

        calls.store(0, Ordering::SeqCst);
        let always_refused = |_: Token| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { 401 }
        };
        let outcome = cache.call(always_refused, |status| *status == 401).await.ok();
        assert_eq!(
            (outcome, calls.load(Ordering::SeqCst)),
            (Some(401), 2),
            "once more, not again and again"
        );

        calls.store(0, Ordering::SeqCst);
        let accepted = |_: Token| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { 200 }
        };
        assert_eq!(cache.call(accepted, |status| *status == 401).await.ok(), Some(200));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_credential_is_kept_until_the_margin_then_replaced_before_it_expires() {
        let (clock, issuer, cache) = five_minutes_early(Some(3600));
        assert_eq!(n(&cache).await, Some(1));
        clock.advance(3600 - 301);
        assert_eq!(n(&cache).await, Some(1), "kept until five minutes before expiry");
        clock.advance(2);
        assert_eq!(
            n(&cache).await,
            Some(2),
            "replaced within the margin, before it expired"
        );
        assert_eq!(issuer.issued(), 2);
    }

    #[tokio::test]
    async fn a_credential_shorter_than_a_fixed_margin_is_fetched_at_every_use() {
        let (_, _, cache) = five_minutes_early(Some(60));
        assert_eq!(n(&cache).await, Some(1));
        assert_eq!(n(&cache).await, Some(2));
    }

    #[tokio::test]
    async fn a_credential_without_expiry_is_kept_for_good() {
        let (clock, _, cache) = five_minutes_early(None);
        assert_eq!(n(&cache).await, Some(1));
        clock.advance(365 * 86_400);
        assert_eq!(n(&cache).await, Some(1));
    }

    #[test]
    fn margins_follow_the_lifetime_as_asked() {
        let five = Duration::from_secs(300);
        let secs = |m: Margin, life: u64| m.of(Duration::from_secs(life)).as_secs();
        let google = Margin::fixed(five).at_least_life_over(4).at_most_half_life();
        assert_eq!(secs(google, 3600), 900, "a quarter of an hour's token");
        assert_eq!(secs(google, 60), 30, "half of a short token's life");
        assert_eq!(secs(google, 1200), 300, "five minutes when a quarter is less");
        let azure = Margin::fixed(five).at_most_half_life();
        assert_eq!(secs(azure, 86_400), 300);
        assert_eq!(secs(azure, 2), 1);
        assert_eq!(secs(Margin::fixed(five), 60), 300, "fixed, whatever the lifetime");
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_refresh() {
        let (_, issuer, cache) = five_minutes_early(Some(3600));
        let (a, b, c) = tokio::join!(n(&cache), n(&cache), n(&cache));
        assert_eq!((a, b, c), (Some(1), Some(1), Some(1)));
        assert_eq!(issuer.issued(), 1, "one fetch for three callers");
    }

    #[tokio::test]
    async fn a_refused_credential_is_dropped_and_the_next_call_fetches_anew() {
        let (_, issuer, cache) = five_minutes_early(Some(3600));
        let first = cache.get().await.ok();
        let Some(first) = first else {
            panic!("a token");
        };
        cache.refused(&first).await;
        assert_eq!(n(&cache).await, Some(2), "fetched again after the 401");
        // A late 401 for the token already replaced drops nothing.
        cache.refused(&first).await;
        assert_eq!(n(&cache).await, Some(2));
        assert_eq!(issuer.issued(), 2);
    }

    #[tokio::test]
    async fn a_failed_refresh_keeps_the_current_credential_until_it_expires() {
        let (clock, issuer, cache) = five_minutes_early(Some(3600));
        assert_eq!(n(&cache).await, Some(1));
        issuer.set_down(true);
        clock.advance(3600 - 100);
        assert_eq!(
            n(&cache).await,
            Some(1),
            "within the margin, the refresh failed: still valid"
        );
        clock.advance(100);
        let e = cache.get().await.err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("no test credentials; tried issuer: the endpoint is down")
        );
        issuer.set_down(false);
        assert_eq!(n(&cache).await, Some(2));
    }
}
