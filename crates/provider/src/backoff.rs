//! Retrying transient provider errors: exponential backoff with jitter and a cap.
//!
//! Jitter matters because several extdns replicas (or several zones of one) failing together would
//! otherwise retry in lock-step and hit a recovering backend at the same instant.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

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
}
