//! Retrying transient provider errors: exponential backoff with jitter and a cap, and a token-bucket rate
//! limiter for APIs with request quotas.
//!
//! Jitter matters because several extdns replicas (or several zones of one) failing together would
//! otherwise retry in lock-step and hit a recovering backend at the same instant.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::ProviderError;

/// An exponential backoff: `initial * multiplier^attempt`, capped at `max`, each delay drawn uniformly from
/// `[(1 - jitter) * d, d]` ("equal jitter" when `jitter` is 0.5, "full jitter" at 1.0).
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
    pub multiplier: f64,
    /// Fraction of each delay that is random, 0.0..=1.0.
    pub jitter: f64,
    /// Attempts in total, the first included; at least 1.
    pub max_attempts: u32,
}

impl Default for Backoff {
    /// 500 ms, doubling, capped at 30 s, half jittered, 5 attempts: about a minute of retries at most, well
    /// inside a default one-minute sync interval's next run.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            multiplier: 2.0,
            jitter: 0.5,
            max_attempts: 5,
        }
    }
}

impl Backoff {
    /// The delay before retry number `attempt` (0 = before the second try), with `unit` in `[0, 1)` as the
    /// random draw; pure so it can be tested.
    pub fn delay_with(&self, attempt: u32, unit: f64) -> Duration {
        let base = self.initial.as_secs_f64() * self.multiplier.max(1.0).powi(attempt.min(64) as i32);
        let capped = base.min(self.max.as_secs_f64());
        let jitter = self.jitter.clamp(0.0, 1.0);
        let secs = capped * (1.0 - jitter * unit.clamp(0.0, 1.0));
        Duration::from_secs_f64(secs.max(0.0))
    }

    /// The delay before retry number `attempt`, with a random draw.
    pub fn delay(&self, attempt: u32) -> Duration {
        self.delay_with(attempt, random_unit())
    }
}

/// A random number in `[0, 1)` without a random-number crate: the standard library seeds every
/// `RandomState` from the OS, which is plenty for jitter.
fn random_unit() -> f64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(0x9e37_79b9_7f4a_7c15);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Run `op` until it succeeds, fails with an error that is not transient, or `backoff.max_attempts` are
/// used up; sleeps between attempts. `what` names the operation in the retry warnings.
pub async fn retry<T, F, Fut>(backoff: &Backoff, what: &str, mut op: F) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let attempts = backoff.max_attempts.max(1);
    let mut attempt = 0;
    loop {
        match op().await {
            Err(e) if e.is_transient() && attempt + 1 < attempts => {
                let wait = backoff.delay(attempt);
                tracing::warn!(operation = what, attempt = attempt + 1, error = %e, wait = ?wait, "retrying");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// A token bucket: up to `burst` requests at once, refilled at `per_second`. Providers whose API has a
/// request quota call [`RateLimiter::acquire`] before each request.
#[derive(Debug)]
pub struct RateLimiter {
    per_second: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl RateLimiter {
    /// `per_second` must be positive (non-positive values mean "no limit"); `burst` is at least 1.
    pub fn new(per_second: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        RateLimiter {
            per_second,
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// Wait until a request may be sent.
    pub async fn acquire(&self) {
        if self.per_second <= 0.0 {
            return;
        }
        let wait = {
            let mut s = self.state.lock().await;
            let now = Instant::now();
            let refill = now.duration_since(s.1).as_secs_f64() * self.per_second;
            s.0 = (s.0 + refill).min(self.burst);
            s.1 = now;
            s.0 -= 1.0;
            if s.0 >= 0.0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(-s.0 / self.per_second)
            }
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_jitter() -> Backoff {
        Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
            jitter: 0.0,
            ..Backoff::default()
        }
    }

    #[test]
    fn backoff_doubles_each_attempt() {
        let b = no_jitter();
        assert_eq!(b.delay_with(0, 0.5), Duration::from_millis(100));
        assert_eq!(b.delay_with(1, 0.5), Duration::from_millis(200));
        assert_eq!(b.delay_with(2, 0.5), Duration::from_millis(400));
    }

    #[test]
    fn backoff_is_capped() {
        assert_eq!(no_jitter().delay_with(10, 0.0), Duration::from_secs(1));
        assert_eq!(no_jitter().delay_with(u32::MAX, 0.0), Duration::from_secs(1));
    }

    #[test]
    fn jitter_stays_within_its_fraction_of_the_delay() {
        let b = Backoff {
            jitter: 0.5,
            ..no_jitter()
        };
        assert_eq!(b.delay_with(0, 0.0), Duration::from_millis(100));
        assert_eq!(b.delay_with(0, 1.0), Duration::from_millis(50));
        for _ in 0..100 {
            let d = b.delay(0);
            assert!(
                d >= Duration::from_millis(50) && d <= Duration::from_millis(100),
                "{d:?}"
            );
        }
    }

    #[test]
    fn random_draws_differ() {
        let draws: std::collections::BTreeSet<u64> = (0..20).map(|_| random_unit().to_bits()).collect();
        assert!(draws.len() > 1);
        assert!((0..100).map(|_| random_unit()).all(|u| (0.0..1.0).contains(&u)));
    }

    fn fast() -> Backoff {
        Backoff {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(2),
            max_attempts: 3,
            ..Backoff::default()
        }
    }

    #[tokio::test]
    async fn retry_retries_transient_errors_until_success() {
        let mut calls = 0;
        let r = retry(&fast(), "test", || {
            calls += 1;
            let result = if calls < 3 {
                Err(ProviderError::transient("busy"))
            } else {
                Ok(calls)
            };
            std::future::ready(result)
        })
        .await;
        assert_eq!(r.ok(), Some(3));
    }

    #[tokio::test]
    async fn retry_gives_up_after_max_attempts() {
        let mut calls = 0;
        let r: Result<(), _> = retry(&fast(), "test", || {
            calls += 1;
            std::future::ready(Err(ProviderError::transient("busy")))
        })
        .await;
        assert!(matches!(r, Err(ProviderError::Transient { .. })));
        assert_eq!(calls, 3);
    }

    #[tokio::test]
    async fn retry_does_not_retry_permanent_errors() {
        let mut calls = 0;
        let r: Result<(), _> = retry(&fast(), "test", || {
            calls += 1;
            std::future::ready(Err(ProviderError::Auth("bad key".into())))
        })
        .await;
        assert!(matches!(r, Err(ProviderError::Auth(_))));
        assert_eq!(calls, 1);
    }

    #[tokio::test]
    async fn rate_limiter_allows_a_burst_then_spaces_requests() {
        let limiter = RateLimiter::new(100.0, 3);
        let start = Instant::now();
        for _ in 0..3 {
            limiter.acquire().await;
        }
        assert!(start.elapsed() < Duration::from_millis(10));
        for _ in 0..3 {
            limiter.acquire().await;
        }
        // Three more at 100/s need about 30 ms.
        assert!(start.elapsed() >= Duration::from_millis(25), "{:?}", start.elapsed());
    }
}
