//! When the next sync runs.
//!
//! The rules are external-dns's, so a Deployment tuned for it behaves the same: a sync every `--interval`;
//! with `--events`, a change pulls the next sync forward to [`EVENT_DEBOUNCE`] from now (changes arriving
//! together collapse into one sync), but never earlier than `--min-event-sync-interval` after the last sync
//! that wrote to the provider started (a busy cluster cannot make extdns hammer the provider) and never later
//! than the sync already planned. Two differences: the debounce (external-dns waits a fixed 5 s after a
//! change, extdns 50 ms, so a record follows its object in well under a second), and a sync that wrote
//! nothing (the periodic full sync of a quiet cluster, an incremental sync for a Pod no record shows) does
//! not hold the next change back: `--min-event-sync-interval` is the least time between two writes.

use std::time::Duration;

use tokio::time::Instant;

/// How long an event waits before its sync, so changes that arrive together are handled once.
pub const EVENT_DEBOUNCE: Duration = Duration::from_millis(50);

/// The least time between the starts of two syncs, whatever the flags say: external-dns checks its schedule
/// once a second, so `--interval=0s` means "every second" there, not a busy loop against the provider.
pub const MIN_SYNC_GAP: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    interval: Duration,
    min_event_sync_interval: Duration,
    next_run_at: Instant,
    last_run_at: Option<Instant>,
    /// When the last sync that wrote to the provider started.
    last_write_at: Option<Instant>,
    /// When the next full sync is due (an event-driven sync in between is incremental).
    next_full_at: Instant,
}

impl Schedule {
    /// The first sync is due at once.
    pub(crate) fn new(now: Instant, interval: Duration, min_event_sync_interval: Duration) -> Self {
        Schedule {
            interval,
            min_event_sync_interval,
            next_run_at: now,
            last_run_at: None,
            last_write_at: None,
            next_full_at: now,
        }
    }

    pub(crate) fn next_run_at(&self) -> Instant {
        self.next_run_at
    }

    pub(crate) fn is_due(&self, now: Instant) -> bool {
        now >= self.next_run_at
    }

    /// A full sync starts now; the next regular one is an interval later.
    pub(crate) fn start_run(&mut self, now: Instant) {
        self.last_run_at = Some(now);
        self.next_full_at = now + self.interval.max(MIN_SYNC_GAP);
        self.next_run_at = self.next_full_at;
    }

    /// An incremental sync starts now: it counts for `--min-event-sync-interval` (the time between two
    /// writes) but does not move the next full sync, the safety net that repairs drift.
    pub(crate) fn start_incremental_run(&mut self, now: Instant) {
        self.last_run_at = Some(now);
        self.next_run_at = self.next_full_at;
    }

    /// Whether the sync due now must be a full one.
    pub(crate) fn is_full_due(&self, now: Instant) -> bool {
        now >= self.next_full_at
    }

    /// The sync that started at `started` wrote to the provider.
    pub(crate) fn wrote(&mut self, started: Instant) {
        self.last_write_at = Some(started);
    }

    /// `nextRunAt = max(lastWriteAt + min-event-sync-interval, min(now + debounce, nextRunAt))`.
    pub(crate) fn on_event(&mut self, now: Instant) {
        let soon = (now + EVENT_DEBOUNCE).min(self.next_run_at);
        self.next_run_at = match self.last_write_at {
            Some(last) => soon.max(last + self.min_event_sync_interval.max(MIN_SYNC_GAP)),
            None => soon,
        };
    }

    /// Run again after `delay` (a retry after a failure, or a wait for the informers), unless a sync is
    /// already planned sooner.
    pub(crate) fn retry_after(&mut self, now: Instant, delay: Duration) {
        let earliest = self.last_run_at.map_or(now, |last| last + MIN_SYNC_GAP);
        self.next_run_at = self.next_run_at.min(now + delay).max(earliest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);
    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_zero_interval_still_waits_a_second_between_syncs() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, Duration::ZERO, Duration::ZERO);
        s.start_run(t0);
        s.wrote(t0);
        assert!(!s.is_due(t0), "--interval=0s must not sync again at once");
        assert!(s.is_due(t0 + S));
        s.on_event(t0);
        assert_eq!(s.next_run_at(), t0 + S);
        s.retry_after(t0, Duration::ZERO);
        assert_eq!(s.next_run_at(), t0 + S);
    }

    #[test]
    fn first_sync_is_immediate() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, MINUTE, 5 * S);
        assert!(s.is_due(t0));
    }

    #[test]
    fn next_sync_is_one_interval_after_the_last_start() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, MINUTE, 5 * S);
        s.start_run(t0);
        assert!(!s.is_due(t0 + 59 * S));
        assert!(s.is_due(t0 + MINUTE));
        assert_eq!(s.next_run_at(), t0 + MINUTE);
    }

    #[test]
    fn event_pulls_the_next_sync_to_the_debounce_from_now() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, MINUTE, 5 * S);
        s.start_run(t0);
        s.on_event(t0 + 20 * S);
        assert_eq!(s.next_run_at(), t0 + 20 * S + EVENT_DEBOUNCE);
        assert!(
            EVENT_DEBOUNCE < Duration::from_millis(100),
            "a record follows its object within 100 ms"
        );
    }

    #[test]
    fn burst_of_events_collapses_into_one_sync() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut s = Schedule::new(t0, MINUTE, 5 * S);
        s.start_run(t0);
        s.on_event(t0 + 20 * S);
        s.on_event(t0 + 20 * S + ms(10));
        s.on_event(t0 + 20 * S + ms(40));
        // Later events never push the sync the first one planned further out.
        assert_eq!(s.next_run_at(), t0 + 20 * S + EVENT_DEBOUNCE);
    }

    #[test]
    fn event_never_runs_before_min_event_sync_interval_since_last_sync() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, MINUTE, 30 * S);
        s.start_run(t0);
        s.wrote(t0);
        s.on_event(t0 + S);
        assert_eq!(s.next_run_at(), t0 + 30 * S);
    }

    #[test]
    fn a_sync_that_wrote_nothing_holds_no_change_back() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, MINUTE, 30 * S);
        s.start_run(t0);
        s.wrote(t0);
        // The periodic full sync a minute later finds nothing to do.
        s.start_run(t0 + MINUTE);
        s.on_event(t0 + MINUTE + S);
        assert_eq!(s.next_run_at(), t0 + MINUTE + S + EVENT_DEBOUNCE);
    }

    #[test]
    fn event_never_delays_a_sync_already_planned_sooner() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, 10 * S, 5 * S);
        s.start_run(t0);
        // Within the debounce of the sync planned at 10 s.
        s.on_event(t0 + 10 * S - EVENT_DEBOUNCE / 2);
        assert_eq!(s.next_run_at(), t0 + 10 * S);
    }

    #[test]
    fn min_event_sync_interval_may_exceed_the_interval() {
        // external-dns's max() wins over the already planned run in this case; keep the same arithmetic.
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, 10 * S, 20 * S);
        s.start_run(t0);
        s.wrote(t0);
        s.on_event(t0 + S);
        assert_eq!(s.next_run_at(), t0 + 20 * S);
    }

    #[test]
    fn incremental_syncs_do_not_postpone_the_full_sync() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, MINUTE, 5 * S);
        assert!(s.is_full_due(t0), "the first sync is a full one");
        s.start_run(t0);
        s.on_event(t0 + 30 * S);
        assert!(!s.is_full_due(s.next_run_at()));
        s.start_incremental_run(t0 + 30 * S);
        s.wrote(t0 + 30 * S);
        assert_eq!(s.next_run_at(), t0 + MINUTE);
        assert!(s.is_full_due(t0 + MINUTE));
        // An event right after an incremental sync still waits --min-event-sync-interval.
        s.on_event(t0 + 31 * S);
        assert_eq!(s.next_run_at(), t0 + 35 * S);
    }

    #[test]
    fn retry_comes_sooner_than_the_interval_but_never_later() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, MINUTE, 5 * S);
        s.start_run(t0);
        s.retry_after(t0, 2 * S);
        assert_eq!(s.next_run_at(), t0 + 2 * S);
        s.retry_after(t0, 10 * MINUTE);
        assert_eq!(s.next_run_at(), t0 + 2 * S);
    }
}
