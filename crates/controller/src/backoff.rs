//! How long the loop waits before retrying a failed sync.
//!
//! Doubling from one second means a blip costs a second, while a provider that is down is asked at most
//! once per interval. Jitter spreads replicas of many clusters that lost the same provider at once.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::Duration;

const BASE: Duration = Duration::from_secs(1);

/// The wait after `failures` consecutive failed syncs (1 for the first): `BASE * 2^(failures-1)`, capped at
/// `cap`, then scaled by a random factor in [0.5, 1.0].
pub(crate) fn retry_delay(failures: u32, cap: Duration) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    let raw = BASE.saturating_mul(1u32 << exp).min(cap);
    raw.mul_f64(0.5 + 0.5 * unit_random())
}

/// A number in [0, 1). `RandomState` is seeded from the OS per instance, which is all the randomness jitter
/// needs, without a dependency.
fn unit_random() -> f64 {
    let bits = RandomState::new().hash_one(0u8);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_retry_waits_at_most_one_second() {
        for _ in 0..50 {
            let d = retry_delay(1, Duration::from_secs(60));
            assert!(d >= Duration::from_millis(500) && d <= Duration::from_secs(1), "{d:?}");
        }
    }

    #[test]
    fn retries_double_until_the_cap() {
        for _ in 0..50 {
            let d = retry_delay(4, Duration::from_secs(60));
            assert!(d >= Duration::from_secs(4) && d <= Duration::from_secs(8), "{d:?}");
            let capped = retry_delay(30, Duration::from_secs(60));
            assert!(
                capped >= Duration::from_secs(30) && capped <= Duration::from_secs(60),
                "{capped:?}"
            );
        }
    }

    #[test]
    fn jitter_varies_the_delay() {
        let delays: std::collections::BTreeSet<_> = (0..20).map(|_| retry_delay(6, Duration::from_secs(60))).collect();
        assert!(delays.len() > 1);
    }
}
