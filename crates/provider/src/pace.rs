//! Keeping a provider's requests under its backend's rate limit (Route53: 5 requests a second per
//! account): each request waits for its own slot, the slots a fixed interval apart, shared by every
//! caller of one [`Pacer`]. A burst is spread out rather than refused and retried.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// Request slots at most `per_second` a second.
#[derive(Debug)]
pub struct Pacer {
    spacing: Duration,
    /// The earliest instant the next request may leave.
    next: Mutex<Option<Instant>>,
}

impl Pacer {
    /// `per_second` must be positive and finite; anything else paces nothing.
    pub fn new(per_second: f64) -> Pacer {
        let spacing = if per_second.is_finite() && per_second > 0.0 {
            Duration::from_secs_f64(1.0 / per_second)
        } else {
            Duration::ZERO
        };
        Pacer {
            spacing,
            next: Mutex::new(None),
        }
    }

    /// Wait for the next free slot (at once when the last request left long enough ago).
    pub async fn wait(&self) {
        let at = {
            let mut next = self.next.lock().await;
            let now = Instant::now();
            let at = next.map_or(now, |n| n.max(now));
            *next = Some(at + self.spacing);
            at
        };
        tokio::time::sleep_until(at).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_leave_at_most_the_rate_apart() {
        let pacer = Pacer::new(5.0);
        let start = Instant::now();
        let mut left = Vec::new();
        for _ in 0..4 {
            pacer.wait().await;
            left.push(start.elapsed().as_millis());
        }
        assert_eq!(left, [0, 200, 400, 600]);
        // After a quiet second the next request leaves at once.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let before = Instant::now();
        pacer.wait().await;
        assert_eq!(before.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_the_slots() {
        let pacer = std::sync::Arc::new(Pacer::new(10.0));
        let start = Instant::now();
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let p = pacer.clone();
                tokio::spawn(async move {
                    p.wait().await;
                    start.elapsed().as_millis()
                })
            })
            .collect();
        let mut left = Vec::new();
        for t in tasks {
            left.push(t.await.unwrap_or(u128::MAX));
        }
        left.sort_unstable();
        assert_eq!(left, [0, 100, 200]);
    }

    #[test]
    fn a_rate_that_is_not_positive_paces_nothing() {
        assert_eq!(Pacer::new(0.0).spacing, Duration::ZERO);
        assert_eq!(Pacer::new(f64::NAN).spacing, Duration::ZERO);
    }
}
