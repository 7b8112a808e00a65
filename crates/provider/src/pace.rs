//! Keeping a provider's requests under what its backend takes, whatever the rate of changes: Route53's 5
//! requests a second per account, Cloudflare's 1,200 per 5 minutes, and the write rate a user sets for any
//! provider (`--provider-write-rate`). Each request waits for its own slot before it leaves, so a burst is
//! spread out rather than refused and retried, and the limit holds per request: an apply that splits into
//! several batches counts each. The controller writes as soon as a change is evaluated; this is what stops
//! a busy cluster from outrunning the provider (changes that arrive meanwhile join the next write).
//!
//! A cloud counts its limit per account, so a cloud provider's API limit is paced by its account's pacer
//! from [`crate::budget::PacerPool`], shared by every pipeline of the account, and only the write rate a
//! pipeline sets for itself by a pacer of its own ([`Pacer::write_within`]).

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::failure::FailureKind;

/// At most `requests` requests in any `window`, counted at the instants they leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    requests: NonZeroU32,
    window: Duration,
}

impl Rate {
    /// At most `requests` in any `window`.
    pub const fn new(requests: NonZeroU32, window: Duration) -> Rate {
        Rate { requests, window }
    }

    /// One request every `1 / per_second` seconds (evenly spaced, no burst); `None` for a rate that is not
    /// positive and finite (no limit).
    pub fn per_second(per_second: f64) -> Option<Rate> {
        (per_second.is_finite() && per_second > 0.0).then(|| Rate {
            requests: NonZeroU32::MIN,
            window: Duration::from_secs_f64(1.0 / per_second),
        })
    }

    /// How many requests it allows in `window` at most.
    pub fn requests(&self) -> u32 {
        self.requests.get()
    }

    /// The span the requests are counted over.
    pub fn window(&self) -> Duration {
        self.window
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} requests per {:?}", self.requests, self.window)
    }
}

/// The instants the last requests under one [`Rate`] left, at most `requests` of them, oldest first.
#[derive(Debug, Default)]
struct Slots(VecDeque<Instant>);

impl Slots {
    /// The earliest instant the next request may leave under `rate`.
    fn free_at(&self, rate: Rate) -> Option<Instant> {
        let n = rate.requests.get() as usize;
        (self.0.len() >= n).then(|| self.0.front().map(|oldest| *oldest + rate.window))?
    }

    fn take(&mut self, rate: Rate, at: Instant) {
        self.0.push_back(at);
        while self.0.len() > rate.requests.get() as usize {
            self.0.pop_front();
        }
    }
}

/// The longest one throttled answer's `Retry-After` holds every request of a provider.
pub const MAX_HOLD: Duration = Duration::from_secs(300);

/// The slots of one provider's requests, shared by every caller: `every` limits all its requests (the
/// backend's API limit, which counts reads too), `writes` its write requests alone. A write takes a slot
/// under both at once, so both limits hold at the instants requests leave.
#[derive(Debug)]
pub struct Pacer {
    every: Option<Rate>,
    writes: Option<Rate>,
    /// The slots of every request. Waiters queue on it in order (tokio's mutex is fair).
    every_slots: Mutex<Slots>,
    /// The slots of write requests, its own lock: a write waiting for a write slot does not hold up the
    /// reads, which need only an `every` slot.
    write_slots: Mutex<Slots>,
    /// No request leaves before this: a throttled answer asked the whole provider (account) to wait. A
    /// plain lock, never held across a wait, so a throttle reaches the requests already queued at once; a
    /// waiter re-reads it after each sleep and never clears it, so a cancelled waiter cannot drop it.
    held_until: std::sync::Mutex<Option<Instant>>,
}

impl Pacer {
    /// `every` limits all requests, `writes` write requests; `None` is no limit.
    pub fn new(every: Option<Rate>, writes: Option<Rate>) -> Pacer {
        Pacer {
            every,
            writes,
            every_slots: Mutex::new(Slots::default()),
            write_slots: Mutex::new(Slots::default()),
            held_until: std::sync::Mutex::new(None),
        }
    }

    /// No limit: every request leaves at once.
    pub fn unlimited() -> Pacer {
        Pacer::new(None, None)
    }

    /// The limit of every request.
    pub fn every(&self) -> Option<Rate> {
        self.every
    }

    /// The limit of write requests.
    pub fn writes(&self) -> Option<Rate> {
        self.writes
    }

    /// Wait for the next free slot of any request (a read).
    pub async fn request(&self) {
        self.wait(false).await;
    }

    /// Wait for the next free slot of a write request.
    pub async fn write(&self) {
        self.wait(true).await;
    }

    /// Tell the pacer how a call failed: when the backend throttled it and said how long to wait, no
    /// request of this provider leaves before then (the other callers' requests would only be throttled
    /// too). Any other kind leaves the pace as it is.
    pub async fn hold_off(&self, kind: FailureKind) {
        let FailureKind::Throttled {
            retry_after: Some(asked),
        } = kind
        else {
            return;
        };
        // Capped: the header is the server's, and a bogus one must neither stop the provider for good nor
        // overflow the clock.
        let Some(until) = Instant::now().checked_add(asked.min(MAX_HOLD)) else {
            return;
        };
        let mut held = self
            .held_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *held = Some(held.map_or(until, |h| h.max(until)));
    }

    /// The hold a throttled answer asked for, if it is still ahead.
    fn held(&self) -> Option<Instant> {
        let held = *self
            .held_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        held.filter(|h| *h > Instant::now())
    }

    /// Sleep until `slot` (if any) and past any hold, re-reading the hold after each sleep: a throttle
    /// that arrives meanwhile still holds this request.
    async fn sleep_past(&self, slot: Option<Instant>) {
        if let Some(at) = slot {
            tokio::time::sleep_until(at).await;
        }
        while let Some(held) = self.held() {
            tokio::time::sleep_until(held).await;
        }
    }

    /// Wait for a write slot of this pacer (a pipeline's own write rate) and then of `account`'s (the
    /// account's limits, shared with the other pipelines of the account). This pacer's slot is taken when
    /// the request leaves, after both waits, so its rate holds at the instants requests leave however
    /// long the account made it wait; its writes queue behind one another meanwhile.
    pub async fn write_within(&self, account: &Pacer) {
        let Some(rate) = self.writes else {
            account.write().await;
            return;
        };
        let mut writes = self.write_slots.lock().await;
        self.sleep_past(writes.free_at(rate)).await;
        account.write().await;
        writes.take(rate, Instant::now());
    }

    async fn wait(&self, write: bool) {
        let writes = self.writes.filter(|_| write);
        // A write first waits for its own slot, holding only the write lock; then, like a read, for a slot
        // of every request. Each slot is recorded at the instant the request leaves: a caller the scheduler
        // wakes late pushes the next ones back rather than leaving closer to them than the rate allows.
        let mut write_slots = match writes {
            Some(rate) => {
                let slots = self.write_slots.lock().await;
                self.sleep_past(slots.free_at(rate)).await;
                Some((slots, rate))
            }
            None => None,
        };
        match self.every {
            Some(rate) => {
                let mut every = self.every_slots.lock().await;
                self.sleep_past(every.free_at(rate)).await;
                let left = Instant::now();
                every.take(rate, left);
                if let Some((slots, rate)) = write_slots.as_mut() {
                    slots.take(*rate, left);
                }
            }
            None => {
                self.sleep_past(None).await;
                if let Some((slots, rate)) = write_slots.as_mut() {
                    slots.take(*rate, Instant::now());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_leave_at_most_the_rate_apart() {
        let pacer = Pacer::new(Rate::per_second(5.0), None);
        let start = Instant::now();
        let mut left = Vec::new();
        for _ in 0..4 {
            pacer.request().await;
            left.push(start.elapsed().as_millis());
        }
        assert_eq!(left, [0, 200, 400, 600]);
        // After a quiet second the next request leaves at once.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let before = Instant::now();
        pacer.request().await;
        assert_eq!(before.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_the_slots() {
        let pacer = std::sync::Arc::new(Pacer::new(Rate::per_second(10.0), None));
        let start = Instant::now();
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let p = pacer.clone();
                tokio::spawn(async move {
                    p.request().await;
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

    #[tokio::test(start_paused = true)]
    async fn a_window_allows_a_burst_then_waits_for_the_oldest_to_age_out() {
        let rate = Rate::new(NonZeroU32::new(3).unwrap_or(NonZeroU32::MIN), Duration::from_secs(10));
        let pacer = Pacer::new(Some(rate), None);
        let start = Instant::now();
        let mut left = Vec::new();
        for _ in 0..7 {
            pacer.request().await;
            left.push(start.elapsed().as_secs());
        }
        assert_eq!(left, [0, 0, 0, 10, 10, 10, 20]);
    }

    #[tokio::test(start_paused = true)]
    async fn writes_count_under_both_limits_and_reads_only_under_every() {
        // Every request: 10 a second; writes: 2 a second.
        let pacer = Pacer::new(Rate::per_second(10.0), Rate::per_second(2.0));
        let start = Instant::now();
        let mut log = Vec::new();
        for step in ["w", "r", "w", "r", "r", "w"] {
            if step == "w" {
                pacer.write().await;
            } else {
                pacer.request().await;
            }
            log.push((step, start.elapsed().as_millis()));
        }
        assert_eq!(
            log,
            [("w", 0), ("r", 100), ("w", 500), ("r", 600), ("r", 700), ("w", 1000)]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn unlimited_never_waits_and_a_write_limit_leaves_reads_alone() {
        let start = Instant::now();
        let free = Pacer::unlimited();
        for _ in 0..100 {
            free.write().await;
        }
        let writes_only = Pacer::new(None, Rate::per_second(1.0));
        for _ in 0..100 {
            writes_only.request().await;
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
        writes_only.write().await;
        writes_only.write().await;
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_throttled_answer_holds_every_request_for_as_long_as_it_asked() {
        let start = Instant::now();
        for pacer in [Pacer::unlimited(), Pacer::new(Rate::per_second(10.0), None)] {
            let begun = Instant::now();
            pacer.hold_off(FailureKind::Transient).await;
            pacer.hold_off(FailureKind::Throttled { retry_after: None }).await;
            pacer.request().await;
            assert_eq!(
                begun.elapsed(),
                Duration::ZERO,
                "only a wait the server asked for holds"
            );
            pacer
                .hold_off(FailureKind::Throttled {
                    retry_after: Some(Duration::from_secs(3)),
                })
                .await;
            pacer.write().await;
            assert_eq!(begun.elapsed(), Duration::from_secs(3));
            pacer.request().await;
            assert!(begun.elapsed() < Duration::from_secs(4), "the hold is over once waited");
        }
        assert!(start.elapsed() >= Duration::from_secs(6));
    }

    #[tokio::test(start_paused = true)]
    async fn a_throttle_holds_the_requests_already_queued_and_survives_a_cancelled_waiter() {
        let pacer = std::sync::Arc::new(Pacer::new(Rate::per_second(1.0), None));
        let start = Instant::now();
        pacer.request().await;
        // Queued behind the first (the next slot is at 1 s): one gives up waiting, two wait on.
        let cancelled = tokio::time::timeout(Duration::from_millis(500), pacer.request()).await;
        assert!(cancelled.is_err(), "still waiting for its slot");
        let queued: Vec<_> = (0..2)
            .map(|_| {
                let p = pacer.clone();
                tokio::spawn(async move {
                    p.request().await;
                    start.elapsed()
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The server throttles now: the queued requests must not leave before the time it asked for.
        pacer
            .hold_off(FailureKind::Throttled {
                retry_after: Some(Duration::from_secs(10)),
            })
            .await;
        for q in queued {
            let left = q.await.unwrap_or_default();
            assert!(
                left >= Duration::from_millis(10_600),
                "left at {left:?}, inside the hold"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_waiting_for_its_slot_does_not_hold_up_reads() {
        let per_ten_seconds = Rate::new(NonZeroU32::MIN, Duration::from_secs(10));
        let pacer = std::sync::Arc::new(Pacer::new(Rate::per_second(10.0), Some(per_ten_seconds)));
        pacer.write().await;
        let p = pacer.clone();
        let second_write = tokio::spawn(async move { p.write().await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = Instant::now();
        pacer.request().await;
        assert!(
            before.elapsed() < Duration::from_secs(1),
            "a read waits only for a slot of every request"
        );
        assert!(!second_write.is_finished(), "the write still waits for its own slot");
        second_write.await.unwrap_or_default();
    }

    #[tokio::test(start_paused = true)]
    async fn a_pipeline_s_write_rate_holds_within_the_account_s_shared_limit() {
        let account = Pacer::new(Rate::per_second(10.0), None);
        let own = Pacer::new(None, Rate::per_second(2.0));
        let start = Instant::now();
        let mut log = Vec::new();
        for step in ["w", "r", "w", "r"] {
            if step == "w" {
                own.write_within(&account).await;
            } else {
                account.request().await;
            }
            log.push((step, start.elapsed().as_millis()));
        }
        assert_eq!(log, [("w", 0), ("r", 100), ("w", 500), ("r", 600)]);
        // Another pipeline's writes took the account's slots meanwhile: this one's next write leaves
        // after them and still half a second after its previous one.
        for _ in 0..10 {
            account.request().await;
        }
        let before = start.elapsed();
        own.write_within(&account).await;
        assert_eq!(before, Duration::from_millis(1600));
        assert_eq!(start.elapsed(), Duration::from_millis(1700));
        let unlimited = Pacer::unlimited();
        unlimited.write_within(&account).await;
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(1800),
            "no rate of its own: the account's alone"
        );
    }

    #[test]
    fn a_rate_that_is_not_positive_is_no_limit() {
        assert_eq!(Rate::per_second(0.0), None);
        assert_eq!(Rate::per_second(-1.0), None);
        assert_eq!(Rate::per_second(f64::NAN), None);
        assert_eq!(Rate::per_second(f64::INFINITY), None);
        assert_eq!(
            Rate::per_second(4.0).map(|r| (r.requests(), r.window())),
            Some((1, Duration::from_millis(250)))
        );
    }
}
