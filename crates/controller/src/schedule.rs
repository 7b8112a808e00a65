//! When the next sync runs.
//!
//! Full syncs follow external-dns's rules, so a Deployment tuned for it behaves the same: one every
//! `--interval`; with `--events`, a change that needs one pulls it forward to [`EVENT_DEBOUNCE`] from now
//! (changes arriving together collapse into one), but never earlier than `--min-event-sync-interval` after
//! the last full sync started and never later than the sync already planned. (external-dns waits a fixed
//! 5 s after a change; extdns 50 ms.)
//!
//! Incremental syncs are paced by what the provider takes, not by a fixed interval: a change is evaluated
//! and written at once, and the changes that arrive while a write is in flight join the next one. The
//! provider keeps its requests under its own limit (`extdns_provider::pace`: Route53 5 a second,
//! Cloudflare 1,200 per 5 minutes, `--provider-write-rate`), so a faster stream of changes only makes the
//! writes larger. An explicit `--min-event-sync-interval` also bounds incremental writes: it is then the
//! least time between two writes.

use std::time::Duration;

use tokio::time::Instant;

/// How long an event that needs a full sync waits for it, so changes that arrive together are handled once.
pub const EVENT_DEBOUNCE: Duration = Duration::from_millis(50);

/// The least time between the starts of two full syncs, whatever the flags say: external-dns checks its
/// schedule once a second, so `--interval=0s` means "every second" there, not a busy loop against the
/// provider.
pub const MIN_SYNC_GAP: Duration = Duration::from_secs(1);

/// `interval`, a tenth longer or shorter at random: controllers (replicas, pipelines of one account) that
/// started together spread their periodic full reads instead of spending the account's budget at once.
pub(crate) fn jittered(interval: Duration) -> Duration {
    interval.mul_f64(0.9 + 0.2 * extdns_provider::backoff::random_unit())
}

#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    interval: Duration,
    /// The least time between two full syncs an event asks for.
    min_event_sync_interval: Duration,
    /// The least time between two writes of incremental syncs (zero: as fast as the provider takes them).
    min_incremental_write_interval: Duration,
    next_run_at: Instant,
    /// When the last sync (of either kind) started.
    last_run_at: Option<Instant>,
    /// When the last full sync started.
    last_full_at: Option<Instant>,
    /// When the last sync that wrote to the provider started.
    last_write_at: Option<Instant>,
    /// When the next full sync is due (an event-driven sync in between is incremental).
    next_full_at: Instant,
}

impl Schedule {
    /// The first sync is due at once.
    pub(crate) fn new(
        now: Instant,
        interval: Duration,
        min_event_sync_interval: Duration,
        min_incremental_write_interval: Duration,
    ) -> Self {
        Schedule {
            interval,
            min_event_sync_interval,
            min_incremental_write_interval,
            next_run_at: now,
            last_run_at: None,
            last_full_at: None,
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
        self.last_full_at = Some(now);
        self.next_full_at = now + self.interval.max(MIN_SYNC_GAP);
        self.next_run_at = self.next_full_at;
    }

    /// An incremental sync starts now: it does not move the next full sync, the safety net that repairs
    /// drift.
    pub(crate) fn start_incremental_run(&mut self, now: Instant) {
        self.last_run_at = Some(now);
        self.next_run_at = self.next_full_at;
    }

    /// Whether the sync due now must be a full one.
    pub(crate) fn is_full_due(&self, now: Instant) -> bool {
        now >= self.next_full_at
    }

    /// The earliest instant a full sync asked for by an event may start.
    fn full_allowed_at(&self) -> Option<Instant> {
        self.last_full_at
            .map(|last| last + self.min_event_sync_interval.max(MIN_SYNC_GAP))
    }

    /// Whether a change that turns out to need a full sync may have it now.
    pub(crate) fn may_go_full(&self, now: Instant) -> bool {
        self.full_allowed_at().is_none_or(|at| now >= at)
    }

    /// The sync that started at `started` wrote to the provider.
    pub(crate) fn wrote(&mut self, started: Instant) {
        self.last_write_at = Some(started);
    }

    /// A change arrived. `full`: it needs a full sync, which external-dns's arithmetic places at
    /// `max(lastFullAt + min-event-sync-interval, min(now + debounce, nextRunAt))`. Otherwise the
    /// incremental sync runs now (or when `--min-event-sync-interval`, set explicitly, has passed since the
    /// last write).
    pub(crate) fn on_event(&mut self, now: Instant, full: bool) {
        self.next_run_at = if full {
            let soon = (now + EVENT_DEBOUNCE).min(self.next_run_at);
            self.full_allowed_at().map_or(soon, |at| soon.max(at))
        } else {
            let soon = now.min(self.next_run_at);
            match self.last_write_at {
                Some(last) if !self.min_incremental_write_interval.is_zero() => {
                    soon.max(last + self.min_incremental_write_interval)
                }
                _ => soon,
            }
        };
    }

    /// The change needs a full sync, and `--min-event-sync-interval` has not passed since the last one:
    /// run it as soon as it has.
    pub(crate) fn defer_full(&mut self, now: Instant) {
        let at = self.full_allowed_at().unwrap_or(now).max(now);
        self.next_run_at = self.next_run_at.min(at).max(now);
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

    fn schedule(t0: Instant, interval: Duration, min_event: Duration) -> Schedule {
        Schedule::new(t0, interval, min_event, Duration::ZERO)
    }

    /// A schedule whose first sync started now: that start, and the schedule.
    fn started(interval: Duration, min_event: Duration) -> (Instant, Schedule) {
        let t0 = Instant::now();
        let mut s = schedule(t0, interval, min_event);
        s.start_run(t0);
        (t0, s)
    }

    #[test]
    fn a_jittered_interval_stays_within_a_tenth_and_varies() {
        let draws: Vec<Duration> = (0..200).map(|_| jittered(3600 * S)).collect();
        assert!(draws.iter().all(|d| (3240 * S..3960 * S).contains(d)), "{draws:?}");
        let first = draws[0];
        assert!(draws.iter().any(|d| *d != first), "200 draws, all {first:?}");
        assert_eq!(jittered(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn a_zero_interval_still_waits_a_second_between_full_syncs() {
        let (t0, mut s) = started(Duration::ZERO, Duration::ZERO);
        s.wrote(t0);
        assert!(!s.is_due(t0), "--interval=0s must not sync again at once");
        assert!(s.is_due(t0 + S));
        s.on_event(t0, true);
        assert_eq!(s.next_run_at(), t0 + S);
        s.retry_after(t0, Duration::ZERO);
        assert_eq!(s.next_run_at(), t0 + S);
    }

    #[test]
    fn first_sync_is_immediate() {
        let t0 = Instant::now();
        let s = schedule(t0, MINUTE, 5 * S);
        assert!(s.is_due(t0));
    }

    #[test]
    fn next_sync_is_one_interval_after_the_last_start() {
        let (t0, s) = started(MINUTE, 5 * S);
        assert!(!s.is_due(t0 + 59 * S));
        assert!(s.is_due(t0 + MINUTE));
        assert_eq!(s.next_run_at(), t0 + MINUTE);
    }

    #[test]
    fn an_incremental_change_runs_at_once_even_right_after_a_write() {
        let (t0, mut s) = started(MINUTE, 5 * S);
        s.wrote(t0);
        let t = t0 + Duration::from_millis(300);
        s.start_incremental_run(t);
        s.wrote(t);
        s.on_event(t + Duration::from_millis(1), false);
        assert_eq!(s.next_run_at(), t + Duration::from_millis(1));
    }

    #[test]
    fn an_explicit_min_event_sync_interval_spaces_incremental_writes() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, MINUTE, 5 * S, 5 * S);
        s.start_run(t0);
        s.on_event(t0 + S, false);
        assert_eq!(s.next_run_at(), t0 + S, "no write yet: nothing to space from");
        s.start_incremental_run(t0 + S);
        s.wrote(t0 + S);
        s.on_event(t0 + 2 * S, false);
        assert_eq!(s.next_run_at(), t0 + 6 * S);
    }

    #[test]
    fn an_event_needing_a_full_sync_waits_the_debounce() {
        let (t0, mut s) = started(MINUTE, 5 * S);
        s.on_event(t0 + 20 * S, true);
        assert_eq!(s.next_run_at(), t0 + 20 * S + EVENT_DEBOUNCE);
        // Later events never push the sync the first one planned further out.
        s.on_event(t0 + 20 * S + Duration::from_millis(40), true);
        assert_eq!(s.next_run_at(), t0 + 20 * S + EVENT_DEBOUNCE);
    }

    #[test]
    fn full_syncs_asked_for_by_events_are_min_event_sync_interval_apart() {
        let (t0, mut s) = started(MINUTE, 30 * S);
        s.on_event(t0 + S, true);
        assert_eq!(s.next_run_at(), t0 + 30 * S);
        // Whether or not the last full sync wrote: external-dns counts from the sync's start.
        assert!(!s.may_go_full(t0 + 29 * S));
        assert!(s.may_go_full(t0 + 30 * S));
    }

    #[test]
    fn a_change_found_to_need_a_full_sync_is_deferred_to_the_interval() {
        let (t0, mut s) = started(MINUTE, 5 * S);
        s.start_incremental_run(t0 + S);
        s.defer_full(t0 + S);
        assert_eq!(s.next_run_at(), t0 + 5 * S);
        // Past the interval it runs at once.
        s.start_incremental_run(t0 + 7 * S);
        s.defer_full(t0 + 7 * S);
        assert_eq!(s.next_run_at(), t0 + 7 * S);
    }

    #[test]
    fn event_never_delays_a_sync_already_planned_sooner() {
        let (t0, mut s) = started(10 * S, 5 * S);
        // Within the debounce of the sync planned at 10 s.
        s.on_event(t0 + 10 * S - EVENT_DEBOUNCE / 2, true);
        assert_eq!(s.next_run_at(), t0 + 10 * S);
    }

    #[test]
    fn min_event_sync_interval_may_exceed_the_interval() {
        // external-dns's max() wins over the already planned run in this case; keep the same arithmetic.
        let (t0, mut s) = started(10 * S, 20 * S);
        s.on_event(t0 + S, true);
        assert_eq!(s.next_run_at(), t0 + 20 * S);
    }

    #[test]
    fn incremental_syncs_do_not_postpone_the_full_sync() {
        let t0 = Instant::now();
        let mut s = schedule(t0, MINUTE, 5 * S);
        assert!(s.is_full_due(t0), "the first sync is a full one");
        s.start_run(t0);
        s.on_event(t0 + 30 * S, false);
        assert!(!s.is_full_due(s.next_run_at()));
        s.start_incremental_run(t0 + 30 * S);
        s.wrote(t0 + 30 * S);
        assert_eq!(s.next_run_at(), t0 + MINUTE);
        assert!(s.is_full_due(t0 + MINUTE));
    }

    #[test]
    fn retry_comes_sooner_than_the_interval_but_never_later() {
        let (t0, mut s) = started(MINUTE, 5 * S);
        s.retry_after(t0, 2 * S);
        assert_eq!(s.next_run_at(), t0 + 2 * S);
        s.retry_after(t0, 10 * MINUTE);
        assert_eq!(s.next_run_at(), t0 + 2 * S);
    }
}
