//! The election as a pure state machine: given what the API server holds and the time, what to write and
//! whether this replica may act as the leader. No IO and no clock of its own, so every rule is tested with
//! made-up instants.
//!
//! Two rules keep two leaders from writing at once, as in client-go:
//! - a follower never compares the lease's `renewTime` with its own wall clock (the clocks of two nodes
//!   differ); it notes *when it saw* the lease change (its `resourceVersion`) and takes it over only when
//!   the lease has not changed for a whole lease duration by its own monotonic clock;
//! - the leader counts its term from the moment it *sent* its last successful write and stops after the
//!   renew deadline, which is shorter than the lease duration. Every follower saw that write after it was
//!   sent, so the leader has stopped before any follower's lease duration has run out.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use tokio::time::Instant;

use crate::LeaderError;

/// How long a lease lasts, how long a leader keeps acting without renewing it, and how often it is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseTiming {
    /// How long followers wait, from the last change they saw, before taking the lease over.
    pub lease_duration: Duration,
    /// How long a leader keeps acting after the start of its last successful renewal.
    pub renew_deadline: Duration,
    /// The time between two attempts to acquire or renew.
    pub retry_period: Duration,
}

impl Default for LeaseTiming {
    /// kube-scheduler's defaults.
    fn default() -> Self {
        LeaseTiming {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl LeaseTiming {
    /// Checks the ordering the fencing relies on: `retry_period < renew_deadline < lease_duration`.
    pub fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Result<LeaseTiming, LeaderError> {
        let timing = LeaseTiming {
            lease_duration,
            renew_deadline,
            retry_period,
        };
        let why = if retry_period.is_zero() {
            Some("the retry period must be greater than zero")
        } else if lease_duration < Duration::from_secs(1) {
            Some("the lease duration must be at least one second (a Lease counts whole seconds)")
        } else if renew_deadline >= lease_duration {
            Some(
                "the renew deadline must be shorter than the lease duration, or a leader that lost the lease \
                 could still be writing when another replica takes it",
            )
        } else if retry_period >= renew_deadline {
            Some("the retry period must be shorter than the renew deadline, or a leader never renews in time")
        } else {
            None
        };
        match why {
            Some(why) => Err(LeaderError::InvalidTiming { timing, why }),
            None => Ok(timing),
        }
    }

    /// The lease duration as the Lease's `leaseDurationSeconds`, rounded up.
    pub fn lease_duration_seconds(&self) -> i32 {
        let secs = self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(secs).unwrap_or(i32::MAX)
    }
}

/// What to do after reading the lease.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// There is no lease: create it with this spec.
    Create(LeaseSpec),
    /// Write this spec over the lease, on the condition that its `resourceVersion` is still the one read
    /// (renewing our own lease, or taking over an expired or released one).
    Replace(LeaseSpec),
    /// Another replica holds a valid lease.
    Follow {
        /// The holder's identity, for logs.
        holder: String,
        /// How long until the lease expires by our clock, unless renewed; when to try again.
        expires_in: Duration,
    },
}

/// What this replica last saw of the lease, and what that means for it.
#[derive(Debug, Clone, PartialEq)]
struct Observed {
    resource_version: String,
    claim: Claim,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Claim {
    /// This replica holds it.
    Ours,
    /// Nobody holds it (released on shutdown): anyone may take it at once.
    Released,
    /// Another replica holds it until this instant of *our* clock: the moment we first saw this version
    /// plus its lease duration. We see a write only after it happened, so this is never earlier than
    /// the holder's own expiry.
    Held { expires_at: Instant },
}

/// The election's memory between two attempts.
#[derive(Debug, Clone)]
pub struct Elector {
    identity: String,
    timing: LeaseTiming,
    /// The lease's last `resourceVersion`, from a read or the watch, as first seen.
    observed: Option<Observed>,
    /// While leading: until when this replica may act (the start of its last successful write plus the
    /// renew deadline).
    leading_until: Option<Instant>,
    /// After a failed attempt, no new one before this: an expired or released lease must not turn an
    /// unreachable API server into a busy loop.
    backoff_until: Option<Instant>,
}

impl Elector {
    /// An elector that has seen no lease yet, so it does not lead until its first successful write.
    pub fn new(identity: impl Into<String>, timing: LeaseTiming) -> Elector {
        Elector {
            identity: identity.into(),
            timing,
            observed: None,
            leading_until: None,
            backoff_until: None,
        }
    }

    /// The `holderIdentity` this replica writes.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The checked timings it was built with.
    pub fn timing(&self) -> LeaseTiming {
        self.timing
    }

    /// Whether this replica may act as the leader at `now`.
    pub fn is_leader(&self, now: Instant) -> bool {
        self.leading_until.is_some_and(|until| now < until)
    }

    /// Until when this replica may act as the leader, if it leads.
    pub fn leading_until(&self) -> Option<Instant> {
        self.leading_until
    }

    /// Notes the lease as seen at `now` (`None`: it does not exist), from a read or a watch event. A new
    /// `resourceVersion` starts a follower's wait again; seeing another holder ends our leadership at once.
    /// Nothing is written: the decision to take over is made by [`Elector::decide`] on a fresh read.
    pub fn observe(&mut self, now: Instant, current: Option<(&str, &LeaseSpec)>) {
        let Some((resource_version, spec)) = current else {
            self.observed = None;
            self.step_down_if(now, true);
            return;
        };
        let holder = spec.holder_identity.as_deref().unwrap_or_default();
        if holder != self.identity {
            // Someone else holds it, or it was released: whatever this replica believed, it does not lead.
            self.leading_until = None;
        }
        if self
            .observed
            .as_ref()
            .is_some_and(|o| o.resource_version == resource_version)
        {
            return;
        }
        let claim = if holder == self.identity {
            Claim::Ours
        } else if holder.is_empty() {
            Claim::Released
        } else {
            let duration = spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .filter(|&s| s > 0)
                .map_or(self.timing.lease_duration, Duration::from_secs);
            Claim::Held {
                expires_at: now + duration,
            }
        };
        self.observed = Some(Observed {
            resource_version: resource_version.to_string(),
            claim,
        });
    }

    /// Reads the lease (`None` when it does not exist) at `now` (`wall` is the same moment on the wall
    /// clock, only written into the lease for people reading it) and decides what to write.
    pub fn decide(&mut self, now: Instant, wall: MicroTime, current: Option<(&str, &LeaseSpec)>) -> Decision {
        self.backoff_until = None;
        self.observe(now, current);
        let Some((_, spec)) = current else {
            return Decision::Create(self.spec(wall.clone(), wall, 0));
        };
        let transitions = spec.lease_transitions.unwrap_or(0);
        if spec.holder_identity.as_deref() == Some(self.identity.as_str()) {
            let acquired = spec.acquire_time.clone().unwrap_or_else(|| wall.clone());
            return Decision::Replace(self.spec(acquired, wall, transitions));
        }
        match self.observed.as_ref().map(|o| o.claim) {
            Some(Claim::Held { expires_at }) if now < expires_at => Decision::Follow {
                holder: spec.holder_identity.clone().unwrap_or_default(),
                expires_in: expires_at.saturating_duration_since(now),
            },
            _ => Decision::Replace(self.spec(wall.clone(), wall, transitions.saturating_add(1))),
        }
    }

    /// When to read the lease next, at `now` after an attempt or an observation. A leader renews every
    /// retry period. A follower tries exactly when the lease it saw runs out by its own clock; when it
    /// does not `watch` the lease (the watch failed), it also reads it every retry period, because only
    /// a read tells it of a renewal. A released lease is tried at once.
    pub fn next_attempt(&self, now: Instant, watching: bool) -> Instant {
        let poll = now + self.timing.retry_period;
        let at = if self.leading_until.is_some() {
            poll
        } else {
            match self.observed.as_ref().map(|o| o.claim) {
                Some(Claim::Held { expires_at }) if watching => expires_at,
                Some(Claim::Held { expires_at }) => poll.min(expires_at),
                Some(Claim::Released) => now,
                Some(Claim::Ours) | None => poll,
            }
        };
        self.backoff_until.map_or(at, |b| at.max(b))
    }

    /// The write decided on, sent at `sent_at`, succeeded and the lease now has `resource_version`.
    pub fn written(&mut self, sent_at: Instant, resource_version: &str) {
        self.observed = Some(Observed {
            resource_version: resource_version.to_string(),
            claim: Claim::Ours,
        });
        self.leading_until = Some(sent_at + self.timing.renew_deadline);
    }

    /// The write was refused because the lease changed since it was read (HTTP 409): another replica wrote
    /// it, so this one no longer leads.
    pub fn conflicted(&mut self) {
        self.leading_until = None;
        self.observed = None;
    }

    /// Reading or writing failed at `now` for another reason: leadership lasts until its deadline and no
    /// longer; nothing else changes.
    pub fn failed(&mut self, now: Instant) {
        self.step_down_if(now, false);
        self.backoff_until = Some(now + self.timing.retry_period);
    }

    /// Gives up leadership at once (shutting down). Returns the spec that releases the lease if this
    /// replica holds it in `current`, so the next leader need not wait for it to expire.
    pub fn release(&mut self, wall: MicroTime, current: &LeaseSpec) -> Option<LeaseSpec> {
        self.leading_until = None;
        if current.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return None;
        }
        Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: current.acquire_time.clone(),
            renew_time: Some(wall),
            lease_transitions: current.lease_transitions,
            ..LeaseSpec::default()
        })
    }

    fn step_down_if(&mut self, now: Instant, always: bool) {
        if always || !self.is_leader(now) {
            self.leading_until = None;
        }
    }

    fn spec(&self, acquired: MicroTime, renewed: MicroTime, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.timing.lease_duration_seconds()),
            acquire_time: Some(acquired),
            renew_time: Some(renewed),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn wall() -> MicroTime {
        MicroTime(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    }

    fn held_by(holder: &str, seconds: i32, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.to_string()),
            lease_duration_seconds: Some(seconds),
            lease_transitions: Some(transitions),
            acquire_time: Some(wall()),
            renew_time: Some(wall()),
            ..LeaseSpec::default()
        }
    }

    fn elector(id: &str) -> Elector {
        Elector::new(id, LeaseTiming::default())
    }

    fn takes_over(d: Decision) -> bool {
        matches!(d, Decision::Replace(_))
    }

    fn follows(d: Decision) -> bool {
        matches!(d, Decision::Follow { .. })
    }

    /// `a`, leading since `t0`: it created the lease, which came back as version 1.
    fn leader_since(t0: Instant) -> Elector {
        let mut a = elector("a");
        a.decide(t0, wall(), None);
        a.written(t0, "1");
        a
    }

    /// `b`, which read `lease` at `version` at `t0` and follows its holder.
    fn following(t0: Instant, version: &str, lease: &LeaseSpec) -> Elector {
        let mut b = elector("b");
        b.decide(t0, wall(), Some((version, lease)));
        b
    }

    #[test]
    fn timing_must_order_retry_renew_and_duration() {
        assert!(LeaseTiming::new(15 * S, 10 * S, 2 * S).is_ok());
        for (d, r, p) in [
            (10 * S, 10 * S, 2 * S),
            (10 * S, 15 * S, 2 * S),
            (15 * S, 10 * S, 10 * S),
            (15 * S, 10 * S, Duration::ZERO),
            (
                Duration::from_millis(900),
                Duration::from_millis(500),
                Duration::from_millis(100),
            ),
        ] {
            let err = LeaseTiming::new(d, r, p).expect_err("must be refused");
            assert!(err.to_string().contains("lease duration") || err.to_string().contains("retry period"));
        }
        let t = LeaseTiming::new(Duration::from_millis(1500), S, Duration::from_millis(100)).expect("valid");
        assert_eq!(t.lease_duration_seconds(), 2);
        assert_eq!(LeaseTiming::default().lease_duration_seconds(), 15);
    }

    #[test]
    fn no_lease_creates_one_and_leads_only_once_written() {
        let t0 = Instant::now();
        let mut e = elector("a");
        let Decision::Create(spec) = e.decide(t0, wall(), None) else {
            panic!("expected a create");
        };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_duration_seconds, Some(15));
        assert_eq!(spec.lease_transitions, Some(0));
        assert!(!e.is_leader(t0), "not before the write succeeded");
        e.written(t0, "1");
        assert!(e.is_leader(t0));
        assert_eq!(e.leading_until(), Some(t0 + 10 * S));
    }

    #[test]
    fn the_leader_stops_at_the_renew_deadline_without_a_renewal() {
        let t0 = Instant::now();
        let mut e = leader_since(t0);
        // Renewals fail (API server unreachable): still leader until the deadline, not after.
        e.failed(t0 + 9 * S);
        assert!(e.is_leader(t0 + 9 * S));
        assert!(!e.is_leader(t0 + 10 * S));
        e.failed(t0 + 10 * S);
        assert_eq!(e.leading_until(), None);
    }

    #[test]
    fn the_deadline_counts_from_when_the_renewal_was_sent_not_when_it_returned() {
        let t0 = Instant::now();
        let mut e = elector("a");
        e.decide(t0, wall(), None);
        // The write took 4 s to come back.
        e.written(t0, "1");
        assert!(!e.is_leader(t0 + 10 * S));
    }

    #[test]
    fn renewing_keeps_the_acquire_time_and_transitions() {
        let t0 = Instant::now();
        let mut e = elector("a");
        let mut lease = held_by("a", 15, 3);
        lease.acquire_time = Some(MicroTime(
            k8s_openapi::jiff::Timestamp::from_second(100).expect("valid"),
        ));
        let Decision::Replace(spec) = e.decide(t0, wall(), Some(("7", &lease))) else {
            panic!("expected a renewal");
        };
        assert_eq!(spec.acquire_time, lease.acquire_time);
        assert_eq!(spec.renew_time, Some(wall()));
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
    }

    #[test]
    fn a_follower_waits_a_whole_lease_duration_from_the_last_change_it_saw() {
        let t0 = Instant::now();
        let mut b = elector("b");
        let lease = held_by("a", 15, 0);
        assert_eq!(
            b.decide(t0, wall(), Some(("1", &lease))),
            Decision::Follow {
                holder: "a".into(),
                expires_in: 15 * S
            }
        );
        // The same resourceVersion 14 s later: still valid.
        assert!(follows(b.decide(t0 + 14 * S, wall(), Some(("1", &lease)))));
        // The holder renewed (new resourceVersion): the wait starts again.
        assert!(follows(b.decide(t0 + 14 * S, wall(), Some(("2", &lease)))));
        assert!(follows(b.decide(t0 + 28 * S, wall(), Some(("2", &lease)))));
        let Decision::Replace(spec) = b.decide(t0 + 29 * S, wall(), Some(("2", &lease))) else {
            panic!("expected a takeover");
        };
        assert_eq!(spec.holder_identity.as_deref(), Some("b"));
        assert_eq!(spec.lease_transitions, Some(1));
        assert!(!b.is_leader(t0 + 29 * S), "not before the takeover is written");
        b.written(t0 + 29 * S, "3");
        assert!(b.is_leader(t0 + 29 * S));
    }

    #[test]
    fn the_wall_clock_in_the_lease_is_never_trusted() {
        // The holder's renewTime is decades old (its clock is wrong): what counts is that it changed.
        let t0 = Instant::now();
        let mut b = elector("b");
        let lease = held_by("a", 15, 0);
        assert!(follows(b.decide(t0, wall(), Some(("1", &lease)))));
    }

    #[test]
    fn the_holders_lease_duration_wins_over_ours() {
        let t0 = Instant::now();
        let lease = held_by("a", 60, 0);
        let mut b = following(t0, "1", &lease);
        assert!(follows(b.decide(t0 + 30 * S, wall(), Some(("1", &lease)))));
        assert!(takes_over(b.decide(t0 + 60 * S, wall(), Some(("1", &lease)))));
    }

    #[test]
    fn a_released_lease_is_taken_at_once() {
        let t0 = Instant::now();
        let mut b = elector("b");
        let mut lease = held_by("a", 1, 4);
        lease.holder_identity = None;
        let Decision::Replace(spec) = b.decide(t0, wall(), Some(("9", &lease))) else {
            panic!("expected a takeover");
        };
        assert_eq!(spec.lease_transitions, Some(5));
    }

    #[test]
    fn the_fencing_holds_the_old_leader_stops_before_the_follower_may_take_over() {
        // The leader renews at t0 and then loses the API server; the follower sees the renewal at once.
        let t0 = Instant::now();
        let mut a = elector("a");
        let mut b = elector("b");
        a.decide(t0, wall(), None);
        a.written(t0, "1");
        let lease = held_by("a", 15, 0);
        b.decide(t0, wall(), Some(("1", &lease)));
        let mut t = t0;
        while t < t0 + 30 * S {
            a.failed(t);
            let b_takes = takes_over(b.decide(t, wall(), Some(("1", &lease))));
            assert!(!(a.is_leader(t) && b_takes), "both lead at {:?}", t - t0);
            t += Duration::from_millis(100);
        }
        assert!(!a.is_leader(t0 + 10 * S));
    }

    #[test]
    fn seeing_another_holder_or_a_conflict_ends_leadership_at_once() {
        let t0 = Instant::now();
        let mut a = leader_since(t0);
        assert!(a.is_leader(t0 + S));
        a.decide(t0 + S, wall(), Some(("2", &held_by("b", 15, 1))));
        assert!(!a.is_leader(t0 + S));

        let mut a = leader_since(t0);
        a.conflicted();
        assert!(!a.is_leader(t0));
    }

    #[test]
    fn a_vanished_lease_ends_leadership_and_is_created_again() {
        let t0 = Instant::now();
        let mut a = leader_since(t0);
        assert!(matches!(a.decide(t0 + S, wall(), None), Decision::Create(_)));
        assert!(!a.is_leader(t0 + S));
    }

    #[test]
    fn release_only_touches_our_own_lease() {
        let t0 = Instant::now();
        let mut a = leader_since(t0);
        let released = a.release(wall(), &held_by("a", 15, 2)).expect("our lease");
        assert!(!a.is_leader(t0));
        assert_eq!(released.holder_identity, None);
        assert_eq!(released.lease_duration_seconds, Some(1));
        assert_eq!(released.lease_transitions, Some(2));
        assert_eq!(a.release(wall(), &held_by("b", 15, 2)), None);
    }

    #[test]
    fn a_watching_follower_tries_exactly_when_the_lease_it_saw_runs_out() {
        let t0 = Instant::now();
        let lease = held_by("a", 15, 0);
        let mut b = following(t0, "1", &lease);
        assert_eq!(b.next_attempt(t0, true), t0 + 15 * S, "not at the next poll");
        // Renewals seen on the watch, each at another point of the retry period, move the attempt with them.
        for (i, seen) in [2100, 4000, 5950, 8010].into_iter().enumerate() {
            let at = t0 + Duration::from_millis(seen);
            b.observe(at, Some((&(i + 2).to_string(), &lease)));
            assert_eq!(b.next_attempt(at, true), at + 15 * S);
        }
        let last = t0 + Duration::from_millis(8010);
        // The same version seen again (a read, a relisted watch) does not restart the wait.
        b.observe(last + 3 * S, Some(("5", &lease)));
        assert_eq!(b.next_attempt(last + 3 * S, true), last + 15 * S);
        // One nanosecond before the expiry the fresh read still follows; at the expiry it takes over.
        let just_before = last + 15 * S - Duration::from_nanos(1);
        assert_eq!(
            b.decide(just_before, wall(), Some(("5", &lease))),
            Decision::Follow {
                holder: "a".into(),
                expires_in: Duration::from_nanos(1)
            }
        );
        assert!(takes_over(b.decide(last + 15 * S, wall(), Some(("5", &lease)))));
    }

    #[test]
    fn without_the_watch_a_follower_also_reads_every_retry_period() {
        let t0 = Instant::now();
        let b = following(t0, "1", &held_by("a", 15, 0));
        assert_eq!(b.next_attempt(t0, false), t0 + 2 * S);
        // Near the expiry the expiry comes first.
        assert_eq!(b.next_attempt(t0 + 14 * S, false), t0 + 15 * S);
    }

    #[test]
    fn a_renewal_read_just_before_the_expiry_starts_the_wait_again() {
        // The watch missed the renewal (or it was in flight): the read at the expiry finds a new version.
        let t0 = Instant::now();
        let lease = held_by("a", 15, 0);
        let mut b = following(t0, "1", &lease);
        let at = b.next_attempt(t0, true);
        assert!(follows(b.decide(at, wall(), Some(("2", &lease)))));
        assert_eq!(b.next_attempt(at, true), at + 15 * S);
    }

    #[test]
    fn a_stale_version_from_the_watch_only_delays_the_takeover() {
        // A watch started from the API server's cache may deliver an older version after a read: it is
        // taken as a change, which can only make the follower wait longer, never shorter.
        let t0 = Instant::now();
        let lease = held_by("a", 15, 0);
        let mut b = following(t0, "7", &lease);
        b.observe(t0 + S, Some(("6", &lease)));
        assert_eq!(b.next_attempt(t0 + S, true), t0 + 16 * S);
        assert!(follows(b.decide(t0 + 15 * S, wall(), Some(("7", &lease)))));
    }

    #[test]
    fn a_released_lease_is_tried_at_once_but_failures_wait_a_retry_period() {
        let t0 = Instant::now();
        let mut b = following(t0, "1", &held_by("a", 15, 0));
        let mut released = held_by("a", 1, 0);
        released.holder_identity = None;
        b.observe(t0 + S, Some(("2", &released)));
        assert_eq!(b.next_attempt(t0 + S, true), t0 + S);
        // The takeover's read or write fails: the next try waits a retry period, released lease or not.
        b.decide(t0 + S, wall(), Some(("2", &released)));
        b.failed(t0 + S);
        assert_eq!(b.next_attempt(t0 + S, true), t0 + 3 * S);
        // An expired lease behaves the same: no busy loop against a failing API server.
        let mut c = elector("c");
        c.decide(t0, wall(), Some(("1", &held_by("a", 15, 0))));
        c.failed(t0 + 20 * S);
        assert_eq!(c.next_attempt(t0 + 20 * S, true), t0 + 22 * S);
    }

    #[test]
    fn a_leader_renews_every_retry_period_whatever_it_sees() {
        let t0 = Instant::now();
        let mut a = leader_since(t0);
        assert_eq!(a.next_attempt(t0, true), t0 + 2 * S);
        assert_eq!(a.next_attempt(t0, false), t0 + 2 * S);
        // Its own write coming back on the watch changes nothing.
        a.observe(t0 + Duration::from_millis(5), Some(("1", &held_by("a", 15, 0))));
        assert!(a.is_leader(t0 + S));
        assert_eq!(a.leading_until(), Some(t0 + 10 * S));
    }

    #[test]
    fn another_holder_seen_on_the_watch_ends_leadership_at_once() {
        let t0 = Instant::now();
        let mut a = leader_since(t0);
        a.observe(t0 + S, Some(("2", &held_by("b", 15, 1))));
        assert!(!a.is_leader(t0 + S));
        assert_eq!(a.next_attempt(t0 + S, true), t0 + 16 * S);
        // A deleted lease too; the next attempt creates it again.
        let mut a = leader_since(t0);
        a.observe(t0 + S, None);
        assert!(!a.is_leader(t0 + S));
        assert_eq!(a.next_attempt(t0 + S, true), t0 + 3 * S);
        assert!(matches!(a.decide(t0 + 3 * S, wall(), None), Decision::Create(_)));
    }

    #[test]
    fn the_fencing_holds_when_the_follower_watches() {
        // The leader renews every retry period and the follower sees each renewal 3 ms after it was sent;
        // then the leader is cut off right after a renewal. Before the follower's scheduled attempt the old
        // leader has stopped, and at no instant do both lead.
        let t0 = Instant::now();
        let mut a = elector("a");
        let mut b = elector("b");
        let lease = held_by("a", 15, 0);
        let seen = Duration::from_millis(3);
        let mut rv = 0;
        let mut t = t0;
        while t < t0 + 10 * S {
            rv += 1;
            a.decide(t, wall(), (rv > 1).then_some(("x", &lease)));
            a.written(t, &rv.to_string());
            b.observe(t + seen, Some((&rv.to_string(), &lease)));
            t = a.next_attempt(t, true);
        }
        let last = t - 2 * S;
        let takeover = b.next_attempt(last + seen, true);
        assert_eq!(takeover, last + seen + 15 * S);
        assert!(
            !a.is_leader(last + 10 * S),
            "the old leader stops at its renew deadline"
        );
        let mut t = last;
        while t <= takeover + S {
            a.failed(t);
            let b_takes = takes_over(b.decide(t, wall(), Some((&rv.to_string(), &lease))));
            assert_eq!(b_takes, t >= takeover, "at {:?}", t - last);
            assert!(!(a.is_leader(t) && b_takes), "both lead at {:?}", t - last);
            t += Duration::from_millis(1);
        }
    }
}
