//! Retrying transient provider errors: exponential backoff with jitter and a cap, and the one retry loop
//! every provider runs its calls through ([`Backoff::retry`]), which waits as long as the server asks
//! (`Retry-After`) when it says.
//!
//! A throttled answer is not an attempt: the backend is telling us when to come back, not that the call
//! failed. Counting it against the retries made a hard throttle (Route53 at one request every ten seconds)
//! fail every sync after three quick tries, the sync start over with its reads, and the throttle last for
//! good. So throttled answers are waited out for as long as the backend asks, bounded only by
//! [`Backoff::throttled_for`] (and by the caller dropping the call), and only other failures spend the
//! attempts.
//!
//! Jitter matters because several extdns replicas (or several zones of one) failing together would
//! otherwise retry in lock-step and hit a recovering backend at the same instant.

use std::collections::hash_map::RandomState;
use std::fmt::Display;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use tokio::time::Instant;

use crate::failure::{FailureKind, Retry};
use crate::pace::MAX_HOLD;

/// How long a call keeps waiting out throttled answers by default ([`Backoff::throttled_for`]).
pub const DEFAULT_THROTTLED_FOR: Duration = Duration::from_secs(600);

/// An exponential backoff: `initial * multiplier^attempt`, capped at `max`, each delay drawn uniformly from
/// `[(1 - jitter) * d, d]` ("equal jitter" when `jitter` is 0.5, "full jitter" at 1.0).
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    /// The delay before the first retry.
    pub initial: Duration,
    /// Upper bound of any one delay, before jitter.
    pub max: Duration,
    /// Growth factor per attempt; values below 1.0 count as 1.0 (a constant delay).
    pub multiplier: f64,
    /// Fraction of each delay that is random, 0.0..=1.0.
    pub jitter: f64,
    /// Attempts in total, the first included; at least 1. Throttled answers are not counted.
    pub max_attempts: u32,
    /// How long one call keeps waiting out throttled answers, counted from the first: past it the throttle
    /// is the call's error (transient, so the next sync tries again). The bound that keeps a backend
    /// throttling for good from holding a sync forever.
    pub throttled_for: Duration,
}

impl Default for Backoff {
    /// 500 ms, doubling, capped at 30 s, half jittered, 5 attempts: about a minute of retries at most, well
    /// inside a default one-minute sync interval's next run. Throttles are waited out for up to 10
    /// minutes: Cloudflare blocks a token for 5 minutes past its limit, and the call must outlast that.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            multiplier: 2.0,
            jitter: 0.5,
            max_attempts: 5,
            throttled_for: DEFAULT_THROTTLED_FOR,
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

impl Backoff {
    /// Call `attempt` until it succeeds, `classify` names its error's kind as not transient, or
    /// `max_attempts` calls have failed other than throttled; the last error is returned as it is. A
    /// throttled call is no attempt: it waits as long as the server asked (`Retry-After`, at most
    /// [`MAX_HOLD`], as the pacer holds), or, when it did not say, a backoff delay growing with each
    /// throttle, and is sent again, until it has been throttled for [`Backoff::throttled_for`]. Any other
    /// transient failure waits the next backoff delay ([`FailureKind::retry`]). `what` names the call in
    /// the log line of each retry.
    pub async fn retry<T, E, Fut>(
        &self,
        what: &str,
        mut attempt: impl FnMut() -> Fut,
        classify: impl Fn(&E) -> FailureKind,
    ) -> Result<T, E>
    where
        E: Display,
        Fut: Future<Output = Result<T, E>>,
    {
        let attempts = self.max_attempts.max(1);
        let mut made = 0;
        let mut throttles = Throttles::default();
        loop {
            let error = match attempt().await {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            let kind = classify(&error);
            let wait = if let FailureKind::Throttled { retry_after } = kind {
                match throttles.next_wait(self, retry_after) {
                    Some(wait) => wait,
                    None => {
                        tracing::warn!(what, %error, throttled = throttles.count, "throttled for too long; giving up");
                        return Err(error);
                    }
                }
            } else {
                made += 1;
                match kind.retry() {
                    Retry::No => return Err(error),
                    _ if made >= attempts => return Err(error),
                    Retry::Backoff => self.delay(made - 1),
                    Retry::After(asked) => asked.min(self.max),
                }
            };
            tracing::info!(what, %error, attempt = made, throttled = throttles.count, wait_ms = wait.as_millis() as u64, "call failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }
}

/// The throttled answers one call has met: how many, and since when.
#[derive(Debug, Default)]
struct Throttles {
    count: u32,
    since: Option<Instant>,
}

impl Throttles {
    /// The wait before sending again after one more throttled answer, or `None` once waiting it would
    /// pass `backoff.throttled_for` since the first: the server's `retry_after` (at most [`MAX_HOLD`], the
    /// longest the pacer holds the account for one answer), else the backoff's delay for this throttle's
    /// number, so a backend that never says how long is asked less and less often.
    fn next_wait(&mut self, backoff: &Backoff, retry_after: Option<Duration>) -> Option<Duration> {
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        let wait = match retry_after {
            // A `Retry-After: 0` (or a few milliseconds) repeated would resend at once for as long as the
            // throttle lasts: never less than the backoff's first delay.
            Some(asked) => asked.clamp(backoff.initial.min(MAX_HOLD), MAX_HOLD),
            None => backoff.delay(self.count),
        };
        self.count = self.count.saturating_add(1);
        (now.duration_since(since) + wait <= backoff.throttled_for).then_some(wait)
    }
}

/// A random number in `[0, 1)` without a random-number crate: the standard library seeds every
/// `RandomState` from the OS, which is plenty for jitter.
pub fn random_unit() -> f64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(0x9e37_79b9_7f4a_7c15);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
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

    /// [`no_jitter`] with `n` attempts.
    fn attempts(n: u32) -> Backoff {
        Backoff {
            max_attempts: n,
            ..no_jitter()
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

    /// The error of the `n`th call (from 0) and its kind.
    #[derive(Debug)]
    struct Failure(usize, FailureKind);

    impl std::fmt::Display for Failure {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "failure {}", self.0)
        }
    }

    /// Retry a call that fails `failures` times with `retry`, then succeeds: the outcome (the index of the
    /// error returned), the calls made and the (paused) time waited.
    async fn run(b: &Backoff, failures: usize, retry: FailureKind) -> (Result<(), usize>, usize, Duration) {
        run_kinds(b, |call| (call < failures).then_some(retry)).await
    }

    /// As [`run`], the call numbered `n` (from 0) failing with `kind(n)`, succeeding when it is `None`.
    async fn run_kinds(
        b: &Backoff,
        kind: impl Fn(usize) -> Option<FailureKind>,
    ) -> (Result<(), usize>, usize, Duration) {
        let start = tokio::time::Instant::now();
        let mut calls = 0;
        let r = b
            .retry(
                "test call",
                || {
                    calls += 1;
                    std::future::ready(match kind(calls - 1) {
                        Some(k) => Err(Failure(calls - 1, k)),
                        None => Ok(()),
                    })
                },
                |e: &Failure| e.1,
            )
            .await;
        (r.map_err(|e| e.0), calls, start.elapsed())
    }

    fn throttled(asked: Duration) -> FailureKind {
        FailureKind::Throttled {
            retry_after: Some(asked),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retry_waits_as_long_as_retry_after_asks() {
        let b = attempts(3);
        let (r, n, waited) = run(&b, 2, throttled(Duration::from_millis(700))).await;
        assert_eq!((r, n), (Ok(()), 3));
        assert_eq!(waited, Duration::from_millis(1400), "two waits of the asked 700 ms");
        // A longer ask than the backoff's cap is still waited whole, as the pacer holds the account for it.
        let (r, _, waited) = run(&b, 1, throttled(Duration::from_secs(120))).await;
        assert_eq!((r, waited), (Ok(()), Duration::from_secs(120)));
        // A bogus one is capped where the pacer caps its hold.
        let (r, _, waited) = run(&b, 1, throttled(Duration::from_secs(86_400))).await;
        assert_eq!((r, waited), (Ok(()), MAX_HOLD));
    }

    #[tokio::test(start_paused = true)]
    async fn throttled_answers_are_not_attempts() {
        // Two attempts, and a backend throttling the next ten calls: all ten are waited out.
        let b = attempts(2);
        let (r, n, waited) = run(&b, 10, throttled(Duration::from_secs(10))).await;
        assert_eq!((r, n), (Ok(()), 11));
        assert_eq!(waited, Duration::from_secs(100));
        // Without a Retry-After (Route53): the backoff's delays, growing with each throttle to its cap.
        let (r, n, waited) = run(&b, 6, FailureKind::Throttled { retry_after: None }).await;
        assert_eq!((r, n), (Ok(()), 7));
        assert_eq!(waited, Duration::from_millis(100 + 200 + 400 + 800 + 1000 + 1000));
    }

    #[tokio::test(start_paused = true)]
    async fn throttles_leave_the_attempts_to_the_other_failures() {
        let b = attempts(2);
        // Throttled, transient, throttled, transient: the second transient failure is the last attempt.
        let kinds = [
            throttled(Duration::from_secs(1)),
            FailureKind::Transient,
            throttled(Duration::from_secs(1)),
            FailureKind::Transient,
        ];
        let (r, calls, _) = run_kinds(&b, |call| kinds.get(call).copied()).await;
        assert_eq!((r, calls), (Err(3), 4));
    }

    #[tokio::test(start_paused = true)]
    async fn a_throttle_that_never_ends_is_given_up_after_throttled_for() {
        let b = Backoff {
            throttled_for: Duration::from_secs(60),
            ..no_jitter()
        };
        let (r, n, waited) = run(&b, usize::MAX, throttled(Duration::from_secs(25))).await;
        assert_eq!((r, n), (Err(2), 3), "a third wait of 25 s would pass the minute");
        assert_eq!(waited, Duration::from_secs(50));
        let (r, n, waited) = run(&b, usize::MAX, FailureKind::Throttled { retry_after: None }).await;
        assert!(r.is_err());
        assert!(waited <= Duration::from_secs(60), "{waited:?}");
        assert!(n > 50, "asked again at the capped delay of 1 s: {n} calls");
    }

    #[tokio::test(start_paused = true)]
    async fn retry_backs_off_then_gives_up_with_the_last_error() {
        let b = attempts(3);
        let (r, n, waited) = run(&b, 10, FailureKind::Transient).await;
        assert_eq!((r, n), (Err(2), 3));
        assert_eq!(
            waited,
            Duration::from_millis(100 + 200),
            "no wait after the last attempt"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_final_error_is_not_retried() {
        let (r, n, waited) = run(&no_jitter(), 10, FailureKind::Refused).await;
        assert_eq!((r, n, waited), (Err(0), 1, Duration::ZERO));
        let once = Backoff {
            max_attempts: 0,
            ..no_jitter()
        };
        let (_, n, _) = run(&once, 10, FailureKind::Transient).await;
        assert_eq!(n, 1, "zero attempts still makes the call once");
    }
}
